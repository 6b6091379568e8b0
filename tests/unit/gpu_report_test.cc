// GpuNotes: what `footprint show` says about a run's GPU energy figures.
#include "footprint/gpu_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace footprint {
namespace {

RunSummary Summary(const nlohmann::json& meta, double duration_s,
                   std::vector<ScopeSummary> scopes = {}) {
  RunSummary s;
  s.run.meta_json = meta.dump();
  s.duration_s = duration_s;
  s.scopes = std::move(scopes);
  return s;
}

ScopeSummary Scope(const std::string& name, double min_s, size_t count = 3) {
  ScopeSummary sc;
  sc.name = name;
  sc.count = count;
  sc.min_s = min_s;
  return sc;
}

bool Mentions(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

MetricSummary Whole(const std::string& metric, const std::string& entity, double mean) {
  MetricSummary m;
  m.metric = metric;
  m.entity = entity;
  m.count = 10;
  m.mean = mean;
  return m;
}

TEST(GpuNotesTest, BusyUtilisationOnFewSmsIsTheMisleadingCase) {
  nlohmann::json meta = {
      {"gpu",
       {{"devices", {{"gpu:0", nlohmann::json::object()}, {"gpu:1", nlohmann::json::object()}}}}}};
  RunSummary s = Summary(meta, 10);
  // gpu:0 ran one SM's kernel (what the H100 showed: 88 % and 0.71 %); gpu:1 a matmul.
  s.metrics = {Whole("gpu", "gpu:0", 88), Whole("gpu.sm_active", "gpu:0", 0.71),
               Whole("gpu", "gpu:1", 92), Whole("gpu.sm_active", "gpu:1", 90.8)};
  auto notes = GpuNotes(s);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "gpu:0 was busy 88 % of the time by NVML's utilisation, but only 0.7 % of its SMs "
            "were active on average: utilisation counts the time any kernel ran, however few "
            "SMs it used; gpu.sm_active is the figure to tune against");
  // An idle device, or one without SM activity, says nothing.
  s.metrics = {Whole("gpu", "gpu:0", 20), Whole("gpu.sm_active", "gpu:0", 1),
               Whole("gpu", "gpu:1", 95)};
  EXPECT_TRUE(GpuNotes(s).empty());
}

TEST(GpuNotesTest, NothingWithoutGpus) {
  EXPECT_TRUE(GpuNotes(Summary(nlohmann::json::object(), 1.0)).empty());
  EXPECT_TRUE(GpuNotes(Summary({{"gpu", {{"unavailable", "no driver"}}}}, 1.0)).empty());
}

TEST(GpuNotesTest, ScopesShorterThanTheCounterUpdatePeriod) {
  nlohmann::json meta = {
      {"gpu",
       {{"devices",
         {{"gpu:0", {{"energy_source", "counter"}, {"energy_update_period_ms", 100.0}}}}}}}};
  auto notes = GpuNotes(Summary(meta, 2.0, {Scope("step", 0.020), Scope("epoch", 0.5)}));
  ASSERT_EQ(notes.size(), 1u) << notes[0];
  EXPECT_TRUE(Mentions(notes, "scope 'step'")) << notes[0];
  EXPECT_TRUE(Mentions(notes, "gpu:0's energy counter"));
  EXPECT_FALSE(Mentions(notes, "epoch"));
  // A run shorter than the period is said too.
  EXPECT_TRUE(Mentions(GpuNotes(Summary(meta, 0.05)), "the run"));
  // A scope that never ended has no duration to compare.
  ScopeSummary died = Scope("died", 0, 1);
  died.unfinished = 1;
  EXPECT_TRUE(GpuNotes(Summary(meta, 2.0, {died})).empty());
}

TEST(GpuNotesTest, IntegratedPowerUsesTheSamplingInterval) {
  nlohmann::json meta = {
      {"intervals_ns", {{"gpu.energy", 200000000}}},
      {"gpu", {{"devices", {{"gpu:1", {{"energy_source", "power integration"}}}}}}}};
  auto notes = GpuNotes(Summary(meta, 5.0, {Scope("tiny", 0.15)}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(Mentions(notes, "power is sampled and integrated (200.00 ms)")) << notes[0];
}

TEST(GpuNotesTest, LostUnknownAndUnsupported) {
  nlohmann::json meta = {{"gpu",
                          {{"devices",
                            {{"gpu:0",
                              {{"lost_at_s", 0.5},
                               {"lost_reason", "NVML_ERROR_GPU_IS_LOST"},
                               {"energy_tree_unknown", "other processes share gpu:0"}}}}},
                           {"unsupported", {{"gpu@gpu:0/mig:1", "NVML_ERROR_NOT_SUPPORTED"}}}}}};
  auto notes = GpuNotes(Summary(meta, 5.0));
  EXPECT_TRUE(Mentions(notes, "gpu:0 was lost 500.00 ms into the run (NVML_ERROR_GPU_IS_LOST)"))
      << ::testing::PrintToString(notes);
  EXPECT_TRUE(Mentions(notes, "share of gpu:0's energy is unknown"));
  EXPECT_TRUE(Mentions(notes, "gpu@gpu:0/mig:1"));
}

}  // namespace
}  // namespace footprint
