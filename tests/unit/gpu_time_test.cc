// GPU time of scopes (Benchmark::BeginGpuScope, GpuScope) against the fake CUDA driver built
// by the tests (tests/fakes/fake_cuda.c), loaded through FOOTPRINT_CUDA_LIBRARY: this machine
// has no GPU. The fake's GPU clock is advanced by the test, so elapsed times are scripted; its
// work completes when the test says so.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "fake_env.h"
#include "footprint/api.h"
#include "footprint/report.h"
#include "test_util.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using testing::TempDir;

// The fake driver's controls (the same library instance footprint loads: dlopen of one path
// returns one handle).
struct FakeCuda {
  FakeCuda() {
    handle = ::dlopen(FP_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << ::dlerror();
    make_current = Sym<void (*)(int)>("fake_cuda_make_current");
    set_initialized = Sym<void (*)(int)>("fake_cuda_set_initialized");
    advance_ms = Sym<void (*)(double)>("fake_cuda_advance_ms");
    set_complete = Sym<void (*)(int)>("fake_cuda_set_complete");
    live_events = Sym<long (*)()>("fake_cuda_live_events");
    last_stream = Sym<void* (*)()>("fake_cuda_last_stream");
    make_current(1);
    set_initialized(1);
    set_complete(1);
  }
  ~FakeCuda() {
    make_current(0);
    set_complete(1);
  }
  template <typename F>
  F Sym(const char* name) {
    return reinterpret_cast<F>(::dlsym(handle, name));
  }
  void* handle;
  void (*make_current)(int);
  void (*set_initialized)(int);
  void (*advance_ms)(double);
  void (*set_complete)(int);
  long (*live_events)();
  void* (*last_stream)();
};

class GpuTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.real_clock = true;
    env_.libraries["libcuda.so.1"] = FP_FAKE_CUDA;
  }

  std::unique_ptr<Benchmark> Open() {
    BenchmarkOptions o;
    o.db = dir_.File("fp.db");
    o.join = false;
    o.flush_interval_ns = 20'000'000;
    o.env = &env_;
    auto bm = Benchmark::Open(o);
    EXPECT_TRUE(bm.ok()) << bm.status().message();
    return std::move(bm).value();
  }
  // The run's values named gpu_time_s, with the names of their scopes.
  std::vector<std::pair<ValueRecord, std::string>> GpuTimes(const std::string& run_id) {
    auto store = OpenStore(dir_.File("fp.db"), {.read_only = true});
    EXPECT_TRUE(store.ok());
    auto runs = (*store)->ListRuns();
    std::vector<std::pair<ValueRecord, std::string>> out;
    for (const RunRecord& r : *runs) {
      if (r.id != run_id) continue;
      auto s = SummarizeRun(**store, r);
      EXPECT_TRUE(s.ok());
      for (const ValueRecord& v : s->values) {
        if (v.name != "gpu_time_s") continue;
        EXPECT_TRUE(v.scope_id.has_value());
        out.emplace_back(v, v.scope_id ? s->scope_names.at(*v.scope_id) : "");
      }
    }
    return out;
  }

  TempDir dir_;
  FakeEnv env_;
};

TEST_F(GpuTimeTest, ScriptedGpuTimesLandOnTheirScopes) {
  FakeCuda cuda;
  auto bm = Open();
  static const ScopeName kKernel("kernel"), kStep("step");
  int stream_tag = 0;  // any pointer the program hands over as its stream
  for (double ms : {1.0, 2.5, 4.0}) {
    Scope outer(*bm, kStep);
    GpuScope s(*bm, kKernel, &stream_tag);
    cuda.advance_ms(ms);  // the GPU works this long between the two events
  }
  EXPECT_EQ(cuda.last_stream(), &stream_tag);
  {
    FOOTPRINT_GPU_SCOPE("macro");
    cuda.advance_ms(0.5);
  }  // the current benchmark
  EXPECT_TRUE(bm->GpuTiming().ok());
  const std::string run_id = bm->run_id();
  ASSERT_TRUE(bm->Close().ok());

  auto times = GpuTimes(run_id);
  ASSERT_EQ(times.size(), 4u);
  std::vector<double> kernel;
  for (const auto& [v, scope] : times) {
    ASSERT_TRUE(v.value.has_value());
    if (scope == "kernel") kernel.push_back(*v.value);
    if (scope == "macro") {
      EXPECT_NEAR(*v.value, 0.0005, 1e-7);
    }
  }
  ASSERT_EQ(kernel.size(), 3u);
  std::sort(kernel.begin(), kernel.end());
  EXPECT_NEAR(kernel[0], 0.001, 1e-7);
  EXPECT_NEAR(kernel[1], 0.0025, 1e-7);
  EXPECT_NEAR(kernel[2], 0.004, 1e-7);

  auto store = OpenStore(dir_.File("fp.db"), {.read_only = true});
  auto run = (*store)->GetRun(run_id);
  ASSERT_TRUE(run.ok());
  auto meta = json::parse(run->meta_json);
  EXPECT_EQ(meta["gpu_time"]["timed_scopes"], 4);
  EXPECT_TRUE(meta["gpu_time"]["unavailable"].empty());
  // show --json carries them as values of their scopes.
  auto summary = SummarizeRun(**store, *run);
  json shown = json::parse(SummaryJson(*summary));
  int named = 0;
  for (const json& v : shown["values"])
    named += v["name"] == "gpu_time_s" && v["scope"] == "kernel";
  EXPECT_EQ(named, 3);
  bm.reset();
  EXPECT_EQ(cuda.live_events(), 0);  // pooled events are destroyed with the benchmark
}

