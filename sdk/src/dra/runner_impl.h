// DraRunnerImpl: what kdp::DraRunner does (kdp/dra_driver.h), with the API client injected so
// that tests use a fake KubeClient and the runner itself never depends on how the client is
// built. Sockets: <root>/plugins/<driver>/dra[-<suffix>].sock (the DRAPlugin services and the
// DRAResourceHealth streams, dra_health_service.h) served first, then
// <root>/plugins_registry/<driver>[-<suffix>]-reg.sock (so the kubelet never finds an endpoint it
// cannot dial); stopped in the reverse order. Private to the SDK.
//
// Thread-safety: thread-safe; Stop() may be called more than once, concurrently, or without
// Start().
#ifndef KDP_SDK_SRC_DRA_RUNNER_IMPL_H_
#define KDP_SDK_SRC_DRA_RUNNER_IMPL_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics_server.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/health_service.h"
#include "sdk/src/dra/metrics.h"
#include "sdk/src/dra/node_server.h"
#include "sdk/src/dra/registration.h"
#include "sdk/src/dra/service.h"
#include "sdk/src/dra/slice_publisher.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::internal {

// The options with every default filled in (node name from $NODE_NAME, absolute kubelet root,
// socket names, checkpoint path) and validated: INVALID_ARGUMENT naming the rule broken.
absl::StatusOr<DraRunnerOptions> ResolveDraRunnerOptions(DraRunnerOptions options,
                                                         const std::string& driver_name);

// DraRunner::Create with `client` instead of one built from a kubeconfig.
absl::StatusOr<std::unique_ptr<DraRunner>> CreateDraRunnerWithClient(
    DraRunnerOptions options, std::unique_ptr<DraDriver> driver,
    std::shared_ptr<KubeClient> client);

class DraRunnerImpl {
 public:
  // REQUIRES: `options` resolved by ResolveDraRunnerOptions.
  DraRunnerImpl(DraRunnerOptions options, std::unique_ptr<DraDriver> driver,
                std::shared_ptr<KubeClient> client);
  ~DraRunnerImpl();

  static std::unique_ptr<DraRunner> Wrap(std::unique_ptr<DraRunnerImpl> impl);

  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  bool registered() const;
  bool WaitForRegistration(absl::Duration timeout) const;
  int metrics_port() const ABSL_LOCKS_EXCLUDED(mu_);
  DraDriver& driver() const { return *driver_; }

  const std::string& dra_socket_path() const { return dra_socket_; }
  const std::string& registration_socket_path() const { return registration_socket_; }
  const std::string& checkpoint_path() const { return checkpoint_path_; }

 private:
  // One incarnation of a socket file, so that Stop() removes only the socket it created.
  struct FileIdentity {
    ino_t inode = 0;
    int64_t ctime_ns = 0;
    friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
  };
  static FileIdentity IdentityOf(const std::string& path);
  void Shutdown(std::unique_ptr<grpc::Server>& server, const std::string& socket,
                const FileIdentity& identity);
  absl::Status StartLocked();

  const DraRunnerOptions options_;
  const std::unique_ptr<DraDriver> driver_;
  const std::shared_ptr<KubeClient> client_;
  const std::string plugin_dir_;
  const std::string registry_dir_;
  const std::string dra_socket_;
  const std::string registration_socket_;
  const std::string checkpoint_path_;
  const std::unique_ptr<DraRegistrationService> registration_;
  // After what it reads (the driver's link, registration_), before the servers that update it.
  const std::unique_ptr<DraRunnerMetrics> metrics_;

  // Built by Start(), torn down by Stop(), which never run concurrently (started_/stopping_).
  std::unique_ptr<DraNodeServer> node_server_;
  std::unique_ptr<DraServiceV1> service_v1_;
  std::unique_ptr<DraServiceV1beta1> service_v1beta1_;
  std::unique_ptr<DraHealthStreams> health_streams_;  // Null when serve_device_health is off.
  std::unique_ptr<DraHealthServiceV1> health_v1_;
  std::unique_ptr<DraHealthServiceV1alpha1> health_v1alpha1_;
  std::unique_ptr<grpc::Server> dra_server_;
  FileIdentity dra_identity_;
  std::unique_ptr<grpc::Server> registration_server_;
  FileIdentity registration_identity_;
  std::shared_ptr<SlicePublisher> publisher_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool start_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<metrics::MetricsServer> metrics_server_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_RUNNER_IMPL_H_
