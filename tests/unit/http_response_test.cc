// The HTTP response reader of `footprint load --http` (src/run/http_response.h): framing,
// tokens and first-byte times, whatever way the bytes are split between reads; and the HTTP
// transport's wait for a server, on FakeEnv's driven clock.
#include "load/http_response.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_env.h"
#include "footprint/load.h"
#include "load/sut_transport.h"
#include "util/strings.h"

namespace footprint {
namespace {

// Feeds `bytes` in pieces of `step` bytes, the k-th read at time k; the last step.
HttpResponse::Step FeedInPieces(HttpResponse& r, const std::string& bytes, size_t step) {
  HttpResponse::Step last = HttpResponse::Step::kMore;
  for (size_t at = 0, k = 0; at < bytes.size() && last == HttpResponse::Step::kMore; at += step) {
    last = r.Feed(std::string_view(bytes).substr(at, step), static_cast<int64_t>(k++));
  }
  return last;
}

// `data` as one chunk of a chunked body.
std::string Chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

TEST(HttpResponse, ContentLengthWholeOrByteByByte) {
  const std::string bytes = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  for (size_t step : {bytes.size(), size_t{1}, size_t{7}}) {
    HttpResponse r;
    EXPECT_EQ(FeedInPieces(r, bytes, step), HttpResponse::Step::kDone) << step;
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r.keep_alive());
    EXPECT_EQ(r.tokens(), 1);
    ASSERT_TRUE(r.first_body_byte_ns());
  }
  HttpResponse r;
  EXPECT_EQ(FeedInPieces(r, bytes, 1), HttpResponse::Step::kDone);
  // The body's first byte was the 39th read (index 38): the head is 38 bytes.
  EXPECT_EQ(*r.first_body_byte_ns(), 38);
}

TEST(HttpResponse, ChunkedCountsChunksAndStopsAtTheLastOne) {
  const std::string bytes =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n1\r\nd\r\na\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n";
  for (size_t step : {bytes.size(), size_t{1}, size_t{5}}) {
    HttpResponse r;
    EXPECT_EQ(FeedInPieces(r, bytes, step), HttpResponse::Step::kDone) << step;
    EXPECT_EQ(r.tokens(), 3) << step;
    EXPECT_EQ(r.answer(), "") << step;  // kept in accuracy mode only
    HttpResponse kept;
    kept.KeepAnswer();
    EXPECT_EQ(FeedInPieces(kept, bytes, step), HttpResponse::Step::kDone) << step;
    EXPECT_EQ(kept.answer(), "abcd0123456789") << step;  // the body, without its framing
  }
}

TEST(HttpResponse, ServerSentEventsAreTheTokens) {
  const std::string events =
      "data: {\"t\": 1}\n\ndata: {\"t\": 2}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
  const std::string bytes =
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "transfer-encoding: chunked\r\n\r\n" +
      Chunk(events.substr(0, 20)) + Chunk(events.substr(20)) + "0\r\n\r\n";
  HttpResponse r;
  r.KeepAnswer();
  EXPECT_EQ(FeedInPieces(r, bytes, 3), HttpResponse::Step::kDone);
  EXPECT_EQ(r.tokens(), 2);                       // two data events; a comment and [DONE] are none
  EXPECT_EQ(r.answer(), "{\"t\": 1}{\"t\": 2}");  // their data, joined
}

TEST(HttpResponse, AnInterimResponseIsNotTheAnswer) {
  HttpResponse r;
  EXPECT_EQ(FeedInPieces(r,
                         "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                         7),
            HttpResponse::Step::kDone);
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.tokens(), 1);
}

TEST(HttpResponse, BodyUpToTheCloseAndErrors) {
  HttpResponse close;
  EXPECT_EQ(close.Feed("HTTP/1.0 200 OK\r\n\r\npartial", 1), HttpResponse::Step::kMore);
  EXPECT_EQ(close.End(), HttpResponse::Step::kDone);
  EXPECT_FALSE(close.keep_alive());

  HttpResponse error;
  EXPECT_EQ(error.Feed("HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 1),
            HttpResponse::Step::kDone);
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status_line(), "HTTP/1.1 503 Busy");
  EXPECT_FALSE(error.keep_alive());

  HttpResponse garbage;
  EXPECT_EQ(garbage.Feed("SSH-2.0-OpenSSH\r\n\r\n", 1), HttpResponse::Step::kBroken);
  EXPECT_NE(garbage.error().find("SSH-2.0"), std::string::npos);

  HttpResponse cut;
  EXPECT_EQ(cut.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 1),
            HttpResponse::Step::kMore);
  EXPECT_EQ(cut.End(), HttpResponse::Step::kBroken);

  HttpResponse bad_chunk;
  EXPECT_EQ(bad_chunk.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 1),
            HttpResponse::Step::kBroken);
}

