#include "util/file.h"

#include <sys/stat.h>

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

namespace {

// What a file that is not a regular one is, for people; empty for a regular file.
std::string_view NonRegularKind(mode_t mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISFIFO(mode)) return "a FIFO (a pipe, which may never end)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "not a regular file";
}

// A regular file, or the line that says what it is instead.
Status CheckKind(const struct stat& st, const std::string& path, std::string_view what) {
  std::string_view kind = NonRegularKind(st.st_mode);
  if (kind.empty()) return Status::Ok();
  return InvalidArgument(std::string(what) + " " + path + " is " + std::string(kind) +
                         ", not a file footprint can read whole: name a regular file (save the "
                         "text to one first)");
}

Status TooLarge(const std::string& path, std::string_view what, size_t max_bytes) {
  return InvalidArgument(std::string(what) + " " + path + " is larger than " +
                         FormatBytes(static_cast<double>(max_bytes)) +
                         ", the limit for it: make it smaller or split it");
}

Status CannotRead(const std::string& path, std::string_view what, int err) {
  return NotFound("cannot read " + std::string(what) + " " + path + ": " + std::strerror(err));
}

// The open descriptor's file: regular (no FIFO swapped in since the path was checked) and within
// `max_bytes`; its size in `size`.
Status CheckOpened(int fd, const std::string& path, std::string_view what, size_t max_bytes,
                   size_t& size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return CannotRead(path, what, errno);
  FP_RETURN_IF_ERROR(CheckKind(st, path, what));
  size = static_cast<size_t>(st.st_size);
  return size > max_bytes ? TooLarge(path, what, max_bytes) : Status::Ok();
}

}  // namespace

Status CheckRegularFile(const std::string& path, std::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return CannotRead(path, what, errno);
  return CheckKind(st, path, what);
}

Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes,
                                  std::string_view what) {
  // Checked before opening: opening a FIFO for reading blocks until a writer comes.
  FP_RETURN_IF_ERROR(CheckRegularFile(path, what));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return CannotRead(path, what, errno);
  size_t size = 0;
  Status status = CheckOpened(fd, path, what, max_bytes, size);
  std::string text;
  if (status.ok()) text.reserve(size);
  char buf[65536];
  while (status.ok()) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno != EINTR) status = CannotRead(path, what, errno);
    } else if (text.size() + static_cast<size_t>(n) > max_bytes) {
      status = TooLarge(path, what, max_bytes);  // it grew while being read
    } else {
      text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return text;
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
