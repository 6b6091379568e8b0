// What a run is called when nobody names it: the program, or the script an interpreter runs.
#include "run/run_metadata.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_env.h"
#include "run/slurm.h"
#include "slurm/agent.h"
#include "test_util.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

TEST(DefaultRunName, TheProgramOrTheScriptAnInterpreterRuns) {
  EXPECT_EQ(DefaultRunName({"/usr/bin/make", "-j2"}), "make");
  EXPECT_EQ(DefaultRunName({"./bench", "train.py"}), "bench");  // not an interpreter
  EXPECT_EQ(DefaultRunName({"python3", "train.py", "--epochs", "3"}), "train.py");
  EXPECT_EQ(DefaultRunName({"/usr/bin/python3.11", "-u", "-W", "ignore", "src/train.py"}),
            "train.py");
  EXPECT_EQ(DefaultRunName({"python3", "-X", "dev", "-m", "pkg.train", "--lr", "1"}), "pkg.train");
  EXPECT_EQ(DefaultRunName({"python3", "-c", "print(1)"}), "python3");
  EXPECT_EQ(DefaultRunName({"python3"}), "python3");
  EXPECT_EQ(DefaultRunName({"bash", "-e", "scripts/run.sh"}), "run.sh");  // errexit
  EXPECT_EQ(DefaultRunName({"sh", "-c", "make && make test"}), "sh");
  EXPECT_EQ(DefaultRunName({"node", "app.js"}), "app.js");
  EXPECT_EQ(DefaultRunName({"node", "-e", "1+1"}), "node");  // inline code
  EXPECT_EQ(DefaultRunName({"Rscript", "fit.R"}), "fit.R");
  EXPECT_EQ(DefaultRunName({"pythonic", "x.py"}), "pythonic");  // only whole names match
  EXPECT_EQ(DefaultRunName({"/usr/bin/lua5.4", "game.lua"}), "game.lua");
  EXPECT_EQ(DefaultRunName({"zsh", "build.zsh"}), "build.zsh");
  EXPECT_EQ(DefaultRunName({"nodejs", "app.js"}), "app.js");
  EXPECT_EQ(DefaultRunName({"pypy3.9", "x.py"}), "x.py");
  EXPECT_EQ(DefaultRunName({"python3x", "x.py"}), "python3x");  // a version is digits and dots
  EXPECT_EQ(DefaultRunName({"ksh", "x.sh"}), "ksh");            // not a shell the list names
  EXPECT_EQ(DefaultRunName({}), "program");
}

