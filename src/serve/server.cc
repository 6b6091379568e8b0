#include "serve/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "report/served_assets.h"
#include "serve/api.h"
#include "serve/job_queue.h"
#include "serve/job_runner.h"
#include "serve/job_spec.h"
#include "serve/queue_api.h"
#include "util/clock.h"
#include "util/strings.h"

namespace footprint::serve {
namespace {

// Scripts and styles only from the server itself; no inline scripts. Inline styles are
// allowed because ECharts writes its tooltips as HTML with style attributes.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";
constexpr char kCookie[] = "fp_token";

constexpr int64_t kRequestTimeoutNs = int64_t{kRequestTimeoutS} * kNsPerSec;
// A response write that makes no progress this long fails (the client stopped reading).
constexpr int64_t kWriteTimeoutNs = 5 * kNsPerSec;
// Requests on one connection before it is closed (a polling page keeps its connection).
constexpr int kKeepAliveMaxCount = 1000;
// Connections waiting for a request head: beyond, the one waiting longest is dropped, so that
// a flood of idle connections cannot keep new ones out (they would exhaust descriptors).
constexpr size_t kMaxWaitingConnections = 512;
// Whole requests waiting for a thread, per class: beyond, 503 at once.
constexpr size_t kMaxQueuedRequests = 256;

// An ostream that writes into httplib's sink and fails (badbit) once the client is gone, so
// that a long export stops instead of writing into nothing.
class SinkBuf : public std::streambuf {
 public:
  explicit SinkBuf(httplib::DataSink& sink) : sink_(sink) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    return sink_.write(s, static_cast<size_t>(n)) ? n : 0;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    char ch = traits_type::to_char_type(c);
    return sink_.write(&ch, 1) ? c : traits_type::eof();
  }

 private:
  httplib::DataSink& sink_;
};

// The value of the cookie kCookie in a Cookie header; "" when it has none.
std::string CookieToken(std::string_view cookies) {
  const std::string key = std::string(kCookie) + "=";
  size_t pos = 0;
  while (pos < cookies.size()) {
    while (pos < cookies.size() && (cookies[pos] == ' ' || cookies[pos] == ';')) ++pos;
    size_t end = cookies.find(';', pos);
    if (end == std::string::npos) end = cookies.size();
    if (cookies.substr(pos, key.size()) == key) {
      return std::string(cookies.substr(pos + key.size(), end - pos - key.size()));
    }
    pos = end;
  }
  return "";
}

// The token a request presents, by precedence: Authorization: Bearer, ?token=, the cookie.
struct PresentedToken {
  std::string token;
  bool from_query = false;
};
PresentedToken Presented(std::string_view authorization,
                         const std::optional<std::string>& query_token, std::string_view cookies) {
  if (authorization.starts_with("Bearer ")) return {std::string(authorization.substr(7))};
  if (query_token) return {*query_token, true};
  return {CookieToken(cookies)};
}

// An answer of the API: whole, or streamed while the client reads it (exports, a job's output).
void SendApiResponse(ApiResponse r, httplib::Response& res) {
  res.status = r.status;
  if (!r.filename.empty()) {
    res.set_header("Content-Disposition", "attachment; filename=\"" + r.filename + "\"");
  }
  if (!r.stream) {
    res.set_content(r.body, r.content_type);
    return;
  }
  res.set_chunked_content_provider(r.content_type,
                                   [stream = std::move(r.stream)](size_t, httplib::DataSink& sink) {
                                     SinkBuf buf(sink);
                                     std::ostream out(&buf);
                                     bool ok = stream(out) && out.flush();
                                     if (ok) sink.done();
                                     return ok;
                                   });
}

void SendError(httplib::Response& res, int status, std::string_view message) {
  ApiResponse r = ErrorResponse(status, message);
  res.status = r.status;
  res.set_content(r.body, r.content_type);
}

// A whole response that the connection gate sends itself before it closes the connection.
std::string ClosingResponse(int status, std::string_view reason, std::string_view message) {
  const ApiResponse r = ErrorResponse(status, message);
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: " + r.content_type +
         "\r\nContent-Length: " + std::to_string(r.body.size()) +
         "\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: "
         "no-store\r\n\r\n" +
         r.body;
}

std::string RequestTimeoutResponse() {
  return ClosingResponse(408, "Request Timeout",
                         "the request did not arrive whole within " +
                             std::to_string(kRequestTimeoutS) +
                             " s of the connection's opening (or of the answer before it); send "
                             "each request at once");
}

std::string HeadTooLargeResponse() {
  return ClosingResponse(431, "Request Header Fields Too Large",
                         "the request's line and headers are over " +
                             std::to_string(kMaxRequestHeadBytes / 1024) + " KiB");
}

std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 100)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && Lower(a) == Lower(b);
}

