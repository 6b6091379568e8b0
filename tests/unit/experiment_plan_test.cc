// Plan parsing: radT's CSV (table-driven), shell-like splitting, YAML grids and repetitions,
// and the limits on what a plan file may make footprint read and build.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "experiment/plan.h"
#include "footprint/experiment.h"
#include "test_util.h"

namespace footprint {
namespace {

using Words = std::vector<std::string>;

TEST(TokenizeCsv, PaddingQuotesCommentsAndNewlinesInQuotes) {
  auto recs = experiment::TokenizeCsv(
      "# a comment\n"
      "A ,  B,C\n"
      "\n"
      "  1 , \"x, y\" , \"say \"\"hi\"\"\"\r\n"
      "2,\"two\nlines\",\n");
  ASSERT_TRUE(recs.ok()) << recs.status().message();
  ASSERT_EQ(recs->size(), 3u);
  EXPECT_EQ((*recs)[0].line, 2);
  EXPECT_EQ((*recs)[0].fields[0].value, "A");
  EXPECT_EQ((*recs)[0].fields[0].raw, "A ");
  EXPECT_EQ((*recs)[1].fields[1].value, "x, y");
  EXPECT_EQ((*recs)[1].fields[2].value, "say \"hi\"");
  EXPECT_EQ((*recs)[2].fields[1].value, "two\nlines");
  EXPECT_EQ((*recs)[2].fields[2].value, "");
  EXPECT_EQ((*recs)[2].line, 5);
  EXPECT_FALSE(experiment::TokenizeCsv("a,\"open\n").ok());
  EXPECT_FALSE(experiment::TokenizeCsv("a,\"closed\" trailing\n").ok());
}

// A folder with a script next to the plan, so relative Files resolve there.
class PlanDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fp_plan_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/train.py") << "print('hi')\n";
    std::ofstream(dir_ + "/prep.sh") << "true\n";
  }
  void TearDown() override {
    for (const char* f : {"/train.py", "/prep.sh"}) ::unlink((dir_ + f).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(PlanDir, RadtCsvTableDriven) {
  struct Case {
    std::string line;  // one data row under radT's header
    Words command;     // expected argv, with DIR for the plan's folder
    Words devices;
    Collocation::Mode mode;
    std::string mig;
    std::optional<int> pct;
  };
  const Case cases[] = {
      {"1, 1, , , 0, -, train.py, smi+top+dcgmi, --batch-size 128",
       {"python3", "DIR/train.py", "--batch-size", "128"},
       {"0"},
       Collocation::Mode::kNone,
       "",
       std::nullopt},
      {"  1 ,   2 ,ok , abc ,  0+1 ,  3g.40gb ,  prep.sh  , top ,  \"--name 'my run' -x\"  ",
       {"bash", "DIR/prep.sh", "--name", "my run", "-x"},
       {"0", "1"},
       Collocation::Mode::kMig,
       "3g.40gb",
       std::nullopt},
      {"e,w,,,GPU-1234,MPS,sleep,,0.1",
       {"sleep", "0.1"},
       {"GPU-1234"},
       Collocation::Mode::kMps,
       "",
       std::nullopt},
      {"e,w,,,0,mps:25,/bin/echo,-,\"\"\"a,b\"\" 'c d'\"",
       {"/bin/echo", "a,b", "c d"},
       {"0"},
       Collocation::Mode::kMps,
       "",
       25},
      {"e,w,,,-,-,train.py,,",
       {"python3", "DIR/train.py"},
       {},
       Collocation::Mode::kNone,
       "",
       std::nullopt},
  };
  const std::string header =
      "Experiment, Workload, Status, Run, Devices, Collocation, File,     Listeners,     Params\n";
  for (const Case& c : cases) {
    auto plan = ParseCsvPlan(header + c.line + "\n", dir_ + "/plan.csv");
    ASSERT_TRUE(plan.ok()) << c.line << ": " << plan.status().message();
    ASSERT_EQ(plan->run_count(), 1u);
    const PlannedRun& r = plan->workloads[0].runs[0];
    Words want = c.command;
    for (auto& w : want) {
      if (w.starts_with("DIR")) w = dir_ + w.substr(3);
    }
    EXPECT_EQ(r.command, want) << c.line;
    EXPECT_EQ(r.devices, c.devices) << c.line;
    EXPECT_EQ(r.collocation.mode, c.mode) << c.line;
    EXPECT_EQ(r.collocation.mig_profile, c.mig) << c.line;
    EXPECT_EQ(r.mps_thread_percentage, c.pct) << c.line;
  }
}

TEST_F(PlanDir, RadtCsvGroupsWorkloadsInOrderWithStableKeys) {
  auto plan = ParseCsvPlan(
      "Experiment, Workload, Status, Run, Devices, Collocation, File, Listeners, Params\n"
      "1, 1, , , 0, -, train.py, smi+top, --batch-size 128\n"
      "1, 2, , , 0, -, train.py, smi+top, --batch-size 64\n"
      "1, 1, , , 1, -, train.py, smi+top, --batch-size 256\n",
      dir_ + "/plan.csv");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->workloads.size(), 2u);
  ASSERT_EQ(plan->workloads[0].runs.size(), 2u);
  EXPECT_EQ(plan->workloads[0].runs[0].key, "1/1/1");
  EXPECT_EQ(plan->workloads[0].runs[1].key, "1/1/2");
  EXPECT_EQ(plan->workloads[0].runs[1].csv_row, 2);
  EXPECT_EQ(plan->workloads[1].runs[0].key, "1/2/1");
  EXPECT_EQ(plan->workloads[0].runs[0].params.at("Params"), "--batch-size 128");
  EXPECT_EQ(plan->workloads[0].runs[0].inputs, Words{dir_ + "/train.py"});
  // smi+top: GPU and tree metrics.
  auto expected = ParseMetricList(
      "cpu,memory,threads,processes,gpu,gpu.memory,gpu.memory.tree,gpu.power,gpu.energy,"
      "gpu.sm_clock,gpu.temperature");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(plan->workloads[0].runs[0].metrics, *expected);
}

TEST_F(PlanDir, RadtCsvErrorsNameTheLine) {
  const std::string header = "Experiment, Workload, File, Params\n";
  struct Case {
    std::string text;
    std::string needle;
  };
  const Case cases[] = {
      {"Experiment, Workload, Bogus\n1,1,x\n", "unknown column 'Bogus'"},
      {"Experiment, File\n1,x\n", "'workload' is missing"},
      {header + "1,1,x,'open\n", "plan.csv:2: Params: unterminated"},
      {header + "1,1,x,a,b\n", "plan.csv:2: more fields"},
      {header + "1,,x,\n", "plan.csv:2: Experiment, Workload and File must not be empty"},
      {"Experiment, Workload, File, Collocation\n1,1,x,shared\n", "'shared' is not"},
      {"Experiment, Workload, File, Collocation\n1,1,x,mps:0\n", "1..100"},
      {"Experiment, Workload, File, Listeners\n1,1,x,smi+bogus\n", "Listeners 'smi+bogus'"},
      {"Experiment, Workload, File\n", "no runs"},
  };
  for (const Case& c : cases) {
    auto plan = ParseCsvPlan(c.text, dir_ + "/plan.csv");
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.needle), std::string::npos) << plan.status().message();
  }
}

