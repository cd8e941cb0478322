// LocalApi: kdp-manager's local Kubernetes API as the manager runs it, in one place: the
// credentials under `<kubelet-root>/kdp` (the bearer token and port a previous run wrote in its
// kubeconfig, reused so drivers that read it once keep working across a restart; the CA and the
// serving certificate of serving_certs.h), the HTTPS server (server.h), the kubeconfig
// (kubeconfig.h), and a thread that renews the serving certificate before it expires while the
// manager runs, serving the new one without a restart.
//
// Thread-safety: thread-safe. Stop is idempotent.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_LOCAL_API_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_LOCAL_API_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/periodic_thread.h"
#include "manager/src/controlplane/resourceapi/server.h"
#include "manager/src/controlplane/resourceapi/serving_certs.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {

struct LocalApiOptions {
  // The manager's kubelet root; the credentials go to `<kubelet_root>/kdp`. Required.
  std::string kubelet_root;
  // TCP port on 127.0.0.1; 0: the previous run's when it is free, else any free one.
  int port = 0;
  // How often the serving certificate's expiry is checked while running.
  absl::Duration renewal_check_period = absl::Hours(1);
  // Lifetimes and clock of the certificates.
  ServingCertificateOptions certificates = {};
  // Everything else the server takes (threads, watch timings, Kubernetes version); its port,
  // token and tls are filled in here.
  ResourceApiServerOptions server = {};
};

class LocalApi {
 public:
  // Reads or makes the credentials, starts the server and writes the kubeconfig. `store` is
  // borrowed and must outlive the LocalApi. Errors name the file or the address: those of
  // EnsureServingCertificates and WriteKubeconfig, UNAVAILABLE when no port can be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LocalApi>> Start(ObjectStore* store,
                                                                       LocalApiOptions options);
  ~LocalApi();
  LocalApi(const LocalApi&) = delete;
  LocalApi& operator=(const LocalApi&) = delete;

  // Stops the renewal thread and the server. Idempotent.
  void Stop();

  // Checks the certificates now, as the renewal thread does every period: a renewed serving
  // certificate is served from the next handshake on; a new CA (the old one expiring) also
  // rewrites the kubeconfig. Returns the error of the check (the old certificate stays).
  [[nodiscard]] absl::Status RenewCertificates() ABSL_LOCKS_EXCLUDED(renewal_mu_);

  const std::string& kubeconfig_path() const { return kubeconfig_path_; }
  // "https://127.0.0.1:<port>".
  std::string url() const { return server_->url(); }
  int port() const { return server_->port(); }
  ResourceApiServer* server() const { return server_.get(); }

 private:
  LocalApi(LocalApiOptions options, std::string dir, std::string token,
           ServingCertificates certificates, std::unique_ptr<ResourceApiServer> server,
           std::string kubeconfig_path);

  const LocalApiOptions options_;
  const std::string dir_;
  const std::string token_;
  const std::unique_ptr<ResourceApiServer> server_;
  const std::string kubeconfig_path_;

  absl::Mutex renewal_mu_;                           // one check at a time
  std::string ca_pem_ ABSL_GUARDED_BY(renewal_mu_);  // the CA the kubeconfig names
  PeriodicThread renewal_;
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_LOCAL_API_H_
