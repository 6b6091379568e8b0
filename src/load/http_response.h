// An HTTP/1.1 response read as its bytes arrive, for `footprint load --http`: the status, the
// body's framing (Content-Length, chunked, or up to the connection's close), when the body's
// first byte came, and how many tokens it streamed: server-sent events (`data:` lines other
// than `[DONE]`) for text/event-stream, else chunks of a chunked body, else 1 for a body.
//
// Thread-safety: one object per connection, used by one thread.
#ifndef FOOTPRINT_LOAD_HTTP_RESPONSE_H_
#define FOOTPRINT_LOAD_HTTP_RESPONSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace footprint {

class HttpResponse {
 public:
  enum class Step { kMore, kDone, kBroken };

  // The next bytes of the connection, read at `at_ns`. kDone once the response is whole
  // (bytes after it are ignored); kBroken when they are not HTTP (error() says why).
  Step Feed(std::string_view bytes, int64_t at_ns);
  // The connection closed: kDone when the body runs up to the close, else kBroken.
  Step End();

  bool ok() const { return status_ >= 200 && status_ < 300; }
  int status() const { return status_; }
  const std::string& status_line() const { return status_line_; }
  bool keep_alive() const { return keep_alive_; }
  // The answer's RESULT, kept only after KeepAnswer() (accuracy mode): the body, or for an
  // event stream its events' data (`data:` lines but `[DONE]`, one space after the colon
  // dropped) joined, without the framing.
  void KeepAnswer() { keep_answer_ = true; }
  const std::string& answer() const { return answer_; }
  std::optional<int64_t> first_body_byte_ns() const { return first_body_byte_ns_; }
  int tokens() const;
  const std::string& error() const { return error_; }

 private:
  enum class State { kHead, kLength, kChunkSize, kChunkData, kChunkEnd, kTrailer, kToClose, kDone };

  Step ParseHead();
  // The body's bytes, as they come: the first byte's time, and the events of a stream.
  void OnBody(std::string_view bytes, int64_t at_ns);
  Step Broken(std::string why);

  State state_ = State::kHead;
  std::string pending_;  // the head, or a chunk's size line, until it is whole
  int status_ = 0;
  std::string status_line_, error_;
  bool keep_alive_ = true, chunked_ = false, event_stream_ = false, any_body_ = false;
  bool keep_answer_ = false;
  std::string answer_;
  uint64_t left_ = 0;  // of the body (kLength) or of the chunk (kChunkData)
  std::optional<int64_t> first_body_byte_ns_;
  int chunks_ = 0, events_ = 0;
  std::string event_line_;  // a server-sent event's line, until its end
};

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_HTTP_RESPONSE_H_
