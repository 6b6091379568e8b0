// The machine a predictor was fitted on against this one (predict/machine.h), on an Env the
// test sets up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fake_env.h"
#include "predict/machine.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// This machine is what its Env shows: the CPU of its /proc/cpuinfo, and no BLAS where the Env
// loads none (whatever this machine has installed); a predictor fitted with OpenBLAS's Haswell
// kernel is then told so.
TEST(ThisMachine, TheCpuAndTheBlasAreTheEnvs) {
  const std::string proc = ::testing::TempDir() + "fp-machine-proc-" + std::to_string(::getpid());
  std::filesystem::create_directories(proc);
  std::ofstream(proc + "/cpuinfo") << "processor\t: 0\nmodel name\t: Fake CPU 9000\n"
                                      "flags\t\t: fpu sse4_2 avx2 fma\n";
  FakeEnv env;  // maps no library
  env.proc_root = proc;
  const json here = ThisMachine("libopenblas.so.0", env);
  EXPECT_EQ(here["cpu_model"], "Fake CPU 9000");
  EXPECT_EQ(here["isa"], json({"avx2", "fma", "sse4_2"}));
  EXPECT_TRUE(here["blas"].is_null());

  const json recorded = {{"cpu_model", "Fake CPU 9000"},
                         {"isa", {"avx2", "fma", "sse4_2"}},
                         {"blas", {{"kernel", "Haswell"}}}};
  EXPECT_EQ(CompareMachines(recorded, here).differences,
            std::vector<std::string>{"BLAS kernel Haswell there, no OpenBLAS here"});
  std::filesystem::remove_all(proc);
}

}  // namespace
}  // namespace footprint::predict
