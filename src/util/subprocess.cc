#include "util/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "util/strings.h"

extern char** environ;

namespace footprint {
namespace {

// Waits for `pid`; its status as a shell gives it, and its resource usage into `usage` when
// given.
int WaitStatus(pid_t pid, rusage* usage = nullptr) {
  int status = 0;
  while (::wait4(pid, &status, 0, usage) < 0 && errno == EINTR) {
  }
  return ShellStatus(status);
}

}  // namespace

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& env) {
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!env.contains(std::string(entry.substr(0, entry.find('='))))) entries.emplace_back(entry);
  }
  for (const auto& [k, v] : env) entries.push_back(k + "=" + v);
  return entries;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string CaptureFirstLine(const std::vector<std::string>& args) {
  std::optional<std::string> out = Capture(args);
  return out ? std::string(Trim(std::string_view(*out).substr(0, out->find('\n')))) : "";
}

int ShellStatus(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

std::optional<std::string> Capture(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env,
                                   std::string_view input, int64_t* peak_rss_bytes) {
  int out[2], in[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  if (!input.empty() && ::pipe2(in, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return std::nullopt;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (in[0] >= 0) {
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  std::vector<std::string> words = args, entries = EnvironmentWith(env);
  std::vector<char*> argv = CStrings(words), envp = CStrings(entries);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (in[0] >= 0) {
    ::close(in[0]);
    if (rc == 0) (void)!::write(in[1], input.data(), input.size());  // small: fits the pipe
    ::close(in[1]);
  }
  if (rc != 0) {
    ::close(out[0]);
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  rusage usage{};
  const int status = WaitStatus(pid, &usage);
  if (peak_rss_bytes != nullptr) *peak_rss_bytes = int64_t{usage.ru_maxrss} * 1024;
  if (status != 0) return std::nullopt;
  return text;
}

int RunAndWait(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
               const std::string& working_dir, const std::string& output) {
  if (args.empty()) return 127;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!output.empty()) {  // opened before the chdir: a relative path is footprint's
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&fa, working_dir.c_str());
  std::vector<std::string> words = args, entries = EnvironmentWith(env);
  std::vector<char*> argv = CStrings(words), envp = CStrings(entries);
  pid_t pid;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return rc == ENOENT || rc == ENOTDIR ? 127 : 126;
  return WaitStatus(pid);
}

}  // namespace footprint
