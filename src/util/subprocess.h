// Running a helper program and capturing what it prints (git, nvidia-smi, ...).
#ifndef FOOTPRINT_UTIL_SUBPROCESS_H_
#define FOOTPRINT_UTIL_SUBPROCESS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace footprint {

// Runs argv (looked up in PATH) with stdout captured, stderr on /dev/null and `input` (a few
// KiB at most) on stdin; the environment is footprint's with `env` on top. The output, or
// nullopt unless it exits 0.
std::optional<std::string> Capture(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {},
                                   std::string_view input = {});

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_SUBPROCESS_H_
