// Reading files. Small kernel files (/proc, /sys) cheaply: keep the descriptor open and pread
// from offset 0 each time, which skips the path lookup on every sample. A read that fails with
// ESRCH/ENOENT means the process behind a /proc file is gone, even if its PID was reused.
// Files people name (plans, manifests): ReadInputFile, bounded and regular files only.
#ifndef FOOTPRINT_UTIL_FILE_H_
#define FOOTPRINT_UTIL_FILE_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "footprint/status.h"

namespace footprint {

// Closes `fd` if open and marks it closed (-1).
inline void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

class KernelFile {
 public:
  KernelFile() = default;
  explicit KernelFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  KernelFile(KernelFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  KernelFile& operator=(KernelFile&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  KernelFile(const KernelFile&) = delete;
  KernelFile& operator=(const KernelFile&) = delete;
  ~KernelFile() { Close(); }

  bool is_open() const { return fd_ >= 0; }

  // Reads the whole file (up to cap-1 bytes) into buf; returns the text, or an empty view
  // on failure. Allocation-free.
  std::string_view Read(char* buf, size_t cap) const {
    if (fd_ < 0) return {};
    ssize_t n = ::pread(fd_, buf, cap - 1, 0);
    if (n <= 0) return {};
    buf[n] = '\0';
    return std::string_view(buf, static_cast<size_t>(n));
  }

  // Reads the whole file however large into `out`, reusing its capacity. False on failure.
  bool ReadAll(std::string& out) const {
    out.clear();
    if (fd_ < 0) return false;
    char chunk[4096];
    off_t offset = 0;
    while (true) {
      ssize_t n = ::pread(fd_, chunk, sizeof chunk, offset);
      if (n < 0) return false;
      if (n == 0) return true;
      out.append(chunk, static_cast<size_t>(n));
      offset += n;
    }
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Reads a whole file into a string (for files read once, such as /proc/cpuinfo).
Result<std::string> ReadWholeFile(const std::string& path);
// Refuses, without opening it, a path that is not a regular file (a FIFO would block the
// reader, a device such as /dev/zero never ends): InvalidArgument "WHAT PATH is a folder, ..."
// saying what to give instead; NotFound when it cannot be looked up. `what` names the file for
// people ("the plan", "the manifest").
Status CheckRegularFile(const std::string& path, std::string_view what);
// Reads a file a person named (a plan, a manifest) whole, never more than `max_bytes`: it
// must be a regular file (CheckRegularFile, then checked again on the open descriptor, which
// a FIFO swapped in meanwhile cannot block) no larger than `max_bytes`, also while it is read
// (a file that grows). InvalidArgument for the kind or the size, NotFound when it cannot be
// opened or read; one line each, naming `what` and the path.
Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes, std::string_view what);
// The non-empty NUL-separated words of a file (/proc/PID/cmdline, /proc/PID/environ); none
// when it cannot be read (the process is gone).
std::vector<std::string> ReadNulSeparatedWords(const std::string& path);
// Writes `text` to an existing file (cgroup control files), or, with `create`, to a file made
// or emptied first (mode 0644 before the umask). IoError names the file and errno.
Status WriteFile(const std::string& path, std::string_view text, bool create = false);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_FILE_H_
