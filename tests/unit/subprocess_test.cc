// Running helper programs: the statuses a shell would give, the environment and the folder.
#include "util/subprocess.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "util/file.h"

namespace footprint {
namespace {

using testing::TempDir;

TEST(RunAndWait, StatusesAsAShellGivesThem) {
  TempDir dir;
  std::ofstream(dir.File("not-executable")) << "true\n";  // created 0644
  EXPECT_EQ(RunAndWait({"true"}), 0);
  EXPECT_EQ(RunAndWait({"sh", "-c", "exit 7"}), 7);
  EXPECT_EQ(RunAndWait({"sh", "-c", "kill -TERM $$"}), 128 + SIGTERM);
  EXPECT_EQ(RunAndWait({"footprint-no-such-program"}), 127);
  EXPECT_EQ(RunAndWait({dir.File("not-executable")}), 126);
  EXPECT_EQ(RunAndWait({}), 127);
}

TEST(RunAndWait, TheEnvironmentAndFolderGiven) {
  TempDir dir;
  EXPECT_EQ(RunAndWait({"sh", "-c", "echo \"$A $HOME\" > out"}, {{"A", "a"}}, dir.path()), 0);
  EXPECT_EQ(*ReadWholeFile(dir.File("out")), "a " + std::string(std::getenv("HOME")) + "\n");
}

TEST(Capture, OutputOnlyOnSuccess) {
  EXPECT_EQ(Capture({"sh", "-c", "echo hi"}), "hi\n");
  EXPECT_EQ(Capture({"sh", "-c", "echo hi; exit 1"}), std::nullopt);
  EXPECT_EQ(Capture({"cat"}, {}, "typed"), "typed");
}

}  // namespace
}  // namespace footprint
