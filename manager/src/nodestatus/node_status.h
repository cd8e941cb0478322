// The Node's status as the kubelet writes it (pkg/kubelet/nodestatus setters and the node status
// loop of kubelet_node_status.go), for kdp-manager's one Node in the local API, so that
// `kubectl describe node` and a scheduler's view of the node read as on a cluster:
//   - capacity: cpu, memory, ephemeral-storage, pods, and every device-plugin resource with all
//     of its devices; a resource removed after its plugin's grace period stays with 0, as the
//     kubelet keeps it to tell device-plugin resources from cluster-level ones;
//   - allocatable: the same less what is reserved (memory less the default hard eviction
//     threshold, memory.available<100Mi), device-plugin resources with their healthy devices only;
//   - conditions MemoryPressure, DiskPressure, PIDPressure (False) and Ready (True) with the
//     kubelet's reasons and messages; addresses (InternalIP, Hostname); nodeInfo.
// NodeStatusUpdater writes it to the store every sync period when it changed, and at least every
// report period (the kubelet's nodeStatusReportFrequency) to renew the heartbeats.
//
// Thread-safety: NodeStatusJson is a pure function; NodeStatusUpdater is thread-safe (Start and
// Stop from any thread, Stop idempotent).
#ifndef KDP_MANAGER_SRC_NODESTATUS_NODE_STATUS_H_
#define KDP_MANAGER_SRC_NODESTATUS_NODE_STATUS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/periodic_thread.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/devicemanager/manager.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

// What the machine has, as the kubelet reads it from cadvisor.
struct MachineResources {
  int64_t cpus = 0;                     // logical CPUs
  int64_t memory_bytes = 0;             // MemTotal
  int64_t ephemeral_storage_bytes = 0;  // size of the file system of the kubelet root
  int64_t max_pods = 110;               // the kubelet's --max-pods default
};

// status.nodeInfo.
struct NodeSystemInfo {
  std::string machine_id;
  std::string system_uuid;
  std::string boot_id;
  std::string kernel_version;
  std::string os_image;
  std::string container_runtime_version;  // "kdp://<version>": there is no container runtime
  std::string kubelet_version;            // the Kubernetes version the local API reports
  std::string operating_system = "linux";
  std::string architecture;  // GOARCH spelling: amd64, arm64
};

// Reads the live host: CPUs online, /proc/meminfo, statvfs(`kubelet_root`), /etc/machine-id,
// the boot ID, uname and /etc/os-release. What cannot be read stays empty or zero.
MachineResources ReadMachineResources(const std::string& kubelet_root);
NodeSystemInfo ReadNodeSystemInfo(const std::string& kubelet_version,
                                  const std::string& runtime_version);

// The status for the given inputs; `heartbeat` is every condition's lastHeartbeatTime and
// `since` their lastTransitionTime (the manager's start: nothing ever transitions).
nlohmann::json NodeStatusJson(const std::string& node_name, const MachineResources& machine,
                              const std::vector<ResourceCapacity>& devices,
                              const NodeSystemInfo& info, absl::Time heartbeat, absl::Time since);

struct NodeStatusUpdaterOptions {
  std::string node_name;
  MachineResources machine = {};
  NodeSystemInfo info = {};
  // Device-plugin capacity (DeviceManager::GetCapacity). Required.
  std::function<std::vector<ResourceCapacity>()> device_capacity = nullptr;
  // How often the status is computed (the kubelet's nodeStatusUpdateFrequency is 10 s; kdp's
  // is shorter so that a registered plugin shows in `kubectl describe node` at once).
  absl::Duration sync_period = absl::Seconds(1);
  // How often it is written even when nothing changed, renewing the heartbeats (the kubelet's
  // nodeStatusReportFrequency).
  absl::Duration report_period = absl::Minutes(5);
  std::function<absl::Time()> now = nullptr;  // absl::Now when empty
};

class NodeStatusUpdater {
 public:
  // `store` is borrowed and must outlive the updater.
  NodeStatusUpdater(resourceapi::ObjectStore* store, NodeStatusUpdaterOptions options);
  ~NodeStatusUpdater();
  NodeStatusUpdater(const NodeStatusUpdater&) = delete;
  NodeStatusUpdater& operator=(const NodeStatusUpdater&) = delete;

  // Writes the status once, then every sync period on a thread of its own.
  void Start();
  void Stop();
  // One sync: computes the status and writes it when it changed (or the report period passed).
  // Returns whether it wrote.
  bool Sync() ABSL_LOCKS_EXCLUDED(sync_mu_);

 private:
  resourceapi::ObjectStore* const store_;
  const NodeStatusUpdaterOptions options_;
  const absl::Time since_;

  absl::Mutex sync_mu_;
  nlohmann::json last_ ABSL_GUARDED_BY(sync_mu_);  // without heartbeats
  absl::Time last_report_ ABSL_GUARDED_BY(sync_mu_) = absl::InfinitePast();

  PeriodicThread thread_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_NODESTATUS_NODE_STATUS_H_
