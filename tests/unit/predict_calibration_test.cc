// footprint predict's calibrated roofline (src/predict/calibration.h): each term takes the
// rate the calibration measured for it, and a prediction says where the calibration's
// references do not cover it. The records are written here as calibrate.py writes them, with
// rates chosen so that each term's seconds are known exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/model_graph.h"
#include "predict/calibration.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

constexpr double kMiB = 1 << 20;

json Flat(const char* x, const char* rate, double value) {
  return json::array({{{x, 1.0}, {rate, value}}});
}

// A calibration on `threads` threads whose every rate is 1e12 per second (fast enough to leave
// the terms a test looks at alone), without overhead or bare call's cost.
json Record(int threads) {
  const double fast = 1e12;
  return {{"threads", threads},
          {"overhead_s", 0},
          {"rates",
           {{"conv", Flat("m", "flops_per_s", fast)},
            {"conv_small", Flat("m", "flops_per_s", fast)},
            {"conv_1x1", Flat("m", "flops_per_s", fast)},
            {"conv_1x1_onednn", Flat("m", "flops_per_s", fast)},
            {"gemm", {{{"m", 1}, {"weight_bytes", 1}, {"flops_per_s", fast}}}},
            {"elementwise", Flat("bytes", "bytes_per_s", fast)},
            {"batchnorm", Flat("bytes", "bytes_per_s", fast)},
            {"weights", Flat("bytes", "bytes_per_s", fast)},
            {"conv_weight_stream_bytes_per_s", fast},
            {"dwconv_bytes_per_s", fast},
            {"attention", Flat("macs", "flops_per_s", fast)},
            {"softmax_flops_per_s", fast},
            {"layernorm_flops_per_s", fast},
            {"maxpool_flops_per_s", fast},
            {"avgpool_flops_per_s", fast},
            {"operator_overhead_s", 0},
            {"blas_after_openmp_s", 0}}}};
}

// A 512-unit LSTM over 128 steps at batch 1, without input projections: each step reads its
// 4 MiB of recurrent weights (2048 x 512 floats) for 1 M multiply-accumulates.
OperatorCost Lstm() {
  OperatorCost op;
  op.type = "LSTM";
  op.sequential_steps = 128;
  op.step_param_bytes = 4 * kMiB;
  op.macs = 128 * op.step_param_bytes / 4;
  op.flops = 2 * op.macs;
  op.param_bytes = op.step_param_bytes;
  op.bytes_read = op.bytes_written = 1024;
  return op;
}

// A `width` x `width` product with weights over `rows` rows.
OperatorCost Product(double rows, double width = 768) {
  OperatorCost op;
  op.type = "MatMul";
  op.param_bytes = width * width * 4;
  op.macs = rows * width * width;
  op.flops = 2 * op.macs;
  op.bytes_read = op.param_bytes + rows * width * 4;
  op.bytes_written = rows * width * 4;
  return op;
}

// An element-wise Add writing `bytes`.
OperatorCost Add(double bytes) {
  OperatorCost op;
  op.type = "Add";
  op.flops = bytes / 4;
  op.bytes_read = 2 * bytes;
  op.bytes_written = bytes;
  return op;
}

// A dense convolution of `channels` to `channels`, `side` x `side` kernel, over `pixels` output
// pixels of `batch` images.
OperatorCost Convolution(int64_t side, double channels, double pixels, int64_t batch) {
  OperatorCost op;
  op.type = "Conv";
  op.kernel = {side, side};
  op.param_bytes = channels * channels * side * side * 4;
  op.macs = batch * pixels * channels * channels * side * side;
  op.flops = 2 * op.macs;
  op.bytes_read = op.param_bytes + batch * pixels * channels * 4;
  op.bytes_written = batch * pixels * channels * 4;
  return op;
}

ModelGraph Graph(std::vector<OperatorCost> ops, int64_t batch) {
  ModelGraph g;
  g.batch = batch;
  g.ops = std::move(ops);
  return g;
}

