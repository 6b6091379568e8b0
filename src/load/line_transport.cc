// The line protocol over the command's stdin and stdout: non-blocking pipes driven by poll(),
// with footprint's own output buffer, so that a command that stops reading cannot block the
// reading of its answers.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>

#include "load/sut_transport.h"
#include "util/clock.h"
#include "util/strings.h"

namespace footprint {
namespace {

constexpr size_t kMaxLine = 1 << 20;  // an answer line longer than this is garbage

class LineTransport final : public SutTransport {
 public:
  LineTransport(int to, int from, Env& env) : to_(to), from_(from), env_(env) {
    ::fcntl(to_, F_SETFL, ::fcntl(to_, F_GETFL) | O_NONBLOCK);
    ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
  }
  ~LineTransport() override {
    EndQueries();
    if (from_ >= 0) ::close(from_);
  }

  std::string WaitUntilReady(int64_t deadline_ns) override;

  void Send(int64_t id, std::string_view samples) override {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    out_.append(digits, end).append(1, '\t').append(samples).append(1, '\n');
  }

  void SendControl(std::string_view line) override {
    out_.append(line).append(1, '\n');
    waiting_since_ns_.reset();
    first_line_.reset();
  }

  std::string Pump(int64_t timeout_ns, const AnswerSink& sink) override {
    const bool reading = Wait(timeout_ns);
    // The answers come first, even when the queries' pipe was found closed: a command that
    // ended closed both, and what it answered before counts.
    if (!Read([&](std::string_view line, int64_t at) { sink(Parse(line, at)); })) {
      return "the command closed its output";
    }
    return reading ? "" : "the command stopped reading its queries";
  }

  void EndQueries() override {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }

  bool WaitForEnd(int64_t deadline_ns, const AnswerSink& sink) override {
    for (bool open = true; open;) {
      if (env_.MonotonicNs() >= deadline_ns) return false;
      Wait(deadline_ns - env_.MonotonicNs());
      open = Read([&](std::string_view line, int64_t at) { sink(Parse(line, at)); });
    }
    return true;
  }

  bool StopsCommandAtEnd() const override { return false; }

 private:
  bool pending() const { return written_ < out_.size(); }

  // `ID<TAB>RESULT`, or a line that is none (id -1); `text` holds the line either way.
  static SutAnswer Parse(std::string_view line, int64_t at) {
    SutAnswer a;
    a.completed_ns = at;
    const size_t tab = line.find('\t');
    const std::string_view head = line.substr(0, tab);
    int64_t id = -1;
    auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), id);
    if (ec == std::errc() && end == head.data() + head.size() && tab != std::string_view::npos &&
        id >= 0) {
      a.id = id;
      a.result = line.substr(tab + 1);
    }
    a.text = line;  // the whole line: an answer's RESULT follows its tab
    return a;
  }

  // Waits up to `timeout_ns` for the command's output (and room in its input, when there is
  // something to send); sends what fits. False when the command closed its stdin (EPIPE).
  bool Wait(int64_t timeout_ns) {
    pollfd fds[2] = {{from_, POLLIN, 0}, {pending() && to_ >= 0 ? to_ : -1, POLLOUT, 0}};
    const timespec wait = TimespecOf(std::clamp<int64_t>(timeout_ns, 0, 100'000'000));
    ::ppoll(fds, 2, &wait, nullptr);
    while (pending() && to_ >= 0) {
      ssize_t n = ::write(to_, out_.data() + written_, out_.size() - written_);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EPIPE) return false;
      break;  // full for now
    }
    if (!pending()) {
      out_.clear();
      written_ = 0;
    }
    return true;
  }

  // Reads what the command wrote; each whole line goes to `line(text, read_ns)`, with the
  // monotonic time its read() returned. False at end-of-file.
  template <typename F>
  bool Read(F&& line) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(from_, buf, sizeof buf);
      const int64_t read_ns = env_.MonotonicNs();
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      in_.append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = in_.find('\n', start)) != std::string::npos; start = nl + 1) {
        line(std::string_view(in_).substr(start, nl - start), read_ns);
      }
      in_.erase(0, start);
      if (in_.size() > kMaxLine) {
        line(std::string_view(in_).substr(0, 200), read_ns);
        in_.clear();
      }
      // A short read emptied the pipe: another read() would only say EAGAIN.
      if (static_cast<size_t>(n) < sizeof buf) return true;
    }
  }

  int to_, from_;
  Env& env_;
  std::string out_, in_;
  size_t written_ = 0;
  // WaitUntilReady's state: since when it waits, the first line (cut), the output's end.
  std::optional<int64_t> waiting_since_ns_;
  std::optional<std::string> first_line_;
  bool output_closed_ = false;
};

// The command's first line must be `ready`. The verdict is kept: asked again, the same one.
std::string LineTransport::WaitUntilReady(int64_t deadline_ns) {
  if (!waiting_since_ns_) waiting_since_ns_ = env_.MonotonicNs();
  while (!first_line_) {
    if (output_closed_) return "the command closed its output before it said 'ready'";
    if (env_.MonotonicNs() >= deadline_ns) {
      return "the command did not say 'ready' within " +
             FormatDuration(static_cast<double>(deadline_ns - *waiting_since_ns_) / 1e9) +
             " (--ready-timeout): a command of the line protocol writes a line 'ready' on its "
             "stdout once it can take queries (footprint load --help); one that serves HTTP "
             "needs --http URL";
    }
    if (!Wait(deadline_ns - env_.MonotonicNs())) return "the command stopped reading";
    output_closed_ = !Read([&](std::string_view line, int64_t) {
      if (!first_line_) first_line_ = std::string(line.substr(0, 120));
    });
  }
  if (Trim(*first_line_) != "ready") {
    return "the command's first line was '" + Inert(*first_line_) +
           "', not 'ready' (the line protocol of footprint load --help)";
  }
  return "";
}

}  // namespace

std::unique_ptr<SutTransport> MakeLineTransport(int to, int from, Env& env) {
  return std::make_unique<LineTransport>(to, from, env);
}

}  // namespace footprint
