// Tests of common/http_server.h over real TCP on 127.0.0.1 with a raw socket client, so that the
// bytes on the wire (keep-alive, HEAD, 405, oversized heads) are what is checked.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::http {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<Server>(
        [](const Request& request, Response& response) {
          response.body = request.path + "|" + request.query + "|" +
                          (request.HasParam("verbose") ? "verbose" : "quiet");
        },
        ServerOptions{.idle_timeout = absl::Seconds(2)});
    absl::StatusOr<int> port = server_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
    server_->Start();
  }

  // A connected socket, or -1.
  int Connect() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      return -1;
    }
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
  }

  static void Send(int fd, const std::string& text) {
    ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(text.size()));
  }

  // Reads until `count` responses (by Content-Length) arrived or the peer closed (a HEAD answer:
  // wait for the close).
  static std::string Receive(int fd, int count) {
    std::string in;
    char buffer[4096];
    for (;;) {
      int complete = 0;
      size_t at = 0;
      for (size_t head; (head = in.find("\r\n\r\n", at)) != std::string::npos;) {
        const size_t length_at = in.find("Content-Length: ", at);
        const size_t length = std::stoul(in.substr(length_at + 16));
        const size_t end = head + 4 + length;
        if (end > in.size()) break;
        ++complete;
        at = end;
      }
      if (complete >= count) return in;
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return in;
      in.append(buffer, static_cast<size_t>(n));
    }
  }

  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(HttpServerTest, AnswersTwoRequestsOnOneKeptAliveConnection) {
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd,
       "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz?verbose HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string answer = Receive(fd, 2);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answer, HasSubstr("Connection: keep-alive\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\n\r\n/metrics||quiet"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\n/healthz|verbose|verbose"));
  ::close(fd);
}

TEST_F(HttpServerTest, HeadSendsTheLengthWithoutTheBody) {
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd, "HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string answer = Receive(fd, 100);               // until the server closes
  EXPECT_THAT(answer, HasSubstr("Content-Length: 15\r\n"));  // "/metrics||quiet"
  EXPECT_THAT(answer, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(answer, EndsWith("\r\n\r\n"));
  ::close(fd);
}

TEST_F(HttpServerTest, OtherMethodsAre405AndOversizedHeads431) {
  int fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd, "POST /metrics HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
  std::string answer = Receive(fd, 100);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(answer, HasSubstr("Allow: GET, HEAD\r\n"));
  ::close(fd);
  fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd, "GET /" + std::string(9000, 'a'));
  answer = Receive(fd, 100);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431 "));
  ::close(fd);
  fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd, "nonsense\r\n\r\n");
  EXPECT_THAT(Receive(fd, 100), StartsWith("HTTP/1.1 400 "));
  ::close(fd);
}

TEST_F(HttpServerTest, StopReturnsAtOnceWithAnIdleConnectionAndTwice) {
  const int fd = Connect();
  ASSERT_GE(fd, 0);
  Send(fd, "GET /metrics HTTP/1.1\r\n\r\n");  // accepted and answered: then idle, kept alive
  ASSERT_THAT(Receive(fd, 1), StartsWith("HTTP/1.1 200 OK\r\n"));
  const auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  server_->Stop();
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // closed by the server
  ::close(fd);
}

TEST(HttpServer, BindTwiceToOnePortIsUnavailable) {
  Server first([](const Request&, Response&) {});
  absl::StatusOr<int> port = first.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  Server second([](const Request&, Response&) {});
  EXPECT_EQ(second.Bind("127.0.0.1", *port).status().code(), absl::StatusCode::kUnavailable);
  Server never_started([](const Request&, Response&) {});
  never_started.Stop();
}

}  // namespace
}  // namespace kdp::http
