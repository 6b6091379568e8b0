#include "load/http_response.h"

#include <algorithm>
#include <charconv>

#include "util/strings.h"

namespace footprint {
namespace {

constexpr size_t kMaxHead = 64 << 10;

// A header's value when `line` is that header (its name in any case), else nothing.
std::optional<std::string_view> HeaderValue(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return std::nullopt;
  if (Lower(line.substr(0, name.size())) != name) return std::nullopt;
  return Trim(line.substr(name.size() + 1));
}

}  // namespace

int HttpResponse::tokens() const {
  if (event_stream_) return events_;
  if (chunked_) return chunks_;
  return any_body_ ? 1 : 0;
}

HttpResponse::Step HttpResponse::Broken(std::string why) {
  error_ = std::move(why);
  return Step::kBroken;
}

HttpResponse::Step HttpResponse::Feed(std::string_view bytes, int64_t at_ns) {
  while (state_ != State::kDone) {
    if (state_ == State::kHead || state_ == State::kChunkSize || state_ == State::kTrailer) {
      const size_t had = pending_.size();
      pending_.append(bytes);
      const std::string_view end = state_ == State::kHead ? "\r\n\r\n" : "\r\n";
      const size_t at = pending_.find(end, had < end.size() ? 0 : had - end.size() + 1);
      if (at == std::string::npos) {
        if (pending_.size() > kMaxHead) return Broken("a head or chunk line over 64 KiB");
        return Step::kMore;
      }
      const std::string line = pending_.substr(0, at);
      bytes = bytes.substr(at + end.size() - had);
      pending_.clear();
      if (state_ == State::kHead) {
        pending_ = line;
        if (Step s = ParseHead(); s != Step::kMore) return s;
        continue;
      }
      if (state_ == State::kTrailer) {
        if (line.empty()) state_ = State::kDone;  // else a trailer header: skip it
        continue;
      }
      uint64_t size = 0;
      const std::string_view hex = Trim(std::string_view(line).substr(0, line.find(';')));
      auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
      if (ec != std::errc() || ptr != hex.data() + hex.size()) {
        return Broken("a chunk size that is not hexadecimal: '" + Inert(line.substr(0, 40)) + "'");
      }
      left_ = size;
      state_ = size == 0 ? State::kTrailer : State::kChunkData;
      continue;
    }
    if (bytes.empty()) return Step::kMore;
    if (state_ == State::kChunkEnd) {  // the CRLF after a chunk's data
      const size_t skip = std::min<size_t>(left_, bytes.size());
      left_ -= skip;
      bytes.remove_prefix(skip);
      if (left_ == 0) state_ = State::kChunkSize;
      continue;
    }
    const size_t take =
        state_ == State::kToClose ? bytes.size() : std::min<size_t>(left_, bytes.size());
    OnBody(bytes.substr(0, take), at_ns);
    bytes.remove_prefix(take);
    if (state_ == State::kToClose) return Step::kMore;
    left_ -= take;
    if (left_ > 0) continue;
    if (state_ == State::kLength) {
      state_ = State::kDone;
    } else {  // a chunk's data is whole
      ++chunks_;
      state_ = State::kChunkEnd;
      left_ = 2;
    }
  }
  return Step::kDone;
}

HttpResponse::Step HttpResponse::ParseHead() {
  const std::string head = std::move(pending_);
  pending_.clear();
  const size_t eol = std::min(head.find("\r\n"), head.size());
  status_line_ = head.substr(0, eol);
  // HTTP/1.x NNN reason
  if (!status_line_.starts_with("HTTP/1.") || status_line_.size() < 12 || status_line_[8] != ' ') {
    return Broken("the first line was '" + Inert(status_line_.substr(0, 60)) + "'");
  }
  const std::string_view code = std::string_view(status_line_).substr(9, 3);
  auto [ptr, ec] = std::from_chars(code.data(), code.data() + 3, status_);
  if (ec != std::errc() || ptr != code.data() + 3) return Broken("a status that is not a number");
  keep_alive_ = status_line_[7] == '1';  // HTTP/1.1 keeps the connection unless told not to
  std::optional<uint64_t> length;
  for (size_t at = eol + 2; at < head.size();) {
    const size_t end = std::min(head.find("\r\n", at), head.size());
    const std::string_view line = std::string_view(head).substr(at, end - at);
    at = end + 2;
    if (auto length_text = HeaderValue(line, "content-length")) {
      uint64_t n = 0;
      const std::string_view v = *length_text;
      if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc())
        return Broken("a Content-Length that is not a number");
      length = n;
    } else if (auto encoding = HeaderValue(line, "transfer-encoding")) {
      chunked_ = Lower(*encoding).find("chunked") != std::string::npos;
    } else if (auto type = HeaderValue(line, "content-type")) {
      event_stream_ = Lower(*type).starts_with("text/event-stream");
    } else if (auto connection = HeaderValue(line, "connection")) {
      const std::string c = Lower(*connection);
      if (c.find("close") != std::string::npos) keep_alive_ = false;
      if (c.find("keep-alive") != std::string::npos) keep_alive_ = true;
    }
  }
  if (status_ >= 100 && status_ < 200 && status_ != 101) {
    // An interim response (100 Continue, 103 Early Hints): the real one follows.
    *this = HttpResponse();
    return Step::kMore;
  }
  if (status_ == 204 || status_ == 304 || status_ == 101) {
    state_ = State::kDone;
  } else if (chunked_) {
    state_ = State::kChunkSize;
  } else if (length) {
    left_ = *length;
    state_ = left_ == 0 ? State::kDone : State::kLength;
  } else {
    keep_alive_ = false;  // the body ends with the connection
    state_ = State::kToClose;
  }
  return state_ == State::kDone ? Step::kDone : Step::kMore;
}

void HttpResponse::OnBody(std::string_view bytes, int64_t at_ns) {
  if (bytes.empty()) return;
  if (!first_body_byte_ns_) first_body_byte_ns_ = at_ns;
  any_body_ = true;
  if (!event_stream_) {
    if (keep_answer_) answer_.append(bytes);
    return;
  }
  for (char c : bytes) {
    if (c != '\n') {
      event_line_ += c;
      continue;
    }
    std::string_view line = event_line_;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.starts_with("data:") && Trim(line.substr(5)) != "[DONE]") {
      ++events_;
      if (keep_answer_) answer_.append(line.substr(line.starts_with("data: ") ? 6 : 5));
    }
    event_line_.clear();
  }
}

HttpResponse::Step HttpResponse::End() {
  if (state_ == State::kToClose) {
    state_ = State::kDone;
    return Step::kDone;
  }
  if (state_ == State::kDone) return Step::kDone;
  return Broken(state_ == State::kHead ? "the connection closed before a response"
                                       : "the connection closed mid-response");
}

}  // namespace footprint
