// Fuzzing the ONNX reader of footprint predict (fuzz_util.h; seeds: tests/fuzz/corpus/onnx/, made
// by tests/fuzz/make_onnx_seeds.py). Whatever the bytes of a model and whatever its attributes
// and dimensions hold, AnalyzeOnnx and the features end in a graph or in one printable line,
// never in a signal, an exception or a hang: libonnx's shape inference trusts what it reads
// (predict/onnx_checks.h), so the mutations aim at what it divides by and sizes with. Each
// regression below crashed footprint before its check existed.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "footprint/model_graph.h"
#include "fuzz_util.h"
#include "predict/predictors.h"

namespace footprint {
namespace {

// A model written where AnalyzeOnnx reads it: one file per test process, removed at its exit.
std::string WriteModel(const std::string& bytes) {
  static const struct File {
    std::string path;
    ~File() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } file{::testing::TempDir() + "fp-fuzz-onnx-" + std::to_string(::getpid()) + ".onnx"};
  std::ofstream(file.path, std::ios::binary | std::ios::trunc) << bytes;
  return file.path;
}

onnx::ModelProto Seed(const std::string& name) {
  std::ifstream in(std::filesystem::path(FP_FUZZ_CORPUS) / "onnx" / name, std::ios::binary);
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromIstream(&in)) << name;
  return model;
}

onnx::NodeProto& NodeNamed(onnx::ModelProto& model, const std::string& name) {
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    if (node.name() == name) return node;
  }
  ADD_FAILURE() << "no node " << name;
  return *model.mutable_graph()->mutable_node(0);
}

// The attribute `name` of `node` set to `v`: an integer for the scalar ones (group, blocksize),
// else a list.
void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = nullptr;
  for (auto& attribute : *node.mutable_attribute()) {
    if (attribute.name() == name) a = &attribute;
  }
  if (a == nullptr) {
    a = node.add_attribute();
    a->set_name(name);
  }
  a->set_type(v.size() == 1 && (name == "group" || name == "blocksize")
                  ? onnx::AttributeProto::INT
                  : onnx::AttributeProto::INTS);
  a->clear_ints();
  a->clear_i();
  if (a->type() == onnx::AttributeProto::INT) {
    a->set_i(v[0]);
  } else {
    for (int64_t x : v) a->add_ints(x);
  }
}

// The analysis of a model's `bytes`: a graph, or one printable line of InvalidArgument or
// NotFound.
Result<ModelGraph> AnalyzeBytes(const std::string& bytes, std::optional<int64_t> batch) {
  Result<ModelGraph> g = AnalyzeOnnx(WriteModel(bytes), batch);
  if (!g.ok()) {
    EXPECT_TRUE(g.status().code() == StatusCode::kInvalidArgument ||
                g.status().code() == StatusCode::kNotFound)
        << g.status().message();
    fuzz::ExpectOneInertLine(g.status(), bytes);
  }
  return g;
}

// The seeds' batch is dynamic.
Result<ModelGraph> Analyze(const onnx::ModelProto& model, std::optional<int64_t> batch = 2) {
  return AnalyzeBytes(model.SerializeAsString(), batch);
}

void ExpectRefused(const onnx::ModelProto& model, const std::vector<std::string>& said) {
  Result<ModelGraph> g = Analyze(model);
  ASSERT_FALSE(g.ok());
  for (const std::string& words : said) {
    EXPECT_NE(g.status().message().find(words), std::string::npos)
        << "'" << words << "' not in: " << g.status().message();
  }
}

TEST(OnnxChecks, TheSeedsAreAnalyzed) {
  for (const char* name : {"conv_pool.onnx", "matmul_softmax.onnx", "shape_chain.onnx",
                           "sizes_inputs.onnx", "subgraph.onnx"}) {
    Result<ModelGraph> g = Analyze(Seed(name));
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().message();
    EXPECT_EQ(g->batch, 2);
    EXPECT_GT(g->flops, 0) << name;
  }
}

