#include "footprint/metrics.h"

#include <gtest/gtest.h>

#include <set>

namespace footprint {
namespace {

TEST(Metrics, CatalogueIsIndexedByIdWithUniqueNames) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kMetricCount; ++i) {
    EXPECT_EQ(static_cast<size_t>(MetricCatalogue()[i].id), i);
    EXPECT_TRUE(names.insert(MetricCatalogue()[i].name).second);
    EXPECT_FALSE(MetricCatalogue()[i].unit.empty());
  }
}

TEST(Metrics, DesignNamesAndUnits) {
  EXPECT_EQ(InfoOf(*MetricByName("cpu")).unit, "%");
  EXPECT_EQ(InfoOf(*MetricByName("memory")).unit, "bytes");
  EXPECT_EQ(InfoOf(*MetricByName("io.read")).unit, "bytes/s");
  EXPECT_EQ(InfoOf(*MetricByName("sys.memory")).entity, "system");
}

TEST(Metrics, ParseList) {
  auto set = ParseMetricList("cpu, memory");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->count(), 2u);
  EXPECT_TRUE(set->test(static_cast<size_t>(MetricId::kCpu)));
  EXPECT_EQ(ParseMetricList("all")->count(), kMetricCount);
  auto bad = ParseMetricList("cpu,gpu.bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("gpu.bogus"), std::string::npos);
  EXPECT_NE(bad.status().message().find("known metrics: cpu"), std::string::npos);
  EXPECT_FALSE(ParseMetricList(" , ").ok());
}

TEST(MetricsTest, OptInMetricsOnlyWhenAskedFor) {
  const MetricSet defaults = DefaultMetrics();
  EXPECT_TRUE(defaults.test(static_cast<size_t>(MetricId::kGpuEnergy)));
  EXPECT_FALSE(defaults.test(static_cast<size_t>(MetricId::kPerfCycles)));
  EXPECT_FALSE(defaults.test(static_cast<size_t>(MetricId::kEnergyCpu)));
  EXPECT_EQ(*ParseMetricList("default"), defaults);

  auto perf = ParseMetricList("default,perf.*");
  ASSERT_TRUE(perf.ok());
  EXPECT_EQ(perf->count(), defaults.count() + 3);
  auto gpu = ParseMetricList("gpu*");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->count(), 20u);  // NVML's 9 and the 11 activity metrics
  EXPECT_FALSE(gpu->test(static_cast<size_t>(MetricId::kCpu)));
  auto none = ParseMetricList("disk*");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("disk"), std::string::npos);
}

}  // namespace
}  // namespace footprint
