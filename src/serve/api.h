// The JSON API of `footprint serve` (docs/serve.md), independent of HTTP: a request is a path
// and its query parameters, a response a status code and a body (or a writer that streams
// one). The server (server.h) maps HTTP onto it; tests can call it directly.
//
// Everything is read-only: each request leases a store opened read-only from a StorePool, and
// runs whose monitor died are shown as interrupted without being written. Every bad input —
// unknown path, bad run, malformed or out-of-range number, unknown metric — is a 4xx response
// whose body is {"error": "..."}; a database failure is 500 with the same shape.
//
// Thread-safety: Handle may be called from many threads at once (the pool is locked; each
// request has its own store).
#ifndef FOOTPRINT_SERVE_API_H_
#define FOOTPRINT_SERVE_API_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint::serve {

// Read-only stores of one database, opened on demand and reused: one per concurrent request.
class StorePool {
 public:
  explicit StorePool(std::string location) : location_(std::move(location)) {}

  // A store for the duration of the lease; returned to the pool by the deleter.
  using Lease = std::unique_ptr<Store, std::function<void(Store*)>>;
  // Opens the database (read-only) when no idle store is left; its error otherwise.
  Result<Lease> Acquire();

  const std::string& location() const { return location_; }

 private:
  std::string location_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Store>> idle_;
};

struct ApiRequest {
  std::string path;                                // "/api/runs", decoded
  std::multimap<std::string, std::string> params;  // query parameters, decoded
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string filename;  // when set: a download (Content-Disposition: attachment)
  // When set, the body is streamed by calling it (the store is leased meanwhile); `body` is
  // unused. It returns false when the output failed (the client went away).
  std::function<bool(std::ostream&)> stream;
};

// {"error": message} with `status`.
ApiResponse ErrorResponse(int status, std::string_view message);
// The HTTP status for a failed Status: 400 bad input, 404 not found, 501 unsupported, 500
// otherwise.
int HttpStatusOf(const Status& status);

class Api {
 public:
  // `queue`: whether serve runs a queue (/api/info says so, for the page). `env`'s wall clock
  // is "now" for the durations of runs still running.
  Api(StorePool& pool, bool queue, Env& env) : pool_(pool), queue_(queue), env_(env) {}

  // Answers a GET of `request.path` (under /api/). Never throws.
  ApiResponse Handle(const ApiRequest& request);

 private:
  StorePool& pool_;
  bool queue_;
  Env& env_;
};

// Limits of request parameters, also documented in docs/serve.md.
inline constexpr size_t kMaxPoints = 100'000;       // points=, per series
inline constexpr size_t kDefaultPoints = 2'000;     // points= when not given
inline constexpr size_t kMaxPageRuns = 1'000;       // limit= of /api/runs
inline constexpr size_t kMaxPageSamples = 100'000;  // limit= of /api/runs/ID/samples
inline constexpr size_t kMaxSelectedRuns = 64;      // runs= of plot, compare and export
inline constexpr size_t kMaxTreeRuns = 5'000;       // runs listed by /api/tree

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_API_H_