// Whether an Accept-Encoding value names `coding` with a weight above 0.
bool AcceptsEncoding(std::string_view accept, std::string_view coding) {
  for (std::string_view item : Split(accept, ',')) {
    const size_t semicolon = item.find(';');
    if (!EqualsIgnoringCase(Trim(item.substr(0, semicolon)), coding)) continue;
    if (semicolon == std::string_view::npos) return true;
    const std::string_view weight = Trim(item.substr(semicolon + 1));  // q=0, q=0.0, q=0.5, q=1
    return !weight.starts_with("q=0") ||
           weight.find_first_not_of("0.", 2) != std::string_view::npos;
  }
  return false;
}

// Whether an If-None-Match value names `etag` (weakly compared, as RFC 9110, 13.1.2 says).
bool NoneMatchNames(std::string_view if_none_match, std::string_view etag) {
  for (std::string_view tag : Split(if_none_match, ',')) {
    tag = Trim(tag);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

// What httplib compresses an answer with. It compresses every answer set whole, with Brotli at
// its slowest quality whenever the client accepts Brotli: 2.5 s of CPU for echarts.min.js, 2 s
// for the plot of a run of 1 M samples. The page and its files go out in encodings made at
// build time (SendAsset), which it leaves alone; the API's answers go uncompressed to a client
// on loopback, where compressing costs more time than sending (bench/serve_bench.py), and as
// gzip, never Brotli, to a client elsewhere.
void LimitCompression(httplib::Request& req) {
  if (req.path == "/" || req.path.starts_with("/assets/")) return;
  const bool gzip = !IsLoopback(req.remote_addr) &&
                    AcceptsEncoding(req.get_header_value("Accept-Encoding"), "gzip");
  req.headers.erase("Accept-Encoding");
  if (gzip) req.headers.emplace("Accept-Encoding", "gzip");
}

std::string_view ContentTypeOf(std::string_view path) {
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  return "text/html; charset=utf-8";
}

// Sends `asset` in the smallest encoding the client accepts, with a strong ETag per encoding.
// The page asks for each file with ?v=VERSION: that answer never changes, and the browser may
// keep it for a year without asking again; anything else (the page itself, a file asked for
// without its version) is asked again at each use, and answered 304 when it did not change.
void SendAsset(const ServedAsset& asset, const httplib::Request& req, httplib::Response& res) {
  const std::string accept = req.get_header_value("Accept-Encoding");
  std::string_view bytes = asset.identity, coding, suffix;
  if (!asset.brotli.empty() && AcceptsEncoding(accept, "br")) {
    bytes = asset.brotli;
    coding = "br";
    suffix = ".br";
  } else if (AcceptsEncoding(accept, "gzip")) {
    bytes = asset.gzip;
    coding = "gzip";
    suffix = ".gz";
  }
  const std::string etag = "\"" + std::string(asset.version) + std::string(suffix) + "\"";
  const bool versioned = req.get_param_value("v") == asset.version;
  res.headers.erase("Cache-Control");  // the default, no-store, is the API's
  res.set_header("Cache-Control", versioned ? "public, max-age=31536000, immutable" : "no-cache");
  res.set_header("ETag", etag);
  res.set_header("Vary", "Accept-Encoding");
  if (NoneMatchNames(req.get_header_value("If-None-Match"), etag)) {
    res.status = 304;
    return;
  }
  if (!coding.empty()) res.set_header("Content-Encoding", std::string(coding));
  res.set_content_provider(bytes.size(), std::string(ContentTypeOf(asset.path)),
                           [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(bytes.data() + offset, length);
                           });
}

}  // namespace

// --- Connections -----------------------------------------------------------------------
// Connection, ConnectionGate and GatedHttpServer are not in the unnamed namespace: Server::Impl
// holds them, and a unity build (scripts/test) refuses a member of an unnamed namespace's type
// in a file that is not its own translation unit (-Wsubobject-linkage).

// One client connection between requests, or the bytes of one request without a socket
// (fd -1: Server::Answer).
struct Connection {
  int fd = -1;
  std::string input;        // bytes received and not yet consumed by a request
  size_t consumed = 0;      // of `input`, read by the request being served
  int64_t deadline_ns = 0;  // the request being awaited must have arrived by then
  int requests = 0;         // served on this connection
  std::string output;       // fd -1: what the server answered
};

namespace {

// Waits up to `deadline_ns` (on `env`'s monotonic clock) until `fd` is ready for `events`.
bool WaitFor(int fd, short events, int64_t deadline_ns, Env& env) {
  for (;;) {
    const int64_t left_ns = deadline_ns - env.MonotonicNs();
    if (left_ns <= 0) return false;
    pollfd p{fd, events, 0};
    const int n =
        ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ns / kNsPerMs + 1, 60'000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// httplib's view of a connection while a request is served: the bytes the head reader already
// received first, then the socket, until the request's deadline (so that a body, too, must
// arrive in time). Writes wait kWriteTimeoutNs for progress, as httplib's own stream does.
// Deadlines are on `env`'s clock.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& c, Env& env) : c_(c), env_(env) {}

  bool is_readable() const override {
    return c_.consumed < c_.input.size() ||
           (c_.fd >= 0 && WaitFor(c_.fd, POLLIN, c_.deadline_ns, env_));
  }
  bool is_writable() const override { return c_.fd < 0 || WaitToWrite(); }

  ssize_t read(char* ptr, size_t size) override {
    if (c_.consumed < c_.input.size()) {
      const size_t n = std::min(size, c_.input.size() - c_.consumed);
      std::copy_n(c_.input.data() + c_.consumed, n, ptr);
      c_.consumed += n;
      return static_cast<ssize_t>(n);
    }
    if (c_.fd < 0) return 0;
    for (;;) {
      if (!WaitFor(c_.fd, POLLIN, c_.deadline_ns, env_)) return -1;
      const ssize_t n = ::recv(c_.fd, ptr, size, 0);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (c_.fd < 0) {
      c_.output.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    for (;;) {
      if (!WaitToWrite()) return -1;
      const ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return c_.fd; }

 private:
  bool WaitToWrite() const {
    return WaitFor(c_.fd, POLLOUT, env_.MonotonicNs() + kWriteTimeoutNs, env_);
  }
  template <typename Query>
  void Address(Query query, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    char text[INET6_ADDRSTRLEN] = "";
    port = 0;
    if (c_.fd < 0 || query(c_.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  Connection& c_;
  Env& env_;
};

// Sends `response` as far as the socket takes it at once, and closes the connection. What the
// client sent and nobody read is read first (some of it): closing over unread bytes resets
// the connection, which can destroy the response before the client reads it.
void CloseWith(Connection& c, const std::string& response) {
  if (!response.empty()) {
    (void)::send(c.fd, response.data(), response.size(), MSG_NOSIGNAL);
    char unread[16 * 1024];
    for (int i = 0; i < 4 && ::recv(c.fd, unread, sizeof unread, MSG_DONTWAIT) > 0; ++i) {
    }
  }
  ::shutdown(c.fd, SHUT_RDWR);
  ::close(c.fd);
  c.fd = -1;
}

}  // namespace

// The connections of a server between accept() and their request threads. One thread reads
// every connection's request head (epoll); only a whole head goes to a request thread, so a
// client that trickles its head holds none. A head that is not whole by the connection's
// deadline (on `env`'s clock) gets 408. With `reserved` > 0, that many of the threads serve only
// requests that carry the token (`privileged`); the others serve everyone, token holders first.
class ConnectionGate {
 public:
  // Serves one request of the connection; false when the connection is to be closed.
  using ServeFn = std::function<bool(Connection&)>;
  using ClassifyFn = std::function<bool(std::string_view head)>;

  ConnectionGate(Env& env, int threads, int reserved, ServeFn serve, ClassifyFn privileged)
      : env_(env),
        threads_(threads),
        ordinary_limit_(threads - reserved),
        serve_(std::move(serve)),
        privileged_(std::move(privileged)) {}
  ~ConnectionGate() { Stop(); }

  void Start();
  void Stop();
  // A new connection (non-blocking from here on), owned by the gate.
  void Admit(int fd);

 private:
  void Await(std::unique_ptr<Connection> c);
  void AwaitLocked(std::unique_ptr<Connection> c);
  void ReadHeads();
  void OnReadable(int fd);
  void ExpireOverdue();
  std::unique_ptr<Connection> Release(int fd);
  void Dispatch(std::unique_ptr<Connection> c);
  void Work();

  Env& env_;
  const int threads_;
  const int ordinary_limit_;
  ServeFn serve_;
  ClassifyFn privileged_;

  // The head reader's connections, by descriptor and by deadline.
  std::mutex mu_;
  bool reading_ = false;
  int epoll_ = -1, wake_ = -1;
  std::unordered_map<int, std::unique_ptr<Connection>> waiting_;
  std::set<std::pair<int64_t, int>> deadlines_;
  std::thread reader_;

  // Whole requests waiting for a request thread.
  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  bool working_ = false;
  int busy_ordinary_ = 0;
  std::deque<std::unique_ptr<Connection>> privileged_queue_, ordinary_queue_;
  std::vector<std::thread> workers_;
};

void ConnectionGate::Start() {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = wake_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &e);
  reading_ = working_ = true;
  reader_ = std::thread([this] { ReadHeads(); });
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Work(); });
}

void ConnectionGate::Stop() {
  {
    std::lock_guard lock(mu_);
    if (!reading_) return;
    reading_ = false;
    const uint64_t one = 1;
    (void)::write(wake_, &one, sizeof one);
  }
  reader_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& waiting : waiting_) CloseWith(*waiting.second, "");
    waiting_.clear();
    deadlines_.clear();
  }
  {
    std::lock_guard lock(pool_mu_);
    working_ = false;
  }
  pool_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  for (auto* queue : {&privileged_queue_, &ordinary_queue_}) {
    for (auto& c : *queue) CloseWith(*c, "");
    queue->clear();
  }
  ::close(epoll_);
  ::close(wake_);
}

void ConnectionGate::Admit(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto c = std::make_unique<Connection>();
  c->fd = fd;
  Await(std::move(c));
}

// The connection waits for its next request head, which must have arrived by the deadline.
void ConnectionGate::Await(std::unique_ptr<Connection> c) {
  c->input.erase(0, c->consumed);
  c->consumed = 0;
  c->deadline_ns = env_.MonotonicNs() + kRequestTimeoutNs;
  std::lock_guard lock(mu_);
  if (!reading_) return CloseWith(*c, "");
  AwaitLocked(std::move(c));
}

void ConnectionGate::AwaitLocked(std::unique_ptr<Connection> c) {
  switch (ExamineHead(c->input)) {  // a pipelined request may be whole already
    case HeadState::kComplete:
      return Dispatch(std::move(c));
    case HeadState::kTooLarge:
      return CloseWith(*c, HeadTooLargeResponse());
    case HeadState::kIncomplete:
      break;
  }
  if (waiting_.size() >= kMaxWaitingConnections) {
    const int oldest = deadlines_.begin()->second;
    CloseWith(*Release(oldest), "");
  }
  epoll_event e{};
  e.events = EPOLLIN | EPOLLRDHUP;
  e.data.fd = c->fd;
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, c->fd, &e) != 0) return CloseWith(*c, "");
  if (deadlines_.empty()) {  // the reader may be waiting without a deadline
    const uint64_t one = 1;
    (void)::write(wake_, &one, sizeof one);
  }
  deadlines_.emplace(c->deadline_ns, c->fd);
  const int fd = c->fd;
  waiting_.emplace(fd, std::move(c));
}

std::unique_ptr<Connection> ConnectionGate::Release(int fd) {
  auto it = waiting_.find(fd);
  std::unique_ptr<Connection> c = std::move(it->second);
  waiting_.erase(it);
  deadlines_.erase({c->deadline_ns, fd});
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  return c;
}

void ConnectionGate::ReadHeads() {
  epoll_event events[64];
  std::unique_lock lock(mu_);
  while (reading_) {
    int timeout_ms = -1;
    if (!deadlines_.empty()) {
      const int64_t left_ns = deadlines_.begin()->first - env_.MonotonicNs();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left_ns / kNsPerMs + 1, 0, 60'000));
    }
    lock.unlock();
    const int n = ::epoll_wait(epoll_, events, 64, timeout_ms);
    lock.lock();
    for (int i = 0; i < n && reading_; ++i) {
      if (events[i].data.fd == wake_) {
        uint64_t count;
        (void)::read(wake_, &count, sizeof count);
      } else if (waiting_.count(events[i].data.fd) != 0) {
        OnReadable(events[i].data.fd);
      }
    }
    ExpireOverdue();
  }
}

// Reads what came; a whole head goes to a request thread (even when the client has closed
// its side after it: the answer can still reach it).
void ConnectionGate::OnReadable(int fd) {
  Connection& c = *waiting_.at(fd);
  char buf[16 * 1024];
  bool ended = false;
  while (c.input.size() <= kMaxRequestHeadBytes) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.input.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      ended = true;
      break;
    } else if (errno == EAGAIN) {
      break;
    }
  }
  switch (ExamineHead(c.input)) {
    case HeadState::kComplete:
      return Dispatch(Release(fd));
    case HeadState::kTooLarge:
      return CloseWith(*Release(fd), HeadTooLargeResponse());
    case HeadState::kIncomplete:
      if (ended) CloseWith(*Release(fd), "");
      return;
  }
}

