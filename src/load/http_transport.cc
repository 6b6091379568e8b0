// An HTTP system under test: one POST per query, on keep-alive connections to a server the
// measured command runs, all driven by one ppoll() loop, so that streamed responses are
// stamped as their bytes arrive: the first byte of the body (time to first token) and every
// chunk or server-sent event (the tokens).
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "load/http_response.h"
#include "load/sut_transport.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace {

constexpr size_t kMaxConnections = 1000;  // beyond, queries wait for a free connection
constexpr int64_t kReadyPollNs = 10'000'000;

// Replaces every `{name}` of `text` with `value`.
void ReplaceAll(std::string& text, std::string_view name, std::string_view value) {
  for (size_t at = 0; (at = text.find(name, at)) != std::string::npos; at += value.size()) {
    text.replace(at, name.size(), value);
  }
}

class HttpTransport final : public SutTransport {
 public:
  HttpTransport(const HttpTarget& target, int pidfd, Env& env)
      : target_(target), pidfd_(pidfd), env_(env) {}
  ~HttpTransport() override {
    for (Connection& c : connections_) CloseFd(c.fd);
  }

  std::string WaitUntilReady(int64_t deadline_ns) override;

  void Send(int64_t id, std::string_view samples) override {
    std::string body = target_.body_template;
    ReplaceAll(body, "{id}", std::to_string(id));
    ReplaceAll(body, "{samples}", samples);
    std::string request =
        "POST " + target_.path + " HTTP/1.1\r\nHost: " + target_.host +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body;
    waiting_.emplace_back(id, std::move(request));
    Dispatch();
  }

  std::string Pump(int64_t timeout_ns, const AnswerSink& sink) override;

  void EndQueries() override {
    for (Connection& c : connections_) {
      if (c.query < 0) CloseFd(c.fd);
    }
  }

  bool WaitForEnd(int64_t, const AnswerSink&) override { return true; }
  bool StopsCommandAtEnd() const override { return true; }

 private:
  struct Connection {
    int fd = -1;
    bool connected = false;
    int64_t query = -1;  // the query in flight; -1: idle
    std::string out;
    size_t written = 0;
    HttpResponse response;
  };

  // A new non-blocking connection (its connect() may still be under way); -1 when refused.
  static int Connect(std::string& error, int family, const std::string& to) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::strerror(errno);
      return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const auto* address = reinterpret_cast<const sockaddr*>(to.data());
    if (::connect(fd, address, static_cast<socklen_t>(to.size())) != 0 && errno != EINPROGRESS) {
      error = std::strerror(errno);
      ::close(fd);
      return -1;
    }
    return fd;
  }

  // Gives waiting queries to idle connections, opening new ones while there is room.
  void Dispatch() {
    for (Connection& c : connections_) {
      if (waiting_.empty()) return;
      if (c.fd >= 0 && c.query < 0) Assign(c);
    }
    // Closed connections make room for new ones.
    std::erase_if(connections_, [](const Connection& c) { return c.fd < 0; });
    while (!waiting_.empty() && connections_.size() < kMaxConnections) {
      std::string error;
      const int fd = Connect(error, target_.family, target_.address);
      // Out of descriptors: the queries wait for a connection to come free.
      if (fd < 0 && (errno == EMFILE || errno == ENFILE) && !connections_.empty()) break;
      if (fd < 0) {
        failed_.emplace_back(waiting_.front().first, "cannot connect: " + error);
        waiting_.pop_front();
        continue;
      }
      Assign(connections_.emplace_back(Connection{fd}));
    }
  }

  void Assign(Connection& c) {
    c.query = waiting_.front().first;
    c.out = std::move(waiting_.front().second);
    c.written = 0;
    c.response = HttpResponse();
    if (target_.keep_answers) c.response.KeepAnswer();
    waiting_.pop_front();
  }

  // Ends `c`'s query as failed with `why`, and the connection with it.
  void Fail(Connection& c, const std::string& why) {
    if (c.query >= 0) failed_.emplace_back(c.query, why);
    c.query = -1;
    CloseFd(c.fd);
  }

  void Service(Connection& c, short revents, const AnswerSink& sink);
  void Write(Connection& c);
  void Read(Connection& c, const AnswerSink& sink);

  HttpTarget target_;
  int pidfd_;
  Env& env_;
  std::vector<Connection> connections_;
  std::deque<std::pair<int64_t, std::string>> waiting_;  // queries with no connection yet
  std::vector<std::pair<int64_t, std::string>> failed_;  // to hand to the sink
  std::vector<pollfd> fds_;
  std::optional<int64_t> waiting_since_ns_;  // since when WaitUntilReady waits
};

