#include "run/orphan_guard.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <tuple>
#include <utility>

namespace footprint {
namespace {

// The guard shares footprint's memory where it can (clone with CLONE_VM: no page tables to copy,
// 0.27 ms of CPU less per run than a fork). It then runs on the thread-local storage of the
// thread that started it, so its system calls are made directly, leaving that thread's errno
// alone and passing no wrapper a sanitizer intercepts, and it reads nothing footprint may free:
// what it needs is copied into its block. Under the sanitizers (whose instrumentation of its
// code keeps state per thread), or where no direct call is written here, it is forked.
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
constexpr bool kShareMemory = true;
#else
constexpr bool kShareMemory = false;
#endif
constexpr size_t kGuardStackBytes = 64 * 1024;
constexpr size_t kGuardPathBytes = 1024;

}  // namespace

// What a guard stops when footprint dies: a cgroup (its cgroup.kill, cgroup.procs and folder),
// or a process group; and the guard's own stack.
struct OrphanGuard::Block {
  int watch_fd = -1;
  pid_t group = 0;
  char kill_path[kGuardPathBytes] = {};
  char procs_path[kGuardPathBytes] = {};
  char dir[kGuardPathBytes] = {};
  alignas(16) char stack[kGuardStackBytes];
};

namespace {

using GuardBlock = OrphanGuard::Block;

// System call `number`: its result, or -errno.
long Sys(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
#if defined(__x86_64__)
  long result;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return result;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
#else
  const long result = ::syscall(number, a, b, c, d);
  return result == -1 ? -errno : result;
#endif
}

int OpenPath(const char* path, int flags) {
  return static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), flags | O_CLOEXEC));
}

void Pause() {
  const timespec pause{0, 10'000'000};
  Sys(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, reinterpret_cast<long>(&pause), 0);
}

// SIGKILL to each process `procs_path` lists.
void KillListed(const char* procs_path) {
  const int fd = OpenPath(procs_path, O_RDONLY);
  if (fd < 0) return;
  char buf[4096];
  long pid = 0;
  bool in_number = false;
  long got;
  while ((got = Sys(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf)) > 0) {
    for (long i = 0; i < got; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
        in_number = true;
      } else if (in_number) {
        Sys(SYS_kill, pid, SIGKILL);
        pid = 0;
        in_number = false;
      }
    }
  }
  Sys(SYS_close, fd);
}

// Kills the cgroup and removes it (at most 5 s of tries: its processes take a moment to go).
void KillCgroup(const GuardBlock& b) {
  const int fd = OpenPath(b.kill_path, O_WRONLY);
  const bool killed = fd >= 0 && Sys(SYS_write, fd, reinterpret_cast<long>("1"), 1) == 1;
  if (fd >= 0) Sys(SYS_close, fd);
  for (int tries = 0; tries < 500; ++tries) {
    if (!killed) KillListed(b.procs_path);  // a kernel before 5.14: one by one
    const long removed = Sys(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(b.dir), AT_REMOVEDIR);
    if (removed == 0 || removed == -ENOENT) break;
    Pause();
  }
}

// SIGKILL to the group while it has members (a fork between two kills), at most 5 s.
void KillGroup(pid_t group) {
  for (int tries = 0; tries < 500 && Sys(SYS_kill, -group, SIGKILL) == 0; ++tries) Pause();
}

// The guard's life: waits on its watch; a byte ends the watch, end-of-file (footprint died)
// stops the victims.
int Guard(void* block) {
  const GuardBlock& b = *static_cast<const GuardBlock*>(block);
  const uint64_t all_signals = ~uint64_t{0};
  // SIGKILL aside, nothing ends it but the watch; nor does a terminal's Ctrl-C reach it.
  Sys(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all_signals), 0, sizeof all_signals);
  Sys(SYS_setpgid, 0, 0);
  if (b.watch_fd != STDIN_FILENO) Sys(SYS_dup3, b.watch_fd, STDIN_FILENO, 0);
  // No other descriptor of footprint's stays open here: a command's gate or output kept open
  // would change what the command and its readers see.
  Sys(SYS_close_range, STDIN_FILENO + 1, ~0U, 0);
  char byte;
  // All signals are blocked: the read is not interrupted. End-of-file, or an error, means
  // footprint is gone.
  if (Sys(SYS_read, STDIN_FILENO, reinterpret_cast<long>(&byte), 1) != 1) {
    if (b.group > 0) {
      KillGroup(b.group);
    } else {
      KillCgroup(b);
    }
  }
  Sys(SYS_exit_group, 0);
  return 0;
}

