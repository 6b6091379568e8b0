// How `footprint load` reaches its system under test (SUT): the line protocol over the
// command's stdin and stdout (line_transport.cc), or HTTP requests to a server the command
// runs (http_transport.cc). The driver (load.cc) decides what to send and when; a transport
// only carries queries and answers, and stamps each answer with the time it was read.
//
// Thread-safety: a transport is used by the driver's one thread.
#ifndef FOOTPRINT_LOAD_SUT_TRANSPORT_H_
#define FOOTPRINT_LOAD_SUT_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint {

// How long a system under test has to exit once its stdin is closed (or, HTTP, once asked to
// stop) before it is stopped: the same for a load and for the resident command of evaluate.
inline constexpr int64_t kSutExitGraceNs = 10'000'000'000;

// An answer, or output that is none. Times are CLOCK_MONOTONIC nanoseconds.
struct SutAnswer {
  int64_t id = -1;  // the query's id; -1: output that names no query (`text`)
  int64_t completed_ns = 0;
  std::optional<int64_t> first_byte_ns;  // HTTP: when the response's body began
  int tokens = 0;                        // HTTP: chunks or server-sent events received
  std::string_view error;                // not empty: the query failed (an HTTP error)
  // The line protocol: the whole line; id -1: output that names no query (may be cut).
  std::string_view text;
  // The answer's RESULT: the line protocol's text after the tab; HTTP, in accuracy mode
  // (HttpTarget::keep_answers), the response's body or its events' data.
  std::string_view result;
};
using AnswerSink = std::function<void(const SutAnswer&)>;

class SutTransport {
 public:
  virtual ~SutTransport() = default;
  // Waits until the SUT can take queries or `deadline_ns` passes: "" once it can, else why not.
  virtual std::string WaitUntilReady(int64_t deadline_ns) = 0;
  // Queues query `id` with its sample indices (comma-separated); never blocks.
  virtual void Send(int64_t id, std::string_view samples) = 0;
  // A resident command between two loads (src/run/resident_command.h): queues `line` as it
  // is; the command answers it with a new `ready`, which WaitUntilReady then waits for. The
  // line protocol's alone (an HTTP server is never resident): other transports ignore it.
  virtual void SendControl(std::string_view /*line*/) {}
  // Waits up to `timeout_ns` for the SUT, sends what is queued, and hands every answer that
  // came to `sink`. "" while the SUT can go on; else what ended it ("the command closed its
  // output"), to which the driver adds how far the load got.
  virtual std::string Pump(int64_t timeout_ns, const AnswerSink& sink) = 0;
  // The load is done: no more queries.
  virtual void EndQueries() = 0;
  // After EndQueries, until `deadline_ns`: hands late answers to `sink`; true once the SUT has
  // let go (its output closed), false at the deadline.
  virtual bool WaitForEnd(int64_t deadline_ns, const AnswerSink& sink) = 0;
  // Whether the command is to be stopped with SIGTERM once the load is done (a server does not
  // end on its own), its death by that signal being its normal end.
  virtual bool StopsCommandAtEnd() const = 0;
};

// The line protocol (include/footprint/load.h) over the command's stdin (`to`) and stdout
// (`from`), both owned from here on. Answers are timed and deadlines read on `env`'s clock.
std::unique_ptr<SutTransport> MakeLineTransport(int to, int from, Env& env);

// HTTP/1.1 to a server on this machine.
struct HttpTarget {
  std::string url;      // http://HOST:PORT/PATH, as given
  std::string host;     // as the Host header names it
  std::string path;     // with the query string
  int family = 0;       // AF_INET or AF_INET6 ...
  std::string address;  // ... and the socket address (sockaddr bytes) queries go to
  // Every address the host resolved to (family, sockaddr bytes): `localhost` may be ::1 first
  // while the server listens on 127.0.0.1; the first that takes a connection is kept.
  std::vector<std::pair<int, std::string>> addresses;
  // The request's body, with {id} and {samples} replaced by the query's id and sample
  // indices (comma-separated).
  std::string body_template;
  bool keep_answers = false;  // accuracy mode: each answer's RESULT (SutAnswer::result)
};

// Parses `url` (http:// only) and resolves its host; InvalidArgument, one line, when it cannot.
Result<HttpTarget> ParseHttpTarget(std::string_view url, std::string body_template);

// One POST per query on keep-alive connections (a new one while all are busy). `command_pidfd`
// (or -1) tells when the server has exited. Readiness: the server accepts a connection.
// Answers are timed, deadlines read and the pauses between tries to connect taken on `env`'s
// clock.
std::unique_ptr<SutTransport> MakeHttpTransport(const HttpTarget& target, int command_pidfd,
                                                Env& env);

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_SUT_TRANSPORT_H_
