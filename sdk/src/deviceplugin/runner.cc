#include <fcntl.h>  // AT_FDCWD, AT_SYMLINK_NOFOLLOW
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/metrics_server.h"
#include "common/resource_name.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kdp/plugin_runner.h"
#include "sdk/src/deviceplugin/device_state.h"
#include "sdk/src/deviceplugin/metrics.h"
#include "sdk/src/deviceplugin/service.h"
#include "sdk/src/runtime/metrics_endpoint.h"
#include "sdk/src/runtime/run_until_signal.h"

namespace kdp {

std::string SocketNameFor(const std::string& resource_name, const std::string& suffix) {
  std::string name = resource_name;
  std::replace(name.begin(), name.end(), '/', '_');
  if (!suffix.empty()) absl::StrAppend(&name, "-", suffix);
  return name + ".sock";
}

namespace internal {
namespace {

constexpr char kKubeletSocketName[] = "kubelet.sock";
// The supervisor re-checks the sockets this often even without an inotify event, so a missed or
// overflowed event delays re-registration by at most this much.
constexpr absl::Duration kRecheckInterval = absl::Seconds(1);
// How long a vanished plugin socket is left alone before this runner serves it again: another
// instance of the plugin replacing it (unlink, then bind) has bound by then.
constexpr absl::Duration kSettleTime = absl::Milliseconds(100);

// Identifies one incarnation of a file: a deleted and re-created kubelet.sock may get the same
// inode number back, but not the same birth time as well. The birth time, not the inode change
// time: a kubelet (kdp-manager among them) that chmods its socket after binding changes the
// ctime after a plugin may already have registered through it, and the queued IN_CREATE event
// must then still read as the socket registered with. File systems without a birth time (statx
// leaves STATX_BTIME out) fall back to the change time.
struct FileIdentity {
  ino_t inode = 0;
  int64_t time_ns = 0;
  bool exists() const { return inode != 0; }
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

FileIdentity IdentityOf(const std::string& path) {
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME | STATX_CTIME,
              &st) != 0) {
    return {};
  }
  const struct statx_timestamp& time = (st.stx_mask & STATX_BTIME) ? st.stx_btime : st.stx_ctime;
  return {static_cast<ino_t>(st.stx_ino),
          static_cast<int64_t>(time.tv_sec) * 1000000000 + time.tv_nsec};
}

}  // namespace

// One plugin served on its own socket.
struct ServedPlugin {
  DevicePlugin* plugin;
  std::shared_ptr<DeviceState> state;
  std::string socket_name;
  std::string socket_path;
  // The socket file this runner bound (another instance may replace it at the same path).
  FileIdentity socket_identity;
  // Another instance took the socket over: no longer served or registered by this runner.
  bool superseded = false;
  // When the socket was first found gone; it is served again only after kSettleTime, so that
  // another instance that unlinked it to bind the same path is seen first.
  std::optional<absl::Time> gone_since;
  std::unique_ptr<PluginService> service;
  std::unique_ptr<grpc::Server> server;
  // Registration bookkeeping (supervisor thread only).
  bool needs_registration = true;
  FileIdentity registered_kubelet;
  absl::Time next_attempt = absl::InfinitePast();
  absl::Duration backoff = absl::ZeroDuration();
};

class RunnerImpl {
 public:
  RunnerImpl(RunnerOptions options, std::vector<std::unique_ptr<DevicePlugin>> plugins)
      : options_(std::move(options)),
        plugins_dir_(absl::StrCat(options_.kubelet_root, "/device-plugins")),
        kubelet_socket_(absl::StrCat(plugins_dir_, "/", kKubeletSocketName)),
        owned_(std::move(plugins)) {
    for (auto& plugin : owned_) {
      auto served = std::make_unique<ServedPlugin>();
      served->plugin = plugin.get();
      served->state = plugin->state_;
      served->socket_name = SocketNameFor(plugin->resource_name(), options_.socket_suffix);
      served->socket_path = absl::StrCat(plugins_dir_, "/", served->socket_name);
      served_.push_back(std::move(served));
    }
    std::vector<PluginRunnerMetrics::Plugin> watched;
    for (const auto& served : served_) {
      watched.push_back({.resource_name = served->plugin->resource_name(), .state = served->state});
    }
    metrics_ = std::make_unique<PluginRunnerMetrics>(std::move(watched));
  }

  ~RunnerImpl() { Stop(); }