// The variables are those slurmd sets for a task of an srun step (real values are checked
// against a running Slurm in tests/cluster/test_slurm.py).
TEST(SlurmJob, TheStepTaskAndNodeOfARun) {
  FakeEnv env;
  EXPECT_TRUE(SlurmJob(env).is_null());  // not in a job
  env.vars = {{"SLURM_JOB_ID", "42"},
              {"SLURM_STEP_ID", "0"},
              {"SLURM_JOB_NODELIST", "n[01-02]"},
              {"SLURM_JOB_NUM_NODES", "2"},
              {"SLURMD_NODENAME", "n02"},
              {"SLURM_NODEID", "1"},
              {"SLURM_NTASKS", "8"},
              {"SLURM_STEP_NUM_TASKS", "4"},
              {"SLURM_TASKS_PER_NODE", "4(x2)"},
              {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
              {"SLURM_PROCID", "3"},
              {"SLURM_LOCALID", "1"},
              {"SLURM_STEP_GPUS", "2,3"}};
  nlohmann::json slurm = SlurmJob(env);
  EXPECT_EQ(slurm["job_id"], 42);
  EXPECT_EQ(slurm["step_id"], 0);
  EXPECT_EQ(slurm["nodes"], "n[01-02]");
  EXPECT_EQ(slurm["tasks"], 4);                 // the step's, not the job's
  EXPECT_EQ(slurm["tasks_per_node"], "2(x2)");  // text Slurm writes, kept as is
  EXPECT_EQ(slurm["gpus"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(SlurmJobText(slurm), "job 42 step 0, task 3 of 4 on n02 (node 1 of 2), gpus [2,3]");
  // A batch script: no step id; an older Slurm's SLURM_JOBID.
  env.vars = {{"SLURM_JOBID", "7"}};
  EXPECT_EQ(SlurmJob(env), (nlohmann::json{{"job_id", 7}, {"step_id", "batch"}}));
}

TEST(SlurmAgent, OnlyTheFirstAgentTaskOfANodeMeasuresIt) {
  EXPECT_TRUE(IsNodeAgent({{"job_id", 4}, {"local_task", 0}}));
  EXPECT_FALSE(IsNodeAgent({{"job_id", 4}, {"local_task", 1}}));
  EXPECT_TRUE(IsNodeAgent({{"job_id", 4}}));  // a batch script's single task
}

// A /proc of its own: the step daemons of jobs 42 and 43 by their process titles.
TEST(SlurmAgent, FindsTheStepDaemonsByTheirTitles) {
  const std::filesystem::path proc = std::filesystem::path(::testing::TempDir()) / "fp-proc";
  std::filesystem::remove_all(proc);
  auto process = [&](int pid, std::string title) {
    std::filesystem::create_directories(proc / std::to_string(pid));
    title.push_back('\0');
    std::ofstream(proc / std::to_string(pid) / "cmdline") << title;
  };
  process(10, "slurmstepd: [42.extern]");
  process(11, "slurmstepd: [42.batch]");
  process(12, "slurmstepd: [42.0]");  // the agent's own step
  process(13, "slurmstepd: [42.1]");
  process(14, "slurmstepd: [43.1]");
  process(15, "python3 slurmstepd: [42.2]");
  std::filesystem::create_directories(proc / "self");
  auto pids = [](const std::vector<StepDaemon>& found) {
    std::vector<pid_t> out;
    for (const StepDaemon& d : found) out.push_back(d.pid);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(pids(FindStepDaemons(proc, "42", "", "0")), std::vector<pid_t>{13});
  EXPECT_EQ(pids(FindStepDaemons(proc, "42", "batch", "0")), std::vector<pid_t>{11});
  EXPECT_EQ(pids(FindStepDaemons(proc, "43", "1", "")), std::vector<pid_t>{14});
  EXPECT_TRUE(FindStepDaemons(proc, "44", "", "").empty());
  const std::vector<StepDaemon> one = FindStepDaemons(proc, "42", "1", "0");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].job, "42");
  EXPECT_EQ(one[0].step, "1");
  std::filesystem::remove_all(proc);
}

// The git record must come from `.git` itself (starting git costs more than the rest of a
// run's start-up) and say what git says: HEAD as `git rev-parse`, the dirty verdict as
// `git status --porcelain --untracked-files=no`.
class GitRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Capture({"git", "--version"})) GTEST_SKIP() << "git is not installed";
  }

  std::string Git(const std::string& dir, std::vector<std::string> args) {
    std::vector<std::string> argv = {"git",
                                     "-C",
                                     dir,
                                     "-c",
                                     "user.name=fp",
                                     "-c",
                                     "user.email=fp@example.com",
                                     "-c",
                                     "protocol.file.allow=always"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = Capture(argv);
    EXPECT_TRUE(out) << "git " << args[0] << " failed in " << dir;
    return out ? std::string(Trim(*out)) : "";
  }

  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    // git reads a file as new as its index by content ("racily clean"): keep them apart.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }

  std::string NewRepository(const std::string& name) {
    const std::string repo = dir_.File(name);
    std::filesystem::create_directories(repo);
    Git(repo, {"init", "-q", "-b", "main"});
    Write(repo + "/data.txt", "one\n");
    Write(repo + "/src/code.py", "print(1)\n");
    Git(repo, {"add", "."});
    Git(repo, {"commit", "-q", "-m", "first"});
    Write(repo + "/data.txt", "two\n");  // same size: the second commit's index entry is exact
    Git(repo, {"commit", "-q", "-am", "second"});
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return repo;
  }

  // GitInfo(dir, env) where no git can be started: what the files alone settle.
  static nlohmann::json GitInfoWithoutGit(const std::string& dir, Env& env) {
    const std::string path = std::getenv("PATH");
    ::setenv("PATH", "/nonexistent", 1);
    nlohmann::json git = GitInfo(dir, env);
    ::setenv("PATH", path.c_str(), 1);
    return git;
  }

  // GitInfo(dir) with no git to start, against what git says of `dir`.
  void ExpectSameAsGit(const std::string& dir, bool expect_dirty) {
    const std::string head = Git(dir, {"rev-parse", "HEAD"});
    const std::string branch = Git(dir, {"rev-parse", "--abbrev-ref", "HEAD"});
    const bool dirty = !Git(dir, {"status", "--porcelain", "--untracked-files=no"}).empty();
    ASSERT_EQ(dirty, expect_dirty) << "the test's own setup";
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // git status rewrote the index
    const nlohmann::json git = GitInfoWithoutGit(dir + "/src", Env::Default());
    ASSERT_TRUE(git.is_object()) << "no git record for " << dir;
    EXPECT_EQ(git.value("commit", ""), head);
    EXPECT_EQ(git.value("branch", ""), branch);
    ASSERT_TRUE(git.contains("dirty")) << "the dirty verdict needed git in " << dir;
    EXPECT_EQ(git["dirty"], dirty) << dir;
  }

  testing::TempDir dir_;
};

