// Running a helper program and capturing what it prints (git, nvidia-smi, ...).
#ifndef FOOTPRINT_UTIL_SUBPROCESS_H_
#define FOOTPRINT_UTIL_SUBPROCESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace footprint {

// Runs argv (looked up in PATH) with stdout captured, stderr on /dev/null and `input` (a few
// KiB at most) on stdin; the environment is footprint's with `env` on top. The output, or
// nullopt unless it exits 0. `peak_rss_bytes`, when given, receives the helper's own peak
// resident memory (its rusage).
std::optional<std::string> Capture(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {},
                                   std::string_view input = {}, int64_t* peak_rss_bytes = nullptr);

// The first line of what Capture(args) prints, trimmed; "" when it fails.
std::string CaptureFirstLine(const std::vector<std::string>& args);

// The status a shell gives a process that ended with waitpid's `wait_status`: its exit code,
// or 128+N when signal N killed it.
int ShellStatus(int wait_status);

// Runs argv (looked up in PATH) with footprint's stdin, stdout and stderr (or both into
// `output`, appended to, when given), footprint's environment with `env` on top, in
// `working_dir` (empty: footprint's own), and waits for it. Its status as a shell gives it:
// the exit code, 128+N when signal N killed it, 127 when the program was not found, 126 when
// it could not be run (or `output` not opened).
int RunAndWait(const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env = {},
               const std::string& working_dir = {}, const std::string& output = {});

// footprint's environment with `env` on top, as "KEY=VALUE" entries (for exec; read before a
// fork, since the child of a threaded process may only call async-signal-safe functions).
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& env);

// Null-terminated pointers into `strings`, for exec; valid while `strings` is unchanged.
std::vector<char*> CStrings(std::vector<std::string>& strings);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_SUBPROCESS_H_