  absl::Status Validate() const {
    const std::string& suffix = options_.socket_suffix;
    if (suffix.size() > 64 || !std::all_of(suffix.begin(), suffix.end(), [](char c) {
          return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                 c == '-';
        })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "socket suffix \"", suffix, "\": must be at most 64 letters, digits, '.', '_' or '-'"));
    }
    std::set<std::string> names;
    for (const auto& served : served_) {
      KDP_RETURN_IF_ERROR(ValidateExtendedResourceName(served->plugin->resource_name()));
      if (!names.insert(served->plugin->resource_name()).second) {
        return absl::InvalidArgumentError(absl::StrCat("resource ", served->plugin->resource_name(),
                                                       " is served by more than one plugin"));
      }
      if (served->socket_path.size() > kMaxUnixSocketPath) {
        return absl::InvalidArgumentError(absl::StrCat("socket path ", served->socket_path,
                                                       " is longer than ", kMaxUnixSocketPath,
                                                       " bytes, the unix socket limit"));
      }
    }
    if (served_.empty()) return absl::InvalidArgumentError("no device plugins to run");
    return ValidateMetricsAddress(options_.metrics_address, "metrics address");
  }

  absl::Status Start() {
    {
      absl::MutexLock lock(&mu_);
      if (started_) return absl::FailedPreconditionError("PluginRunner already started");
      started_ = true;
    }
    // First, so that a port already taken fails before anything is served.
    KDP_ASSIGN_OR_RETURN(std::unique_ptr<metrics::MetricsServer> metrics_server,
                         metrics::StartMetricsServer(
                             {.address = options_.metrics_address,
                              .flag_name = "metrics address",
                              .registry = &metrics_->registry(),
                              .health_checks = {{.name = "device-plugins",
                                                 .check = [this] { return metrics_->Health(); },
                                                 .liveness = true}}},
                             options_.metrics_required, "plugin runner"));
    {
      absl::MutexLock lock(&mu_);
      metrics_server_ = std::move(metrics_server);
    }
    KDP_RETURN_IF_ERROR(MakeDirectories(plugins_dir_));
    for (auto& served : served_) {
      absl::StatusOr<std::vector<Device>> devices = served->plugin->Discover();
      absl::Status replaced =
          devices.ok() ? served->state->Replace(*std::move(devices)) : devices.status();
      served->state->RecordDiscovery(replaced);
      KDP_RETURN_IF_ERROR(replaced);
      KDP_RETURN_IF_ERROR(Serve(*served));
    }
    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0 ||
        ::inotify_add_watch(inotify_fd_, plugins_dir_.c_str(),
                            IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
      KDP_LOG_WARNING("inotify unavailable; polling for kubelet restarts", "dir", plugins_dir_,
                      "err", std::strerror(errno));
    }
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    supervisor_ = std::thread([this] { Supervise(); });
    return absl::OkStatus();
  }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        mu_.Await(absl::Condition(&stopped_));
        return;
      }
      stopping_ = true;
    }
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    }
    if (supervisor_.joinable()) supervisor_.join();
    for (auto& served : served_) Unserve(*served, /*remove_socket=*/true);
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    inotify_fd_ = wake_fd_ = -1;
    std::unique_ptr<metrics::MetricsServer> metrics_server;
    {
      absl::MutexLock lock(&mu_);
      metrics_server = std::move(metrics_server_);
    }
    if (metrics_server != nullptr) metrics_server->Stop();
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }

  int metrics_port() const {
    absl::MutexLock lock(&mu_);
    return metrics_server_ != nullptr ? metrics_server_->port() : 0;
  }

  int registrations() const {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }

  bool WaitForRegistrations(int count, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return registrations_ >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

 private:
  absl::Status Serve(ServedPlugin& served) {
    served.service = std::make_unique<PluginService>(
        served.plugin, served.state, metrics_->ServiceMetrics(served.plugin->resource_name()));
    absl::StatusOr<std::unique_ptr<grpc::Server>> server =
        // One idle poller: a plugin at rest runs it and one thread per open ListAndWatch.
        ServeOnUnixSocket(served.socket_path, served.service.get(), ServeOptions{.max_pollers = 1});
    if (!server.ok()) {
      served.service.reset();
      return absl::Status(server.status().code(),
                          absl::StrCat("cannot serve ", served.plugin->resource_name(), ": ",
                                       server.status().message()));
    }
    served.server = *std::move(server);
    served.socket_identity = IdentityOf(served.socket_path);
    KDP_LOG_INFO("Serving device plugin", "resourceName", served.plugin->resource_name(), "socket",
                 served.socket_path, "preStartRequired",
                 served.service->options().pre_start_required(), "getPreferredAllocation",
                 served.service->options().get_preferred_allocation_available());
    return absl::OkStatus();
  }

  void Unserve(ServedPlugin& served, bool remove_socket) {
    if (served.server != nullptr) {
      served.service->EndStreams();
      served.server->Shutdown(std::chrono::system_clock::now() +
                              absl::ToChronoNanoseconds(options_.shutdown_grace));
      served.service->WaitForStreams();
      served.server.reset();
      served.service.reset();
    }
    // Only our own socket: a kubelet may already have replaced the directory's contents, or
    // another instance of the plugin may serve at the same path now.
    if (remove_socket && served.socket_identity.exists() &&
        IdentityOf(served.socket_path) == served.socket_identity) {
      (void)RemoveSocketIfPresent(served.socket_path);
    }
  }

  absl::Status Register(ServedPlugin& served) {
    auto channel = DialUnixSocket(kubelet_socket_);
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_endpoint(served.socket_name);
    request.set_resource_name(served.plugin->resource_name());
    *request.mutable_options() = served.service->options();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoNanoseconds(options_.register_timeout));
    v1beta1::Empty response;
    return FromGrpcStatus(stub->Register(&context, request, &response));
  }

  bool Stopping() {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  // Drains inotify events; marks plugins whose registration must be redone.
  void DrainEvents() {
    alignas(inotify_event) char buffer[4096];
    for (;;) {
      ssize_t n = ::read(inotify_fd_, buffer, sizeof(buffer));
      if (n <= 0) return;
      for (char* p = buffer; p < buffer + n;) {
        auto* event = reinterpret_cast<inotify_event*>(p);
        std::string name = event->len > 0 ? event->name : "";
        if (name == kKubeletSocketName && (event->mask & (IN_CREATE | IN_MOVED_TO))) {
          FileIdentity kubelet = IdentityOf(kubelet_socket_);
          for (auto& served : served_) {
            // An event queued before we registered with this very kubelet.sock is no restart: a
            // second Register would make a real kubelet tear our stream down for nothing.
            if (!served->needs_registration && kubelet.exists() &&
                kubelet == served->registered_kubelet) {
              continue;
            }
            KDP_LOG_INFO("kubelet.sock created; registering again", "resourceName",
                         served->plugin->resource_name());
            Reschedule(*served, "kubelet.sock was re-created (kubelet restart)");
          }
        }
        for (auto& served : served_) {
          if (name == served->socket_name && (event->mask & (IN_DELETE | IN_MOVED_FROM))) {
            Reschedule(*served, "the plugin socket was removed (kubelet restart)");
          }
        }
        p += sizeof(inotify_event) + event->len;
      }
    }
  }

  void Reschedule(ServedPlugin& served, std::string_view reason) {
    // Still registered with the kubelet that is there, unless this is a restart: /healthz then
    // fails until the registration with the new kubelet succeeds.
    if (!served.needs_registration) {
      metrics_->RegistrationLost(served.plugin->resource_name(), reason);
    }
    served.needs_registration = true;
    served.next_attempt = absl::InfinitePast();
    served.backoff = absl::ZeroDuration();
  }

  // Notices the restart signals the upstream stub relies on, even when an event was missed: our
  // socket gone, or kubelet.sock replaced since we registered.
  void Recheck() {
    FileIdentity kubelet = IdentityOf(kubelet_socket_);
    for (auto& served : served_) {
      if (served->needs_registration || TakenOver(*served)) continue;
      if (!IsSocket(served->socket_path)) {
        Reschedule(*served, "the plugin socket was removed (kubelet restart)");
      } else if (kubelet.exists() && kubelet != served->registered_kubelet) {
        Reschedule(*served, "kubelet.sock was re-created (kubelet restart)");
      }
    }
  }

  // True when another process serves at our socket path now (a rolling update's new instance):
  // it owns the path from then on.
  bool TakenOver(ServedPlugin& served) {
    if (served.superseded) return true;
    FileIdentity now = IdentityOf(served.socket_path);
    if (!now.exists() || !served.socket_identity.exists() || now == served.socket_identity) {
      return false;
    }
    KDP_LOG_WARNING("Another instance serves this plugin's socket now; this one stops serving it",
                    "resourceName", served.plugin->resource_name(), "socket", served.socket_path);
    served.superseded = true;
    served.needs_registration = false;
    metrics_->Superseded(served.plugin->resource_name());
    // Its server keeps serving the unlinked socket until Stop(): gRPC unlinks the path when a
    // unix listener shuts down, which would now delete the other instance's socket.
    return true;
  }

  void AttemptRegistrations() {
    absl::Time now = absl::Now();
    for (auto& served : served_) {
      if (!served->needs_registration || now < served->next_attempt) continue;
      if (TakenOver(*served)) continue;
      absl::Status status = absl::OkStatus();
      if (IsSocket(served->socket_path)) {
        // "Gone" counts only when seen twice in a row, kSettleTime apart: an observation from
        // before the socket was first served, or from a successor's unlink-then-bind, is stale.
        served->gone_since.reset();
      } else {
        if (!served->gone_since.has_value() || now - *served->gone_since < kSettleTime) {
          if (!served->gone_since.has_value()) served->gone_since = now;
          served->next_attempt = *served->gone_since + kSettleTime;
          continue;
        }
        served->gone_since.reset();
        // The kubelet removed our socket when it restarted: serve again before registering.
        KDP_LOG_INFO("Plugin socket gone; serving again", "socket", served->socket_path);
        Unserve(*served, /*remove_socket=*/false);
        status = Serve(*served);
      }
      FileIdentity kubelet = IdentityOf(kubelet_socket_);
      if (status.ok()) status = Register(*served);
      if (status.ok()) {
        // A kubelet that bound kubelet.sock between the look and the dial is the one that
        // answered: remembering "none" would take its own creation event for a restart.
        if (!kubelet.exists()) kubelet = IdentityOf(kubelet_socket_);
        served->needs_registration = false;
        served->registered_kubelet = kubelet;
        served->backoff = absl::ZeroDuration();
        KDP_LOG_INFO("Registered with kubelet", "resourceName", served->plugin->resource_name(),
                     "endpoint", served->socket_name);
        metrics_->RegistrationSucceeded(served->plugin->resource_name());
        absl::MutexLock lock(&mu_);
        ++registrations_;
        continue;
      }
      served->backoff = served->backoff == absl::ZeroDuration()
                            ? options_.initial_backoff
                            : std::min(served->backoff * 2, options_.max_backoff);
      served->next_attempt = absl::Now() + served->backoff;
      metrics_->RegistrationFailed(served->plugin->resource_name(), status);
      KDP_LOG_WARNING("Registration failed; retrying", "resourceName",
                      served->plugin->resource_name(), "err", status.ToString(), "retryIn",
                      absl::FormatDuration(served->backoff));
    }
  }

  absl::Duration NextWait() const {
    absl::Duration wait = kRecheckInterval;
    absl::Time now = absl::Now();
    for (const auto& served : served_) {
      if (served->needs_registration) wait = std::min(wait, served->next_attempt - now);
    }
    return std::max(wait, absl::ZeroDuration());
  }

  void Supervise() {
    while (!Stopping()) {
      AttemptRegistrations();
      pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
      int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(NextWait()));
      int ready = ::poll(fds, inotify_fd_ >= 0 ? 2 : 1, timeout_ms);
      if (ready > 0 && (fds[1].revents & POLLIN)) DrainEvents();
      Recheck();
    }
  }

  const RunnerOptions options_;
  const std::string plugins_dir_;
  const std::string kubelet_socket_;
  const std::vector<std::unique_ptr<DevicePlugin>> owned_;
  std::vector<std::unique_ptr<ServedPlugin>> served_;  // Supervisor thread, or before/after it.
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  std::thread supervisor_;
  // Before the servers: their handlers and the metrics server read it.
  std::unique_ptr<PluginRunnerMetrics> metrics_;

  mutable absl::Mutex mu_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace internal