// Ready once the server accepts a connection, which is kept for the first query.
std::string HttpTransport::WaitUntilReady(int64_t deadline_ns) {
  if (!waiting_since_ns_) waiting_since_ns_ = env_.MonotonicNs();
  std::string error = "nothing tried";
  while (env_.MonotonicNs() < deadline_ns) {
    if (pidfd_ >= 0) {
      pollfd exited{pidfd_, POLLIN, 0};
      if (::poll(&exited, 1, 0) == 1)
        return "the command exited before its server took a connection";
    }
    for (const auto& [family, address] : target_.addresses) {
      const int fd = Connect(error, family, address);
      if (fd < 0) continue;
      pollfd done{fd, POLLOUT, 0};
      const int64_t left_ms = (deadline_ns - env_.MonotonicNs()) / 1'000'000;
      ::poll(&done, 1, static_cast<int>(std::clamp<int64_t>(left_ms, 1, 1000)));
      int so_error = ETIMEDOUT;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error == 0 && (done.revents & POLLOUT)) {
        target_.family = family;  // the address that answers takes every query
        target_.address = address;
        connections_.push_back(Connection{fd, true});
        return "";
      }
      error = std::strerror(so_error);
      ::close(fd);
    }
    env_.SleepUntil(env_.MonotonicNs() + kReadyPollNs);
  }
  return "the server at " + Inert(target_.url) + " took no connection within " +
         FormatDuration(static_cast<double>(deadline_ns - *waiting_since_ns_) / 1e9) +
         " (--ready-timeout; last try: " + error +
         "): COMMAND must serve HTTP at that address and port";
}

std::string HttpTransport::Pump(int64_t timeout_ns, const AnswerSink& sink) {
  fds_.clear();
  for (const Connection& c : connections_) {
    const bool sending = c.query >= 0 && (!c.connected || c.written < c.out.size());
    fds_.push_back({c.fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0});
  }
  fds_.push_back({pidfd_, POLLIN, 0});
  const timespec wait = TimespecOf(std::clamp<int64_t>(timeout_ns, 0, 100'000'000));
  if (failed_.empty()) ::ppoll(fds_.data(), fds_.size(), &wait, nullptr);
  for (size_t i = 0; i + 1 < fds_.size(); ++i) {
    if (fds_[i].revents != 0) Service(connections_[i], fds_[i].revents, sink);
  }
  if (fds_.back().revents & POLLIN) {
    // Its queries in flight stay unanswered: they did not fail, the server is gone.
    failed_.clear();
    return "the server (the command) exited";
  }
  for (const auto& [id, why] : failed_) {
    SutAnswer a;
    a.id = id;
    a.completed_ns = env_.MonotonicNs();
    a.error = why;
    sink(a);
  }
  failed_.clear();
  Dispatch();
  return "";
}

void HttpTransport::Service(Connection& c, short revents, const AnswerSink& sink) {
  if (!c.connected && (revents & (POLLOUT | POLLERR | POLLHUP))) {
    int so_error = 0;
    socklen_t len = sizeof so_error;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) return Fail(c, std::string("cannot connect: ") + std::strerror(so_error));
    c.connected = true;
  }
  if (c.connected && c.query >= 0 && c.written < c.out.size()) Write(c);
  if (c.fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) Read(c, sink);
}

void HttpTransport::Write(Connection& c) {
  while (c.written < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n > 0) {
      c.written += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (n < 0 && errno != EAGAIN) Fail(c, std::string("sending failed: ") + std::strerror(errno));
      return;
    }
  }
}

