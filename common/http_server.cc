// The poll() loop of http::Server: accepting, reading a request head, answering, keep-alive.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/absl_view.h"

namespace kdp::http {
namespace {

// Longest request head (request line and headers) read before answering 431, as httplib's
// CPPHTTPLIB_HEADER_MAX_LENGTH.
constexpr size_t kMaxHead = 8192;

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

struct Connection {
  int fd = -1;
  std::string in;
  absl::Time last_activity;
};

// Writes all of `data` to the non-blocking `fd`, waiting for room up to `timeout`.
bool WriteAll(int fd, std::string_view data, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
      ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
      continue;
    }
    return false;
  }
  return true;
}

std::string Serialize(const Response& response, bool head, bool keep_alive) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status),
                                 "\r\nContent-Type: ", response.content_type,
                                 "\r\nContent-Length: ", response.body.size(), "\r\n");
  for (const auto& [name, value] : response.headers)
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  absl::StrAppend(&out, keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n",
                  "\r\n");
  if (!head) out += response.body;
  return out;
}

// What to do with one complete request head.
struct Parsed {
  bool ok = false;
  Request request;
  bool keep_alive = false;
  bool has_body = false;
};

Parsed ParseHead(std::string_view head) {
  Parsed parsed;
  std::vector<absl::string_view> lines = absl::StrSplit(Sv(head), "\r\n");
  if (lines.empty()) return parsed;
  std::vector<absl::string_view> parts = absl::StrSplit(lines[0], ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() ||
      !absl::StartsWith(parts[2], "HTTP/1.")) {
    return parsed;
  }
  parsed.request.method = std::string(parts[0]);
  const absl::string_view target = parts[1];
  const size_t question = target.find('?');
  parsed.request.path = std::string(target.substr(0, question));
  if (question != absl::string_view::npos) {
    parsed.request.query = std::string(target.substr(question + 1));
  }
  parsed.keep_alive = parts[2] != "HTTP/1.0";
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name = absl::AsciiStrToLower(lines[i].substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(lines[i].substr(colon + 1));
    if (name == "connection") {
      if (absl::EqualsIgnoreCase(value, "close")) parsed.keep_alive = false;
      if (absl::EqualsIgnoreCase(value, "keep-alive")) parsed.keep_alive = true;
    } else if (name == "transfer-encoding") {
      parsed.has_body = true;
    } else if (name == "content-length") {
      int64_t length = 0;
      if (!absl::SimpleAtoi(value, &length) || length != 0) parsed.has_body = true;
    }
  }
  parsed.ok = true;
  return parsed;
}

}  // namespace

bool Request::HasParam(std::string_view name) const {
  for (absl::string_view param : absl::StrSplit(query, '&')) {
    if (param.substr(0, param.find('=')) == Sv(name)) return true;
  }
  return false;
}

Server::Server(Handler handler, ServerOptions options)
    : handler_(std::move(handler)), options_(options) {}

Server::~Server() { Stop(); }

absl::StatusOr<int> Server::Bind(const std::string& host, int port) {
  absl::MutexLock lock(&mu_);
  if (listen_fd_ >= 0) return absl::FailedPreconditionError("http server: already bound");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve \"", host, "\": ", ::gai_strerror(rc)));
  }
  int fd = -1;
  int error = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      error = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(std::strerror(error != 0 ? error : EADDRNOTAVAIL));
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  return bound_port;
}

void Server::Start() {
  absl::MutexLock lock(&mu_);
  if (listen_fd_ < 0 || thread_.joinable()) return;
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this, listen = listen_fd_, wake = wake_fd_] { Serve(listen, wake); });
}

void Server::Stop() {
  std::thread thread;
  int listen_fd = -1;
  int wake_fd = -1;
  {
    absl::MutexLock lock(&mu_);
    thread = std::move(thread_);
    listen_fd = std::exchange(listen_fd_, -1);
    wake_fd = std::exchange(wake_fd_, -1);
  }
  if (wake_fd >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof(one));
  }
  if (thread.joinable()) thread.join();
  if (wake_fd >= 0) ::close(wake_fd);
  if (listen_fd >= 0) ::close(listen_fd);
}

void Server::Serve(int listen_fd, int wake_fd) {
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  auto close_connection = [&](size_t i) {
    ::close(connections[i].fd);
    connections.erase(connections.begin() + static_cast<ptrdiff_t>(i));
  };
  // Answers every complete request in connection `i`'s buffer; false when it must be closed.
  auto answer = [&](Connection& c) {
    for (size_t end; (end = c.in.find("\r\n\r\n")) != std::string::npos;) {
      const Parsed parsed = ParseHead(std::string_view(c.in).substr(0, end));
      c.in.erase(0, end + 4);
      Response response;
      bool keep_alive = parsed.keep_alive && !parsed.has_body;
      if (!parsed.ok) {
        response = {.status = 400, .body = "bad request\n"};
        keep_alive = false;
      } else if (parsed.request.method != "GET" && parsed.request.method != "HEAD") {
        // Refused before any body is read; the body is never read, so the connection closes.
        response = {
            .status = 405, .body = "method not allowed\n", .headers = {{"Allow", "GET, HEAD"}}};
        keep_alive = false;
      } else {
        handler_(parsed.request, response);
      }
      const bool head = parsed.ok && parsed.request.method == "HEAD";
      if (!WriteAll(c.fd, Serialize(response, head, keep_alive), options_.write_timeout) ||
          !keep_alive) {
        return false;
      }
    }
    if (c.in.size() > kMaxHead) {
      Response too_large{.status = 431, .body = "request header fields too large\n"};
      WriteAll(c.fd, Serialize(too_large, false, false), options_.write_timeout);
      return false;
    }
    return true;
  };
  for (;;) {
    fds.clear();
    fds.push_back({.fd = wake_fd, .events = POLLIN, .revents = 0});
    fds.push_back({.fd = listen_fd, .events = POLLIN, .revents = 0});
    absl::Time next_expiry = absl::InfiniteFuture();
    for (const Connection& c : connections) {
      fds.push_back({.fd = c.fd, .events = POLLIN, .revents = 0});
      next_expiry = std::min(next_expiry, c.last_activity + options_.idle_timeout);
    }
    int timeout_ms = -1;
    if (next_expiry != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(next_expiry - absl::Now()) + 1));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Stop()
    const absl::Time now = absl::Now();
    // Connections first (their indices match fds[2 + i]), from the back so erasing is safe.
    for (size_t i = connections.size(); i-- > 0;) {
      Connection& c = connections[i];
      const short revents = fds[2 + i].revents;
      if (revents == 0) {
        if (now - c.last_activity >= options_.idle_timeout) close_connection(i);
        continue;
      }
      char buffer[4096];
      const ssize_t n = ::recv(c.fd, buffer, sizeof(buffer), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        close_connection(i);
        continue;
      }
      c.in.append(buffer, static_cast<size_t>(n));
      c.last_activity = now;
      if (!answer(c)) close_connection(i);
    }
    if (fds[1].revents != 0) {
      for (;;) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (static_cast<int>(connections.size()) >= options_.max_connections) {
          ::close(fd);
          continue;
        }
        connections.push_back({.fd = fd, .in = {}, .last_activity = now});
      }
    }
  }
  for (const Connection& c : connections) ::close(c.fd);
}

}  // namespace kdp::http
