#include "sdk/src/dra/runner_impl.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "common/resource_name.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "sdk/src/dra/driver_link.h"
#include "sdk/src/dra/resource_slice.h"
#include "sdk/src/runtime/metrics_endpoint.h"

namespace kdp::internal {
namespace {

constexpr size_t kMaxSuffixLength = 64;

bool IsSuffixChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

std::string PluginDir(const DraRunnerOptions& options, const std::string& driver) {
  return absl::StrCat(options.kubelet_root, "/plugins/", driver);
}

std::string DraSocketName(const DraRunnerOptions& options) {
  return options.instance_suffix.empty() ? "dra.sock"
                                         : absl::StrCat("dra-", options.instance_suffix, ".sock");
}

}  // namespace

absl::StatusOr<DraRunnerOptions> ResolveDraRunnerOptions(DraRunnerOptions options,
                                                         const std::string& driver_name) {
  KDP_RETURN_IF_ERROR(ValidateDriverName(driver_name));
  if (options.kubelet_root.empty()) return absl::InvalidArgumentError("empty kubelet root");
  if (options.kubelet_root[0] != '/') {
    // GetInfo's endpoint must be absolute: the kubelet dials it from its own working directory.
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("kubelet root \"", options.kubelet_root,
                                                     "\" is relative and the working "
                                                     "directory is unknown"));
    }
    options.kubelet_root = absl::StrCat(cwd, "/", options.kubelet_root);
  }
  while (options.kubelet_root.size() > 1 && options.kubelet_root.back() == '/') {
    options.kubelet_root.pop_back();
  }
  if (options.node_name.empty()) {
    const char* env = std::getenv("NODE_NAME");
    if (env != nullptr) options.node_name = env;
  }
  if (options.node_name.empty() || !IsDns1123Subdomain(options.node_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node name \"", options.node_name,
                     "\" must be a DNS subdomain (set DraRunnerOptions::node_name or $NODE_NAME)"));
  }
  const std::string& suffix = options.instance_suffix;
  if (suffix.size() > kMaxSuffixLength ||
      !std::all_of(suffix.begin(), suffix.end(), IsSuffixChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "instance suffix \"", suffix, "\": must be at most 64 letters, digits, '.', '_' or '-'"));
  }
  if (!suffix.empty() && !options.registration_socket_name.empty()) {
    return absl::InvalidArgumentError(
        "registration_socket_name and instance_suffix are mutually exclusive (as the Go "
        "helper's RegistrarSocketFilename and RollingUpdate)");
  }
  if (options.registration_socket_name.empty()) {
    options.registration_socket_name = suffix.empty()
                                           ? absl::StrCat(driver_name, "-reg.sock")
                                           : absl::StrCat(driver_name, "-", suffix, "-reg.sock");
  }
  const std::string& reg = options.registration_socket_name;
  KDP_RETURN_IF_ERROR(ValidateFileName("registration socket name", reg,
                                       absl::StrCat(options.kubelet_root, "/plugins_registry")));
  if (reg[0] == '.') {
    // The plugin watcher ignores names starting with '.'.
    return absl::InvalidArgumentError(absl::StrCat("registration socket name \"", reg,
                                                   "\" must be a file name not starting with '.'"));
  }
  for (const std::string& path :
       {absl::StrCat(options.kubelet_root, "/plugins_registry/", reg),
        absl::StrCat(PluginDir(options, driver_name), "/", DraSocketName(options))}) {
    if (path.size() > kMaxUnixSocketPath) {
      return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is longer than ",
                                                     kMaxUnixSocketPath,
                                                     " bytes, the unix socket limit"));
    }
  }
  if (options.checkpoint_path.empty()) {
    options.checkpoint_path =
        absl::StrCat(PluginDir(options, driver_name), "/prepared-claims.json");
  }
  if (options.api_timeout <= absl::ZeroDuration() ||
      options.publish_initial_backoff <= absl::ZeroDuration() ||
      options.publish_max_backoff < options.publish_initial_backoff ||
      options.shutdown_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "api_timeout and publish_initial_backoff must be positive, publish_max_backoff at least "
        "publish_initial_backoff, shutdown_grace not negative");
  }
  KDP_RETURN_IF_ERROR(ValidateMetricsAddress(options.metrics_address, "metrics address"));
  if (options.serve_device_health && options.health_check_timeout < absl::Seconds(1)) {
    // health_check_timeout_seconds is whole seconds, and 0 would mean the kubelet's default.
    return absl::InvalidArgumentError(
        absl::StrCat("health_check_timeout ", absl::FormatDuration(options.health_check_timeout),
                     " must be at least 1s"));
  }
  return options;
}