bool CopyPath(const std::string& from, char (&to)[kGuardPathBytes]) {
  if (from.size() >= kGuardPathBytes) return false;
  std::memcpy(to, from.c_str(), from.size() + 1);
  return true;
}

// Starts the guard of what `block` names (its watch_fd is set here); `what` names it in the
// error. Returns the guard's pid and the watch's end footprint keeps.
Result<std::pair<pid_t, int>> StartGuard(GuardBlock& block, const std::string& what) {
  // A socket, not a pipe: a guard that is gone (killed by hand) makes the write at the end
  // EPIPE, where a pipe would kill footprint with SIGPIPE.
  int watch[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, watch) != 0) {
    return IoError(std::string("cannot create a socket pair: ") + std::strerror(errno));
  }
  block.watch_fd = watch[0];
  pid_t pid;
  if constexpr (kShareMemory) {
    pid = ::clone(Guard, block.stack + sizeof block.stack, CLONE_VM | SIGCHLD, &block);
  } else {
    pid = ::fork();
    if (pid == 0) Guard(&block);
  }
  if (pid < 0) {
    const int err = errno;
    ::close(watch[0]);
    ::close(watch[1]);
    return IoError("cannot start the guard of " + what + ": " + std::strerror(err));
  }
  ::close(watch[0]);
  return std::pair{pid, watch[1]};
}

// A guard's block, in pages of its own: never reused by footprint while the guard runs.
Result<GuardBlock*> NewGuardBlock() {
  void* memory = ::mmap(nullptr, sizeof(GuardBlock), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (memory == MAP_FAILED) {
    return IoError(std::string("cannot map the guard's memory: ") + std::strerror(errno));
  }
  return new (memory) GuardBlock;  // the stack left as mapped: untouched pages
}

}  // namespace

Result<std::unique_ptr<OrphanGuard>> OrphanGuard::Start(const std::string& procs_path) {
  const std::string dir = procs_path.substr(0, procs_path.rfind('/'));
  FP_ASSIGN_OR_RETURN(GuardBlock * block, NewGuardBlock());
  std::unique_ptr<OrphanGuard> guard(new OrphanGuard(block));
  if (!CopyPath(dir + "/cgroup.kill", block->kill_path) ||
      !CopyPath(procs_path, block->procs_path) || !CopyPath(dir, block->dir)) {
    return InvalidArgument("the cgroup path " + dir + " is too long to guard");
  }
  FP_ASSIGN_OR_RETURN(std::tie(guard->pid_, guard->fd_),
                      StartGuard(*block, "the command's cgroup"));
  return guard;
}

Result<std::unique_ptr<OrphanGuard>> OrphanGuard::StartForGroup(pid_t group) {
  FP_ASSIGN_OR_RETURN(GuardBlock * block, NewGuardBlock());
  std::unique_ptr<OrphanGuard> guard(new OrphanGuard(block));
  block->group = group;
  FP_ASSIGN_OR_RETURN(std::tie(guard->pid_, guard->fd_),
                      StartGuard(*block, "process group " + std::to_string(group)));
  return guard;
}

OrphanGuard::~OrphanGuard() {
  if (pid_ > 0) {
    (void)!::send(fd_, "k", 1, MSG_NOSIGNAL);
    ::close(fd_);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // Only once the guard is reaped: until then it may still run on this memory.
  ::munmap(block_, sizeof(Block));
}

}  // namespace footprint