// Connections past their deadline: 408 when a request had begun, closed silently when idle.
void ConnectionGate::ExpireOverdue() {
  const int64_t now = env_.MonotonicNs();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    std::unique_ptr<Connection> c = Release(deadlines_.begin()->second);
    CloseWith(*c, c->input.empty() ? "" : RequestTimeoutResponse());
  }
}

void ConnectionGate::Dispatch(std::unique_ptr<Connection> c) {
  const bool privileged = privileged_(c->input);
  {
    std::lock_guard lock(pool_mu_);
    auto& queue = privileged ? privileged_queue_ : ordinary_queue_;
    if (queue.size() < kMaxQueuedRequests) {
      queue.push_back(std::move(c));
      c = nullptr;
    }
  }
  if (c) {
    return CloseWith(*c, ClosingResponse(503, "Service Unavailable",
                                         "the server is busy (too many requests wait); try again "
                                         "in a moment"));
  }
  pool_cv_.notify_one();
}

void ConnectionGate::Work() {
  for (;;) {
    std::unique_ptr<Connection> c;
    bool ordinary = false;
    {
      std::unique_lock lock(pool_mu_);
      pool_cv_.wait(lock, [&] {
        return !working_ || !privileged_queue_.empty() ||
               (!ordinary_queue_.empty() && busy_ordinary_ < ordinary_limit_);
      });
      if (!working_) return;
      ordinary = privileged_queue_.empty();
      auto& queue = ordinary ? ordinary_queue_ : privileged_queue_;
      c = std::move(queue.front());
      queue.pop_front();
      busy_ordinary_ += ordinary ? 1 : 0;
    }
    const bool keep = serve_(*c);
    if (ordinary) {
      {
        std::lock_guard lock(pool_mu_);
        --busy_ordinary_;
      }
      pool_cv_.notify_one();  // an ordinary request may wait for the room this one left
    }
    if (keep) {
      Await(std::move(c));
    } else {
      CloseWith(*c, "");
    }
  }
}

