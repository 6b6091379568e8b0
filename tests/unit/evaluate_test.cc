// footprint evaluate's pure parts: version constraints, manifests, the runs they plan, and the
// limits on what a manifest may make footprint read and build.
#include "footprint/evaluate.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "fake_env.h"
#include "test_util.h"

namespace footprint {
namespace {

TEST(VersionSatisfies, ComparesPartsAsNumbers) {
  EXPECT_TRUE(*VersionSatisfies("1.13.0+cpu", ">=1.13,<3"));
  EXPECT_TRUE(*VersionSatisfies("1.13", "==1.13.0"));
  EXPECT_TRUE(*VersionSatisfies("1.9.1", "<1.13"));  // 9 < 13, though "9" > "1" as text
  EXPECT_FALSE(*VersionSatisfies("2.1.0a0", "<2.1"));
  EXPECT_FALSE(*VersionSatisfies("1.13.1", "!=1.13.1"));
  EXPECT_TRUE(*VersionSatisfies("0.14.1", ""));
  EXPECT_FALSE(VersionSatisfies("1.0", "~=1.0").ok());
  EXPECT_FALSE(VersionSatisfies("1.0", ">=").ok());
  EXPECT_TRUE(*VersionSatisfies("1.99999999999999999999", "==1"));  // a part past int64 ends it
}

class ManifestTest : public ::testing::Test {
 protected:
  Result<EvaluationManifest> Load(const std::string& text) {
    const std::string path = dir_.File("m.yaml");
    std::ofstream(path) << text;
    return LoadManifest(path);
  }
  testing::TempDir dir_;
};

TEST_F(ManifestTest, ContainerWrapsTheAgentWithoutNetworkAndWithItsFoldersReadOnly) {
  std::ofstream(dir_.File("net.pt")) << "weights";
  ::setenv("PYTHONPATH", "/opt/fp/python", 1);
  auto m = Load("model: {file: net.pt, sha256: " + std::string(64, '0') + "}\n" +
                "scenarios: {offline: {}}\n"
                "container:\n"
                "  image: localhost/torch:1\n"
                "  engine: docker\n"
                "  engine_options: [--context, lab]\n"
                "  run_options: [--gpus, all]\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<std::string> expected_start = {"docker",
                                                   "--context",
                                                   "lab",
                                                   "run",
                                                   "--rm",
                                                   "-i",
                                                   "--network",
                                                   "none",
                                                   "-e",
                                                   "PYTHONPATH=/opt/fp/python",
                                                   "-v",
                                                   dir_.path() + ":" + dir_.path() + ":ro",
                                                   "-v",
                                                   "/opt/fp/python:/opt/fp/python:ro",
                                                   "--gpus",
                                                   "all",
                                                   "localhost/torch:1",
                                                   "env",
                                                   "PYTHONSAFEPATH=1",
                                                   "py",
                                                   "-m",
                                                   "footprint.agent"};
  for (const auto& command : {DescribeCommand(*m, "py"), PlanEvaluation(*m, "py")[0].command}) {
    ASSERT_GT(command.size(), expected_start.size());
    EXPECT_EQ(std::vector<std::string>(command.begin(), command.begin() + expected_start.size()),
              expected_start);
  }
  EXPECT_EQ(DescribeCommand(*m, "py").back(), "--describe");
  ::unsetenv("PYTHONPATH");
  // Without an image the agent runs on the host, as before.
  auto host = Load("model: {torchvision: resnet18}\nscenarios: {offline: {}}\n");
  ASSERT_TRUE(host.ok());
  // PYTHONSAFEPATH: a footprint folder where evaluate runs is not imported as the agent.
  const std::vector<std::string> on_host = PlanEvaluation(*host, "py")[0].command;
  EXPECT_EQ(std::vector<std::string>(on_host.begin(), on_host.begin() + 5),
            (std::vector<std::string>{"env", "PYTHONSAFEPATH=1", "py", "-m", "footprint.agent"}));
}

TEST_F(ManifestTest, PlansOneRunPerScenarioBatchAndRate) {
  auto m = Load(
      "model: {torchvision: resnet18}\n"
      "framework: {threads: 2}\n"
      "batch_sizes: [1, 8]\n"
      "scenarios:\n"
      "  single: {duration: 1s}\n"
      "  multi: {}\n"
      "  server: {qps: [10, 20.5], latency_bound: 50ms}\n"
      "  offline: {batch_sizes: [16]}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "m");
  EXPECT_EQ(m->sha256.size(), 64u);
  const auto runs = PlanEvaluation(*m, "py");
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(r.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"m-single-b1", "m-multi-b1", "m-multi-b8", "m-server-b1-q10",
                                      "m-server-b1-q20.5", "m-server-b8-q10", "m-server-b8-q20.5",
                                      "m-offline-b16"}));
  EXPECT_EQ(runs[0].load.min_duration_ns, 1'000'000'000);
  EXPECT_EQ(runs[2].load.samples_per_query, 8);  // multi: the batch size, unless set
  EXPECT_DOUBLE_EQ(runs[4].load.qps, 20.5);
  EXPECT_DOUBLE_EQ(*runs[4].load.latency_bound_s, 0.050);
  EXPECT_EQ(runs[4].command[2], "py");     // env PYTHONSAFEPATH=1 py -m footprint.agent ...
  EXPECT_EQ(runs[4].command.back(), "1");  // --max-batch 1
}

TEST_F(ManifestTest, SaysWhereItIsWrong) {
  auto m = Load("model: {torchvision: resnet18}\nscenarios:\n  single: {min_queries: 0}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("m.yaml: line 3: 'scenarios.single.min_queries' must be"),
            std::string::npos)
      << m.status().message();
  auto bare_server = Load("model: {torchvision: resnet18}\nscenarios:\n  server:\n");
  ASSERT_FALSE(bare_server.ok());
  EXPECT_NE(bare_server.status().message().find("needs 'qps"), std::string::npos);
  auto list_key = Load("model: {torchvision: resnet18}\n? [a, b]\n: 1\nscenarios: {single: {}}\n");
  ASSERT_FALSE(list_key.ok());
  EXPECT_EQ(list_key.status().code(), StatusCode::kInvalidArgument);
  auto timeout = Load("model: {torchvision: x}\nscenarios: {single: {query_timeout: 0s}}\n");
  ASSERT_FALSE(timeout.ok());
  EXPECT_NE(timeout.status().message().find("--query-timeout"), std::string::npos);
  auto both = Load("model: {torchvision: resnet18, file: x.pt}\nscenarios: {single: {}}\n");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("either"), std::string::npos);
  // Found by Fuzz.Manifests: JSON's dump threw on bytes that are not UTF-8, out of evaluate.
  auto latin1 =
      Load("model: {torchvision: resnet18, args: {tag: caf\xe9}}\nscenarios: {multi: {}}\n");
  ASSERT_FALSE(latin1.ok());
  EXPECT_NE(latin1.status().message().find("m.yaml: line 1: holds text that is not UTF-8"),
            std::string::npos)
      << latin1.status().message();
}

TEST_F(ManifestTest, TheModelsGraphIsFoundNextToTheManifestAndMustBeReadable) {
  auto m = Load(
      "model: {torchvision: resnet18, graph: r18.onnx, family: ResNet}\n"
      "scenarios: {multi: {}}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->graph_file, dir_.File("r18.onnx"));
  EXPECT_EQ(m->family, "ResNet");
  const Status missing = CheckModelFile(*m, Env::Default());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("cannot read model.graph " + dir_.File("r18.onnx")),
            std::string::npos)
      << missing.message();
  std::ofstream(dir_.File("r18.onnx")) << "graph";
  EXPECT_TRUE(CheckModelFile(*m, Env::Default()).ok());
}

// Whether the graph can be opened is the Env's answer (as root, the test cannot make a file
// unreadable on disk).
TEST_F(ManifestTest, AGraphTheEnvCannotOpenIsSaid) {
  auto m = Load("model: {torchvision: resnet18, graph: r18.onnx}\nscenarios: {multi: {}}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::ofstream(dir_.File("r18.onnx")) << "graph";
  FakeEnv env;
  EXPECT_TRUE(CheckModelFile(*m, env).ok());
  env.file_errors[m->graph_file] = EACCES;
  const Status unreadable = CheckModelFile(*m, env);
  EXPECT_EQ(unreadable.code(), StatusCode::kNotFound);
  EXPECT_EQ(unreadable.message(),
            "model.graph: cannot open " + m->graph_file + ": Permission denied");
}

// Files that are not regular are refused before they are opened: `evaluate /dev/zero` read
// until it held 0.9 GB, and a FIFO blocked forever, as a manifest or as the model's files.
TEST_F(ManifestTest, RefusesFifosDevicesAndHugeFiles) {
  const std::string fifo = dir_.File("fifo.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    auto m = LoadManifest(path);
    ASSERT_FALSE(m.ok()) << path;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("the manifest " + path + " is a "), std::string::npos)
        << m.status().message();
  }
  auto graph = Load("model: {torchvision: resnet18, graph: fifo.yaml}\nscenarios: {multi: {}}\n");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_NE(
      CheckModelFile(*graph, Env::Default()).message().find("model.graph " + fifo + " is a FIFO"),
      std::string::npos);
  auto model = Load("model: {file: /dev/zero, sha256: " + std::string(64, '0') +
                    "}\nscenarios: {multi: {}}\n");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_NE(
      CheckModelFile(*model, Env::Default()).message().find("the model file /dev/zero is a device"),
      std::string::npos);
  std::string huge = "model: {torchvision: resnet18}\nscenarios: {multi: {}}\n";
  huge.resize(kMaxManifestBytes + 1, '#');
  auto big = Load(huge);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("is larger than 1.0 MiB"), std::string::npos)
      << big.status().message();
}