TEST_F(GpuTimeTest, ResolvedWhenTheGpuCatchesUpEvenAfterTheScopeWasStored) {
  FakeCuda cuda;
  auto bm = Open();
  static const ScopeName kKernel("slow kernel");
  cuda.set_complete(0);  // queued, not run yet
  {
    GpuScope s(*bm, kKernel);
    cuda.advance_ms(7.0);
  }
  ASSERT_TRUE(bm->Flush().ok());
  // The scope is stored and ended; its GPU time is not known yet, and nothing made it up.
  EXPECT_TRUE(GpuTimes(bm->run_id()).empty());
  ASSERT_TRUE(bm->Flush().ok());
  EXPECT_TRUE(GpuTimes(bm->run_id()).empty());
  cuda.set_complete(1);
  ASSERT_TRUE(bm->Flush().ok());
  auto times = GpuTimes(bm->run_id());
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].second, "slow kernel");
  EXPECT_NEAR(*times[0].first.value, 0.007, 1e-7);
  ASSERT_TRUE(bm->Close().ok());
}

TEST_F(GpuTimeTest, CloseWaitsForOutstandingGpuWork) {
  FakeCuda cuda;
  auto bm = Open();
  static const ScopeName kKernel("kernel");
  cuda.set_complete(0);
  {
    GpuScope s(*bm, kKernel);
    cuda.advance_ms(3.0);
  }
  const std::string run_id = bm->run_id();
  ASSERT_TRUE(bm->Close().ok());  // synchronizes the end event
  auto times = GpuTimes(run_id);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_NEAR(*times[0].first.value, 0.003, 1e-7);
}

TEST_F(GpuTimeTest, NoContextOnTheThreadGivesTheReasonOnceAndNoNumber) {
  FakeCuda cuda;
  auto bm = Open();
  static const ScopeName kKernel("kernel");
  std::thread([&] {  // a thread that never used CUDA
    for (int i = 0; i < 3; ++i) GpuScope s(*bm, kKernel);
    Status st = bm->GpuTiming();
    EXPECT_EQ(st.code(), StatusCode::kUnsupported);
    EXPECT_NE(st.message().find("no current CUDA context"), std::string::npos) << st.message();
  })
      .join();
  { GpuScope s(*bm, kKernel); }  // the main thread has one
  EXPECT_TRUE(bm->GpuTiming().ok());
  const std::string run_id = bm->run_id();
  ASSERT_TRUE(bm->Close().ok());
  auto times = GpuTimes(run_id);
  ASSERT_EQ(times.size(), 2u);  // one reason, one time
  int reasons = 0;
  for (const auto& [v, scope] : times) {
    EXPECT_EQ(scope, "kernel");
    if (!v.value) {
      ++reasons;
      auto data = json::parse(v.data_json);
      EXPECT_NE(data["unavailable"].get<std::string>().find("no current CUDA context"),
                std::string::npos);
    }
  }
  EXPECT_EQ(reasons, 1);
  auto store = OpenStore(dir_.File("fp.db"), {.read_only = true});
  auto scopes = (*store)->ListScopes(run_id);
  EXPECT_EQ(scopes->size(), 4u);  // every scope keeps its wall time
}

TEST_F(GpuTimeTest, UninitialisedDriverSaysSo) {
  FakeCuda cuda;
  cuda.set_initialized(0);
  auto bm = Open();
  static const ScopeName kKernel("kernel");
  { GpuScope s(*bm, kKernel); }
  Status st = bm->GpuTiming();
  EXPECT_NE(st.message().find("initialization error"), std::string::npos) << st.message();
  ASSERT_TRUE(bm->Close().ok());
}

TEST_F(GpuTimeTest, NoDriverLibrary) {
  env_.libraries["libcuda.so.1"] = "/nonexistent/libcuda.so.1";
  auto bm = Open();
  static const ScopeName kKernel("kernel");
  { GpuScope s(*bm, kKernel); }
  { GpuScope s(*bm, kKernel); }
  Status st = bm->GpuTiming();
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("cannot load the CUDA driver /nonexistent/libcuda.so.1"),
            std::string::npos)
      << st.message();
  const std::string run_id = bm->run_id();
  ASSERT_TRUE(bm->Close().ok());
  auto times = GpuTimes(run_id);
  ASSERT_EQ(times.size(), 1u);  // the reason, once
  EXPECT_FALSE(times[0].first.value.has_value());
}

TEST_F(GpuTimeTest, LibraryWithoutTheDriverApi) {
  env_.libraries["libcuda.so.1"] = "libm.so.6";
  auto bm = Open();
  static const ScopeName kKernel("kernel");
  { GpuScope s(*bm, kKernel); }
  Status st = bm->GpuTiming();
  EXPECT_NE(st.message().find("libm.so.6 lacks cuCtxGetCurrent"), std::string::npos)
      << st.message();
  ASSERT_TRUE(bm->Close().ok());
}

TEST_F(GpuTimeTest, LateValuesOfHeldScopes) {
  auto bm = Open();
  static const ScopeName kStage("stage");
  uint64_t h = bm->BeginScope(kStage);
  bm->HoldScope(h);
  bm->EndScope(h);
  ASSERT_TRUE(bm->Flush().ok());  // the scope is stored and ended
  ASSERT_TRUE(bm->LogToScope(h, "gpu_time_s", 0.25, R"({"source": "test"})").ok());
  EXPECT_EQ(bm->LogToScope(h, "x", 1.0, "{oops").code(), StatusCode::kInvalidArgument);
  const std::string run_id = bm->run_id();
  ASSERT_TRUE(bm->Close().ok());
  auto times = GpuTimes(run_id);
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].second, "stage");
  EXPECT_EQ(*times[0].first.value, 0.25);
}

}  // namespace
}  // namespace footprint
