// The /metrics and /healthz HTTP server: address parsing, binding, request dispatch.
#include "common/metrics_server.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/logging.h"

namespace kdp::metrics {
namespace {

absl::Status BadAddress(std::string_view flag_name, std::string_view value, std::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(flag_name), " \"", Sv(value), "\": ", Sv(rule),
                   " (expected host:port or [ipv6]:port, port 0-65535, 0 = any free port, "
                   "\"\" = disabled)"));
}

}  // namespace

absl::StatusOr<std::optional<ListenAddress>> ParseListenAddress(std::string_view value,
                                                                std::string_view flag_name) {
  if (value.empty()) return std::optional<ListenAddress>();
  ListenAddress address;
  std::string_view port_text;
  if (value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos) {
      return BadAddress(flag_name, value, "IPv6 host has no closing ']'");
    }
    address.host = std::string(value.substr(1, close - 1));
    if (close + 1 >= value.size() || value[close + 1] != ':') {
      return BadAddress(flag_name, value, "missing \":port\" after the IPv6 host");
    }
    port_text = value.substr(close + 2);
  } else {
    const size_t colon = value.rfind(':');
    if (colon == std::string_view::npos) {
      return BadAddress(flag_name, value, "missing \":port\"");
    }
    address.host = std::string(value.substr(0, colon));
    if (address.host.find(':') != std::string::npos) {
      return BadAddress(flag_name, value, "an IPv6 host must be in brackets, as [::1]:9470");
    }
    port_text = value.substr(colon + 1);
  }
  if (address.host.empty()) return BadAddress(flag_name, value, "empty host");
  int port = -1;
  const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                      port_text.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits || !absl::SimpleAtoi(Sv(port_text), &port) || port > 65535) {
    return BadAddress(flag_name, value,
                      absl::StrCat("port \"", Sv(port_text), "\" is not a number in 0-65535"));
  }
  address.port = port;
  return std::optional<ListenAddress>(std::move(address));
}

std::string FormatListenAddress(const ListenAddress& address) {
  if (address.host.find(':') != std::string::npos) {
    return absl::StrCat("[", address.host, "]:", address.port);
  }
  return absl::StrCat(address.host, ":", address.port);
}

MetricsServer::MetricsServer(MetricsServerOptions options)
    : options_(std::move(options)),
      // An idle kept-alive connection costs nothing but its descriptor in the poll loop; closing
      // it after 5 s matches what a scraper every 10–60 s expects (it reconnects).
      http_([this](const http::Request& request, http::Response& response) {
        Handle(request, response);
      }) {
  checks_ = options_.health_checks;
}

MetricsServer::~MetricsServer() { Stop(); }

absl::Status MetricsServer::Start() {
  absl::StatusOr<std::optional<ListenAddress>> parsed =
      ParseListenAddress(options_.address, options_.flag_name);
  if (!parsed.ok()) return parsed.status();
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("metrics server: Start() called twice or after Stop()");
  }
  started_ = true;
  if (!parsed->has_value()) return absl::OkStatus();  // disabled
  const ListenAddress& address = **parsed;
  absl::StatusOr<int> port = http_.Bind(address.host, address.port);
  if (!port.ok()) {
    return absl::UnavailableError(
        absl::StrCat(options_.flag_name, " \"", options_.address, "\": cannot listen on ",
                     FormatListenAddress(address), ": ", port.status().message()));
  }
  port_ = *port;
  bound_ = FormatListenAddress(ListenAddress{.host = address.host, .port = *port});
  http_.Start();
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    port_ = 0;
    bound_.clear();
  }
  http_.Stop();
}

void MetricsServer::AddHealthCheck(HealthCheck check) {
  absl::MutexLock lock(&checks_mu_);
  checks_.push_back(std::move(check));
}

bool MetricsServer::serving() const {
  absl::MutexLock lock(&mu_);
  return port_ > 0;
}

int MetricsServer::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

std::string MetricsServer::address() const {
  absl::MutexLock lock(&mu_);
  return bound_;
}

void MetricsServer::Handle(const http::Request& request, http::Response& response) {
  if (request.path == "/metrics" && options_.registry != nullptr) {
    response.status = 200;
    response.content_type = kTextFormatContentType;
    response.body = options_.registry->Render();
    return;
  }
  for (std::string_view endpoint : {"/healthz", "/livez", "/readyz"}) {
    if (request.path == endpoint ||
        (request.path.size() > endpoint.size() && request.path.starts_with(endpoint) &&
         request.path[endpoint.size()] == '/')) {
      ServeHealthz(request, std::string(endpoint.substr(1)), response);
      return;
    }
  }
  response.status = 404;
  response.body = "404 page not found\n";
}

void MetricsServer::ServeHealthz(const http::Request& request, const std::string& endpoint,
                                 http::Response& response) {
  std::vector<HealthCheck> checks;
  {
    absl::MutexLock lock(&checks_mu_);
    checks = checks_;
  }
  if (endpoint == "livez") {
    // Only what a restart would cure; "ping" answers that the server itself is alive.
    std::erase_if(checks, [](const HealthCheck& c) { return !c.liveness; });
    checks.insert(checks.begin(), HealthCheck{.name = "ping", .check = {}, .liveness = true});
  }
  const std::string base = absl::StrCat("/", endpoint);
  if (request.path != base) {
    const std::string name = request.path.substr(base.size() + 1);
    std::erase_if(checks, [&](const HealthCheck& c) { return c.name != name; });
    if (checks.empty()) {
      response.status = 404;
      response.body = absl::StrCat("no health check named \"", name, "\"\n");
      return;
    }
  }
  std::string lines;
  bool failed = false;
  for (const HealthCheck& check : checks) {
    const absl::Status status = check.check ? check.check() : absl::OkStatus();
    if (status.ok()) {
      absl::StrAppend(&lines, "[+]", check.name, " ok\n");
    } else {
      failed = true;
      std::string reason(status.message());
      for (char& c : reason) {
        if (c == '\n') c = ' ';
      }
      absl::StrAppend(&lines, "[-]", check.name, " failed: ", reason, "\n");
    }
  }
  if (failed) {
    response.status = 500;
    response.body = absl::StrCat(lines, endpoint, " check failed\n");
    return;
  }
  response.status = 200;
  response.body = request.HasParam("verbose") ? absl::StrCat(lines, endpoint, " check passed\n")
                                              : std::string("ok");
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(MetricsServerOptions options,
                                                                  bool required,
                                                                  std::string_view what) {
  if (options.address.empty()) return std::unique_ptr<MetricsServer>();
  const std::string address = options.address;
  auto server = std::make_unique<MetricsServer>(std::move(options));
  if (absl::Status started = server->Start(); !started.ok()) {
    if (required || absl::IsInvalidArgument(started)) return started;
    KDP_LOG_WARNING("Cannot serve metrics; running without them", "what", what, "address", address,
                    "err", started.message());
    return std::unique_ptr<MetricsServer>();
  }
  KDP_LOG_INFO("serving metrics", "what", what, "address", server->address(), "port",
               server->port());
  return server;
}

}  // namespace kdp::metrics
