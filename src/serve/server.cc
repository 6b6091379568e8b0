#include "serve/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>

#include "report/plot_assets.h"
#include "serve/api.h"

namespace footprint::serve {
namespace {

// Scripts and styles only from the server itself; no inline scripts. Inline styles are
// allowed because ECharts writes its tooltips as HTML with style attributes.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";
constexpr char kCookie[] = "fp_token";

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

std::string CookieToken(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  size_t pos = 0;
  while (pos < cookies.size()) {
    while (pos < cookies.size() && (cookies[pos] == ' ' || cookies[pos] == ';')) ++pos;
    size_t end = cookies.find(';', pos);
    if (end == std::string::npos) end = cookies.size();
    if (cookies.compare(pos, key.size(), key) == 0) {
      return cookies.substr(pos + key.size(), end - pos - key.size());
    }
    pos = end;
  }
  return "";
}

void SendError(httplib::Response& res, int status, std::string_view message) {
  ApiResponse r = ErrorResponse(status, message);
  res.status = r.status;
  res.set_content(r.body, r.content_type);
}

}  // namespace

bool IsLoopback(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  const std::string h(host);
  return inet_pton(AF_INET, h.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

bool IsLoopbackHostHeader(std::string_view host) {
  // "name", "name:port", "[v6]" or "[v6]:port"; the name, not an address it resolves to.
  std::string_view name = host;
  if (name.starts_with("[")) {
    name = name.substr(0, name.find(']') + 1);
  } else if (size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  return name == "localhost" || name == "[::1]" || name == "127.0.0.1";
}

std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 100)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out;
}

std::string NewToken() {
  std::random_device random;  // the kernel's generator (getrandom) on Linux
  std::string token;
  char buf[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(random()));
    token += buf;
  }
  return token;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

struct Server::Impl {
  ServeOptions options;
  StorePool pool;
  Api api;
  httplib::Server http;
  int port = 0;

  explicit Impl(ServeOptions o) : options(std::move(o)), pool(options.db), api(pool) {}

  // Without a token the server trusts whoever reaches it on loopback, so it must also make
  // sure that the request was meant for loopback: a web page the user visits can make the
  // browser send requests to a name it rebinds to 127.0.0.1 (DNS rebinding), but that request
  // still carries the page's own name in Host. With a token, the token decides.
  bool HostAccepted(const httplib::Request& req, httplib::Response& res) {
    if (!options.token.empty()) return true;
    if (IsLoopbackHostHeader(req.get_header_value("Host"))) return true;
    SendError(res, 421,
              "this server answers only requests addressed to 127.0.0.1, localhost or [::1] "
              "(Host: " +
                  Printable(req.get_header_value("Host")) +
                  "); open the address footprint serve printed");
    return false;
  }

  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (options.token.empty()) return true;
    std::string given;
    bool from_query = false;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.starts_with("Bearer ")) {
      given = auth.substr(7);
    } else if (req.has_param("token")) {
      given = req.get_param_value("token");
      from_query = true;
    } else {
      given = CookieToken(req);
    }
    if (!ConstantTimeEquals(given, options.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      SendError(res, 401,
                "this server needs its token: open the address footprint serve printed "
                "(…/?token=…) or send Authorization: Bearer TOKEN");
      return false;
    }
    if (from_query) {  // so that the page's scripts and API calls carry it
      res.set_header("Set-Cookie", std::string(kCookie) + "=" + options.token +
                                       "; Path=/; HttpOnly; SameSite=Strict");
    }
    return true;
  }

  void Asset(httplib::Response& res, std::string_view body, const char* type) {
    res.set_content(body.data(), body.size(), type);
  }

  void Routes() {
    http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                              {"Content-Security-Policy", kContentSecurityPolicy},
                              {"Referrer-Policy", "no-referrer"},
                              {"X-Frame-Options", "DENY"},
                              {"Cache-Control", "no-store"}});
    http.set_payload_max_length(1 << 20);
    // Small answers go out at once (otherwise Nagle and delayed ACKs add 40 ms to each).
    http.set_tcp_nodelay(true);
    // A polling page keeps its connection. Each kept-alive connection holds a request thread
    // until it has been idle this long: short, so that another tab's connections are served.
    http.set_keep_alive_max_count(1000);
    http.set_keep_alive_timeout(1);
    // SO_REUSEADDR (a restart may bind while old connections linger) but not httplib's default
    // SO_REUSEPORT, with which a second server would share the port instead of failing.
    http.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });  // GET only: no request has a body worth reading
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return HostAccepted(req, res) && Authorized(req, res)
                 ? httplib::Server::HandlerResponse::Unhandled
                 : httplib::Server::HandlerResponse::Handled;
    });
    const PlotAssets* assets = EmbeddedPlotAssets();
    http.Get("/", [this, assets](const httplib::Request&, httplib::Response& res) {
      if (!assets) {
        SendError(res, 501,
                  "this footprint was built without its web front end "
                  "(FOOTPRINT_BUILD_PLOT=OFF); the JSON API under /api/ works");
        return;
      }
      Asset(res, assets->serve_html, "text/html; charset=utf-8");
    });
    // Browsers ask for it; an empty answer keeps their consoles free of 404s.
    http.Get("/favicon.ico",
             [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    if (assets) {
      const std::pair<std::string, std::pair<std::string_view, const char*>> files[] = {
          {"/assets/echarts.min.js", {assets->library_js, "text/javascript; charset=utf-8"}},
          {"/assets/charts.js", {assets->charts_js, "text/javascript; charset=utf-8"}},
          {"/assets/serve.js", {assets->serve_js, "text/javascript; charset=utf-8"}},
          {"/assets/plot.css", {assets->plot_css, "text/css; charset=utf-8"}},
          {"/assets/serve.css", {assets->serve_css, "text/css; charset=utf-8"}},
      };
      for (const auto& [path, file] : files) {
        http.Get(path, [this, file = file](const httplib::Request&, httplib::Response& res) {
          Asset(res, file.first, file.second);
          res.set_header("Cache-Control", "private, max-age=3600");
        });
      }
    }
    http.Get("/api/.*", [this](const httplib::Request& req, httplib::Response& res) {
      ApiRequest request{.path = req.path};
      for (const auto& [key, value] : req.params) request.params.emplace(key, value);
      ApiResponse r = api.Handle(request);
      res.status = r.status;
      if (!r.filename.empty()) {
        res.set_header("Content-Disposition", "attachment; filename=\"" + r.filename + "\"");
      }
      if (!r.stream) {
        res.set_content(r.body, r.content_type);
        return;
      }
      res.set_chunked_content_provider(
          r.content_type, [stream = std::move(r.stream)](size_t, httplib::DataSink& sink) {
            SinkBuf buf(sink);
            std::ostream out(&buf);
            bool ok = stream(out) && out.flush();
            if (ok) sink.done();
            return ok;
          });
    });
    // Unknown paths and methods, and anything that escaped a handler: JSON errors.
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
    // Threads mostly wait on kept-alive sockets (a browser opens up to 6 per page), so there
    // are many more than cores; with 4, a second page waited for the first one's to go idle.
    const int threads =
        options.threads > 0
            ? options.threads
            : std::max(kDefaultThreads, static_cast<int>(std::thread::hardware_concurrency()));
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Start(ServeOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument("--port must be from 1 to 65535 (0: any free port), not " +
                           std::to_string(options.port));
  }
  if (options.host.empty()) return InvalidArgument("--host must not be empty");
  for (char c : options.token) {
    if (c <= ' ' || c == 0x7f || c == ';' || c == ',') {
      return InvalidArgument(
          "--token must be printable, without spaces, ';' or ','; or leave it out to have one "
          "generated");
    }
  }
  if (options.token.empty() && !IsLoopback(options.host)) options.token = NewToken();
  auto impl = std::make_unique<Impl>(std::move(options));
  {
    auto lease = impl->pool.Acquire();  // the database exists and is footprint's
    if (!lease.ok()) return lease.status();
    FP_RETURN_IF_ERROR((*lease)->ListRuns().status());
  }
  impl->Routes();
  const ServeOptions& o = impl->options;
  // [::1] as a URL writes it; the socket wants the bare address.
  std::string address = o.host;
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  impl->port = o.port == 0 ? impl->http.bind_to_any_port(address)
                           : (impl->http.bind_to_port(address, o.port) ? o.port : -1);
  if (impl->port <= 0) {
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

void Server::Stop() { impl_->http.stop(); }

Status ServeUntilSignal(Server& server) {
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
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
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
