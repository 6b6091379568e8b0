// The reproducibility record: secrets redacted, differences listed one per line.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "experiment/repro.h"

namespace footprint::experiment {
namespace {

using json = nlohmann::json;

TEST(Repro, SecretNames) {
  for (const char* name : {"GITHUB_TOKEN", "aws_secret_access_key", "DB_PASSWORD", "API_KEY",
                           "GOOGLE_APPLICATION_CREDENTIALS", "HTTP_AUTHORIZATION", "PGPASSWD"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

TEST(Repro, EnvironmentIsFootprintsWithThePlansOnTopSecretsRedacted) {
  ::setenv("FP_TEST_PLAIN", "visible", 1);
  ::setenv("FP_TEST_TOKEN", "hunter2", 1);
  json env = FilteredEnvironment({{"FP_TEST_PLAIN", "from-plan"}, {"MY_API_KEY", "abc"}});
  EXPECT_EQ(env["FP_TEST_PLAIN"], "from-plan");
  EXPECT_EQ(env["FP_TEST_TOKEN"], "<redacted>");
  EXPECT_EQ(env["MY_API_KEY"], "<redacted>");
  EXPECT_EQ(env.dump().find("hunter2"), std::string::npos);
  ::unsetenv("FP_TEST_PLAIN");
  ::unsetenv("FP_TEST_TOKEN");
}

TEST(Repro, FileSha256) {
  char path[] = "/tmp/fp_sha_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "abc";
  EXPECT_EQ(FileSha256(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ::unlink(path);
  EXPECT_EQ(FileSha256(path), "");
}

TEST(Repro, RecordOfARunWithScriptInterpreterAndInputs) {
  char dir[] = "/tmp/fp_repro_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/run.sh";
  std::ofstream(script) << "true\n";
  PlannedRun run;
  run.command = {"bash", script, "--x", "1"};
  run.params = {{"x", "1"}};
  run.env = {{"SEED", "7"}};
  run.script = script;
  run.interpreter = "bash";
  run.inputs = {script, std::string(dir) + "/missing.csv"};
  ReproCache cache;
  json r = ReproRecord(run, cache);
  EXPECT_EQ(r["command"], json(run.command));
  EXPECT_EQ(r["params"]["x"], "1");
  EXPECT_EQ(r["env"]["SEED"], "7");
  EXPECT_EQ(r["script"]["path"], script);
  EXPECT_FALSE(r["script"].contains("git"));  // not in a repository
  EXPECT_NE(r["interpreter"]["version"].get<std::string>().find("bash"), std::string::npos);
  EXPECT_EQ(r["inputs"][script], FileSha256(script));
  EXPECT_TRUE(r["inputs"][std::string(dir) + "/missing.csv"].is_null());
  EXPECT_FALSE(r.contains("driver"));  // no devices asked for
  ::unlink(script.c_str());
  ::rmdir(dir);
}

TEST(Repro, DifferencesOneLineEach) {
  json a = {{"hardware", {{"cpu_model", "X"}}},
            {"repro",
             {{"command", {"python3", "t.py"}},
              {"params", {{"lr", "0.1"}}},
              {"env", {{"PATH", "/bin"}, {"OMP_NUM_THREADS", "2"}}},
              {"script", {{"path", "t.py"}, {"git", {{"commit", "aaa"}, {"dirty", false}}}}},
              {"interpreter",
               {{"path", "/usr/bin/python3"},
                {"version", "3.11.2"},
                {"packages", {{"numpy", "1.24.2"}, {"torch", "2.0"}}}}},
              {"inputs", {{"data.csv", "11"}}}}}};
  json b = a;
  EXPECT_TRUE(ReproDifferences(a.dump(), b.dump()).empty());
  b["repro"]["params"]["lr"] = "0.01";
  b["repro"]["env"].erase("OMP_NUM_THREADS");
  b["repro"]["script"]["git"]["dirty"] = true;
  b["repro"]["interpreter"]["packages"]["numpy"] = "1.26.0";
  b["repro"]["inputs"]["data.csv"] = "22";
  b["hardware"]["cpu_model"] = "Y";
  auto d = ReproDifferences(a.dump(), b.dump());
  const std::vector<std::string> want = {
      "param lr: 0.1 vs 0.01",           "env OMP_NUM_THREADS: 2 vs (absent)",
      "script git dirty: false vs true", "package numpy: 1.24.2 vs 1.26.0",
      "input data.csv: 11 vs 22",        "hardware cpu_model: X vs Y"};
  EXPECT_EQ(d, want);
  EXPECT_TRUE(ReproDifferences("{}", b.dump()).empty());  // a run outside experiments
}

}  // namespace
}  // namespace footprint::experiment
