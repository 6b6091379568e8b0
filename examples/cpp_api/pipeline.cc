// A small data pipeline instrumented with footprint's C++ API: load, transform and train
// stages as scopes, a loss per epoch, accuracy against a target, a confusion matrix and the
// model file as an artifact. Run it alone (it records its own run) or under
// `footprint run -- build/examples/fp_cpp_pipeline` (it joins that run).
#include <footprint/api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  auto opened = footprint::Benchmark::Open(
      {.db = argc > 1 ? argv[1] : "", .name = "cpp-pipeline", .description = "C++ API example"});
  if (!opened.ok()) {
    std::fprintf(stderr, "footprint: %s\n", opened.status().message().c_str());
    return 1;
  }
  footprint::Benchmark& bm = **opened;

  std::vector<double> data;
  {
    FOOTPRINT_SCOPE("load");
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 1);
    data.resize(2'000'000);
    for (double& x : data) x = noise(rng);
  }
  {
    FOOTPRINT_SCOPE("transform");
    std::sort(data.begin(), data.end());
  }
  double weight = 0;
  for (int epoch = 0; epoch < 5; ++epoch) {
    FOOTPRINT_SCOPE("train epoch");
    // Fit y = 3x by gradient descent on a slice of the data.
    double grad = 0;
    for (size_t i = 0; i < data.size(); i += 4) grad += (weight - 3) * data[i] * data[i];
    weight -= 0.5 * grad / static_cast<double>(data.size() / 4);
    double loss = (weight - 3) * (weight - 3);
    bm.Log("loss", loss, epoch);
    bm.LogAccuracy(1.0 / (1.0 + loss), /*target=*/0.9, epoch);
  }
  if (auto st = bm.LogConfusionMatrix("confusion", {"neg", "pos"}, {{90, 10}, {5, 95}}); !st.ok()) {
    std::fprintf(stderr, "footprint: %s\n", st.message().c_str());
  }
  std::ofstream("model.txt") << weight << "\n";
  if (auto st = bm.Artifact("model", "model.txt"); !st.ok()) {
    std::fprintf(stderr, "footprint: %s\n", st.message().c_str());
  }
  std::printf("weight %.4f, run %s in %s\n", weight, bm.run_id().c_str(), bm.location().c_str());
  return bm.Close().ok() ? 0 : 1;
}
