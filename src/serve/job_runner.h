// The runner of `footprint serve`'s queue (docs/evaluation.md, "The queue"): one thread that
// starts the queued jobs, one at a time per target (a GPU is held by one job at a time), keeps
// their stdout and stderr with the job as they come (at most kPollMs late), and cancels them.
//
// A job runs as a footprint command (job_spec.h) in a process group of its own. Cancelling it
// sends SIGTERM to that command (footprint passes it on once to what it started and stores
// its runs, killed, with what they measured), then, kTermGraceMs later, SIGKILL to every
// process of the job's tree (found from the kernel's children lists, before the first one
// dies) and to its group. A job on a Slurm partition also has its Slurm jobs cancelled
// (scancel), which a stopped footprint leaves queued and running.
// A cancel asked for by another process (`footprint queue cancel`) is seen within kPollMs.
// Every wait and deadline (the poll of an idle queue, the SIGKILL kTermGraceMs after SIGTERM,
// kDrainMs) is on the Env's monotonic clock; only reading the jobs' pipes waits on the kernel.
// A serve that dies without stopping (SIGKILL) kills each job's command (PR_SET_PDEATHSIG),
// whose orphan guard stops the run's cgroup; the next serve marks the job interrupted.
//
// Thread-safety: Wake and Stop may be called from any thread.
#ifndef FOOTPRINT_SERVE_JOB_RUNNER_H_
#define FOOTPRINT_SERVE_JOB_RUNNER_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "footprint/env.h"
#include "footprint/status.h"
#include "serve/job_queue.h"
#include "serve/job_spec.h"

namespace footprint::serve {

inline constexpr int kPollMs = 100;
inline constexpr int kTermGraceMs = 1000;
// How long output is still read after a job's first process ended.
inline constexpr int kDrainMs = 2000;

class JobRunner {
 public:
  JobRunner(JobQueue& queue, const JobCatalog& catalog, Env& env);
  ~JobRunner();

  // Marks the jobs a previous serve left running as failed (interrupted), then starts the
  // runner's thread. The queue's error.
  Status Start();
  // Looks at the queue now rather than at the next poll (a job was added or cancelled).
  void Wake();
  // Stops the jobs that run (as a cancel does; stored failed, interrupted by the stop) and the
  // thread.
  void Stop();

 private:
  struct Running;
  void Loop();
  void Launch(const Job& job);
  void ReadOutput(int timeout_ms);
  void Reap();
  void Cancel(Running& job, int64_t now_ms);
  void StartWaiting();
  int64_t NowMs();
  void KillJobTree(pid_t leader);

  JobQueue& queue_;
  const JobCatalog& catalog_;
  Env& env_;
  std::map<std::string, std::unique_ptr<Running>> running_;  // by target
  std::mutex mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_JOB_RUNNER_H_