TEST_F(PlanDir, YamlGridExpandsInOrderWithRepetitionsAndCopies) {
  auto plan = ParseYamlPlan(R"(
experiment: sweep
defaults:
  env: {OMP_NUM_THREADS: "2"}
  interval: 50ms
workloads:
  - name: bs
    grid:
      batch: [32, 64]
      lr: [0.1, 0.01]
    repetitions: 2
    runs:
      - name: a
        file: train.py
        args: --epochs 1 --tag run-{batch}
        copies: 2
        metrics: cpu,memory
        intervals: {memory: 10ms}
        env: {SEED: "{lr}"}
  - name: tail
    runs:
      - command: [sleep, "0.1"]
        devices: [0, 1]
        collocation: mps
        mps_thread_percentage: 50
        inputs: [data.csv]
)",
                            dir_ + "/plan.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // 2 x 2 grid points x 2 repetitions, then the tail.
  ASSERT_EQ(plan->workloads.size(), 9u);
  const char* labels[] = {"bs[batch=32,lr=0.1]#1",  "bs[batch=32,lr=0.1]#2",
                          "bs[batch=32,lr=0.01]#1", "bs[batch=32,lr=0.01]#2",
                          "bs[batch=64,lr=0.1]#1",  "bs[batch=64,lr=0.1]#2",
                          "bs[batch=64,lr=0.01]#1", "bs[batch=64,lr=0.01]#2"};
  for (size_t i = 0; i < 8; ++i) {
    const PlannedWorkload& w = plan->workloads[i];
    EXPECT_EQ(w.workload, labels[i]);
    ASSERT_EQ(w.runs.size(), 2u);  // copies: 2, started together
    EXPECT_EQ(w.runs[0].key, "sweep/" + std::string(labels[i]) + "/a.1");
    EXPECT_EQ(w.runs[1].key, "sweep/" + std::string(labels[i]) + "/a.2");
  }
  const PlannedRun& r = plan->workloads[2].runs[0];  // batch=32, lr=0.01
  // {batch} is substituted; lr (used only in env) is not appended.
  EXPECT_EQ(r.command, (Words{"python3", dir_ + "/train.py", "--epochs", "1", "--tag", "run-32"}));
  EXPECT_EQ(r.env.at("SEED"), "0.01");
  EXPECT_EQ(r.env.at("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(r.params.at("batch"), "32");
  EXPECT_EQ(r.params.at("lr"), "0.01");
  EXPECT_EQ(r.interval_ns, 50'000'000);
  EXPECT_EQ(r.metric_interval_ns.at(MetricId::kMemory), 10'000'000);
  auto cm = ParseMetricList("cpu,memory");
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(r.metrics, *cm);

  const PlannedRun& t = plan->workloads[8].runs[0];
  EXPECT_EQ(t.key, "sweep/tail/1");
  EXPECT_EQ(t.command, (Words{"sleep", "0.1"}));
  EXPECT_EQ(t.devices, (Words{"0", "1"}));
  EXPECT_EQ(t.collocation.mode, Collocation::Mode::kMps);
  EXPECT_EQ(t.mps_thread_percentage, 50);
  EXPECT_EQ(t.inputs, Words{dir_ + "/data.csv"});
}

TEST_F(PlanDir, YamlParamsWithoutPlaceholdersAreAppended) {
  auto plan = ParseYamlPlan(R"(
experiment: e
python: /usr/bin/python3
workloads:
  - grid: {size: [1, 2]}
    runs:
      - file: train.py
        params: {mode: fast}
)",
                            dir_ + "/plan.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->workloads.size(), 2u);
  EXPECT_EQ(plan->workloads[1].runs[0].command,
            (Words{"/usr/bin/python3", dir_ + "/train.py", "--mode", "fast", "--size", "2"}));
  EXPECT_EQ(plan->workloads[1].workload, "1[size=2]");
}

TEST_F(PlanDir, YamlErrors) {
  struct Case {
    std::string text;
    std::string needle;
  };
  const Case cases[] = {
      {"experiment: e\n", "needs 'experiment: NAME' and 'workloads:'"},
      {"experiment: e\nworkloads:\n  - name: w\n", "needs 'runs:'"},
      {"experiment: e\nworkloads:\n  - runs:\n      - args: x\n", "needs 'file:' or 'command:'"},
      {"experiment: e\nworkloads:\n  - repetitions: 0\n    runs: [{command: true}]\n",
       "repetitions must be a whole number from 1 to 100000 (got '0')"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, interval: fast}]\n", "interval"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, name: x}, {command: true, name: "
       "x}]\n",
       "the key 'e/1/x'"},
      {"experiment: [unclosed\n", "not valid YAML"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, colocation: mps}]\n",
       "unknown key 'colocation'"},
      // Once accepted silently: a top-level typo, and intervals that only failed at run time.
      {"experiment: e\nworkload: x\nworkloads:\n  - runs: [{command: true}]\n",
       "line 2: unknown key 'workload' (known: defaults, experiment, python, workloads)"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, interval: 0}]\n",
       "line 3: interval must be between 1ms and 1h (got 0 s)"},
      {"experiment: e\ndefaults: {interval: 500us}\nworkloads:\n  - runs: [{command: true}]\n",
       "line 2: interval must be between 1ms and 1h (got 0.0005 s)"},
      {"experiment: e\nworkloads:\n  - interval: 2h\n    runs: [{command: true}]\n",
       "line 3: interval must be between 1ms and 1h"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, intervals: {memory: 0ms}}]\n",
       "intervals.memory must be between 1ms and 1h (got 0 s)"},
      {"experiment: e\nworkloads:\n  - runs: [{command: true, intervals: {memroy: 1s}}]\n",
       "line 3: unknown metric 'memroy'"},
      {"experiment: e\ndefaults: fast\nworkloads:\n  - runs: [{command: true}]\n",
       "'defaults' must be a mapping"},
      {"experiment: e\nworkloads:\n  - runs: []\n", "needs 'runs:'"},
  };
  for (const Case& c : cases) {
    auto plan = ParseYamlPlan(c.text, dir_ + "/plan.yaml");
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_NE(plan.status().message().find(c.needle), std::string::npos)
        << c.text << " -> " << plan.status().message();
  }
}

