// Helpers shared by the unit tests.
#ifndef FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_
#define FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// Compares `actual` byte for byte with tests/golden/NAME; with FP_UPDATE_GOLDEN=1 in the
// environment, writes it there instead (review the diff before committing it).
inline void ExpectGolden(const std::string& actual, const std::string& name) {
  const std::string path = std::string(FP_GOLDEN) + "/" + name;
  if (const char* update = std::getenv("FP_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path
                  << " (FP_UPDATE_GOLDEN=1 writes it; see this file's header)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from " << path;
}

}  // namespace footprint::testing

#endif  // FOOTPRINT_TESTS_UNIT_TEST_UTIL_H_
