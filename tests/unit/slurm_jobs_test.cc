// What --executor slurm reads from Slurm's commands: lines as Slurm 22.05 (Debian 12) prints
// them, and the durations and sizes Slurm writes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "fake_env.h"
#include "slurm/jobs.h"
#include "test_util.h"

namespace footprint::experiment {
namespace {

TEST(SlurmJobs, Durations) {
  EXPECT_EQ(ParseSlurmSeconds("00:00:01"), 1.0);
  EXPECT_EQ(ParseSlurmSeconds("01:02:03"), 3723.0);
  EXPECT_EQ(ParseSlurmSeconds("2-00:00:10"), 2 * 86400.0 + 10);
  EXPECT_EQ(ParseSlurmSeconds("01:02.500"), 62.5);
  EXPECT_EQ(ParseSlurmSeconds("12.250"), 12.25);
  for (const char* bad : {"", "x", "1:2:3:4", "-1", "00:-1:00", "a-00:00:01", "00:00:nan"}) {
    EXPECT_EQ(ParseSlurmSeconds(bad), std::nullopt) << bad;
  }
}

TEST(SlurmJobs, Sizes) {
  EXPECT_EQ(ParseSlurmBytes("7872K"), 7872.0 * 1024);
  EXPECT_EQ(ParseSlurmBytes("1.5M"), 1.5 * 1024 * 1024);
  EXPECT_EQ(ParseSlurmBytes("2G"), 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseSlurmBytes("4096"), 4096.0);
  for (const char* bad : {"", "K", "12Q", "-5K"}) EXPECT_EQ(ParseSlurmBytes(bad), std::nullopt);
}

TEST(SlurmJobs, SstatLinesGiveTheNumberedSteps) {
  const char* text =
      "2.batch|cpu=00:00:00,energy=0,fs/disk=54831,mem=21212K,pages=0,vmem=438048K|21212K\n"
      "2.0|cpu=00:00:01,energy=0,fs/disk=22593,mem=7872K,pages=1,vmem=11648K|7872K\n"
      "2.1|cpu=00:01:05,energy=0,fs/disk=14785,mem=1548K,pages=0,vmem=2920K|2G\n"
      "2.2|energy=0|1K\n"  // no cpu: skipped
      "garbage\n";
  auto steps = ParseSstat(text);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].job_id, 2);
  EXPECT_EQ(steps[0].step_id, 0);
  EXPECT_EQ(steps[0].cpu_s, 1.0);
  EXPECT_EQ(steps[0].max_rss_bytes, 7872.0 * 1024);
  EXPECT_EQ(steps[1].step_id, 1);
  EXPECT_EQ(steps[1].cpu_s, 65.0);
  EXPECT_EQ(steps[1].max_rss_bytes, 2.0 * 1024 * 1024 * 1024);
}

TEST(SlurmJobs, SacctLinesGiveTheJobsStateAndItsEndedSteps) {
  const char* text =
      "7|COMPLETED|2026-11-28T04:29:21|00:02.883|\n"
      "7.batch|COMPLETED|2026-11-28T04:29:21|00:00.014|10624K\n"
      "7.0|COMPLETED|2026-11-28T04:29:20|00:02.861|21124K\n"
      "7.1|CANCELLED by 0|2026-11-28T04:29:20|01:00:05|2G\n"
      "7.2|RUNNING|Unknown|00:00:00|\n"                   // not ended: its figures are not final
      "8.0|COMPLETED|2026-11-28T04:29:20|00:01.000|1K\n"  // another job's
      "garbage\n";
  JobAccount account = ParseSacct(text, 7);
  EXPECT_EQ(account.state, "COMPLETED");
  EXPECT_TRUE(account.ended);
  ASSERT_EQ(account.steps.size(), 2u);
  EXPECT_EQ(account.steps[0].step_id, 0);
  EXPECT_DOUBLE_EQ(account.steps[0].cpu_s, 2.861);
  EXPECT_EQ(account.steps[0].max_rss_bytes, 21124.0 * 1024);
  EXPECT_EQ(account.steps[1].step_id, 1);
  EXPECT_EQ(account.steps[1].cpu_s, 3605.0);
  EXPECT_EQ(account.steps[1].max_rss_bytes, 2.0 * 1024 * 1024 * 1024);
}

TEST(SlurmJobs, SacctSaysWhenTheJobsRecordHasNotEndedYet) {
  // What sacct answers a moment after the job left the queue, before slurmctld sent its end.
  JobAccount account = ParseSacct("9|PENDING|Unknown|00:00:00|\n9.0|RUNNING|Unknown||\n", 9);
  EXPECT_EQ(account.state, "PENDING");
  EXPECT_FALSE(account.ended);
  EXPECT_TRUE(account.steps.empty());
}

TEST(SlurmJobs, SqueueLinesKeepTheCommentWhole) {
  auto jobs = ParseSqueue(
      "17|RUNNING|footprint experiment /p/a|b.csv workload 0\n18|PENDING|\nx|RUNNING|c\n");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, 17);
  EXPECT_EQ(jobs[0].state, "RUNNING");
  EXPECT_EQ(jobs[0].comment, "footprint experiment /p/a|b.csv workload 0");
  EXPECT_EQ(jobs[1].comment, "");
}

TEST(SlurmJobs, CommentsNameThePlanAndTheWorkload) {
  const std::string comment = JobComment("/p/plan.csv", 3);
  EXPECT_EQ(WorkloadOfComment(comment, "/p/plan.csv"), 3u);
  EXPECT_EQ(WorkloadOfComment(comment, "/p/plan.cs"), std::nullopt);
  EXPECT_EQ(WorkloadOfComment(comment, "/q/plan.csv"), std::nullopt);
  EXPECT_EQ(WorkloadOfComment("footprint experiment /p/plan.csv workload x", "/p/plan.csv"),
            std::nullopt);
}

// Submit with an `sbatch` of the test's first on PATH, which answers as sbatch --parsable does.
class SlurmSubmit : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string sbatch = dir_.File("sbatch");
    std::ofstream(sbatch) << "#!/bin/sh\necho '4242;cluster'\n";
    ASSERT_EQ(::chmod(sbatch.c_str(), 0755), 0);
    path_ = std::getenv("PATH");
    ::setenv("PATH", (dir_.path() + ":" + path_).c_str(), 1);
    std::ofstream(log_) << "17\n";  // an earlier submission's answer
  }
  void TearDown() override { ::setenv("PATH", path_.c_str(), 1); }

  testing::TempDir dir_;
  std::string path_;
  const std::string log_ = dir_.File("sbatch.log");
};

TEST_F(SlurmSubmit, TheJobIsWhatSbatchAddedToTheLog) {
  FakeEnv env;
  auto job = Submit({"--ntasks=1"}, "job.sh", log_, {}, env);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(*job, 4242);
  EXPECT_TRUE(env.Asked(log_));
}

TEST_F(SlurmSubmit, ALogThatCannotBeReadIsSaid) {
  FakeEnv env;
  env.file_errors[log_] = ENOENT;
  auto job = Submit({"--ntasks=1"}, "job.sh", log_, {}, env);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kIo);
  EXPECT_EQ(job.status().message(),
            "sbatch exited 0 but its answer cannot be read (cannot open " + log_ +
                ": No such file or directory): squeue --me says whether the job was queued");
}

}  // namespace
}  // namespace footprint::experiment
