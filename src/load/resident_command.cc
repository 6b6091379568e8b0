#include "load/resident_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

// Waits up to `grace_ns` of `env`'s clock for `pid` to end, looking every 10 ms: its wait
// status, or none while it runs.
std::optional<int> AwaitExit(pid_t pid, int64_t grace_ns, Env& env) {
  const int64_t deadline_ns = env.MonotonicNs() + grace_ns;
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return 0;  // not ours any more: nothing to wait for
    if (env.MonotonicNs() >= deadline_ns) return std::nullopt;
    env.SleepUntil(env.MonotonicNs() + 10 * kNsPerMs);
  }
}

// The child, between fork and exec: the pipes on stdin and stdout, no run to join.
[[noreturn]] void ExecResident(char* const* argv, int command_in, int command_out, int report) {
  ::dup2(command_in, STDIN_FILENO);
  ::dup2(command_out, STDOUT_FILENO);
  for (const char* name : {"FOOTPRINT_RUN_ID", "FOOTPRINT_DB", "FOOTPRINT_T0_NS"}) {
    ::unsetenv(name);
  }
  ::execvp(argv[0], argv);
  const int error = errno;
  (void)!::write(report, &error, sizeof error);
  _exit(127);
}

}  // namespace

Result<std::unique_ptr<ResidentCommand>> ResidentCommand::Start(
    const std::vector<std::string>& argv, int64_t ready_timeout_ns, Env& env) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, report[2] = {-1, -1};
  for (int* pipe : {in, out, report}) {
    if (::pipe2(pipe, O_CLOEXEC) == 0) continue;
    const int error = errno;
    for (int fd : {in[0], in[1], out[0], out[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return IoError(std::string("cannot create a pipe: ") + std::strerror(error));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int64_t start_ns = env.MonotonicNs();
  const pid_t pid = ::fork();
  if (pid == 0) ExecResident(args.data(), in[0], out[1], report[1]);
  const int fork_error = errno;
  for (int fd : {in[0], out[1], report[1]}) ::close(fd);
  if (pid < 0) {
    for (int fd : {in[1], out[0], report[0]}) ::close(fd);
    return IoError(std::string("cannot start the agent: ") + std::strerror(fork_error));
  }
  std::unique_ptr<ResidentCommand> c(new ResidentCommand(env));
  c->pid_ = pid;
  c->transport_ = MakeLineTransport(in[1], out[0], env);
  int exec_error = 0;
  const bool failed = ::read(report[0], &exec_error, sizeof exec_error) == sizeof exec_error;
  ::close(report[0]);
  if (failed) {
    c->End();
    return NotFound("cannot run " + Inert(argv[0]) + ": " + std::strerror(exec_error));
  }
  if (std::string why = c->transport_->WaitUntilReady(start_ns + ready_timeout_ns); !why.empty()) {
    c->End();
    return IoError("the agent " + Inert(ShellCommandLine(argv)) + " never took queries: " + why);
  }
  c->ready_s_ = static_cast<double>(env.MonotonicNs() - start_ns) / 1e9;
  return c;
}

ResidentCommand::~ResidentCommand() { End(); }

int ResidentCommand::End() {
  if (status_) return *status_;
  transport_->EndQueries();
  // What it still writes is read (and dropped) until it closes its output, so that a full
  // pipe cannot hold it.
  transport_->WaitForEnd(env_.MonotonicNs() + kSutExitGraceNs, [](const SutAnswer&) {});
  std::optional<int> status = AwaitExit(pid_, kSutExitGraceNs, env_);
  for (int signal : {SIGTERM, SIGKILL}) {
    if (status) break;
    ::kill(pid_, signal);
    status = AwaitExit(pid_, kSutExitGraceNs, env_);
  }
  status_ = ShellStatus(status.value_or(0));
  return *status_;
}

}  // namespace footprint
