// Helpers shared by the unit tests.
#ifndef FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_
#define FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace footprint::testing {

// A fresh directory under $TMPDIR, removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fp-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Path of a workload program built by the test suite (tests/workloads).
inline std::string Workload(const std::string& name) {
  return std::string(FP_WORKLOADS) + "/fp_" + name;
}

}  // namespace footprint::testing

#endif  // FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_
