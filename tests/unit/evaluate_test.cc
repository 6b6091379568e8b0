// footprint evaluate's pure parts: version constraints, manifests, the runs they plan.
#include "footprint/evaluate.h"

#include <gtest/gtest.h>

#include <fstream>

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
  EXPECT_EQ(runs[4].command[0], "py");
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
}

TEST_F(ManifestTest, TheModelsGraphIsFoundNextToTheManifestAndMustBeReadable) {
  auto m = Load(
      "model: {torchvision: resnet18, graph: r18.onnx, family: ResNet}\n"
      "scenarios: {multi: {}}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->graph_file, dir_.File("r18.onnx"));
  EXPECT_EQ(m->family, "ResNet");
  const Status missing = CheckModelFile(*m);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("model.graph " + dir_.File("r18.onnx") + " cannot be read"),
            std::string::npos)
      << missing.message();
  std::ofstream(dir_.File("r18.onnx")) << "graph";
  EXPECT_TRUE(CheckModelFile(*m).ok());
}

}  // namespace
}  // namespace footprint
