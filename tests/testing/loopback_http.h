// One HTTP/1.1 request over a TCP socket to an IPv4 address, plain or TLS (OpenSSL, the server
// verified against a given CA), for tests that talk to kdp's HTTP endpoints (the local resource
// API over HTTPS, /metrics and /healthz) without cpp-httplib: test targets do not get httplib's
// compile definitions, and a raw request also lets a test send exactly the headers it means to
// (none, a wrong token). The connection is closed after the answer ("Connection: close"); a
// chunked body is decoded.
#ifndef KDP_TESTS_TESTING_LOOPBACK_HTTP_H_
#define KDP_TESTS_TESTING_LOOPBACK_HTTP_H_

#include <string>

#include "absl/time/time.h"

namespace kdp::testing {

struct HttpAnswer {
  int status = 0;            // 0 when nothing (or no HTTP) answered; `error` says why
  std::string headers = {};  // the header lines, lower-cased
  std::string body = {};     // decoded when chunked
  std::string error = {};
};

struct HttpRequestSpec {
  std::string host = "127.0.0.1";  // an IPv4 address
  int port = 0;
  std::string method = "GET";
  std::string path = "/";
  // Extra header lines, each ending in "\r\n" (Host and Connection are always sent; a body adds
  // Content-Length).
  std::string headers = {};
  std::string body = {};
  // Socket inactivity bound for each send and receive.
  absl::Duration timeout = absl::Seconds(30);
  // Non-empty: TLS, the server's certificate verified against this PEM CA for `host` (an IP
  // address SAN), as client-go verifies it against a kubeconfig's certificate-authority-data.
  std::string ca_pem = {};
};

HttpAnswer SendHttpRequest(const HttpRequestSpec& request);

// The parts of a kubeconfig kdp-manager wrote: its server URL ("https://127.0.0.1:<port>"), the
// token and the CA (certificate-authority-data, decoded). Empty fields when absent.
struct KubeconfigParts {
  std::string server;
  std::string token;
  std::string ca_pem;
  std::string host;  // from server
  int port = 0;      // from server
};
KubeconfigParts ReadKubeconfigParts(const std::string& kubeconfig_path);

// The port of the first "serving metrics" line (common/metrics_server.h's StartMetricsServer, text
// log format: port="N") in a process's log; 0 while there is none. Tests start kdp programs with
// --metrics-address 127.0.0.1:0 and read the kernel's choice here.
int LoggedMetricsPort(const std::string& log);

// Decodes a chunked HTTP/1.1 body; returns what could be decoded.
std::string DecodeChunked(const std::string& raw);

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_LOOPBACK_HTTP_H_