TEST(PredictCalibration, RecurrentStepsReadTheirWeightsAtTheRateOfTheirSize) {
  json record = Record(1);
  // Weights of 1 MiB stream at 100 GB/s (the caches), of 4 MiB at 10 GB/s (beyond them).
  record["rates"]["weights"] = {{{"bytes", kMiB}, {"bytes_per_s", 100e9}},
                                {{"bytes", 4 * kMiB}, {"bytes_per_s", 10e9}}};
  const ModelGraph g = Graph({Lstm()}, 1);
  // Each of the 128 steps reads 4 MiB at 4 MiB's rate; the FLOPs, at 1e12/s, take less.
  EXPECT_NEAR(CalibratedLatency(g, record), 128 * 4 * kMiB / 10e9, 1e-9);
  // A rate measured on weights in the caches would cost the steps ten times less.
  record["rates"]["weights"] = Flat("bytes", "bytes_per_s", 100e9);
  EXPECT_NEAR(CalibratedLatency(g, record), 128 * 4 * kMiB / 100e9, 1e-9);
}

TEST(PredictCalibration, AProductAtOneRowReadsItsWeightsAtTheirSizesRate) {
  json record = Record(1);
  record["rates"]["weights"] = {{{"bytes", kMiB}, {"bytes_per_s", 100e9}},
                                {{"bytes", 4 * kMiB}, {"bytes_per_s", 10e9}}};
  // 2.25 MiB: between the points, linear in log size: 100 + log(2.25)/log(4) * (10 - 100) GB/s.
  const double rate = 100e9 + std::log(2.25) / std::log(4.0) * (10e9 - 100e9);
  EXPECT_NEAR(CalibratedLatency(Graph({Product(1)}, 1), record), 768.0 * 768 * 4 / rate, 1e-12);
}

TEST(PredictCalibration, AProductTakesTheRateOfItsWidth) {
  json record = Record(1);
  // 96 wide: 10 GFLOP/s at M = 1, 50 at M = 1024; 768 wide: 20 and 100.
  const double narrow = 96.0 * 96 * 4, wide = 768.0 * 768 * 4;
  record["rates"]["gemm"] = {{{"m", 1}, {"weight_bytes", narrow}, {"flops_per_s", 10e9}},
                             {{"m", 1024}, {"weight_bytes", narrow}, {"flops_per_s", 50e9}},
                             {{"m", 1}, {"weight_bytes", wide}, {"flops_per_s", 20e9}},
                             {{"m", 1024}, {"weight_bytes", wide}, {"flops_per_s", 100e9}}};
  OperatorCost op = Product(1024);  // 768 wide
  EXPECT_NEAR(CalibratedLatency(Graph({op}, 1), record), op.flops / 100e9, 1e-12);
  op.param_bytes = narrow;  // the same work through 96 x 96 weights: M is 16 times larger
  EXPECT_NEAR(CalibratedLatency(Graph({op}, 1), record), op.flops / 50e9, 1e-12);
  // Between the widths, linear in log weights; between the M, linear in log M (here M = 128).
  op = Product(16);
  op.param_bytes = std::sqrt(narrow * wide);
  const double at_m = std::log(op.macs / (op.param_bytes / 4)) / std::log(1024.0);
  EXPECT_NEAR(at_m, 0.7, 1e-12);
  const double rate = ((10e9 + at_m * 40e9) + (20e9 + at_m * 80e9)) / 2;
  EXPECT_NEAR(CalibratedLatency(Graph({op}, 1), record), op.flops / rate, 1e-12);
}

// Attention's product of `images` x `heads` matrices of `tokens` x 64 by 64 x `tokens`.
OperatorCost Attention(double images, double heads, double tokens) {
  OperatorCost op;
  op.type = "MatMul";
  op.matrices = images * heads;
  op.macs = op.matrices * tokens * tokens * 64;
  op.flops = 2 * op.macs;
  op.bytes_read = op.matrices * 2 * tokens * 64 * 4;
  op.bytes_written = op.matrices * tokens * tokens * 4;
  return op;
}

TEST(PredictCalibration, AttentionTakesTheRateOfEachHeadsProduct) {
  json record = Record(1);
  // 10 GFLOP/s for a product of 65536 MACs, 100 for one of 2.5 M (a 197-token head).
  record["rates"]["attention"] = {{{"macs", 65536}, {"flops_per_s", 10e9}},
                                  {{"macs", 197.0 * 197 * 64}, {"flops_per_s", 100e9}}};
  // Small windows (32 tokens: 65536 MACs a head, as Swin's 7x7 ones are small) at 10; a
  // ViT's 197 tokens at 100.
  const OperatorCost windows = Attention(8 * 16 * 3, 1, 32);
  const OperatorCost heads = Attention(8 * 12, 1, 197);
  EXPECT_NEAR(CalibratedLatency(Graph({windows}, 8), record), windows.flops / 10e9, 1e-12);
  EXPECT_NEAR(CalibratedLatency(Graph({heads}, 8), record), heads.flops / 100e9, 1e-12);
}