// What a plan multiplies is limited and checked before anything is expanded: each of these
// once ended in std::bad_alloc after 16-19 s, ran for minutes, or wrapped to 1.
TEST_F(PlanDir, YamlLimitsAreCheckedBeforeExpanding) {
  struct Case {
    std::string text;
    std::string needle;
  };
  std::string grid = "experiment: e\nworkloads:\n  - grid:\n";
  for (int k = 0; k < 8; ++k) grid += "      k" + std::to_string(k) + ": [0,1,2,3,4,5,6,7,8,9]\n";
  grid += "    runs: [{command: true}]\n";
  const Case cases[] = {
      {"experiment: e\nworkloads:\n  - runs: [{command: true, copies: 100000000}]\n",
       "copies must be a whole number from 1 to 1000 (got '100000000')"},
      {grid, "the grid has more than 100000 combinations"},
      {"experiment: e\nworkloads:\n  - repetitions: 1000000\n    runs: [{command: true}]\n",
       "repetitions must be a whole number from 1 to 100000 (got '1000000')"},
      {"experiment: e\nworkloads:\n  - repetitions: 4294967297\n    runs: [{command: true}]\n",
       "(got '4294967297')"},
      {"experiment: e\nworkloads:\n  - repetitions: 1000\n    runs: [{command: true, copies: "
       "101}]\n",
       "makes 1 combination(s) x 101 run(s) x 1000 repetition(s): more than 100000 runs"},
      {"experiment: e\nworkloads:\n  - repetitions: 60000\n    runs: [{command: true}]\n"
       "  - repetitions: 40001\n    runs: [{command: true}]\n",
       "more than 100000 runs in the plan"},
  };
  for (const Case& c : cases) {
    auto plan = ParseYamlPlan(c.text, dir_ + "/plan.yaml");
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.needle), std::string::npos)
        << c.text << " -> " << plan.status().message();
  }
  // At the limit, a plan is made whole: 100,000 runs, each workload found in log time.
  auto at_limit = ParseYamlPlan(
      "experiment: e\nworkloads:\n  - repetitions: 50000\n    runs: [{command: true}, "
      "{command: true, copies: 1}]\n",
      dir_ + "/plan.yaml");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(at_limit->run_count(), 100'000u);
  EXPECT_EQ(at_limit->workloads.size(), 50'000u);
}

TEST_F(PlanDir, CsvLimitsAndErrorsOnOneLine) {
  std::string rows = "Experiment, Workload, File\n";
  for (int r = 0; r < 100'000; ++r) rows += "e," + std::to_string(r) + ",prep.sh\n";
  auto at_limit = ParseCsvPlan(rows, dir_ + "/plan.csv");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(at_limit->workloads.size(), 100'000u);
  auto beyond = ParseCsvPlan(rows + "e,x,prep.sh\n", dir_ + "/plan.csv");
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find(
                "line 100002: more than 100000 rows; a plan holds at most 100000 runs"),
            std::string::npos)
      << beyond.status().message();
  // Refused at the first field past radT's ten columns, before the rest is made: a line of
  // commas once took ~100 bytes a field.
  auto commas = ParseCsvPlan(rows.substr(0, 100) + std::string(1 << 20, ','), dir_ + "/p.csv");
  ASSERT_FALSE(commas.ok());
  EXPECT_NE(commas.status().message().find("more than 10 fields; quote a field that holds a comma"),
            std::string::npos)
      << commas.status().message();
  // A quoted field spanning lines, then text after its quote: the record's first line is
  // named, and the newline is shown, not printed.
  auto bad = ParseCsvPlan("Experiment, Workload, File\n1,\"a\nb\"x,prep.sh\n", dir_ + "/p.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2: text after the closing quote (\"a\\nb\"x)"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
}

// Spreadsheets save UTF-8 CSV with a byte order mark first; it was read as part of the first
// column's name ("unknown column '\xEF\xBB\xBFExperiment'").
TEST_F(PlanDir, CsvWithAByteOrderMarkParses) {
  auto plan = ParseCsvPlan(
      "\xEF\xBB\xBF"
      "Experiment, Workload, File\ne, w, prep.sh\n",
      dir_ + "/plan.csv");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->workloads[0].experiment, "e");
  EXPECT_EQ(plan->workloads[0].runs[0].command, (Words{"bash", dir_ + "/prep.sh"}));
}

// A YAML plan's nodes are counted as it is parsed, before yaml-cpp's tree (~500 bytes a node)
// is built: 200,000 listed workloads once took 663 MB and 17 s before their refusal.
TEST_F(PlanDir, YamlNodesAreCountedBeforeTheTreeIsBuilt) {
  std::string listed = "experiment: e\nworkloads:\n";
  for (int w = 0; w < 100'000; ++w) listed += "  - runs: [{command: true}]\n";
  auto many = ParseYamlPlan(listed, dir_ + "/plan.yaml");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("plan.yaml: line 83335: more than 500000 YAML nodes"),
            std::string::npos)
      << many.status().message();
}

// Files that are not regular are refused before they are opened (a FIFO blocked the reader
// forever, /dev/zero was read until memory ran out), and a plan over kMaxPlanBytes unread.
TEST(LoadPlan, RefusesFifosDevicesFoldersAndHugeFiles) {
  testing::TempDir dir;
  const std::string fifo = dir.File("plan.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string path;
    std::string needle;
  };
  const Case cases[] = {
      {fifo, "the plan " + fifo + " is a FIFO (a pipe, which may never end), not a file"},
      {"/dev/zero",
       "the plan /dev/zero is a device, not a file footprint can read whole: name a "
       "regular file (save the text to one first)"},
      {dir.path(), "the plan " + dir.path() + " is a folder"},
  };
  for (const Case& c : cases) {
    auto plan = LoadPlan(c.path);
    ASSERT_FALSE(plan.ok()) << c.path;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.needle), std::string::npos) << plan.status().message();
  }
  const std::string huge = dir.File("huge.csv");
  std::ofstream(huge) << "Experiment, Workload, File\n";
  ASSERT_EQ(::truncate(huge.c_str(), static_cast<off_t>(kMaxPlanBytes) + 1), 0);
  auto plan = LoadPlan(huge);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("the plan " + huge + " is larger than 16.0 MiB"),
            std::string::npos)
      << plan.status().message();
}

TEST(LoadPlan, RefusesUnknownExtensionsAndMissingFiles) {
  EXPECT_EQ(LoadPlan("/nonexistent/plan.csv").status().code(), StatusCode::kNotFound);
  char tmpl[] = "/tmp/fp_plan_XXXXXX.txt";
  int fd = ::mkstemps(tmpl, 4);
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto plan = LoadPlan(tmpl);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(".csv"), std::string::npos);
  ::unlink(tmpl);
}

}  // namespace
}  // namespace footprint
