#include "serve/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "run/orphan_guard.h"
#include "session/descendants.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::serve {

struct JobRunner::Running {
  int64_t id = 0;
  pid_t pid = 0;  // the job's first process, leader of its process group
  int out = -1, err = -1;
  std::string workdir;
  bool on_slurm = false;              // its Slurm jobs are listed in workdir/slurm/sbatch.log
  std::optional<int64_t> kill_at_ms;  // cancelled: when SIGKILL follows SIGTERM
  bool stopped_by_serve = false;
  std::optional<int> wait_status;
  int64_t ended_at_ms = 0;             // when its first process ended
  std::unique_ptr<OrphanGuard> guard;  // kills the job's group if serve dies

  ~Running() {
    CloseFd(out);
    CloseFd(err);
    std::error_code ec;
    if (!workdir.empty()) std::filesystem::remove_all(workdir, ec);
  }
};

namespace {

// Every process below `pid`, listed before any is killed: once a parent dies, its children
// move to another parent and out of sight.
std::vector<pid_t> TreeOf(pid_t pid) {
  std::vector<pid_t> tree = {pid};
  for (size_t i = 0; i < tree.size() && tree.size() < 100'000; ++i) {
    for (pid_t child : ChildrenOf("/proc", tree[i])) tree.push_back(child);
  }
  return tree;
}

// Starts `launch` in a process group of its own, stdout and stderr into the pipes' write ends,
// stdin from /dev/null, no signal blocked (serve's threads block SIGINT and SIGTERM).
// A serve that dies (SIGKILL, the OOM killer) takes the job's command with it at once
// (PR_SET_PDEATHSIG; the runner's thread, which forks, lives as long as serve's jobs do); the
// rest of its group goes through the job's guard (Launch).
Result<pid_t> Spawn(JobLaunch& launch, int64_t id, int out_fd, int err_fd) {
  // Made before fork (the child of a threaded process may only call async-signal-safe
  // functions): serve's environment and FOOTPRINT_QUEUE_JOB naming the job.
  std::vector<std::string> env = EnvironmentWith({{"FOOTPRINT_QUEUE_JOB", std::to_string(id)}});
  std::vector<char*> argv = CStrings(launch.command), envp = CStrings(env);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t serve_pid = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    CloseFd(null_fd);
    return IoError(std::string("cannot start a job: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != serve_pid) ::_exit(127);  // serve died before the line above
    ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    if (::chdir(launch.cwd.c_str()) == 0) ::execve(argv[0], argv.data(), envp.data());
    static const char kFailed[] = "footprint serve: cannot start the job's command\n";
    (void)!::write(2, kFailed, sizeof kFailed - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: a cancel right after the start must find the group
  CloseFd(null_fd);
  return pid;
}

// The Slurm jobs a job submitted (`experiment --executor slurm` keeps sbatch's answers, "JOB"
// or "JOB;CLUSTER" lines, in its spool folder's sbatch.log), cancelled with scancel: footprint
// stopped by a signal leaves its Slurm jobs queued and running.
void CancelSlurmJobs(const std::string& workdir) {
  auto log = ReadWholeFile(workdir + "/slurm/sbatch.log");
  if (!log.ok()) return;
  std::vector<std::string> scancel = {"scancel"};
  for (std::string_view line : Split(*log, '\n')) {
    line = Trim(line);
    if (auto id = ParseInt(line.substr(0, line.find(';'))); id && *id > 0) {
      scancel.push_back(std::to_string(*id));
    }
  }
  if (scancel.size() > 1) RunAndWait(scancel, {}, {}, workdir + "/scancel.log");
}

std::string Ending(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "killed by signal " + std::to_string(WTERMSIG(wait_status));
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

}  // namespace

JobRunner::JobRunner(JobQueue& queue, const JobCatalog& catalog, Env& env)
    : queue_(queue), catalog_(catalog), env_(env) {}

int64_t JobRunner::NowMs() { return env_.MonotonicNs() / kNsPerMs; }

// SIGKILL to the job's tree and group, again while processes appear (a fork between the
// listing and the kill), for at most 400 pauses of 5 ms.
void JobRunner::KillJobTree(pid_t leader) {
  for (int pass = 0; pass < 400; ++pass) {
    std::vector<pid_t> tree = TreeOf(leader);
    bool alive = ::kill(-leader, SIGKILL) == 0;
    for (pid_t pid : tree) {
      if (pid != leader && ::kill(pid, SIGKILL) == 0) alive = true;
    }
    if (!alive || tree.size() <= 1) return;
    env_.SleepUntil(env_.MonotonicNs() + 5 * kNsPerMs);
  }
}

JobRunner::~JobRunner() { Stop(); }

Status JobRunner::Start() {
  FP_RETURN_IF_ERROR(queue_.MarkInterrupted().status());
  thread_ = std::thread([this] {
    // Stop signals are serve's signal thread's (ServeUntilSignal), never this one's.
    sigset_t stops;
    sigemptyset(&stops);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&stops, signal);
    pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    Loop();
  });
  return Status::Ok();
}

void JobRunner::Wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  wake_.notify_all();
}

void JobRunner::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  Wake();
  thread_.join();
}

void JobRunner::Loop() {
  while (true) {
    if (running_.empty()) {
      std::unique_lock lock(mu_);
      env_.WaitUntil(wake_, lock, env_.MonotonicNs() + kPollMs * kNsPerMs,
                     [this] { return woken_; });
      woken_ = false;
    } else {
      ReadOutput(kPollMs);
    }
    const int64_t now = NowMs();
    if (stopping_) {
      for (auto& [target, job] : running_) {
        job->stopped_by_serve = true;
        Cancel(*job, now);
      }
      if (running_.empty()) return;
    } else {
      auto cancelled = queue_.CancelRequested();
      for (auto& [target, job] : running_) {
        const bool asked = cancelled.ok() && std::find(cancelled->begin(), cancelled->end(),
                                                       job->id) != cancelled->end();
        if (asked || job->kill_at_ms) Cancel(*job, now);
      }
      StartWaiting();
    }
    Reap();
  }
}

void JobRunner::StartWaiting() {
  auto targets = queue_.WaitingTargets();
  if (!targets.ok()) return;
  for (const std::string& target : *targets) {
    if (running_.contains(target)) continue;
    auto job = queue_.ClaimNext(target);
    if (job.ok() && job->has_value()) Launch(**job);
  }
}

void JobRunner::Launch(const Job& job) {
  auto running = std::make_unique<Running>();
  running->id = job.id;
  std::string workdir = (std::filesystem::temp_directory_path() / "fp-job-XXXXXX").string();
  if (::mkdtemp(workdir.data()) == nullptr) {
    (void)queue_.Finish(job.id, JobState::kFailed, std::nullopt,
                        "cannot make a folder for its files in the temporary folder");
    return;
  }
  running->workdir = workdir;
  auto launch = catalog_.Prepare(job.request, job.id, workdir);
  Status ready = launch.status();
  if (ready.ok() && !launch->manifest_path.empty()) {
    ready = WriteFile(launch->manifest_path, launch->manifest_text, true);
  }
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (ready.ok() && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)) {
    ready = IoError(std::string("cannot make its output pipes: ") + std::strerror(errno));
  }
  Result<pid_t> pid = ready.ok() ? Spawn(*launch, job.id, out[1], err[1]) : ready;
  for (int* fd : {&out[1], &err[1]}) CloseFd(*fd);
  if (!pid.ok()) {
    for (int* fd : {&out[0], &err[0]}) CloseFd(*fd);
    (void)queue_.AppendLog(job.id, "err", "footprint serve: " + pid.status().message() + "\n");
    (void)queue_.Finish(job.id, JobState::kFailed, std::nullopt, pid.status().message());
    return;
  }
  running->pid = *pid;
  // A serve that dies leaves no process of the job's group running (a footprint trial's
  // process outlives its parent); the footprint commands' own guards stop their runs' cgroups.
  auto guard = OrphanGuard::StartForGroup(*pid);
  if (guard.ok()) {
    running->guard = std::move(*guard);
  } else {
    (void)queue_.AppendLog(job.id, "err",
                           "footprint serve: " + guard.status().message() +
                               "; a serve killed while the job runs may leave it running\n");
  }
  running->on_slurm = job.request.target.starts_with("slurm:");
  running->out = out[0];
  running->err = err[0];
  running_[job.request.target] = std::move(running);
}

