// The request path of footprint serve (src/serve/server.cc, linked in from the module's
// source): the Host rule and the reading of request heads, table-driven; then raw requests of
// tests/fuzz/corpus/http/, mutated (fuzz_util.h), answered by a server over a small database
// with Server::Answer (no socket). Whatever the bytes, the answer is one well-formed HTTP
// response: a status from 100 to 599, header lines without stray line breaks, and a JSON body
// that parses wherever the response says it is JSON (every error is).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "footprint/store.h"
#include "fuzz_util.h"
#include "serve/server.h"
#include "util/strings.h"

namespace footprint {
namespace {

using serve::ExamineHead;
using serve::HeadCarriesToken;
using serve::HeadState;
using serve::HostHeaderAccepted;

constexpr char kToken[] = "fuzz-token";

TEST(HostHeader, OnlyTheWholeValueNamesLoopback) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:8765", "localhost", "LocalHost:1", "[::1]",
                           "[::1]:80", "127.0.0.1:65535"}) {
    EXPECT_TRUE(HostHeaderAccepted(host, "127.0.0.1")) << host;
  }
  const std::string nul("127.0.0.1\0evil.com", 18);
  for (const std::string& host :
       {std::string("[::1].evil.com"), std::string("127.0.0.1:x.evil.com"), nul,
        std::string("127.0.0.1:"), std::string("127.0.0.1:123456"), std::string("127.0.0.1:80:80"),
        std::string("127.0.0.1 "), std::string("localhost."), std::string("[::1"),
        std::string("evil.com"), std::string("127.0.0.1.evil.com"), std::string(""),
        std::string(":80"), std::string("127.0.0.2")}) {
    EXPECT_FALSE(HostHeaderAccepted(host, "127.0.0.1")) << Inert(host);
  }
  // The address it was told to listen on, as a URL writes it.
  EXPECT_TRUE(HostHeaderAccepted("127.0.0.2:8765", "127.0.0.2"));
  EXPECT_TRUE(HostHeaderAccepted("[::1]:8765", "::1"));
  EXPECT_FALSE(HostHeaderAccepted("::1", "::1"));
}

