// footprint doctor through the library, on an Env the test sets up.
#include "footprint/doctor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_env.h"
#include "fake_nvml.h"

namespace footprint {
namespace {

constexpr char kTwoWholeGpus[] = R"(
driver 550.54.15
nvml 12.550.54.15
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-11111111-2222-3333-4444-555555555555
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-66666666-7777-8888-9999-000000000000
)";

// The lines of the check named `name`; empty when there is none.
std::vector<std::string> LinesOf(const std::vector<DoctorCheck>& checks, const std::string& name) {
  auto it = std::find_if(checks.begin(), checks.end(),
                         [&](const DoctorCheck& c) { return c.name == name; });
  return it == checks.end() ? std::vector<std::string>() : it->lines;
}

// NVML and CUDA_VISIBLE_DEVICES come from the Env doctor is given: a fake NVML of two GPUs,
// and the variable set in the Env only, make doctor say which GPU runs measure; without the
// variable in the Env it says nothing of it.
TEST(Doctor, TheVisibleGpusAreTheEnvsVariable) {
  testing::FakeNvmlScript script(kTwoWholeGpus);
  FakeEnv env;
  env.real_clock = true;
  env.libraries["libnvidia-ml.so.1"] = testing::FakeNvmlPath("full");
  env.vars["CUDA_VISIBLE_DEVICES"] = "1";
  const std::vector<std::string> lines = LinesOf(RunDoctor(env), "nvml");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "CUDA_VISIBLE_DEVICES='1': runs measure gpu:1"),
            lines.end());

  env.vars.clear();
  for (const std::string& line : LinesOf(RunDoctor(env), "nvml")) {
    EXPECT_FALSE(line.starts_with("CUDA_VISIBLE_DEVICES")) << line;
  }
}

}  // namespace
}  // namespace footprint