void JobRunner::ReadOutput(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Running*, const char*>> owners;
  for (auto& [target, job] : running_) {
    for (auto [fd, stream] : {std::pair{job->out, "out"}, std::pair{job->err, "err"}}) {
      if (fd < 0) continue;
      fds.push_back({.fd = fd, .events = POLLIN, .revents = 0});
      owners.emplace_back(job.get(), stream);
    }
  }
  if (fds.empty()) {
    env_.SleepUntil(env_.MonotonicNs() + timeout_ms * kNsPerMs);
    return;
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  char buffer[64 * 1024];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto [job, stream] = owners[i];
    const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
    if (n > 0) {
      (void)queue_.AppendLog(job->id, stream, std::string_view(buffer, static_cast<size_t>(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      CloseFd(std::string_view(stream) == "out" ? job->out : job->err);
    }
  }
}

void JobRunner::Cancel(Running& job, int64_t now_ms) {
  if (job.wait_status) return;
  if (!job.kill_at_ms) {
    if (job.on_slurm) CancelSlurmJobs(job.workdir);
    ::kill(job.pid, SIGTERM);  // footprint passes it on to what it started, once
    job.kill_at_ms = now_ms + kTermGraceMs;
  } else if (now_ms >= *job.kill_at_ms) {
    KillJobTree(job.pid);
  }
}

// A job ends when its first process has ended and its output pipes are closed, or
// kDrainMs after that process ended (a process that left the tree, a daemon, may hold them
// open for ever), or at once once it was killed.
void JobRunner::Reap() {
  for (auto it = running_.begin(); it != running_.end();) {
    Running& job = *it->second;
    int status = 0;
    if (!job.wait_status && ::waitpid(job.pid, &status, WNOHANG) == job.pid) {
      job.wait_status = status;
      job.ended_at_ms = NowMs();
    }
    const bool drained = (job.out < 0 && job.err < 0) || job.kill_at_ms ||
                         (job.wait_status && NowMs() - job.ended_at_ms > kDrainMs);
    if (!job.wait_status || !drained) {
      ++it;
      continue;
    }
    if (job.kill_at_ms) KillJobTree(job.pid);  // what the group left behind
    const int exit_code = ShellStatus(*job.wait_status);
    JobState state = exit_code == 0 ? JobState::kDone : JobState::kFailed;
    std::string reason = exit_code == 0 ? "" : Ending(*job.wait_status);
    if (job.stopped_by_serve) {
      state = JobState::kFailed;
      reason = "interrupted: footprint serve stopped while it ran (" + reason + ")";
    } else if (job.kill_at_ms) {
      state = JobState::kCancelled;
      reason = "cancelled: SIGTERM to its processes, SIGKILL to those left after " +
               std::to_string(kTermGraceMs) + " ms (" + Ending(*job.wait_status) + ")";
    }
    (void)queue_.Finish(job.id, state, exit_code, reason);
    it = running_.erase(it);
  }
}

}  // namespace footprint::serve