// httplib's server with the connection gate in place of its own accept-to-thread loop:
// accepted sockets go to the gate, which calls ServeOne for each whole request.
class GatedHttpServer final : public httplib::Server {
 public:
  std::function<void(socket_t)> admit;

  // Lets the kernel queue SOMAXCONN connections that were not accepted yet: httplib listens
  // with room for 5, and the connections beyond (a page's burst of requests, each on its own
  // connection) had their SYN dropped and retried a second later.
  bool WidenBacklog() { return ::listen(svr_sock_, SOMAXCONN) == 0; }

  // Serves the request at the front of `stream`; false when the connection is to be closed.
  // Range headers are dropped: httplib would cut any answer to the range, an error's JSON
  // too (a 401 with half a body), and nothing here needs part of an answer. What httplib may
  // compress is limited (LimitCompression).
  bool ServeOne(httplib::Stream& stream, bool last) {
    bool close = false;
    const auto setup = [](httplib::Request& req) {
      req.ranges.clear();
      LimitCompression(req);
    };
    return process_request(stream, last, close, setup) && !close && !last;
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    admit(sock);
    return true;
  }
};

namespace {

// Runs each task where it is queued: the one task httplib queues, handing a new connection
// to the gate, is short. Its shutdown, when listening ends, stops the gate.
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  explicit InlineTaskQueue(ConnectionGate& gate) : gate_(gate) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { gate_.Stop(); }

