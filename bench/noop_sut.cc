// fp_noop_sut: a system under test for `footprint load` that does no work (bench/load_bench.py).
// Speaks the line protocol (docs/evaluation.md): says `ready`, then answers each query
// `ID<TAB>PAYLOAD` with `ID<TAB>ok` at once, and exits at end-of-file. Like a batching server it
// answers everything one read() brought in one write(): one thread, no locks, no stdio, so
// that what a load against it measures is the driver and the pipes.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

bool WriteAll(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int main() {
  if (!WriteAll("ready\n", 6)) return 1;
  static char buf[1 << 16];
  std::string partial, out;  // an unfinished line carried over to the next read; the answers
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? 0 : 1;
    out.clear();
    const char* p = buf;
    const char* end = buf + n;
    for (const char* nl; (nl = static_cast<const char*>(std::memchr(p, '\n', end - p)));
         p = nl + 1) {
      const char* line = p;
      size_t len = static_cast<size_t>(nl - p);
      if (!partial.empty()) {
        partial.append(p, len);
        line = partial.data();
        len = partial.size();
      }
      const void* tab = std::memchr(line, '\t', len);
      const size_t id_len = tab ? static_cast<size_t>(static_cast<const char*>(tab) - line) : len;
      out.append(line, id_len).append("\tok\n");
      partial.clear();
    }
    partial.append(p, static_cast<size_t>(end - p));
    if (!out.empty() && !WriteAll(out.data(), out.size())) return 1;
  }
}