TEST(ParseHttpTarget, TakesLoopbackUrlsAndRefusesOthers) {
  auto t = ParseHttpTarget("http://127.0.0.1:8123/v1/completions?x=1", "{}");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->host, "127.0.0.1:8123");
  EXPECT_EQ(t->path, "/v1/completions?x=1");
  auto v6 = ParseHttpTarget("http://[::1]:8123", "{}");
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->path, "/");
  EXPECT_NE(ParseHttpTarget("https://127.0.0.1/", "{}").status().message().find("http://"),
            std::string::npos);
  EXPECT_FALSE(ParseHttpTarget("http://:80/", "{}").ok());
}

// No server takes a connection (a bound socket that does not listen refuses them): the
// transport tries every 10 ms of the Env's clock until the deadline, then says how long it
// waited and why. On the driven clock the wait ends exactly at the deadline, with no real wait.
TEST(HttpTransport, WaitsForTheServerUntilTheDeadlineOnTheEnvsClock) {
  const int refusing = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(refusing, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::getsockname(refusing, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/";
  auto target = ParseHttpTarget(url, "{}");
  ASSERT_TRUE(target.ok()) << target.status().message();
  FakeEnv env;
  const int64_t deadline_ns = 5'000'000'000;
  env.SetHorizon(deadline_ns);
  auto transport = MakeHttpTransport(*target, -1, env);
  const std::string why = transport->WaitUntilReady(deadline_ns);
  ::close(refusing);
  EXPECT_EQ(env.MonotonicNs(), deadline_ns);
  EXPECT_NE(why.find("took no connection within " + FormatDuration(5.0)), std::string::npos) << why;
  EXPECT_NE(why.find("Connection refused"), std::string::npos) << why;
}

// Malformed URLs are refused before anything runs, with one printable line saying what is wrong.
TEST(ParseHttpTarget, RefusesMalformedUrlsWithOneLine) {
  EXPECT_TRUE(ParseHttpTarget("http://[::1]:65535", "{}").ok());
  EXPECT_EQ(ParseHttpTarget("http://localhost", "{}")->path, "/");
  const std::pair<const char*, const char*> bad[] = {
      {"ftp://127.0.0.1/", "is not an http:// URL"},
      {"http://127.0.0.1:99999/", "has no valid port"},
      {"http://127.0.0.1:0/", "has no valid port"},
      {"http://127.0.0.1:-1/", "has no valid port"},
      {"http://127.0.0.1:+80/", "has no valid port"},
      {"http://127.0.0.1:/", "has no valid port"},
      {"http://127.0.0.1:8000:1/", "has no valid port"},
      {"http://[::1]8000/", "has no valid port"},
      {"http://[::1/", "has an unclosed '['"},
      {"http:///", "names no host"},
      {"http://a@127.0.0.1:8000/", "a user, a query or a fragment"},
      {"http://127.0.0.1?x/", "a user, a query or a fragment"},
      {"http://127.0.0.1:8000/a\x1b]0;x\a", "a space or a control character"},
      {"http://127.0.0.1:8000/#top", "has a fragment"},
  };
  for (const auto& [url, why] : bad) {
    auto t = ParseHttpTarget(url, "{}");
    ASSERT_FALSE(t.ok()) << url;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(t.status().message().find(why), std::string::npos) << t.status().message();
    EXPECT_EQ(t.status().message().find('\x1b'), std::string::npos) << url;
  }
}

// Streamed answers: time to first token from the scheduled time, and per output token after it.
TEST(SummarizeLoad, StreamedAnswersGiveTimeToFirstTokenAndPerToken) {
  LoadOptions o;
  std::vector<QueryRecord> queries;
  for (int i = 0; i < 4; ++i) {
    QueryRecord q;
    q.id = i;
    q.scheduled_ns = i * 100'000'000;
    q.issued_ns = q.scheduled_ns;
    q.first_byte_ns = q.scheduled_ns + 20'000'000;                // 20 ms to the first token
    q.completed_ns = *q.first_byte_ns + 9 * (i + 1) * 1'000'000;  // then 10 tokens, (i+1) ms each
    q.tokens = 10;
    queries.push_back(q);
  }
  queries.push_back(
      {.id = 4, .scheduled_ns = 400'000'000, .issued_ns = 400'000'000, .failed = true});
  LoadSummary s = SummarizeLoad(
      o, queries, {.first_failure = "query 4: HTTP/1.1 500", .ended_because = "done"});
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.completed, 4);
  EXPECT_EQ(s.tokens, 40);
  EXPECT_DOUBLE_EQ(s.ttft_s.at("p50"), 0.020);
  EXPECT_DOUBLE_EQ(s.tpot_s.at("p50"), 0.002);
  EXPECT_DOUBLE_EQ(s.tpot_s.at("max"), 0.004);
  auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_EQ(json["failed"], 1);
  EXPECT_EQ(json["first_failure"], "query 4: HTTP/1.1 500");
  EXPECT_DOUBLE_EQ(json["tpot_s"]["mean"].get<double>(), 0.0025);
}

}  // namespace
}  // namespace footprint