absl::StatusOr<std::unique_ptr<DraRunner>> CreateDraRunnerWithClient(
    DraRunnerOptions options, std::unique_ptr<DraDriver> driver,
    std::shared_ptr<KubeClient> client) {
  if (driver == nullptr) return absl::InvalidArgumentError("null DraDriver");
  if (client == nullptr) return absl::InvalidArgumentError("null KubeClient");
  KDP_ASSIGN_OR_RETURN(DraRunnerOptions resolved,
                       ResolveDraRunnerOptions(std::move(options), driver->driver_name()));
  return DraRunnerImpl::Wrap(
      std::make_unique<DraRunnerImpl>(std::move(resolved), std::move(driver), std::move(client)));
}

DraRunnerImpl::DraRunnerImpl(DraRunnerOptions options, std::unique_ptr<DraDriver> driver,
                             std::shared_ptr<KubeClient> client)
    : options_(std::move(options)),
      driver_(std::move(driver)),
      client_(std::move(client)),
      plugin_dir_(PluginDir(options_, driver_->driver_name())),
      registry_dir_(absl::StrCat(options_.kubelet_root, "/plugins_registry")),
      dra_socket_(absl::StrCat(plugin_dir_, "/", DraSocketName(options_))),
      registration_socket_(absl::StrCat(registry_dir_, "/", options_.registration_socket_name)),
      checkpoint_path_(options_.checkpoint_path),
      registration_(std::make_unique<DraRegistrationService>(
          driver_->driver_name(), dra_socket_, options_.serve_device_health,
          [driver = driver_.get()] {
            // Republish: the (re)started kubelet wiped the node's slices. Publish() hands nothing
            // over until the publisher runs; its errors are the publisher's to retry.
            if (absl::Status published = driver->Publish(); !published.ok()) {
              KDP_LOG_WARNING("Republishing ResourceSlices after registration failed", "driver",
                              driver->driver_name(), "err", published.message());
            }
          })),
      metrics_(std::make_unique<DraRunnerMetrics>(driver_->driver_name(), driver_->link_,
                                                  registration_.get())) {}

DraRunnerImpl::~DraRunnerImpl() { Stop(); }

std::unique_ptr<DraRunner> DraRunnerImpl::Wrap(std::unique_ptr<DraRunnerImpl> impl) {
  return std::unique_ptr<DraRunner>(new DraRunner(std::move(impl)));
}

DraRunnerImpl::FileIdentity DraRunnerImpl::IdentityOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

absl::Status DraRunnerImpl::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) {
      return absl::FailedPreconditionError(stopping_ ? "DraRunner already stopped"
                                                     : "DraRunner already started");
    }
    started_ = true;
  }
  absl::Status status = StartLocked();
  {
    absl::MutexLock lock(&mu_);
    start_done_ = true;
  }
  if (!status.ok()) Stop();
  return status;
}

absl::Status DraRunnerImpl::StartLocked() {
  const std::string& driver = driver_->driver_name();
  // First, so that a port already taken fails before anything is served.
  KDP_ASSIGN_OR_RETURN(
      std::unique_ptr<metrics::MetricsServer> metrics_server,
      metrics::StartMetricsServer(
          {.address = options_.metrics_address,
           .flag_name = "metrics address",
           .registry = &metrics_->registry(),
           .health_checks = metrics_->HealthChecks(options_.publish_resource_slices)},
          options_.metrics_required, "DRA driver"));
  {
    absl::MutexLock lock(&mu_);
    metrics_server_ = std::move(metrics_server);
  }
  KDP_RETURN_IF_ERROR(MakeDirectories(plugin_dir_, 0750));
  KDP_RETURN_IF_ERROR(MakeDirectories(registry_dir_, 0750));
  KDP_RETURN_IF_ERROR(MakeDirectories(DirectoryOf(checkpoint_path_), 0750));

  node_server_ = std::make_unique<DraNodeServer>(
      driver_.get(), client_, DraCheckpoint(checkpoint_path_, driver),
      options_.instance_suffix.empty() ? "" : absl::StrCat(plugin_dir_, "/serialize.lock"),
      metrics_->NodeMetrics());
  KDP_RETURN_IF_ERROR(node_server_->CheckCheckpoint());

  // Also without slice publication: the list is what the health streams report.
  // No publisher is attached yet: Publish() reads, validates and keeps the list.
  driver_->link_->SetNodeName(options_.node_name);
  KDP_RETURN_IF_ERROR(driver_->Publish());
  std::vector<DraPool> pools = driver_->Pools();

  // The DRA service first: the kubelet dials the endpoint as soon as it sees the registration
  // socket.
  KDP_RETURN_IF_ERROR(RemoveSocketIfPresent(dra_socket_));
  service_v1_ = std::make_unique<DraServiceV1>(node_server_.get());
  service_v1beta1_ = std::make_unique<DraServiceV1beta1>(node_server_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(dra_socket_), grpc::InsecureServerCredentials());
  builder.RegisterService(service_v1_.get());
  builder.RegisterService(service_v1beta1_.get());
  if (options_.serve_device_health) {
    health_streams_ = std::make_unique<DraHealthStreams>(
        driver_->link_->health(),
        MakeDraHealthOptions(driver, options_.node_name, options_.health_check_timeout));
    health_v1_ = std::make_unique<DraHealthServiceV1>(health_streams_.get());
    health_v1alpha1_ = std::make_unique<DraHealthServiceV1alpha1>(health_streams_.get());
    builder.RegisterService(health_v1_.get());
    builder.RegisterService(health_v1alpha1_.get());
  }
  dra_server_ = builder.BuildAndStart();
  if (dra_server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot listen on unix socket ", dra_socket_));
  }
  // gRPC bound it with the umask's mode (ServeOnUnixSocket does the same for the registration
  // socket); before the identity, which includes the ctime.
  KDP_RETURN_IF_ERROR(RestrictSocketToOwner(dra_socket_));
  dra_identity_ = IdentityOf(dra_socket_);

  KDP_ASSIGN_OR_RETURN(registration_server_,
                       ServeOnUnixSocket(registration_socket_, registration_.get()));
  registration_identity_ = IdentityOf(registration_socket_);
  KDP_LOG_INFO("Serving DRA driver", "driver", driver, "endpoint", dra_socket_, "registration",
               registration_socket_, "node", options_.node_name);

  if (options_.publish_resource_slices) {
    publisher_ = std::make_shared<SlicePublisher>(
        SlicePublisher::Options{
            .driver = driver,
            .node_name = options_.node_name,
            .initial_backoff = options_.publish_initial_backoff,
            .max_backoff = options_.publish_max_backoff,
            .on_attempt = [metrics = metrics_.get()](
                              const absl::Status& status) { metrics->PublishAttempted(status); }},
        client_);
    publisher_->Start(std::move(pools));
    driver_->link_->Attach(publisher_);
  }
  return absl::OkStatus();
}

