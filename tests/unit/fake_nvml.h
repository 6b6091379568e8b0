// The fake libnvidia-ml.so.1 (tests/fakes/fake_nvml.c) from the unit tests: where each variant
// lives, a script written to a temporary folder, and the fake's manual clock.
#ifndef FOOTPRINT_TESTS_UNIT_FAKE_NVML_H_
#define FOOTPRINT_TESTS_UNIT_FAKE_NVML_H_

#include <dlfcn.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "test_util.h"

namespace footprint::testing {

// Path of a variant of the fake: "full", "minimal" (old driver) or "broken".
inline std::string FakeNvmlPath(const std::string& variant) {
  return std::string(FP_FAKE_NVML_DIR) + "/" + variant + "/libnvidia-ml.so.1";
}

// A script for the fake (its format is at the top of fake_nvml.c), named by FAKE_NVML_SCRIPT
// for as long as the object lives.
class FakeNvmlScript {
 public:
  explicit FakeNvmlScript(const std::string& text) {
    std::ofstream(path()) << text;
    ::setenv("FAKE_NVML_SCRIPT", path().c_str(), 1);
  }
  ~FakeNvmlScript() { ::unsetenv("FAKE_NVML_SCRIPT"); }
  std::string path() const { return dir_.File("script"); }
  // A file the script's pids_file can name.
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  TempDir dir_;
};

// Calls the fake's void `symbol`(arg) in the variant loaded from `path`, where it is loaded.
template <typename Arg>
void CallFakeNvml(const std::string& path, const char* symbol, Arg arg) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return;
  if (auto call = reinterpret_cast<void (*)(Arg)>(::dlsym(handle, symbol))) call(arg);
  ::dlclose(handle);  // drops the reference RTLD_NOLOAD took
}

// Sets the fake's clock (scripts with "clock manual") of the variant loaded from `path`.
inline void SetFakeNvmlTimeMs(const std::string& path, long long ms) {
  CallFakeNvml(path, "fake_nvml_set_time_ms", ms);
}

// Hands the time the fake's costly calls take (microseconds; energy_cost_us, putil_cost_us) to
// `spend` instead of spinning it on the CPU; nullptr spins again.
inline void SetFakeNvmlCostHook(const std::string& path, void (*spend)(long long us)) {
  CallFakeNvml(path, "fake_nvml_on_cost", spend);
}

}  // namespace footprint::testing

#endif  // FOOTPRINT_TESTS_UNIT_FAKE_NVML_H_