// Issue 37, row 3: libonnx divides by the strides (SIGFPE).
TEST(OnnxChecks, ZeroStridesAreRefusedNamingTheNode) {
  for (const char* node : {"conv", "maxpool", "avgpool"}) {
    onnx::ModelProto model = Seed("conv_pool.onnx");
    SetInts(NodeNamed(model, node), "strides", {0, 0});
    ExpectRefused(model, {std::string("node '") + node + "'", "strides holds 0",
                          "allowed are 1 to 2147483648"});
  }
}

TEST(OnnxChecks, AttributesInferenceSizesWithAreRefused) {
  const struct {
    const char* node;
    const char* attribute;
    std::vector<int64_t> values;
  } cases[] = {{"conv", "dilations", {1, 0}},
               {"conv", "pads", {1, -1, 1, 1}},
               {"conv", "kernel_shape", {3, 0}},
               {"conv", "group", {0}},
               {"deconv", "group", {0}},
               {"d2s", "blocksize", {int64_t{1} << 32}},
               {"conv", "dilations", {INT64_MAX, 1}}};
  for (const auto& c : cases) {
    onnx::ModelProto model =
        Seed(std::string(c.node) == "conv" ? "conv_pool.onnx" : "sizes_inputs.onnx");
    SetInts(NodeNamed(model, c.node), c.attribute, c.values);
    ExpectRefused(model, {std::string("node '") + c.node + "'", c.attribute});
  }
}

// Inference takes a remainder by the number of outputs.
TEST(OnnxChecks, ASplitWithoutOutputsIsRefused) {
  onnx::ModelProto model = Seed("sizes_inputs.onnx");
  onnx::NodeProto& split = NodeNamed(model, "split");
  split.clear_output();
  ExpectRefused(model, {"node 'split' (Split) has 0 outputs", "takes at least 1"});
}

// Without kernel_shape, inference indexes the input's dimensions with the weights' rank.
TEST(OnnxChecks, WeightsOfAnotherRankThanTheInputAreRefused) {
  onnx::ModelProto model = Seed("conv_pool.onnx");
  auto& attributes = *NodeNamed(model, "conv").mutable_attribute();
  for (int i = attributes.size() - 1; i >= 0; --i) {
    if (attributes.Get(i).name() == "kernel_shape") attributes.DeleteSubrange(i, 1);
  }
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "w") {
      init.add_dims(1);
      init.add_dims(1);
    }
  }
  ExpectRefused(model, {"Conv node's input has rank 4 and its weights rank 6"});
}

// Inference copies raw data whole into 8-byte elements, past the end of a 7-byte buffer.
TEST(OnnxChecks, RawDataShorterThanItsTypeIsRefused) {
  onnx::ModelProto model = Seed("sizes_inputs.onnx");
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "repeats") init.set_raw_data(std::string(31, '\1'));
  }
  ExpectRefused(model, {"initializer 'repeats' holds 31 bytes", "need 32"});
}

TEST(OnnxChecks, ConstantInputsReadAsSizesAreChecked) {
  onnx::ModelProto model = Seed("sizes_inputs.onnx");
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "scales")
      init.set_raw_data(std::string("\0\0\xc0\x7f", 4) + init.raw_data().substr(4));
  }
  ExpectRefused(model, {"Resize node's input scales holds nan"});
  model = Seed("sizes_inputs.onnx");
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.name() == "repeats") {
      init.clear_raw_data();
      for (int64_t r : {1, 1, -2, 1}) init.add_int64_data(r);
    }
  }
  ExpectRefused(model, {"Tile node's input repeats holds -2, allowed are 0 to"});
}

TEST(OnnxChecks, DimensionsOutsideTheirRangeAreRefused) {
  onnx::ModelProto model = Seed("matmul_softmax.onnx");
  model.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-8);
  ExpectRefused(model, {"input 'x' has dimension 1 of -8"});
  model = Seed("matmul_softmax.onnx");
  model.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 40);
  ExpectRefused(model, {"initializer 'w' has dimension 0 of 1099511627776"});
}