// What a manifest makes is bounded before it is made: an alias that repeats an alias ten
// times, five levels deep, once became 345,000 JSON values (one more level, ten times that),
// an alias inside what it names recursed until the stack overflowed, and lists of batch sizes
// and rates multiplied into runs without limit.
TEST_F(ManifestTest, AliasesAndRunsAreBounded) {
  std::string laughs = "model:\n  torchvision: resnet18\n  args:\n    l0: &l0 {a: b}\n";
  for (int level = 1; level <= 5; ++level) {
    laughs += "    l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) laughs += (i ? ", *l" : "*l") + std::to_string(level - 1);
    laughs += "]\n";
  }
  auto aliased = ParseManifest(laughs + "scenarios: {multi: {}}\n", "/m.yaml");
  ASSERT_FALSE(aliased.ok());
  EXPECT_NE(aliased.status().message().find("/m.yaml: line 9: more than 100000 YAML nodes"),
            std::string::npos)
      << aliased.status().message();
  auto loop = ParseManifest("model: &m {torchvision: x, args: {a: *m}}\n", "/m.yaml");
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  std::string batches, rates;
  for (int i = 1; i <= 101; ++i) batches += (i > 1 ? "," : "") + std::to_string(i);
  for (int i = 1; i <= 100; ++i) rates += (i > 1 ? "," : "") + std::to_string(i);
  auto runs = ParseManifest("model: {torchvision: x}\nbatch_sizes: [" + batches +
                                "]\nscenarios: {server: {qps: [" + rates + "]}}\n",
                            "/m.yaml");
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("line 3: the manifest makes more than 10000 runs"),
            std::string::npos)
      << runs.status().message();
  batches.resize(batches.rfind(','));  // 100 x 100: at the limit
  auto at_limit = ParseManifest("model: {torchvision: x}\nbatch_sizes: [" + batches +
                                    "]\nscenarios: {server: {qps: [" + rates + "]}}\n",
                                "/m.yaml");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(PlanEvaluation(*at_limit, "py").size(), 10'000u);
}

}  // namespace
}  // namespace footprint
