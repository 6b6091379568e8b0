// footprint serve's request deadline (src/serve/server.cc) on FakeEnv's driven clock: a client
// that trickles its request head keeps its connection until the Env's clock reaches the
// deadline, and gets 408 exactly there. Deterministic: the clock moves only when the test moves
// it, and the test knows what the server's head reader has seen from requests it answered.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "fake_env.h"
#include "footprint/store.h"
#include "serve/server.h"
#include "util/clock.h"

namespace footprint {
namespace {

constexpr char kWholeRequest[] =
    "GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

// A connected client socket; -1 when the server cannot be reached. Its reads give up after
// 30 s of the machine's time: a guard against a hang, never what a test asserts.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval guard{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// What the server sends on `fd` until it closes it.
std::string ReadToEnd(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

class ServerDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "fp-serve-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    ASSERT_TRUE(OpenStore(dir_ + "/fp.db").ok());  // an empty database of footprint's
    auto server = serve::Server::Start({.db = dir_ + "/fp.db", .port = 0, .env = &env_});
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server).value();
    runner_ = std::thread([this] { (void)server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (runner_.joinable()) runner_.join();
    std::filesystem::remove_all(dir_);
  }

  // A whole request on a connection of its own, answered: the head reader has read every
  // connection accepted before it, at the clock as it stands.
  std::string Answered() {
    const int fd = Connect(server_->port());
    if (fd < 0) return "";
    Send(fd, kWholeRequest);
    std::string response = ReadToEnd(fd);
    ::close(fd);
    return response;
  }
  // Two requests answered in turn: the second's head is read in a later pass of the head
  // reader than the first's, so the pass that read the first, which ends by expiring the
  // connections past their deadline, has run on the clock as it stands.
  void AwaitReaderPass() {
    EXPECT_TRUE(Answered().starts_with("HTTP/1.1 204"));
    EXPECT_TRUE(Answered().starts_with("HTTP/1.1 204"));
  }

  FakeEnv env_;
  std::string dir_;
  std::unique_ptr<serve::Server> server_;
  std::thread runner_;
};

TEST_F(ServerDeadlineTest, ASlowClientIsDroppedExactlyAtItsDeadlineOnTheEnvsClock) {
  const int slow = Connect(server_->port());
  ASSERT_GE(slow, 0);
  Send(slow, "GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // the head, not its end
  // Connections are accepted in order: once a later one is answered, the slow one was
  // admitted, its deadline kRequestTimeoutS from the clock's 0.
  AwaitReaderPass();
  const int64_t deadline_ns = int64_t{serve::kRequestTimeoutS} * kNsPerSec;

  env_.Advance(deadline_ns - 1);
  Send(slow, "X-Slow: 1\r\n");
  AwaitReaderPass();
  char byte;
  EXPECT_EQ(::recv(slow, &byte, 1, MSG_DONTWAIT), -1) << "answered before its deadline";
  EXPECT_EQ(errno, EAGAIN);

  env_.Advance(1);
  AwaitReaderPass();
  const std::string response = ReadToEnd(slow);
  EXPECT_TRUE(response.starts_with("HTTP/1.1 408 Request Timeout\r\n")) << response;
  EXPECT_NE(response.find("within 10 s"), std::string::npos) << response;
  ::close(slow);
}

}  // namespace
}  // namespace footprint