void DraRunnerImpl::Shutdown(std::unique_ptr<grpc::Server>& server, const std::string& socket,
                             const FileIdentity& identity) {
  if (server == nullptr) return;
  server->Shutdown(std::chrono::system_clock::now() +
                   absl::ToChronoNanoseconds(options_.shutdown_grace));
  server->Wait();
  server.reset();
  // Only our own socket: with a rolling update the other instance may serve at a path of its own,
  // but never remove a file this runner did not create.
  if (identity.inode != 0 && IdentityOf(socket) == identity) (void)RemoveSocketIfPresent(socket);
}

void DraRunnerImpl::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      mu_.Await(absl::Condition(&stopped_));
      return;
    }
    stopping_ = true;
    if (started_) mu_.Await(absl::Condition(&start_done_));
  }
  driver_->link_->Attach(nullptr);
  // Registration first, so the kubelet stops using the driver before its endpoint goes away.
  Shutdown(registration_server_, registration_socket_, registration_identity_);
  // The kubelet never closes its health stream: end them, or the shutdown waits its deadline.
  if (health_streams_ != nullptr) health_streams_->EndStreams();
  Shutdown(dra_server_, dra_socket_, dra_identity_);
  service_v1_.reset();
  service_v1beta1_.reset();
  health_v1_.reset();
  health_v1alpha1_.reset();
  health_streams_.reset();  // Waits for the streams; the server's Wait() already did.
  node_server_.reset();
  if (publisher_ != nullptr) publisher_->Stop();
  publisher_.reset();
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  {
    absl::MutexLock lock(&mu_);
    metrics_server = std::move(metrics_server_);
  }
  if (metrics_server != nullptr) metrics_server->Stop();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

int DraRunnerImpl::metrics_port() const {
  absl::MutexLock lock(&mu_);
  return metrics_server_ != nullptr ? metrics_server_->port() : 0;
}

bool DraRunnerImpl::registered() const { return registration_->registered(); }

bool DraRunnerImpl::WaitForRegistration(absl::Duration timeout) const {
  return registration_->WaitForRegistration(timeout);
}

}  // namespace kdp::internal

namespace kdp {

DraRunner::DraRunner(std::unique_ptr<internal::DraRunnerImpl> impl) : impl_(std::move(impl)) {}
DraRunner::~DraRunner() { impl_->Stop(); }
absl::Status DraRunner::Start() { return impl_->Start(); }
void DraRunner::Stop() { impl_->Stop(); }
bool DraRunner::registered() const { return impl_->registered(); }
bool DraRunner::WaitForRegistration(absl::Duration timeout) const {
  return impl_->WaitForRegistration(timeout);
}
int DraRunner::metrics_port() const { return impl_->metrics_port(); }
DraDriver& DraRunner::driver() const { return impl_->driver(); }

}  // namespace kdp
