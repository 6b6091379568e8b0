// A seeded mutator over plans and arguments, run for a fixed budget in every test build
// (ASan and UBSan included): whatever the bytes, parsing ends in a plan within the limits or
// in InvalidArgument with one printable line — never a crash, an exception, a hang or an
// allocation the input multiplied. FP_FUZZ_ITERATIONS raises the budget by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "footprint/experiment.h"
#include "footprint/metrics.h"
#include "util/strings.h"

namespace footprint {
namespace {

constexpr const char* kYamlSeed = R"(experiment: sweep
python: python3
defaults:
  env: {OMP_NUM_THREADS: "2"}
  interval: 50ms
  intervals: {memory: 10ms}
workloads:
  - name: bs
    grid:
      batch: [32, 64]
      lr: [0.1, 0.01]
    repetitions: 2
    runs:
      - name: a
        command: [sh, -c, "echo {batch} {lr}"]
        copies: 2
        metrics: cpu,memory
        collocation: mps:50
        devices: "0"
      - command: "true --flag 'quoted words'"
        args: [x, y]
)";

constexpr const char* kCsvSeed =
    "Experiment, Workload, Status, Run, Devices, Collocation, File, Listeners, Params\n"
    "1, 1, , , 0, -, prep.sh, smi+top, --epochs 2\n"
    "1, 2, , , 0, mps:50, prep.sh, smi, \"--name 'a, b'\"\n"
    "# a comment\n"
    "2, 1, , , -, -, prep.sh, top, --lr 0.1\n";

// Pieces that reach the limits and the parsers' corners.
const std::vector<std::string> kTokens = {
    "4294967297",
    "99999999999999999999",
    "-1",
    "0",
    "100000000",
    "1e9",
    "9223372036854775807",
    "\"",
    "'",
    ",",
    ":",
    "\n",
    "- ",
    "[",
    "]",
    "{",
    "}",
    "#",
    "\x1b]0;t\a",
    "\t",
    "copies: ",
    "repetitions: ",
    "grid: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10]}",
    "mps:",
    "mig:",
    "{batch}",
    "ms",
    "h",
    "µs",
    "\r\n"};

std::string Mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = text.empty() ? 0 : pick(text.size());
    switch (pick(6)) {
      case 0:  // a byte changed
        if (!text.empty()) text[at] = static_cast<char>(pick(256));
        break;
      case 1:  // a token inserted
        text.insert(at, kTokens[pick(kTokens.size())]);
        break;
      case 2:  // a span deleted
        text.erase(at, pick(16) + 1);
        break;
      case 3: {  // a line repeated
        const size_t begin = text.rfind('\n', at), end = text.find('\n', at);
        const size_t from = begin == std::string::npos ? 0 : begin + 1;
        const std::string line = text.substr(from, end == std::string::npos ? end : end - from);
        text.insert(from, line + "\n");
        break;
      }
      case 4:  // cut short
        text.resize(at);
        break;
      default:  // a number replaced by a huge one
        if (size_t d = text.find_first_of("0123456789", at); d != std::string::npos) {
          text.replace(d, 1, kTokens[pick(2)]);
        }
        break;
    }
  }
  return text;
}

int Iterations(int fallback) {
  const char* v = std::getenv("FP_FUZZ_ITERATIONS");
  return v ? std::atoi(v) : fallback;
}

// One line a person can read: no newline, no escape or other control character.
void ExpectOneInertLine(const Status& st, const std::string& input) {
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message() << "\n" << input;
  for (char c : st.message()) {
    const auto u = static_cast<unsigned char>(c);
    ASSERT_FALSE(u < 0x20 || u == 0x7f)
        << "control character " << int{u} << " in: " << Inert(st.message()) << "\ninput:\n"
        << Inert(input);
  }
}

template <typename Parse>
void FuzzPlans(const char* seed, const std::string& path, uint32_t rng_seed, Parse parse) {
  std::mt19937 rng(rng_seed);
  const int n = Iterations(20000);
  int parsed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string text = Mutate(seed, rng);
    auto plan = parse(text, path);
    if (plan.ok()) {
      ++parsed;
      EXPECT_LE(plan->run_count(), static_cast<size_t>(kMaxPlanRuns));
    } else {
      ExpectOneInertLine(plan.status(), text);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The mutations stay close enough to the seed that some plans still parse: the fuzzing
  // reaches past the first syntax check.
  EXPECT_GT(parsed, n / 20) << "of " << n;
}

TEST(Fuzz, YamlPlans) {
  FuzzPlans(kYamlSeed, "/tmp/fp-fuzz/plan.yaml", 1234,
            [](const std::string& t, auto& p) { return ParseYamlPlan(t, p); });
}

TEST(Fuzz, CsvPlans) {
  FuzzPlans(kCsvSeed, "/tmp/fp-fuzz/plan.csv", 5678,
            [](const std::string& t, auto& p) { return ParseCsvPlan(t, p); });
}

// The arguments people type: durations, metric lists, KEY=VALUE pairs, shell words.
TEST(Fuzz, Arguments) {
  std::mt19937 rng(91011);
  const std::vector<std::string> seeds = {"100ms",          "1.5s", "cpu,memory",
                                          "default,perf.*", "k=v",  "a b 'c d' \"e\\\"f\""};
  const int n = Iterations(20000);
  for (int i = 0; i < n; ++i) {
    const std::string text = Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    if (auto d = ParseDurationNs(text); d.ok()) {
      EXPECT_GE(*d, 0) << Inert(text);
    } else {
      ExpectOneInertLine(d.status(), text);
    }
    if (auto m = ParseMetricList(text); !m.ok()) ExpectOneInertLine(m.status(), text);
    if (auto kv = ParseKeyValue(text, "--tag"); !kv.ok()) ExpectOneInertLine(kv.status(), text);
    if (auto w = SplitShellWords(text); !w.ok()) ExpectOneInertLine(w.status(), text);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace footprint