void HttpTransport::Read(Connection& c, const AnswerSink& sink) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    const int64_t at = env_.MonotonicNs();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    const bool closed = n <= 0;
    if (c.query < 0) {  // an idle connection closed by the server (or sent garbage)
      CloseFd(c.fd);
      return;
    }
    const HttpResponse::Step step =
        closed ? c.response.End() : c.response.Feed(std::string_view(buf, size_t(n)), at);
    if (step == HttpResponse::Step::kMore) continue;
    if (step == HttpResponse::Step::kBroken) {
      return Fail(c, closed ? "the server closed the connection mid-response"
                            : "not an HTTP response: " + c.response.error());
    }
    SutAnswer a;
    a.id = c.query;
    a.completed_ns = at;
    a.first_byte_ns = c.response.first_body_byte_ns();
    a.tokens = c.response.tokens();
    a.result = c.response.answer();
    const std::string error = c.response.ok() ? "" : c.response.status_line();
    a.error = error;
    c.query = -1;
    if (closed || !c.response.keep_alive()) CloseFd(c.fd);
    sink(a);
    return;
  }
}

}  // namespace

namespace {

// The host and the port of a URL's authority (HOST, HOST:PORT, [V6] or [V6]:PORT), or why
// it is none (a phrase after the URL).
Result<std::pair<std::string, std::string>> HostAndPort(std::string_view authority) {
  std::string_view name = authority, port = "80";
  std::string_view after;  // what follows the host: "" or ":PORT"
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("has an unclosed '['");
    name = authority.substr(1, close - 1);
    after = authority.substr(close + 1);
  } else if (const size_t colon = authority.find(':'); colon != std::string_view::npos) {
    name = authority.substr(0, colon);
    after = authority.substr(colon);
  }
  if (name.empty()) return InvalidArgument("names no host");
  if (authority.find_first_of("@?#") != std::string_view::npos) {
    return InvalidArgument(
        "has a user, a query or a fragment before its path (write "
        "http://HOST:PORT/PATH)");
  }
  if (!after.empty()) {
    port = after.substr(1);
    const std::optional<int64_t> number = ParseInt(port);
    if (after[0] != ':' || port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        !number || *number < 1 || *number > 65535) {
      return InvalidArgument(
          "has no valid port after the host (a port is a number from 1 to "
          "65535, e.g. http://127.0.0.1:8000/)");
    }
  }
  return std::make_pair(std::string(name), std::string(port));
}

}  // namespace

Result<HttpTarget> ParseHttpTarget(std::string_view url, std::string body_template) {
  constexpr std::string_view kScheme = "http://";
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--http: '" + Inert(url) + "' " + why);
  };
  if (!url.starts_with(kScheme)) {
    return bad(
        "is not an http:// URL (footprint drives plain HTTP; e.g. http://127.0.0.1:8000/v1)");
  }
  if (std::any_of(url.begin(), url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return bad("has a space or a control character (write them percent-encoded, e.g. %20)");
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  HttpTarget t;
  t.url = std::string(url);
  t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (t.path.find('#') != std::string::npos) return bad("has a fragment (#...), never sent");
  t.host = std::string(rest.substr(0, slash));
  auto host_port = HostAndPort(t.host);
  if (!host_port.ok()) return bad(host_port.status().message());
  const auto& [name, port] = *host_port;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return bad("cannot be resolved: " + std::string(::gai_strerror(rc)));
  }
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    t.addresses.emplace_back(a->ai_family,
                             std::string(reinterpret_cast<const char*>(a->ai_addr), a->ai_addrlen));
  }
  ::freeaddrinfo(found);
  t.family = t.addresses.front().first;
  t.address = t.addresses.front().second;
  t.body_template = std::move(body_template);
  return t;
}

std::unique_ptr<SutTransport> MakeHttpTransport(const HttpTarget& target, int command_pidfd,
                                                Env& env) {
  return std::make_unique<HttpTransport>(target, command_pidfd, env);
}

}  // namespace footprint