 private:
  ConnectionGate& gate_;
};

}  // namespace

bool IsLoopback(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  const std::string h(host);
  return inet_pton(AF_INET, h.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

bool HostHeaderAccepted(std::string_view value, std::string_view listen_host) {
  // The name, not an address it resolves to: "name", "name:port", "[v6]" or "[v6]:port".
  std::string_view name = value.substr(0, value.find(':'));
  if (value.starts_with('[')) {
    const size_t close = value.find(']');
    if (close == std::string_view::npos) return false;
    name = value.substr(0, close + 1);
  }
  const std::string_view rest = value.substr(name.size());
  if (!rest.empty()) {
    const std::string_view port = rest.substr(1);
    if (rest[0] != ':' || port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  // --host ::1 is written [::1] in a Host header.
  const bool bare_v6 = listen_host.find(':') != std::string_view::npos && listen_host[0] != '[';
  const std::string listen_name =
      bare_v6 ? "[" + std::string(listen_host) + "]" : std::string(listen_host);
  return !name.empty() && (EqualsIgnoringCase(name, "localhost") || name == "127.0.0.1" ||
                           name == "[::1]" || EqualsIgnoringCase(name, listen_name));
}

HeadState ExamineHead(std::string_view input) {
  const size_t line_end = input.find('\n');
  const size_t end = line_end == std::string_view::npos ? line_end : input.find("\n\r\n", line_end);
  if (end != std::string_view::npos && end + 3 <= kMaxRequestHeadBytes) return HeadState::kComplete;
  return input.size() > kMaxRequestHeadBytes ? HeadState::kTooLarge : HeadState::kIncomplete;
}

std::optional<std::string> HeadToken(std::string_view input) {
  const size_t line_end = input.find('\n');
  const size_t head_end =
      line_end == std::string_view::npos ? line_end : input.find("\n\r\n", line_end);
  if (head_end == std::string_view::npos) return std::nullopt;
  // The request line: METHOD TARGET VERSION; the token may be in TARGET's query.
  const std::string_view line = input.substr(0, line_end);
  const size_t target_begin = line.find(' ');
  const std::string_view target =
      target_begin == std::string_view::npos
          ? std::string_view()
          : line.substr(target_begin + 1, line.find(' ', target_begin + 1) - target_begin - 1);
  std::optional<std::string> query_token;
  if (const size_t q = target.find('?'); q != std::string_view::npos) {
    httplib::Params params;
    httplib::detail::parse_query_text(std::string(target.substr(q + 1)), params);
    if (auto it = params.find("token"); it != params.end()) query_token = it->second;
  }
  std::optional<std::string_view> authorization, cookies;
  for (std::string_view h : Split(input.substr(line_end + 1, head_end - line_end), '\n')) {
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = h.substr(0, colon);
    const std::string_view value = Trim(h.substr(colon + 1));
    if (!authorization && EqualsIgnoringCase(name, "Authorization")) authorization = value;
    if (!cookies && EqualsIgnoringCase(name, "Cookie")) cookies = value;
  }
  return Presented(authorization.value_or(""), query_token, cookies.value_or("")).token;
}

bool HeadCarriesToken(std::string_view input, std::string_view token) {
  const std::optional<std::string> presented = HeadToken(input);
  return presented && ConstantTimeEquals(*presented, token);
}

struct Server::Impl {
  ServeOptions options;
  StorePool pool;
  Api api;
  GatedHttpServer http;
  int port = 0;
  std::unique_ptr<ConnectionGate> gate;
  std::vector<TokenGrant> grants;  // empty: no token needed (loopback)
  // The queue, when serve was given folders; the runner is stopped before the rest goes.
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<JobCatalog> catalog;
  std::unique_ptr<QueueApi> queue_api;
  std::unique_ptr<JobRunner> runner;

  explicit Impl(ServeOptions o)
      : options(std::move(o)),
        pool(options.db),
        api(pool, !options.manifests.empty() || !options.plans.empty(), *options.env) {}
  ~Impl() {
    if (runner) runner->Stop();
  }

  // The grant of a presented token, compared in constant time with each.
  const TokenGrant* GrantOf(std::string_view token) const {
    const TokenGrant* found = nullptr;
    for (const TokenGrant& g : grants) {
      if (ConstantTimeEquals(token, g.token)) found = &g;
    }
    return found;
  }
  Caller CallerOf(const httplib::Request& req) const {
    if (grants.empty()) return {.name = "local", .role = Role::kAdmin};
    const TokenGrant* grant = GrantOf(PresentedOf(req).token);
    return grant ? grant->caller : Caller{};
  }
  static PresentedToken PresentedOf(const httplib::Request& req) {
    return Presented(
        req.get_header_value("Authorization"),
        req.has_param("token") ? std::optional(req.get_param_value("token")) : std::nullopt,
        req.get_header_value("Cookie"));
  }
  Status StartQueue();

  // Serves the request at the front of `c` (whole, or arriving by its deadline).
  bool ServeRequest(Connection& c) {
    ConnectionStream stream(c, *options.env);
    return http.ServeOne(stream, ++c.requests >= kKeepAliveMaxCount);
  }

  // A request names one host (RFC 9110, 7.2): with two, which one it meant is a guess that a
  // proxy and this server could make differently.
  bool SingleHost(const httplib::Request& req, httplib::Response& res) {
    if (req.headers.count("Host") <= 1) return true;
    SendError(res, 400, "the request has more than one Host header; send one");
    return false;
  }

  // Without a token the server trusts whoever reaches it on loopback, so it must also make
  // sure that the request was meant for loopback: a web page the user visits can make the
  // browser send requests to a name it rebinds to 127.0.0.1 (DNS rebinding), but that request
  // still carries the page's own name in Host. With a token, the token decides. The raw
  // header is checked whole: get_header_value would stop at a NUL byte.
  bool HostAccepted(const httplib::Request& req, httplib::Response& res) {
    if (!grants.empty()) return true;
    const auto it = req.headers.find("Host");
    const std::string host = it == req.headers.end() ? "" : it->second;
    if (HostHeaderAccepted(host, options.host)) return true;
    SendError(res, 421,
              "this server answers only requests addressed to 127.0.0.1, localhost or [::1] "
              "(Host: " +
                  Printable(host) + "); open the address footprint serve printed");
    return false;
  }

  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (grants.empty()) return true;
    const PresentedToken given = PresentedOf(req);
    if (GrantOf(given.token) == nullptr) {
      res.set_header("WWW-Authenticate", "Bearer");
      SendError(res, 401,
                "this server needs its token: open the address footprint serve printed "
                "(…/?token=…) or send Authorization: Bearer TOKEN");
      return false;
    }
    if (given.from_query) {  // so that the page's scripts and API calls carry it
      res.set_header("Set-Cookie", std::string(kCookie) + "=" + given.token +
                                       "; Path=/; HttpOnly; SameSite=Strict");
    }
    return true;
  }

  void QueueRoutes();
  void Settings();
  void AssetRoutes();
  void ApiRoute();
  void ErrorHandlers();
  void GateConnections();
};

void Server::Impl::Settings() {
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"Content-Security-Policy", kContentSecurityPolicy},
                            {"Referrer-Policy", "no-referrer"},
                            {"X-Frame-Options", "DENY"},
                            {"Cache-Control", "no-store"}});
  http.set_payload_max_length(1 << 20);
  // Small answers go out at once (otherwise Nagle and delayed ACKs add 40 ms to each).
  http.set_tcp_nodelay(true);
  // What the Keep-Alive header of each response tells the client (the gate enforces them).
  http.set_keep_alive_max_count(kKeepAliveMaxCount);
  http.set_keep_alive_timeout(kRequestTimeoutS);
  // SO_REUSEADDR (a restart may bind while old connections linger) but not httplib's default
  // SO_REUSEPORT, with which a second server would share the port instead of failing.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return SingleHost(req, res) && HostAccepted(req, res) && Authorized(req, res)
               ? httplib::Server::HandlerResponse::Unhandled
               : httplib::Server::HandlerResponse::Handled;
  });
}

