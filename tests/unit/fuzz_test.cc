// Fuzzing plans, manifests and arguments (fuzz_util.h): whatever the bytes, parsing ends in a
// plan or manifest within the limits or in InvalidArgument with one printable line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "footprint/evaluate.h"
#include "footprint/experiment.h"
#include "footprint/metrics.h"
#include "fuzz_util.h"
#include "util/strings.h"

namespace footprint {
namespace {

// The plan formats' own pieces, beside fuzz::CommonTokens().
const std::vector<std::string> kPlanTokens = {
    "copies: ",
    "repetitions: ",
    "grid: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10]}",
    "mps:",
    "mig:",
    "{batch}",
    "ms",
    "h",
    "µs"};

template <typename Parse>
void FuzzPlans(const std::string& target, const std::string& path, uint32_t rng_seed, Parse parse) {
  const std::vector<std::string> seeds = fuzz::Corpus(target);
  if (seeds.empty()) return;
  std::mt19937 rng(rng_seed);
  const int n = fuzz::Iterations(20000);
  int parsed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string text =
        fuzz::Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng, kPlanTokens);
    auto plan = parse(text, path);
    if (plan.ok()) {
      ++parsed;
      EXPECT_LE(plan->run_count(), static_cast<size_t>(kMaxPlanRuns));
    } else {
      EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << plan.status().message();
      fuzz::ExpectOneInertLine(plan.status(), text);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The mutations stay close enough to the seed that some plans still parse: the fuzzing
  // reaches past the first syntax check.
  EXPECT_GT(parsed, n / 20) << "of " << n;
}

TEST(Fuzz, YamlPlans) {
  FuzzPlans("plans_yaml", "/tmp/fp-fuzz/plan.yaml", 1234,
            [](const std::string& t, auto& p) { return ParseYamlPlan(t, p); });
}

TEST(Fuzz, CsvPlans) {
  FuzzPlans("plans_csv", "/tmp/fp-fuzz/plan.csv", 5678,
            [](const std::string& t, auto& p) { return ParseCsvPlan(t, p); });
}

// The manifests of footprint evaluate: whatever the bytes, a manifest within the limits (its
// runs included) or InvalidArgument with one printable line.
TEST(Fuzz, Manifests) {
  const std::vector<std::string> seeds = fuzz::Corpus("manifests");
  if (seeds.empty()) return;
  const std::vector<std::string> tokens = {"qps: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
                                           "batch_sizes: [1, 2, 4, 8, 16, 32, 64]",
                                           "&a ",
                                           "*a",
                                           "!!binary ",
                                           "? [a, b]\n: 1\n",
                                           "single: ",
                                           "server: ",
                                           "65537",
                                           "0s"};
  std::mt19937 rng(4321);
  const int n = fuzz::Iterations(10000);
  int parsed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string text =
        fuzz::Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng, tokens);
    auto m = ParseManifest(text, "/tmp/fp-fuzz/m.yaml");
    if (m.ok()) {
      ++parsed;
      EXPECT_LE(PlanEvaluation(*m, "python3").size(), static_cast<size_t>(kMaxEvaluationRuns));
    } else {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
      fuzz::ExpectOneInertLine(m.status(), text);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(parsed, n / 20) << "of " << n;
}

// The arguments people type: durations, metric lists, KEY=VALUE pairs, shell words.
TEST(Fuzz, Arguments) {
  std::mt19937 rng(91011);
  const std::vector<std::string> seeds = {"100ms",          "1.5s", "cpu,memory",
                                          "default,perf.*", "k=v",  "a b 'c d' \"e\\\"f\""};
  const int n = fuzz::Iterations(20000);
  for (int i = 0; i < n; ++i) {
    const std::string text = fuzz::Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    if (auto d = ParseDurationNs(text); d.ok()) {
      EXPECT_GE(*d, 0) << Inert(text);
    } else {
      fuzz::ExpectOneInertLine(d.status(), text);
    }
    if (auto m = ParseMetricList(text); !m.ok()) fuzz::ExpectOneInertLine(m.status(), text);
    if (auto kv = ParseKeyValue(text, "--tag"); !kv.ok())
      fuzz::ExpectOneInertLine(kv.status(), text);
    if (auto w = SplitShellWords(text); !w.ok()) fuzz::ExpectOneInertLine(w.status(), text);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace footprint
