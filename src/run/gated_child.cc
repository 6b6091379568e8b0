#include "run/gated_child.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string_view>

#include "probe/cgroup.h"
#include "run/stop_signals.h"
#include "util/file.h"

extern char** environ;

namespace footprint {
namespace {

constexpr std::string_view kT0Name = "FOOTPRINT_T0_NS=";
constexpr size_t kT0Digits = 20;  // an int64's digits

// The command's argv and environment, made before the fork. The environment is footprint's,
// with the join variables and the command's own set over it as setenv would, and a slot for
// t0 that the child fills in without allocating.
class ChildArgs {
 public:
  ChildArgs(const std::vector<std::string>& command, const JoinEnvironment& env) {
    for (const std::string& a : command) argv_.push_back(const_cast<char*>(a.c_str()));
    argv_.push_back(nullptr);
    std::map<std::string, std::string> set = {{"FOOTPRINT_RUN_ID", env.run_id},
                                              {"FOOTPRINT_DB", env.db}};
    for (const auto& [name, value] : *env.extra) set[name] = value;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const std::string name(entry.substr(0, entry.find('=')));
      if (!set.contains(name) && name + "=" != kT0Name) strings_.emplace_back(entry);
    }
    for (const auto& [name, value] : set) strings_.push_back(name + "=" + value);
    strings_.push_back(std::string(kT0Name) + std::string(kT0Digits, '0'));
    for (std::string& s : strings_) envp_.push_back(s.data());
    envp_.push_back(nullptr);
  }
  char* const* argv() { return argv_.data(); }
  char** envp() { return envp_.data(); }
  // Async-signal-safe: writes t0's digits into the slot.
  void SetT0(int64_t t0) noexcept {
    char* digits = strings_.back().data() + kT0Name.size();
    char reversed[kT0Digits];
    size_t n = 0;
    uint64_t v = t0 < 0 ? 0 : static_cast<uint64_t>(t0);
    do {
      reversed[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0 && n < kT0Digits);
    for (size_t i = 0; i < n; ++i) digits[i] = reversed[n - 1 - i];
    digits[n] = '\0';
  }

 private:
  std::vector<char*> argv_;
  std::vector<std::string> strings_;
  std::vector<char*> envp_;
};

// What the child tells the parent once it is in the run's cgroups (or could not get there).
struct JoinReport {
  int error = 0;  // errno of the write that failed, 0: joined
  size_t failed_dir = 0;
};

// In the child, between fork and exec: nothing here allocates or touches footprint's state
// (see the file comment of gated_child.h). If exec fails, the child sends its errno through the
// close-on-exec `report_fd`.
[[noreturn]] void ChildExec(ChildArgs& args, const sigset_t& mask, const JoinEnvironment& env,
                            const RunCgroup* cgroup, bool in_v2, int gate_fd, int report_fd) {
  if (env.die_with != 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != env.die_with) _exit(125);  // footprint died before the line above
  }
  JoinReport joined;
  if (cgroup != nullptr) joined.error = cgroup->JoinCallingThread(in_v2, joined.failed_dir);
  if (::send(gate_fd, &joined, sizeof joined, MSG_NOSIGNAL) != sizeof joined || joined.error) {
    _exit(125);
  }
  for (int s : kStopSignals) signal(s, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  // The gate opens with the run's start on the monotonic clock, for programs that join it.
  int64_t t0 = 0;
  if (::read(gate_fd, &t0, sizeof t0) != sizeof t0) _exit(125);  // footprint gave up
  args.SetT0(t0);
  environ = args.envp();  // execvp searches the command's PATH, as after setenv
  if (env.output_fd >= 0) {
    ::dup2(env.output_fd, STDOUT_FILENO);
    ::dup2(env.output_fd, STDERR_FILENO);
  }
  if (env.stdin_fd >= 0) ::dup2(env.stdin_fd, STDIN_FILENO);
  if (env.stdout_fd >= 0) ::dup2(env.stdout_fd, STDOUT_FILENO);
  if (!env.working_dir || ::chdir(env.working_dir) == 0) execvp(args.argv()[0], args.argv());
  int error = errno;
  (void)!::write(report_fd, &error, sizeof error);
  _exit(error == ENOENT || error == ENOTDIR ? 127 : 126);
}

// clone3 into the cgroup v2 directory `dir_fd`; -1 with errno when the kernel cannot (before
// 5.7, or a cgroup it refuses), and then the caller forks as before.
pid_t CloneIntoCgroup(int dir_fd) {
  clone_args args = {};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(dir_fd);
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

}  // namespace

Result<std::unique_ptr<GatedChild>> GatedChild::Start(const std::vector<std::string>& command,
                                                      const sigset_t& child_mask,
                                                      const JoinEnvironment& env,
                                                      const RunCgroup* cgroup) {
  std::unique_ptr<GatedChild> c(new GatedChild());
  int gate[2], report[2];
  // The gate is a socket, not a pipe: a child that died at the gate (Ctrl-C reaches the
  // whole process group) makes opening it EPIPE, where a pipe would kill footprint with
  // SIGPIPE before it stores the run (seen with run -r under load: exit -13, not 130).
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) != 0) {
    return IoError(std::string("cannot create a socket pair: ") + std::strerror(errno));
  }
  if (::pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    for (int fd : gate) ::close(fd);
    return IoError(std::string("cannot create a pipe: ") + std::strerror(err));
  }
  ChildArgs args(command, env);
  const int v2_fd = cgroup != nullptr ? cgroup->v2_dir_fd() : -1;
  c->pid_ = v2_fd >= 0 ? CloneIntoCgroup(v2_fd) : -1;
  c->cloned_into_cgroup_ = c->pid_ >= 0;
  if (c->pid_ < 0) c->pid_ = ::fork();
  if (c->pid_ < 0) {
    int err = errno;
    for (int fd : {gate[0], gate[1], report[0], report[1]}) ::close(fd);
    return IoError(std::string("cannot start the command: fork failed: ") + std::strerror(err));
  }
  if (c->pid_ == 0) {
    // Only the parent may hold the gate's write end: with a copy here, the child would
    // never read end-of-file when footprint gives up, and never exit.
    ::close(gate[1]);
    ::close(report[0]);
    ChildExec(args, child_mask, env, cgroup, c->cloned_into_cgroup_, gate[0], report[1]);
  }
  ::close(gate[0]);
  ::close(report[1]);
  c->gate_fd_ = gate[1];
  c->report_fd_ = report[0];
  JoinReport joined;
  ssize_t got;
  while ((got = ::recv(c->gate_fd_, &joined, sizeof joined, MSG_WAITALL)) < 0 && errno == EINTR) {
  }
  if (got != sizeof joined) return IoError("the command's process ended before it started");
  if (joined.error != 0) {
    return IoError("cannot move the command into the cgroup " + cgroup->dir(joined.failed_dir) +
                   ": " + std::strerror(joined.error) + "; try footprint run --no-cgroup");
  }
  return c;
}

void GatedChild::Abandon() {
  if (gate_fd_ < 0) return;
  CloseFd(gate_fd_);
  CloseFd(report_fd_);
  ::waitpid(pid_, nullptr, 0);
}

std::string GatedChild::Open(int64_t t0, const std::string& program,
                             const std::function<void()>& meanwhile) {
  (void)!::send(gate_fd_, &t0, sizeof t0, MSG_NOSIGNAL);
  CloseFd(gate_fd_);
  meanwhile();
  int exec_error = 0;
  ssize_t got;
  while ((got = ::read(report_fd_, &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  CloseFd(report_fd_);
  if (got != sizeof exec_error) return "";
  return "cannot run '" + program + "': " +
         (exec_error == ENOENT ? std::string("command not found") : std::strerror(exec_error));
}

}  // namespace footprint
