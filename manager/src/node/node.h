// Node: one kdp-manager, the kubelet's device manager, DRA manager and the servers around them
// wired over one kubelet root, in the one place that knows their order. main() parses flags into
// ManagerOptions and runs a Node; tests run one in-process over a temporary root.
//
//   Create  checks the options, then opens: directories, the one-manager-per-root lock, the
//           metrics server (first, so a bad --metrics-address fails before any state is
//           touched), the topology manager's configuration (before any state is opened), the
//           state store (checkpoint, pod store, journal), the resource API's objects, and
//           restores devices and pods; compaction starts once they are restored. Nothing is
//           served on a unix socket yet.
//   Start   serves: the local resource API, kubelet.sock (registration), the plugins_registry
//           watcher, the DRA reconcile loop (the pod source is ready), the Node and Pod status
//           loops, then PodResources and the admin socket, and finally the state's metrics.
//           Serving comes before anything registers with it.
//   Stop    in reverse: plugins first (their calls in flight end now), the loops, kubelet.sock,
//           the admin and PodResources servers (2 s deadline; sockets removed), the DRA plugin
//           clients, the resource API, the resource store's last write, the state store's last
//           compaction, the metrics server, the lock.
//
// A failure anywhere stops what was started in the same reverse order and returns the error; no
// socket is left served and no thread left running. The library installs no signal handler and
// never exits: main() blocks SIGTERM/SIGINT (before Create, which starts threads) and waits.
//
// Thread-safe: Start and Stop serialise on one lifecycle mutex, which is held across their work;
// Stop may be called twice, concurrently, or without Start. Accessors are const-safe.
#ifndef KDP_MANAGER_SRC_NODE_NODE_H_
#define KDP_MANAGER_SRC_NODE_NODE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "manager/src/node/manager_options.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace kdp::metrics {
class MetricsServer;
}  // namespace kdp::metrics

namespace kdp::manager {

class AdminServer;
class DeviceManager;
class DevicePluginWatcherHandler;
class EventRecorder;
class NodeStatusUpdater;
class PodAdmission;
class PodManager;
class PodResourcesServer;
class StateStore;
class StatusManager;
class TopologyManager;
struct ManagerMetrics;
struct RestoredState;
namespace dra {
class DraManager;
class DraPluginManager;
class DraReconciler;
}  // namespace dra
namespace pluginmanager {
class PluginManager;
}  // namespace pluginmanager
namespace resourceapi {
class LocalApi;
class ObjectStore;
class StorePersister;
}  // namespace resourceapi
namespace resourceclaim {
class DeviceTaintEvictor;
class PodClaimController;
class StoreClaimGetter;
}  // namespace resourceclaim

class Node {
 public:
  // Checks `options` and opens the node (above). On success the metrics server and the state
  // store's compaction run; call Start. INVALID_ARGUMENT naming the flag for an option out of
  // range; FAILED_PRECONDITION naming the lock file and its holder's pid when another manager
  // runs on the root; otherwise the first failing part's error (UNAVAILABLE for an explicit
  // metrics address that cannot be bound, DATA_LOSS naming the file for an unreadable checkpoint
  // with strict_checkpoint, ...). On failure everything opened is closed again.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Node>> Create(ManagerOptions options);

  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();  // Stop()s.

  // Serves (above). On failure stops everything (the Node is then stopped) and returns the
  // error naming the part and its input (a socket path, the watcher's directory).
  // FAILED_PRECONDITION when called twice or after Stop.
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);

  // Stops everything (above). Idempotent; also after a failed Start or without Start.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The options as Create resolved them (absolute kubelet root, the node name).
  const ManagerOptions& options() const { return options_; }
  // <root>/device-plugins/kubelet.sock, <root>/pod-resources/kubelet.sock, <root>/kdp/manager.sock.
  const std::string& registration_socket() const { return registration_socket_; }
  const std::string& podresources_socket() const { return podresources_socket_; }
  const std::string& admin_socket() const { return admin_socket_; }
  // The metrics server's bound port; 0 when disabled or stopped.
  int metrics_port() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class NodeTestPeer;
  // Told each step's name as it completes ("state", "registration", ..., "stop registration",
  // ...), on the thread running Create, Start or Stop. Tests only.
  using StepObserver = std::function<void(std::string_view step)>;

  Node(ManagerOptions options, StepObserver observer);
  static absl::StatusOr<std::unique_ptr<Node>> Create(ManagerOptions options,
                                                      StepObserver observer);

  [[nodiscard]] absl::Status OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status LockRootLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status RestoreLocked(RestoredState restored)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status StartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reached(std::string_view step) const;

  ManagerOptions options_;
  const StepObserver observer_;
  std::string plugins_dir_;
  std::string podresources_dir_;
  std::string admin_dir_;
  std::string registration_socket_;
  std::string podresources_socket_;
  std::string admin_socket_;

  mutable absl::Mutex mu_;  // the lifecycle: held across Create's opening, Start and Stop
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int lock_fd_ ABSL_GUARDED_BY(mu_) = -1;

  // The parts, in construction order: destroyed in reverse, after Stop. Each borrows only parts
  // declared above it.
  metrics::Registry registry_;
  std::unique_ptr<ManagerMetrics> metrics_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::vector<int>> numa_cpus_ ABSL_GUARDED_BY(mu_);  // NUMA node → its CPUs
  std::unique_ptr<StateStore> store_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DeviceManager> devices_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<TopologyManager> topology_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceapi::ObjectStore> resources_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceapi::StorePersister> persister_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<dra::DraPluginManager> dra_plugins_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceclaim::StoreClaimGetter> claim_getter_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<dra::DraManager> dra_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceclaim::PodClaimController> claim_controller_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PodManager> pods_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<dra::DraReconciler> reconciler_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceclaim::DeviceTaintEvictor> taint_evictor_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<EventRecorder> events_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<StatusManager> pod_status_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PodAdmission> admission_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<resourceapi::LocalApi> local_api_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<NodeStatusUpdater> node_status_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DevicePluginWatcherHandler> device_plugin_handler_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<pluginmanager::PluginManager> plugin_manager_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PodResourcesServer> podresources_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<AdminServer> admin_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> podresources_server_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> admin_server_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_NODE_NODE_H_