void Server::Impl::AssetRoutes() {
  const std::span<const ServedAsset> assets = ServedAssets();
  if (assets.empty()) {
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      SendError(res, 501,
                "this footprint was built without its web front end "
                "(FOOTPRINT_BUILD_PLOT=OFF); the JSON API under /api/ works");
    });
  }
  // Browsers ask for it; an empty answer keeps their consoles free of 404s.
  http.Get("/favicon.ico",
           [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  for (const ServedAsset& asset : assets) {
    http.Get(std::string(asset.path),
             [&asset](const httplib::Request& req, httplib::Response& res) {
               SendAsset(asset, req, res);
             });
  }
}

void Server::Impl::ApiRoute() {
  http.Get("/api/.*", [this](const httplib::Request& req, httplib::Response& res) {
    ApiRequest request{.path = req.path};
    for (const auto& [key, value] : req.params) request.params.emplace(key, value);
    SendApiResponse(api.Handle(request), res);
  });
}

// The queue's folders must be folders; jobs run this binary on the database by its absolute
// name (they start in their file's folder).
Status Server::Impl::StartQueue() {
  for (const std::string* folder : {&options.manifests, &options.plans}) {
    std::error_code ec;
    if (!folder->empty() && !std::filesystem::is_directory(*folder, ec)) {
      return InvalidArgument("--manifests and --plans name folders; " + *folder + " is none");
    }
  }
  FP_ASSIGN_OR_RETURN(queue, JobQueue::Open(options.db, *options.env));
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  catalog =
      std::make_unique<JobCatalog>(JobFolders{options.manifests, options.plans}, self,
                                   std::filesystem::absolute(options.db).string(), options.python);
  queue_api = std::make_unique<QueueApi>(
      *queue, *catalog, [this] { runner->Wake(); }, *options.env);
  runner = std::make_unique<JobRunner>(*queue, *catalog, *options.env);
  return runner->Start();
}

void Server::Impl::QueueRoutes() {
  auto handle = [this](const httplib::Request& req, httplib::Response& res) {
    QueueRequest request{.method = req.method,
                         .path = req.path,
                         .body = req.body,
                         .content_type = req.get_header_value("Content-Type"),
                         .form_token = req.get_header_value("X-CSRF-Token"),
                         .caller = CallerOf(req)};
    for (const auto& [key, value] : req.params) request.params.emplace(key, value);
    SendApiResponse(queue_api->Handle(request), res);
  };
  http.Get("/api/queue(/.*)?", handle);
  http.Post("/api/queue(/.*)?", handle);
}

// Unknown paths and methods, and anything that escaped a handler: JSON errors.
void Server::Impl::ErrorHandlers() {
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    SendError(res, res.status,
              res.status == 404 ? "nothing at " + req.path.substr(0, 200) + " (see docs/serve.md)"
                                : "bad request (only GET is served; see docs/serve.md)");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string what = "unknown";
        try {
          if (e) std::rethrow_exception(e);
        } catch (const std::exception& x) {
          what = x.what();
        } catch (...) {
        }
        SendError(res, 500, "internal error: " + what);
      });
}