TEST(RequestHead, EndsWhereTheParserEndsIt) {
  EXPECT_EQ(ExamineHead("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), HeadState::kComplete);
  EXPECT_EQ(ExamineHead("GET / HTTP/1.1\r\n\r\n"), HeadState::kComplete);
  // A header line ended by LF alone is skipped by the parser; the head still ends at CRLF.
  EXPECT_EQ(ExamineHead("GET / HTTP/1.1\nHost: a\n\r\nrest"), HeadState::kComplete);
  EXPECT_EQ(ExamineHead("GET / HTTP/1.1\r\nHost: a\r\n"), HeadState::kIncomplete);
  EXPECT_EQ(ExamineHead("GET / HTTP/1.1\n\n"), HeadState::kIncomplete);
  EXPECT_EQ(ExamineHead(""), HeadState::kIncomplete);
  EXPECT_EQ(ExamineHead(std::string(serve::kMaxRequestHeadBytes + 1, 'x')), HeadState::kTooLarge);
  EXPECT_EQ(ExamineHead("GET /" + std::string(serve::kMaxRequestHeadBytes, 'x') + "\r\n\r\n"),
            HeadState::kTooLarge);
}

TEST(RequestHead, CarriesTheTokenAsRequestsAreAuthorized) {
  EXPECT_TRUE(
      HeadCarriesToken("GET / HTTP/1.1\r\nAuthorization: Bearer fuzz-token\r\n\r\n", kToken));
  EXPECT_TRUE(HeadCarriesToken("GET /?a=1&token=fuzz-token HTTP/1.1\r\n\r\n", kToken));
  EXPECT_TRUE(
      HeadCarriesToken("GET / HTTP/1.1\r\ncookie: x=y; fp_token=fuzz-token\r\n\r\n", kToken));
  EXPECT_FALSE(HeadCarriesToken("GET / HTTP/1.1\r\nAuthorization: Bearer fuzz\r\n\r\n", kToken));
  // Authorization comes first, as in the server's check: a wrong one is not saved by the query.
  EXPECT_FALSE(HeadCarriesToken(
      "GET /?token=fuzz-token HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n", kToken));
  EXPECT_FALSE(HeadCarriesToken("GET / HTTP/1.1\r\nAuthorization: Bearer fuzz-token\r\n", kToken));
  EXPECT_FALSE(
      HeadCarriesToken("GET / HTTP/1.1\r\n\r\nAuthorization: Bearer fuzz-token\r\n\r\n", kToken));
}

// Two finished runs with samples, a scope and values, so that every endpoint has data.
void WriteRuns(const std::string& db) {
  auto store = OpenStore(db);
  ASSERT_TRUE(store.ok()) << store.status().message();
  for (const char* name : {"fuzz-a", "fuzz-b"}) {
    RunRecord r;
    r.id = std::string("00000000-0000-4000-8000-0000000000") + (name[5] == 'a' ? "0a" : "0b");
    r.name = name;
    r.experiment = "exp";
    r.workload = "wl";
    r.command = {"true"};
    r.started_at_ns = 1'700'000'000'000'000'000;
    r.meta_json = R"({"tags":{"k":"v"}})";
    ASSERT_TRUE((*store)->CreateRun(r).ok());
    auto cpu = (*store)->EnsureSeries({0, r.id, "cpu", "%", "tree", std::nullopt});
    ASSERT_TRUE(cpu.ok());
    std::vector<SamplePoint> samples;
    for (int i = 0; i < 50; ++i) samples.push_back({*cpu, i * 10'000'000, 10.0 * (i % 7)});
    ASSERT_TRUE((*store)->Append(r.id, samples, r.started_at_ns).ok());
    ASSERT_TRUE((*store)
                    ->InTransaction([&]() -> Status {
                      auto scope = (*store)->InsertScope(
                          {0, r.id, std::nullopt, "epoch", 1, 0, 200'000'000});
                      if (!scope.ok()) return scope.status();
                      return (*store)->InsertValue({r.id, *scope, "loss", 1, 100, 0.5, ""});
                    })
                    .ok());
    r.status = RunStatus::kOk;
    r.exit_code = 0;
    r.ended_at_ns = r.started_at_ns + 500'000'000;
    ASSERT_TRUE((*store)->FinishRun(r, {{"duration_s", 0.5}}).ok());
  }
}

// The body of a response whose head ended at `body_at`: as Content-Length says, or chunked.
std::string BodyOf(const std::string& response, size_t body_at, const std::string& head) {
  const std::string lower = Lower(head);
  if (lower.find("\r\ntransfer-encoding: chunked") == std::string::npos) {
    return response.substr(body_at);
  }
  std::string body;
  size_t at = body_at;
  for (;;) {
    const size_t line_end = response.find("\r\n", at);
    if (line_end == std::string::npos) return body;
    const size_t size = std::stoul(response.substr(at, line_end - at), nullptr, 16);
    if (size == 0) return body;
    body += response.substr(line_end + 2, size);
    at = line_end + 2 + size + 2;
  }
}

// One well-formed response (after any 100 Continue): status, header lines, a whole JSON body
// where it says JSON (an error's always), none for HEAD.
void ExpectWellFormed(const std::string& response, const std::string& request) {
  const std::string where = "\nrequest:\n" + Inert(request) + "\nresponse:\n" + Inert(response);
  size_t at = 0;
  int status = 0;
  std::string head;
  do {
    ASSERT_EQ(response.compare(at, 9, "HTTP/1.1 "), 0) << where;
    const size_t head_end = response.find("\r\n\r\n", at);
    ASSERT_NE(head_end, std::string::npos) << where;
    head = response.substr(at, head_end + 2 - at);
    status = std::atoi(response.c_str() + at + 9);
    ASSERT_TRUE(status >= 100 && status <= 599) << where;
    for (std::string_view line : Split(head, '\n')) {
      ASSERT_TRUE(line.empty() || (line.ends_with('\r') && line.find('\r') == line.size() - 1))
          << where;
    }
    at = head_end + 4;
  } while (status < 200);
  const bool json = Lower(head).find("\r\ncontent-type: application/json") != std::string::npos;
  ASSERT_TRUE(json || status < 400) << where;
  // HEAD: the head alone (however mangled the rest of its request line).
  if (!json || (request.starts_with("HEAD") && response.size() == at)) return;
  const auto doc = nlohmann::json::parse(BodyOf(response, at, head), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << where;
  if (status >= 400) {
    ASSERT_TRUE(doc.contains("error")) << where;
  }
}

// HTTP's own pieces, beside fuzz::CommonTokens().
const std::vector<std::string> kHttpTokens = {"GET ",
                                              "HEAD ",
                                              "POST ",
                                              " HTTP/1.1\r\n",
                                              " HTTP/1.0\r\n",
                                              "Host: 127.0.0.1\r\n",
                                              "Host: [::1].evil.com\r\n",
                                              "Authorization: Bearer fuzz-token\r\n",
                                              "?token=fuzz-token",
                                              "Cookie: fp_token=fuzz-token\r\n",
                                              "Content-Length: 5\r\n",
                                              "Transfer-Encoding: chunked\r\n",
                                              "Range: bytes=0-10\r\n",
                                              "Expect: 100-continue\r\n",
                                              "Connection: close\r\n",
                                              "%00",
                                              "%ff",
                                              "%2e%2e/",
                                              "/api/runs/",
                                              "/api/plot?runs=",
                                              "group:",
                                              "&points=",
                                              "\r\n\r\n"};

TEST(Fuzz, HttpRequests) {
  const std::vector<std::string> seeds = fuzz::Corpus("http");
  if (seeds.empty()) return;
  std::string dir = (std::filesystem::temp_directory_path() / "fp-fuzz-http-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::unique_ptr<std::string, void (*)(std::string*)> remove(
      &dir, [](std::string* d) { std::filesystem::remove_all(*d); });
  const std::string db = dir + "/fp.db";
  WriteRuns(db);
  if (::testing::Test::HasFatalFailure()) return;
  auto open = serve::Server::Start({.db = db, .port = 0});
  auto guarded = serve::Server::Start({.db = db, .port = 0, .token = kToken});
  ASSERT_TRUE(open.ok() && guarded.ok());
  std::mt19937 rng(31337);
  const int n = fuzz::Iterations(20000);
  int answered_ok = 0;
  for (int i = 0; i < n; ++i) {
    const std::string& seed = seeds[static_cast<size_t>(i) % seeds.size()];
    const std::string request =
        i < static_cast<int>(seeds.size()) ? seed : fuzz::Mutate(seed, rng, kHttpTokens);
    const std::string response = (i % 2 ? *guarded : *open)->Answer(request);
    ExpectWellFormed(response, request);
    if (::testing::Test::HasFatalFailure()) return;
    answered_ok += response.starts_with("HTTP/1.1 200") ? 1 : 0;
  }
  // The mutations stay close enough to the seeds that many requests are still served: the
  // fuzzing reaches past the request line into the API.
  EXPECT_GT(answered_ok, n / 10) << "of " << n;
}

}  // namespace
}  // namespace footprint