// What a byte mutation rarely makes: values at the corners of ONNX's arithmetic in the
// attributes, the dimensions and the constant inputs, and nodes with inputs or outputs missing.
constexpr int64_t kEdgeValues[] = {
    0, -1, -2, 1, 2, 3, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62, INT64_MIN, INT64_MAX};
constexpr const char* kAttributeNames[] = {
    "strides", "dilations", "kernel_shape",   "pads",         "group", "blocksize",
    "axis",    "split",     "output_padding", "output_shape", "perm"};

void MutateModel(onnx::ModelProto& model, std::mt19937& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto edge = [&] { return kEdgeValues[pick(std::size(kEdgeValues))]; };
  onnx::GraphProto& g = *model.mutable_graph();
  if (g.node_size() == 0) return;
  onnx::NodeProto& node = *g.mutable_node(static_cast<int>(pick(g.node_size())));
  switch (pick(6)) {
    case 0: {  // an attribute's integer, or a new attribute of edge values
      std::vector<int64_t> values(pick(4) + 1);
      for (int64_t& v : values) v = edge();
      SetInts(node, kAttributeNames[pick(std::size(kAttributeNames))], values);
      break;
    }
    case 1:  // a declared dimension
      if (g.input_size() > 0) {
        auto* shape = g.mutable_input(static_cast<int>(pick(g.input_size())))
                          ->mutable_type()
                          ->mutable_tensor_type()
                          ->mutable_shape();
        if (shape->dim_size() > 0)
          shape->mutable_dim(static_cast<int>(pick(shape->dim_size())))->set_dim_value(edge());
      }
      break;
    case 2:  // an initializer's dimensions, or its data
      if (g.initializer_size() > 0) {
        auto& init = *g.mutable_initializer(static_cast<int>(pick(g.initializer_size())));
        if (pick(2) == 0 && init.dims_size() > 0) {
          init.set_dims(static_cast<int>(pick(init.dims_size())), edge());
        } else if (init.data_type() == onnx::TensorProto::INT64) {
          init.clear_raw_data();
          init.clear_int64_data();
          for (int i = static_cast<int>(pick(4)); i >= 0; --i) init.add_int64_data(edge());
        } else if (init.has_raw_data()) {
          init.mutable_raw_data()->resize(pick(init.raw_data().size() + 1));
        }
      }
      break;
    case 3:  // an input or an output fewer
      if (pick(2) == 0 && node.input_size() > 0) node.mutable_input()->RemoveLast();
      if (node.output_size() > 0) node.mutable_output()->RemoveLast();
      break;
    case 4:  // the weights of another rank
      if (g.initializer_size() > 0) g.mutable_initializer(0)->add_dims(1);
      break;
    default:  // another opset
      if (model.opset_import_size() > 0) {
        model.mutable_opset_import(0)->set_version(static_cast<int64_t>(pick(20)));
      }
  }
}

TEST(Fuzz, OnnxModels) {
  std::vector<std::string> seeds = fuzz::Corpus("onnx");
  if (seeds.empty()) return;
  std::mt19937 rng(3737);
  const int n = fuzz::Iterations(2000);
  int analyzed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string& seed = seeds[static_cast<size_t>(i) % seeds.size()];
    onnx::ModelProto model;
    std::string bytes;
    if (i % 2 == 0 && model.ParseFromString(seed)) {
      MutateModel(model, rng);
      if (i % 4 == 0) MutateModel(model, rng);
      bytes = model.SerializeAsString();
    } else {
      bytes = fuzz::Mutate(seed, rng);
    }
    // Now and then without --batch, which the seeds' dynamic batch needs.
    const std::optional<int64_t> batch =
        i % 7 == 0 ? std::nullopt : std::optional<int64_t>(1 + i % 3);
    if (Result<ModelGraph> g = AnalyzeBytes(bytes, batch); g.ok()) {
      ++analyzed;
      predict::Features(*g);
    }
    if (::testing::Test::HasFailure()) return;
  }
  // The mutations stay close enough to the seeds that some models are still analyzed: the
  // fuzzing reaches past the protobuf parser.
  EXPECT_GT(analyzed, n / 20) << "of " << n;
}

}  // namespace
}  // namespace footprint