absl::StatusOr<std::unique_ptr<PluginRunner>> PluginRunner::Create(
    RunnerOptions options, std::vector<std::unique_ptr<DevicePlugin>> plugins) {
  for (const auto& plugin : plugins) {
    if (plugin == nullptr) return absl::InvalidArgumentError("null DevicePlugin");
  }
  if (options.kubelet_root.empty()) return absl::InvalidArgumentError("empty kubelet root");
  auto impl = std::make_unique<internal::RunnerImpl>(std::move(options), std::move(plugins));
  KDP_RETURN_IF_ERROR(impl->Validate());
  return std::unique_ptr<PluginRunner>(new PluginRunner(std::move(impl)));
}

PluginRunner::PluginRunner(std::unique_ptr<internal::RunnerImpl> impl) : impl_(std::move(impl)) {}
PluginRunner::~PluginRunner() { impl_->Stop(); }
absl::Status PluginRunner::Start() { return impl_->Start(); }
void PluginRunner::Stop() { impl_->Stop(); }
int PluginRunner::registrations() const { return impl_->registrations(); }
int PluginRunner::metrics_port() const { return impl_->metrics_port(); }
bool PluginRunner::WaitForRegistrations(int count, absl::Duration timeout) const {
  return impl_->WaitForRegistrations(count, timeout);
}

int RunPluginsUntilSignal(RunnerOptions options,
                          std::vector<std::unique_ptr<DevicePlugin>> plugins) {
  return internal::RunUntilSignal(
      [&] { return PluginRunner::Create(std::move(options), std::move(plugins)); },
      "plugin runner");
}

}  // namespace kdp
