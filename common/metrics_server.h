// A small HTTP server (common/http_server.h, no TLS library) for `--metrics-address`: GET/HEAD
// /metrics renders a metrics::Registry in the Prometheus text format, GET/HEAD /healthz, /readyz
// and /livez run named health checks the way the kubelet's healthz and the API server's
// livez/readyz do. Other paths answer 404, other methods 405. Used by kdp-manager and the SDK
// runners; it binds loopback by default and never serves anything that writes.
//
// /healthz and /readyz run every check; /livez only "ping" (always ok: the server answers) and
// the checks marked `liveness`, so that a liveness probe restarts the process only for what a
// restart cures, never because a peer (the API server, the kubelet) is away.
// Each: 200 "ok" when every check returns OK. Otherwise 500 with one line per check,
// "[+]<name> ok" or "[-]<name> failed: <status message>", then "<endpoint> check failed".
// "?verbose" lists the lines on success too, ending in "<endpoint> check passed".
// "/<endpoint>/<name>" runs one check (404 for an unknown name).
//
// Thread-safe: all methods may be called concurrently; Stop() may be called twice, concurrently,
// or without Start().
#ifndef KDP_COMMON_METRICS_SERVER_H_
#define KDP_COMMON_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/http_server.h"
#include "common/metrics.h"

namespace kdp::metrics {

// The Content-Type of /metrics.
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// One named health check. `check` returns OK when healthy; otherwise its message is shown after
// "failed: ". Called from a server thread at every /healthz request; must not block for long.
struct HealthCheck {
  std::string name = {};
  std::function<absl::Status()> check = {};
  // Also run by /livez: failing, it means the process is stuck and a restart would help. Most
  // checks are readiness only.
  bool liveness = false;
};

// A parsed listen address.
struct ListenAddress {
  std::string host = {};  // "127.0.0.1", "0.0.0.0", "::1", "localhost" (no brackets)
  int port = 0;           // 0 = an ephemeral port chosen by the kernel
};

// Parses `value` given for the flag `flag_name` (used in messages only): "host:port" or
// "[ipv6]:port" with port 0..65535 (0 = ephemeral). Returns std::nullopt for "" (disabled).
// INVALID_ARGUMENT naming the flag, the value and the rule when it is malformed (missing port,
// port not a number or out of range, empty host, IPv6 without brackets).
[[nodiscard]] absl::StatusOr<std::optional<ListenAddress>> ParseListenAddress(
    std::string_view value, std::string_view flag_name = "--metrics-address");

// "host:port", with brackets around an IPv6 host.
std::string FormatListenAddress(const ListenAddress& address);

struct MetricsServerOptions {
  // Where to listen, as for ParseListenAddress. "" disables the server (Start() does nothing).
  std::string address = "127.0.0.1:0";
  // Flag name used in error messages.
  std::string flag_name = "--metrics-address";
  // Rendered at /metrics; borrowed, must outlive the server. Null: /metrics answers 404.
  const Registry* registry = nullptr;
  // Health checks, run in order at /healthz. More can be added with AddHealthCheck.
  std::vector<HealthCheck> health_checks = {};
};

class MetricsServer {
 public:
  explicit MetricsServer(MetricsServerOptions options);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer();  // Stop()s.

  // Binds and starts serving on one background thread (every connection, one request at a time). OK
  // (and nothing served) when the address is
  // "". INVALID_ARGUMENT for a malformed address; UNAVAILABLE naming the address and the errno
  // text when it cannot bind (port in use, address not local); FAILED_PRECONDITION when called
  // twice.
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving and joins the thread; returns at once even with idle keep-alive connections
  // open. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Adds a check (also after Start). Thread-safe.
  void AddHealthCheck(HealthCheck check) ABSL_LOCKS_EXCLUDED(checks_mu_);

  // True after a successful Start() with a non-empty address, until Stop().
  bool serving() const ABSL_LOCKS_EXCLUDED(mu_);
  // The bound port (the kernel's choice for port 0); 0 when not started or disabled.
  int port() const ABSL_LOCKS_EXCLUDED(mu_);
  // The bound address as "host:port" (FormatListenAddress); "" when not started or disabled.
  std::string address() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Handle(const http::Request& request, http::Response& response);
  // `endpoint`: "healthz", "readyz" or "livez".
  void ServeHealthz(const http::Request& request, const std::string& endpoint,
                    http::Response& response);

  const MetricsServerOptions options_;
  http::Server http_;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int port_ ABSL_GUARDED_BY(mu_) = 0;
  std::string bound_ ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex checks_mu_;
  std::vector<HealthCheck> checks_ ABSL_GUARDED_BY(checks_mu_);
};

// A process's --metrics-address, started the one way every kdp program does: nullptr when
// `options.address` is "" (disabled); when the address cannot be bound and `required` is false,
// logs a warning and returns nullptr (a default port held by another process, as when tests start
// many managers or plugins, must not stop the program). Otherwise Start()'s error: UNAVAILABLE
// naming the address, INVALID_ARGUMENT for a malformed one (whatever `required` says). On success
// logs "serving metrics" with `what`, the bound address and port, so one grep finds every
// process's endpoint.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(MetricsServerOptions options,
                                                                  bool required,
                                                                  std::string_view what);

}  // namespace kdp::metrics

#endif  // KDP_COMMON_METRICS_SERVER_H_
