// The runner of serve's queue (job_runner.h) on FakeEnv's driven clock, around a real job: a
// footprint stand-in (a shell script) that ignores SIGTERM and says so, and runs until killed
// or until the test lets it end.
#include "serve/job_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <limits>
#include <thread>

#include "fake_env.h"
#include "footprint/store.h"
#include "serve/job_queue.h"
#include "serve/job_spec.h"
#include "test_util.h"

namespace footprint::serve {
namespace {

using footprint::testing::TempDir;

constexpr int64_t kMs = 1'000'000;

class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(OpenStore(db_).ok());
    auto queue = JobQueue::Open(db_);
    ASSERT_TRUE(queue.ok()) << queue.status().message();
    queue_ = std::move(*queue);
    std::filesystem::create_directory(dir_.File("p"));
    std::ofstream(dir_.File("p/plan.csv"))
        << "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
           "e,w,,,0,-,/bin/true,none,\n";
    // Stands in for footprint: ignores SIGTERM (it says "term") and ticks until killed or
    // until the file `end` appears in its folder.
    std::ofstream(script_) << "#!/bin/sh\ntrap 'echo term' TERM\necho started\n"
                              "while [ ! -e end ]; do echo tick; sleep 0.05; done\n";
    ::chmod(script_.c_str(), 0755);
  }

  int64_t AddPlan() {
    return *queue_->Add({.kind = "plan", .file = "plan.csv", .target = "cpu"}, "ann");
  }
  // The job's output so far, and the sequence number of its last chunk.
  std::pair<std::string, int64_t> Output(int64_t id) {
    std::string text;
    int64_t last = 0;
    for (auto chunks = queue_->LogAfter(id, 0, 1'000'000); const JobLogChunk& c : *chunks) {
      text += c.text;
      last = c.seq;
    }
    return {text, last};
  }
  // Waits (real time: a real process answers) until `done`; false after a minute.
  static bool Await(const std::function<bool()>& done) {
    for (int i = 0; i < 6000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Waits until the runner has read the job's output twice more: its pass in between, which
  // looked at the clock after the output it read, is over.
  void AwaitTwoPasses(int64_t id) {
    const int64_t seen = Output(id).second;
    ASSERT_TRUE(Await([&] { return Output(id).second > seen + 1; }));
  }

  TempDir dir_;
  std::string db_ = dir_.File("fp.db");
  std::string script_ = dir_.File("footprint");
  std::unique_ptr<JobQueue> queue_;
  FakeEnv env_;
};

// SIGTERM at the cancel, SIGKILL exactly kTermGraceMs later on the Env's clock: a job that
// ignores SIGTERM runs on while the driven clock stands before that, however long it takes.
TEST_F(JobRunnerTest, SigkillFollowsSigtermAfterTheGraceOnTheEnvsClock) {
  JobCatalog catalog({"", dir_.File("p")}, script_, db_, "");
  JobRunner runner(*queue_, catalog, env_);
  const int64_t id = AddPlan();
  ASSERT_TRUE(runner.Start().ok());
  runner.Wake();  // the clock stands still: only a wake starts the job
  ASSERT_TRUE(Await([&] { return Output(id).first.find("started") != std::string::npos; }));
  ASSERT_TRUE(queue_->Cancel({id}, "ann", false).ok());
  ASSERT_TRUE(Await([&] { return Output(id).first.find("term") != std::string::npos; }));

  env_.Advance(kTermGraceMs * kMs - 1);
  AwaitTwoPasses(id);
  EXPECT_EQ(queue_->Get(id)->state, JobState::kRunning);

  env_.SetHorizon(env_.MonotonicNs() + 10'000 * kMs);  // the kill's pauses between its passes
  env_.Advance(1);
  ASSERT_TRUE(Await([&] { return queue_->Get(id)->state != JobState::kRunning; }));
  const Job job = *queue_->Get(id);
  EXPECT_EQ(job.state, JobState::kCancelled);
  EXPECT_NE(job.reason.find("killed by signal 9"), std::string::npos) << job.reason;
  runner.Stop();
}

// A serve stopped while a job runs (the fault): that job is stored failed, interrupted, once
// the Env's clock reached its SIGKILL; the job queued behind it stays queued, and the next
// serve's runner runs it to its end with all of its output.
TEST_F(JobRunnerTest, AServeStoppedMidJobLosesNoQueuedJob) {
  JobCatalog catalog({"", dir_.File("p")}, script_, db_, "");
  const int64_t first = AddPlan(), second = AddPlan();  // one target: one at a time
  {
    JobRunner runner(*queue_, catalog, env_);
    ASSERT_TRUE(runner.Start().ok());
    runner.Wake();
    ASSERT_TRUE(Await([&] { return Output(first).first.find("started") != std::string::npos; }));
    std::thread stopping([&] { runner.Stop(); });
    ASSERT_TRUE(Await([&] { return Output(first).first.find("term") != std::string::npos; }));
    env_.SetHorizon(env_.MonotonicNs() + 10'000 * kMs);
    env_.Advance(kTermGraceMs * kMs);
    stopping.join();
  }
  const Job stopped = *queue_->Get(first);
  EXPECT_EQ(stopped.state, JobState::kFailed);
  EXPECT_TRUE(stopped.reason.starts_with("interrupted: footprint serve stopped while it ran"))
      << stopped.reason;
  EXPECT_EQ(queue_->Get(second)->state, JobState::kQueued);

  std::ofstream(dir_.File("p/end")) << "";  // the next job ends by itself
  // Nothing here is timed: the clock runs as fast as the runner passes, however long the real
  // job takes. With the horizon left at 10 s, a runner that passed 100 times before a busy
  // machine let the job's shell end parked there for good, and the test hung.
  env_.SetHorizon(std::numeric_limits<int64_t>::max());
  JobRunner next(*queue_, catalog, env_);
  ASSERT_TRUE(next.Start().ok());
  ASSERT_TRUE(Await([&] {
    return queue_->Get(second)->state != JobState::kRunning &&
           queue_->Get(second)->state != JobState::kQueued;
  }));
  const Job done = *queue_->Get(second);
  EXPECT_EQ(done.state, JobState::kDone) << done.reason;
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_EQ(Output(second).first, "started\n");
  next.Stop();
}

}  // namespace
}  // namespace footprint::serve
