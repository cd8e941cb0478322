#include "tests/testing/loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

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

namespace {

// The byte stream of one connection: the socket, or TLS over it.
class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}
  ~Connection() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (context_ != nullptr) SSL_CTX_free(context_);
    ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The TLS handshake, verifying the server against `ca_pem` for IP `host`; "" or the error.
  std::string StartTls(const std::string& ca_pem, const std::string& host) {
    // OpenSSL writes with write(2): a server that closed the connection would raise SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    context_ = SSL_CTX_new(TLS_client_method());
    if (context_ == nullptr) return "SSL_CTX_new failed";
    BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
    X509* ca = bio == nullptr ? nullptr : PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (ca == nullptr) return "the CA is not a PEM certificate";
    X509_STORE_add_cert(SSL_CTX_get_cert_store(context_), ca);
    X509_free(ca);
    SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(context_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1 ||
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) != 1) {
      return "TLS set-up failed";
    }
    if (SSL_connect(ssl_) != 1) {
      const long verify = SSL_get_verify_result(ssl_);
      const char* reason = ERR_reason_error_string(ERR_peek_last_error());
      std::string error = absl::StrCat("TLS handshake failed: ", reason == nullptr ? "" : reason);
      ERR_clear_error();
      if (verify != X509_V_OK) {
        absl::StrAppend(&error, " (", X509_verify_cert_error_string(verify), ")");
      }
      return error;
    }
    return "";
  }
  ssize_t Send(const char* data, size_t size) {
    if (ssl_ != nullptr) return SSL_write(ssl_, data, static_cast<int>(size));
    return ::send(fd_, data, size, MSG_NOSIGNAL);
  }
  ssize_t Receive(char* data, size_t size) {
    if (ssl_ != nullptr) return SSL_read(ssl_, data, static_cast<int>(size));
    return ::recv(fd_, data, size, 0);
  }

 private:
  const int fd_;
  SSL_CTX* context_ = nullptr;
  SSL* ssl_ = nullptr;
};

}  // namespace

KubeconfigParts ReadKubeconfigParts(const std::string& kubeconfig_path) {
  KubeconfigParts parts;
  std::ifstream in(kubeconfig_path);
  std::stringstream text;
  text << in.rdbuf();
  for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "server: ")) {
      parts.server = std::string(line);
    } else if (absl::ConsumePrefix(&line, "token: ")) {
      parts.token = std::string(line);
    } else if (absl::ConsumePrefix(&line, "certificate-authority-data: ")) {
      absl::Base64Unescape(line, &parts.ca_pem);
    }
  }
  absl::string_view rest = parts.server;
  if (absl::ConsumePrefix(&rest, "https://") || absl::ConsumePrefix(&rest, "http://")) {
    const size_t colon = rest.rfind(':');
    if (colon != absl::string_view::npos) {
      parts.host = std::string(rest.substr(0, colon));
      (void)absl::SimpleAtoi(rest.substr(colon + 1), &parts.port);
    }
  }
  return parts;
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
  Connection connection(fd);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    answer.error = absl::StrCat("cannot connect to ", host_port);
    return answer;
  }
  if (!request.ca_pem.empty()) {
    answer.error = connection.StartTls(request.ca_pem, request.host);
    if (!answer.error.empty()) return answer;
  }
  std::string wire =
      absl::StrCat(request.method, " ", request.path, " HTTP/1.1\r\nHost: ", host_port, "\r\n",
                   request.headers, "Connection: close\r\n");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    absl::StrAppend(&wire, "Content-Length: ", request.body.size(), "\r\n");
  }
  absl::StrAppend(&wire, "\r\n", request.body);
  for (size_t sent = 0; sent < wire.size();) {
    ssize_t n = connection.Send(wire.data() + sent, wire.size() - sent);
    if (n <= 0) {
      answer.error = "send failed";
      return answer;
    }
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[8192];
  for (ssize_t n; (n = connection.Receive(buffer, sizeof(buffer))) > 0;) {
    raw.append(buffer, static_cast<size_t>(n));
  }
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
