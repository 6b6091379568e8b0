#include "util/file.h"

#include <cerrno>
#include <cstring>

#include "util/strings.h"

namespace footprint {

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return IoError("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<std::string> ReadNulSeparatedWords(const std::string& path) {
  std::vector<std::string> words;
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return words;
  for (std::string_view w : Split(*text, '\0')) {
    if (!w.empty()) words.emplace_back(w);
  }
  return words;
}

Status WriteFile(const std::string& path, std::string_view text, bool create) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return IoError("cannot write " + path + ": " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace footprint