// Threads mostly wait on the database or on slow readers of long answers, so there are more
// than cores; waiting for a request's head takes none (the gate's reader does it).
void Server::Impl::GateConnections() {
  const int threads =
      options.threads > 0
          ? options.threads
          : std::max(kDefaultThreads, static_cast<int>(std::thread::hardware_concurrency()));
  const int reserved = grants.empty() ? 0 : threads / 4;
  gate = std::make_unique<ConnectionGate>(
      *options.env, threads, reserved, [this](Connection& c) { return ServeRequest(c); },
      [this](std::string_view head) {
        if (grants.empty()) return true;
        const std::optional<std::string> token = HeadToken(head);
        return token && GrantOf(*token) != nullptr;
      });
  http.admit = [this](socket_t sock) { gate->Admit(sock); };
  http.new_task_queue = [this] {
    gate->Start();
    return new InlineTaskQueue(*gate);
  };
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Start(ServeOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument("--port must be from 1 to 65535 (0: any free port), not " +
                           std::to_string(options.port));
  }
  if (options.threads < 0 || options.threads > kMaxThreads) {
    return InvalidArgument("--threads must be from 1 to " + std::to_string(kMaxThreads) +
                           " (0: the default, max(" + std::to_string(kDefaultThreads) +
                           ", cores)), not " + std::to_string(options.threads));
  }
  if (options.host.empty()) return InvalidArgument("--host must not be empty");
  for (char c : options.token) {
    if (c <= ' ' || c == 0x7f || c == ';' || c == ',') {
      return InvalidArgument(
          "--token must be printable, without spaces, ';' or ','; or leave it out to have one "
          "generated");
    }
  }
  std::vector<TokenGrant> grants;
  if (!options.tokens_file.empty()) {
    FP_ASSIGN_OR_RETURN(grants, ReadTokenGrants(options.tokens_file));
  }
  const bool queue = !options.manifests.empty() || !options.plans.empty();
  if (options.token.empty() && grants.empty() && (queue || !IsLoopback(options.host))) {
    options.token = NewToken();
  }
  if (!options.token.empty()) {
    grants.push_back({.token = options.token, .caller = {.name = "admin", .role = Role::kAdmin}});
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->grants = std::move(grants);
  {
    auto lease = impl->pool.Acquire();  // the database exists and is footprint's
    if (!lease.ok()) return lease.status();
    FP_RETURN_IF_ERROR((*lease)->ListRuns().status());
  }
  if (queue) FP_RETURN_IF_ERROR(impl->StartQueue());
  impl->Settings();
  impl->AssetRoutes();
  if (queue) impl->QueueRoutes();
  impl->ApiRoute();
  impl->ErrorHandlers();
  impl->GateConnections();
  const ServeOptions& o = impl->options;
  // [::1] as a URL writes it; the socket wants the bare address.
  std::string address = o.host;
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  impl->port = o.port == 0 ? impl->http.bind_to_any_port(address)
                           : (impl->http.bind_to_port(address, o.port) ? o.port : -1);
  if (impl->port <= 0 || !impl->http.WidenBacklog()) {
    return IoError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                   " (in use, or not an address of this machine); choose another with --port "
                   "or --host");
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }
const std::string& Server::token() const { return impl_->options.token; }

std::string Server::Url() const {
  const std::string& host = impl_->options.host;
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';  // ::1
  std::string url = "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port()) + "/";
  if (!token().empty()) url += "?token=" + token();
  return url;
}

Status Server::Run() {
  if (!impl_->http.listen_after_bind()) {
    return IoError("the server stopped listening on port " + std::to_string(port()));
  }
  return Status::Ok();
}

void Server::Stop() {
  if (impl_->queue_api) impl_->queue_api->Stop();
  impl_->http.stop();
}

std::string Server::Answer(std::string_view request) {
  Connection c;
  c.input = std::string(request);
  switch (ExamineHead(c.input)) {
    case HeadState::kIncomplete:  // what the client gets once the deadline passes
      return RequestTimeoutResponse();
    case HeadState::kTooLarge:
      return HeadTooLargeResponse();
    case HeadState::kComplete:
      break;
  }
  impl_->ServeRequest(c);
  return c.output;
}

Status ServeUntilSignal(Server& server, Env& env) {
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Before the request threads start, so that they inherit the mask.
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    const timespec poll{0, 200'000'000};
    while (!done.load()) {
      if (sigtimedwait(&stop_signals, nullptr, &poll) > 0) {
        // Again until Run returns: a stop that comes before listening begins is ignored.
        while (!done.load()) {
          server.Stop();
          env.SleepUntil(env.MonotonicNs() + 50 * kNsPerMs);
        }
        return;
      }
    }
  });
  Status status = server.Run();
  done = true;
  waiter.join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return status;
}

}  // namespace footprint::serve
