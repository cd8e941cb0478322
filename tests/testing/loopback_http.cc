#include "tests/testing/loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kdp::testing {

int LoggedMetricsPort(const std::string& log) {
  const size_t line = log.find("\"serving metrics\"");
  if (line == std::string::npos) return 0;
  const size_t key = log.find(" port=\"", line);
  if (key == std::string::npos) return 0;
  const size_t start = key + 7;
  int port = 0;
  if (!absl::SimpleAtoi(log.substr(start, log.find('"', start) - start), &port)) return 0;
  return port;
}

std::string DecodeChunked(const std::string& raw) {
  std::string out;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t size = std::strtoul(raw.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (size == 0) break;
    out += raw.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return out;
}

HttpAnswer SendHttpRequest(const HttpRequestSpec& request) {
  HttpAnswer answer;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(request.port));
  if (::inet_pton(AF_INET, request.host.c_str(), &address.sin_addr) != 1) {
    answer.error = absl::StrCat("not an IPv4 address: ", request.host);
    return answer;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    answer.error = "socket failed";
    return answer;
  }
  timeval timeout = absl::ToTimeval(request.timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const std::string host_port = absl::StrCat(request.host, ":", request.port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    answer.error = absl::StrCat("cannot connect to ", host_port);
    return answer;
  }
  std::string wire =
      absl::StrCat(request.method, " ", request.path, " HTTP/1.1\r\nHost: ", host_port, "\r\n",
                   request.headers, "Connection: close\r\n");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    absl::StrAppend(&wire, "Content-Length: ", request.body.size(), "\r\n");
  }
  absl::StrAppend(&wire, "\r\n", request.body);
  for (size_t sent = 0; sent < wire.size();) {
    ssize_t n = ::send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      answer.error = "send failed";
      return answer;
    }
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[8192];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
    raw.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t header_end = raw.find("\r\n\r\n");
  if (!absl::StartsWith(raw, "HTTP/1.") || header_end == std::string::npos || raw.size() < 12 ||
      !absl::SimpleAtoi(raw.substr(9, 3), &answer.status)) {
    answer.status = 0;
    answer.error = absl::StrCat("no HTTP answer: ", raw.substr(0, 200));
    return answer;
  }
  answer.headers = absl::AsciiStrToLower(raw.substr(0, header_end));
  answer.body = raw.substr(header_end + 4);
  if (absl::StrContains(answer.headers, "transfer-encoding: chunked")) {
    answer.body = DecodeChunked(answer.body);
  }
  return answer;
}

}  // namespace kdp::testing