TEST(PredictCalibration, OneByOneConvolutionsOnOneDnnTakeTheirOwnCurve) {
  json record = Record(2);  // on two threads PyTorch sends every convolution here to oneDNN
  record["rates"]["conv"] = Flat("m", "flops_per_s", 100e9);
  record["rates"]["conv_1x1_onednn"] = Flat("m", "flops_per_s", 20e9);
  const OperatorCost pointwise = Convolution(1, 256, 16 * 16, 8);
  const OperatorCost dense = Convolution(3, 256, 16 * 16, 8);
  EXPECT_NEAR(CalibratedLatency(Graph({pointwise}, 8), record), pointwise.flops / 20e9, 1e-12);
  EXPECT_NEAR(CalibratedLatency(Graph({dense}, 8), record), dense.flops / 100e9, 1e-12);
}

TEST(PredictCalibration, ABlasProductWaitsAfterAnOpenMpRegionOnMoreThanOneThread) {
  const double wait = 1e-3;
  // 1 MiB of output: above PyTorch's grain, an OpenMP region on two threads; a product of 64
  // rows: above OpenBLAS's threshold, on its threads; one of 256 x 256 at one row is not.
  const ModelGraph g = Graph({Add(kMiB), Product(64), Product(64), Add(kMiB), Product(64),
                              Add(kMiB), Product(1, 256), Add(16)},
                             1);
  const auto waits = [&](int threads) {
    json record = Record(threads);
    const double without = CalibratedLatency(g, record);
    record["rates"]["blas_after_openmp_s"] = wait;
    return (CalibratedLatency(g, record) - without) / wait;
  };
  // After the first and the second Add; not for the product after a product, nor the small
  // product (on the caller's thread).
  EXPECT_NEAR(waits(2), 2, 1e-9);
  EXPECT_NEAR(waits(1), 0, 1e-9);  // one thread: no workers, no waits
}

// A calibration whose references are a CNN (every second in convolutions) at batches 1 and 8,
// off by `error` at batch 8.
json Referenced(double error) {
  json record = Record(1);
  const json terms = {{"convolution", 0.9}, {"element-wise and copies", 0.1}};
  record["errors"] = {
      {{"model", "resnet18"}, {"batch", 1}, {"relative_error", 0.1}, {"terms", terms}},
      {{"model", "resnet18"}, {"batch", 8}, {"relative_error", error}, {"terms", terms}}};
  return record;
}

TEST(PredictCalibration, GapsNameWhatTheReferencesDoNotCover) {
  const ModelGraph cnn = Graph({Convolution(3, 64, 32 * 32, 8), Add(kMiB)}, 8);
  EXPECT_TRUE(CalibrationGaps(cnn, Referenced(-0.2)).empty());

  const std::vector<std::string> lstm = CalibrationGaps(Graph({Lstm()}, 1), Referenced(-0.2));
  ASSERT_EQ(lstm.size(), 1u);
  EXPECT_NE(lstm[0].find("100 % of the predicted compute time"), std::string::npos) << lstm[0];
  EXPECT_NE(lstm[0].find("recurrent cell"), std::string::npos) << lstm[0];

  const std::vector<std::string> large =
      CalibrationGaps(Graph({Convolution(3, 64, 32 * 32, 32)}, 32), Referenced(-0.2));
  ASSERT_EQ(large.size(), 1u);
  EXPECT_NE(large[0].find("batch 32 is outside"), std::string::npos) << large[0];
  EXPECT_NE(large[0].find("(1 to 8)"), std::string::npos) << large[0];

  const std::vector<std::string> unexplained = CalibrationGaps(cnn, Referenced(-0.6));
  ASSERT_EQ(unexplained.size(), 1u);
  EXPECT_NE(unexplained[0].find("reference resnet18 at batch 8 was off by 60 %"), std::string::npos)
      << unexplained[0];
}

}  // namespace
}  // namespace footprint::predict
