// A minimal HTTP/1.1 server for read-only endpoints (the metrics server's /metrics and /healthz):
// GET and HEAD are handed to one handler, every other method is answered 405 without reading a
// body. One thread serves every connection from a poll() loop, keeps connections alive (closing
// one idle for `idle_timeout`), and needs no TLS library: a device plugin that serves /metrics
// links neither cpp-httplib nor OpenSSL (docs/benchmarks.md, footprint_benchmark). Not a general
// server: no request bodies (a request with one is answered, then its connection closed), no
// chunked encoding, heads up to 8 KiB (431 beyond); pipelined requests are answered in order.
//
// Thread-safe: Stop() may be called from any thread, twice, concurrently or without Start().
// The handler runs on the server's thread, one request at a time.
#ifndef KDP_COMMON_HTTP_SERVER_H_
#define KDP_COMMON_HTTP_SERVER_H_

#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kdp::http {

// One request as the handler sees it.
struct Request {
  std::string method = {};  // "GET" or "HEAD"
  std::string path = {};    // the target up to '?', not percent-decoded
  std::string query = {};   // after '?', "" when absent
  // True when the query has `name` as a parameter ("verbose" in "?verbose" or "?a=1&verbose=1").
  bool HasParam(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body = {};
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra header lines
};

using Handler = std::function<void(const Request& request, Response& response)>;

struct ServerOptions {
  // A connection without a complete request for this long is closed (idle keep-alive included).
  absl::Duration idle_timeout = absl::Seconds(5);
  // A response that cannot be written within this long closes the connection.
  absl::Duration write_timeout = absl::Seconds(5);
  // Connections beyond this are accepted and closed at once.
  int max_connections = 64;
};

class Server {
 public:
  explicit Server(Handler handler, ServerOptions options = {});
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();  // Stop()s.

  // Binds and listens on `host` (a name or an address literal without brackets) and `port` (0: a
  // port the kernel chooses); returns the bound port. The errno of the failed bind or listen as
  // UNAVAILABLE (with its text), INVALID_ARGUMENT when `host` does not resolve,
  // FAILED_PRECONDITION when already bound.
  [[nodiscard]] absl::StatusOr<int> Bind(const std::string& host, int port)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the serving thread. REQUIRES: a successful Bind().
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the listening socket and every connection and joins the thread; returns at once with
  // connections idle or open. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Serve(int listen_fd, int wake_fd);

  const Handler handler_;
  const ServerOptions options_;
  absl::Mutex mu_;
  int listen_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int wake_fd_ ABSL_GUARDED_BY(mu_) = -1;  // an eventfd Stop() signals
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::http

#endif  // KDP_COMMON_HTTP_SERVER_H_
