// GatedChild: the command's environment and PATH as setenv would leave them, t0 at the gate,
// and the child in every cgroup of the run before the gate opens.
#include "run/gated_child.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>

#include "probe/cgroup.h"
#include "test_util.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace {

sigset_t EmptyMask() {
  sigset_t mask;
  sigemptyset(&mask);
  return mask;
}

// Runs `command` through a GatedChild with `extra` variables and `cgroup`; returns its exit
// status and whatever Open said.
std::pair<int, std::string> RunGated(const std::vector<std::string>& command,
                                     const std::map<std::string, std::string>& extra,
                                     const RunCgroup* cgroup, int64_t t0) {
  const JoinEnvironment env{"run-1", "/tmp/db", &extra, nullptr, -1};
  auto child = GatedChild::Start(command, EmptyMask(), env, cgroup);
  EXPECT_TRUE(child.ok()) << child.status().message();
  if (!child.ok()) return {-1, ""};
  const pid_t pid = (*child)->pid();
  int calls_meanwhile = 0;
  std::string said = (*child)->Open(t0, command[0], [&] { ++calls_meanwhile; });
  EXPECT_EQ(calls_meanwhile, 1);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, said};
}

TEST(GatedChild, EnvironmentAsSetenvWouldLeaveIt) {
  testing::TempDir dir;
  const std::string out = dir.path() + "/env";
  ::setenv("FP_GATED_KEPT", "footprint's", 1);
  ::setenv("FP_GATED_OVER", "footprint's", 1);
  auto [status, said] = RunGated(
      {"/bin/sh", "-c",
       "printf '%s|%s|%s|%s|%s' \"$FOOTPRINT_T0_NS\" \"$FOOTPRINT_RUN_ID\" \"$FOOTPRINT_DB\" "
       "\"$FP_GATED_KEPT\" \"$FP_GATED_OVER\" > " +
           out},
      {{"FP_GATED_OVER", "the command's"}}, nullptr, 1234567890123456789);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(said, "");
  auto written = ReadWholeFile(out);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(*written, "1234567890123456789|run-1|/tmp/db|footprint's|the command's");
}

TEST(GatedChild, SearchesTheCommandsOwnPath) {
  // The command's PATH is where its program is looked for, as execvp after setenv does.
  auto [status, said] = RunGated({"sh", "-c", "exit 0"}, {{"PATH", "/nonexistent"}}, nullptr, 1);
  EXPECT_EQ(status, 127);
  EXPECT_EQ(said, "cannot run 'sh': command not found");
}

TEST(GatedChild, InEveryCgroupOfTheRunBeforeTheGateOpens) {
  auto cg = RunCgroup::Create(DetectCgroups(), "footprint-gated-" + std::to_string(getpid()));
  if (!cg.ok()) GTEST_SKIP() << "no cgroup here: " << cg.status().message();
  const std::map<std::string, std::string> extra;
  const JoinEnvironment env{"run-1", "/tmp/db", &extra, nullptr, -1};
  auto child = GatedChild::Start({"true"}, EmptyMask(), env, cg->get());
  ASSERT_TRUE(child.ok()) << child.status().message();
  const std::string pid = std::to_string((*child)->pid());
  ASSERT_GT((*cg)->dir_count(), 0u);
  for (size_t i = 0; i < (*cg)->dir_count(); ++i) {
    auto procs = ReadWholeFile((*cg)->dir(i) + "/cgroup.procs");
    ASSERT_TRUE(procs.ok()) << procs.status().message();
    EXPECT_EQ(*procs, pid + "\n") << (*cg)->dir(i);
  }
  if (DetectCgroups().v2_dir.empty()) return;
  EXPECT_TRUE((*child)->cloned_into_cgroup()) << "clone3 CLONE_INTO_CGROUP exists since 5.7";
}

}  // namespace
}  // namespace footprint
