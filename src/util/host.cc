#include "util/host.h"

#include <pwd.h>
#include <unistd.h>

#include "util/file.h"
#include "util/proc_parse.h"
#include "util/strings.h"

namespace footprint {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string UserName(const std::optional<std::string>& user_variable) {
  if (passwd* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return user_variable ? *user_variable : std::to_string(::geteuid());
}

std::string CurrentDir() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? buf : "";
}

std::string BootId() {
  auto id = ReadWholeFile("/proc/sys/kernel/random/boot_id");
  return id.ok() ? std::string(Trim(std::string_view(*id).substr(0, id->find('\n')))) : "";
}

std::optional<uint64_t> StartTicks(pid_t pid) {
  auto text = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  auto st = ParseProcStat(*text);
  if (!st) return std::nullopt;
  return st->starttime;
}

}  // namespace footprint
