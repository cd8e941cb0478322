// The /metrics and /healthz HTTP server: address parsing, binding, request dispatch.
#include "common/metrics_server.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/absl_view.h"
#include "common/logging.h"
#include "httplib.h"

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
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  checks_ = options_.health_checks;
  const int threads = options_.threads > 0 ? options_.threads : 1;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // An idle kept-alive or silent connection holds a worker until these pass, and Stop() joins the
  // workers: keep them short so Stop() is quick (httplib's defaults are 5 s).
  http_->set_keep_alive_timeout(1);
  http_->set_read_timeout(1, 0);
  http_->set_write_timeout(5, 0);
  http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    Handle(request, response);
  };
  // HEAD is served by the GET handler (httplib drops the body).
  http_->Get(".*", handler);
  auto not_allowed = [](const httplib::Request&, httplib::Response& response) {
    response.status = 405;
    response.set_header("Allow", "GET, HEAD");
    response.set_content("method not allowed\n", "text/plain; charset=utf-8");
  };
  // Before routing (and before any body is read): every method but GET and HEAD is refused.
  http_->set_pre_routing_handler(
      [not_allowed](const httplib::Request& request, httplib::Response& response) {
        if (request.method == "GET" || request.method == "HEAD") {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        not_allowed(request, response);
        return httplib::Server::HandlerResponse::Handled;
      });
  http_->Post(".*", not_allowed);
  http_->Put(".*", not_allowed);
  http_->Delete(".*", not_allowed);
  http_->Patch(".*", not_allowed);
  http_->Options(".*", not_allowed);
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
  int port = address.port;
  errno = 0;
  if (port == 0) {
    port = http_->bind_to_any_port(address.host);
  } else if (!http_->bind_to_port(address.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    const int saved = errno;
    return absl::UnavailableError(absl::StrCat(
        options_.flag_name, " \"", options_.address, "\": cannot listen on ",
        FormatListenAddress(address), ": ", saved != 0 ? std::strerror(saved) : "bind failed"));
  }
  port_ = port;
  bound_ = FormatListenAddress(ListenAddress{.host = address.host, .port = port});
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() only acts once the accept loop runs; wait for it so Stop never misses it.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!http_->is_running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    thread = std::move(thread_);
    port_ = 0;
    bound_.clear();
  }
  if (thread.joinable()) {
    http_->stop();
    thread.join();
  }
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

void MetricsServer::Handle(const httplib::Request& request, httplib::Response& response) {
  if (request.path == "/metrics" && options_.registry != nullptr) {
    response.status = 200;
    response.set_content(options_.registry->Render(), kTextFormatContentType);
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
  response.set_content("404 page not found\n", "text/plain; charset=utf-8");
}

void MetricsServer::ServeHealthz(const httplib::Request& request, const std::string& endpoint,
                                 httplib::Response& response) {
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
      response.set_content(absl::StrCat("no health check named \"", name, "\"\n"),
                           "text/plain; charset=utf-8");
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
  constexpr char kText[] = "text/plain; charset=utf-8";
  if (failed) {
    response.status = 500;
    response.set_content(absl::StrCat(lines, endpoint, " check failed\n"), kText);
    return;
  }
  response.status = 200;
  if (request.has_param("verbose")) {
    response.set_content(absl::StrCat(lines, endpoint, " check passed\n"), kText);
  } else {
    response.set_content("ok", kText);
  }
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