TEST_F(GitRecord, LooseAndPackedRefsCleanAndDirtyWithoutStartingGit) {
  const std::string repo = NewRepository("loose");
  ExpectSameAsGit(repo, false);
  Write(repo + "/data.txt", "three\n");  // a new size
  ExpectSameAsGit(repo, true);
  std::filesystem::remove(repo + "/data.txt");
  ExpectSameAsGit(repo, true);
  Git(repo, {"checkout", "-q", "data.txt"});
  std::filesystem::rename(repo + "/src", repo + "/moved");  // a tracked file's folder is gone
  ASSERT_FALSE(Git(repo, {"status", "--porcelain", "--untracked-files=no"}).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(GitInfo(repo, Env::Default()).value("dirty", false), true);
  std::filesystem::rename(repo + "/moved", repo + "/src");
  Git(repo, {"gc", "-q"});  // refs into packed-refs, commits into a pack
  ASSERT_FALSE(std::filesystem::exists(repo + "/.git/refs/heads/main"));
  ExpectSameAsGit(repo, false);
  Write(repo + "/src/code.py", "print(12)\n");
  ExpectSameAsGit(repo, true);
}

TEST_F(GitRecord, DetachedHeadWorktreeAndSubmodule) {
  const std::string repo = NewRepository("main");
  Git(repo, {"checkout", "-q", "--detach", "HEAD~1"});
  ExpectSameAsGit(repo, false);
  Git(repo, {"checkout", "-q", "main"});

  const std::string worktree = dir_.File("linked");
  Git(repo, {"worktree", "add", "-q", "-b", "feature", worktree});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ExpectSameAsGit(worktree, false);
  Write(worktree + "/src/code.py", "print(123)\n");
  ExpectSameAsGit(worktree, true);
  ExpectSameAsGit(repo, false);  // the main worktree's index is its own

  const std::string outer = NewRepository("outer");
  Git(outer, {"submodule", "add", "-q", repo, "lib"});
  Git(outer, {"commit", "-q", "-m", "with lib"});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(std::filesystem::is_regular_file(outer + "/lib/.git"));
  ExpectSameAsGit(outer + "/lib", false);
}

TEST_F(GitRecord, WhatTheIndexCannotSettleIsAskedOfGit) {
  const std::string repo = NewRepository("staged");
  Write(repo + "/data.txt", "four\n");
  Git(repo, {"add", "data.txt"});  // invalidates the index's cached tree
  const nlohmann::json git = GitInfo(repo, Env::Default());
  EXPECT_EQ(git.value("dirty", false), true);
  Git(repo, {"reset", "-q"});
  Git(repo, {"checkout", "-q", "data.txt"});
  EXPECT_EQ(GitInfo(repo, Env::Default()).value("dirty", true), false);
}

// The files of `.git` are read through the Env: HEAD and the ref it names as the Env has them.
TEST_F(GitRecord, HeadAndRefsAreTheEnvs) {
  const std::string repo = NewRepository("faked");
  const std::string first = Git(repo, {"rev-parse", "HEAD~1"});
  FakeEnv env;
  env.files[repo + "/.git/HEAD"] = "ref: refs/heads/elsewhere\n";
  env.files[repo + "/.git/refs/heads/elsewhere"] = first + "\n";
  const nlohmann::json git = GitInfoWithoutGit(repo, env);
  ASSERT_TRUE(git.is_object());
  EXPECT_EQ(git.value("commit", ""), first);
  EXPECT_EQ(git.value("branch", ""), "elsewhere");
  // The index holds the second commit's tree, not the first's: `git status` would list it.
  EXPECT_EQ(git.value("dirty", false), true);
}

// A packed-refs file that cannot be read leaves HEAD to git: no record where git is missing,
// git's answer where it is there.
TEST_F(GitRecord, AnUnreadablePackedRefsIsLeftToGit) {
  const std::string repo = NewRepository("packed");
  Git(repo, {"gc", "-q"});
  ASSERT_FALSE(std::filesystem::exists(repo + "/.git/refs/heads/main"));
  const std::string head = Git(repo, {"rev-parse", "HEAD"});
  FakeEnv env;
  EXPECT_EQ(GitInfoWithoutGit(repo, env).value("commit", ""), head);
  env.file_errors[repo + "/.git/packed-refs"] = EACCES;
  EXPECT_TRUE(GitInfoWithoutGit(repo, env).is_null());
  EXPECT_TRUE(env.Asked(repo + "/.git/packed-refs"));
  const nlohmann::json from_git = GitInfo(repo, env);
  EXPECT_EQ(from_git.value("commit", ""), head);
  EXPECT_EQ(from_git.value("dirty", true), false);
}

// Where git's own configuration is comes from the Env's HOME and XDG_CONFIG_HOME: one that
// converts line endings makes a file's new size no proof of a change, which only git can tell.
TEST_F(GitRecord, GitsConfigurationIsFoundFromTheEnvsHome) {
  const std::string repo = NewRepository("configured");
  Write(repo + "/data.txt", "three\n");  // a new size: dirty from the index alone
  const std::string home = dir_.File("home"), xdg = dir_.File("xdg");
  std::filesystem::create_directories(home);
  FakeEnv env;
  env.vars["HOME"] = home;
  EXPECT_EQ(GitInfoWithoutGit(repo, env).value("dirty", false), true);
  Write(home + "/.gitconfig", "[core]\n\tautocrlf = true\n");
  EXPECT_FALSE(GitInfoWithoutGit(repo, env).contains("dirty"));
  EXPECT_TRUE(env.Asked(home + "/.gitconfig"));

  FakeEnv xdg_env;
  xdg_env.vars["XDG_CONFIG_HOME"] = xdg;
  EXPECT_EQ(GitInfoWithoutGit(repo, xdg_env).value("dirty", false), true);
  Write(xdg + "/git/config", "[core]\n\teol = crlf\n");
  EXPECT_FALSE(GitInfoWithoutGit(repo, xdg_env).contains("dirty"));
}

}  // namespace
}  // namespace footprint
