#include "run/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace footprint {
namespace {

// SIGKILL to each process `procs_path` lists. In the guard, a fork of a threaded process:
// system calls only.
void KillListed(const char* procs_path) {
  const int fd = ::open(procs_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  pid_t pid = 0;
  bool in_number = false;
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
        in_number = true;
      } else if (in_number) {
        ::kill(pid, SIGKILL);
        pid = 0;
        in_number = false;
      }
    }
  }
  ::close(fd);
}

// What a guard stops when footprint dies: a cgroup (its cgroup.kill, cgroup.procs and folder),
// or a process group.
struct Victims {
  const char* kill_path = nullptr;
  const char* procs_path = nullptr;
  const char* dir = nullptr;
  pid_t group = 0;
};

// Kills the cgroup and removes it (at most 5 s of tries: its processes take a moment to go).
void KillCgroup(const Victims& victims) {
  const int fd = ::open(victims.kill_path, O_WRONLY | O_CLOEXEC);
  const bool killed = fd >= 0 && ::write(fd, "1", 1) == 1;
  if (fd >= 0) ::close(fd);
  const timespec pause{0, 10'000'000};
  for (int tries = 0; tries < 500; ++tries) {
    if (!killed) KillListed(victims.procs_path);  // a kernel before 5.14: one by one
    if (::rmdir(victims.dir) == 0 || errno == ENOENT) break;
    ::nanosleep(&pause, nullptr);
  }
}

// SIGKILL to the group while it has members (a fork between two kills), at most 5 s.
void KillGroup(pid_t group) {
  const timespec pause{0, 10'000'000};
  for (int tries = 0; tries < 500 && ::kill(-group, SIGKILL) == 0; ++tries) {
    ::nanosleep(&pause, nullptr);
  }
}

// The guard's life: waits on `watch_fd`; a byte ends the watch, end-of-file (footprint died)
// stops the victims.
[[noreturn]] void Guard(int watch_fd, const Victims& victims) {
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // SIGKILL aside, nothing ends it but the pipe
  ::setpgid(0, 0);                            // nor does a terminal's Ctrl-C reach it
  ::dup2(watch_fd, STDIN_FILENO);
  // No other descriptor of footprint's stays open here: a command's gate or output kept open
  // would change what the command and its readers see.
  ::close_range(STDIN_FILENO + 1, ~0U, 0);
  char byte;
  ssize_t got;
  while ((got = ::read(STDIN_FILENO, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (got == 1) _exit(0);
  if (victims.group > 0) {
    KillGroup(victims.group);
  } else {
    KillCgroup(victims);
  }
  _exit(0);
}

// Forks the guard of `victims`; `what` names them in the error.
Result<std::pair<pid_t, int>> StartGuard(const Victims& victims, const std::string& what) {
  // A socket, not a pipe: a guard that is gone (killed by hand) makes the write at the end
  // EPIPE, where a pipe would kill footprint with SIGPIPE.
  int watch[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, watch) != 0) {
    return IoError(std::string("cannot create a socket pair: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(watch[0]);
    ::close(watch[1]);
    return IoError("cannot start the guard of " + what + ": fork failed: " + std::strerror(err));
  }
  if (pid == 0) Guard(watch[0], victims);
  ::close(watch[0]);
  return std::pair{pid, watch[1]};
}

}  // namespace

Result<std::unique_ptr<OrphanGuard>> OrphanGuard::Start(const std::string& procs_path) {
  const std::string dir = procs_path.substr(0, procs_path.rfind('/'));
  const std::string kill_path = dir + "/cgroup.kill";
  const Victims cgroup{
      .kill_path = kill_path.c_str(), .procs_path = procs_path.c_str(), .dir = dir.c_str()};
  FP_ASSIGN_OR_RETURN(auto guard, StartGuard(cgroup, "the command's cgroup"));
  return std::unique_ptr<OrphanGuard>(new OrphanGuard(guard.first, guard.second));
}

Result<std::unique_ptr<OrphanGuard>> OrphanGuard::StartForGroup(pid_t group) {
  FP_ASSIGN_OR_RETURN(
      auto guard, StartGuard(Victims{.group = group}, "process group " + std::to_string(group)));
  return std::unique_ptr<OrphanGuard>(new OrphanGuard(guard.first, guard.second));
}

OrphanGuard::~OrphanGuard() {
  (void)!::send(fd_, "k", 1, MSG_NOSIGNAL);
  ::close(fd_);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace footprint
