// DeviceRegistry is the manager's view of every device-plugin resource, kept as the kubelet keeps
// allDevices / healthyDevices / unhealthyDevices: each ListAndWatch message replaces a resource's
// device list whole (a full snapshot), only the exact string "Healthy" is healthy, and duplicate
// IDs collapse (last one wins). A resource whose plugin disconnected keeps its devices, all
// unhealthy.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::manager {

struct DeviceInfo {
  bool healthy = false;
  // NUMA node IDs from the device's topology; empty when it has none.
  std::vector<int64_t> numa_nodes;
};

struct ResourceDevices {
  std::string name;
  // By device ID, ordered.
  std::map<std::string, DeviceInfo> devices;
  // A plugin endpoint is registered and its stream open.
  bool connected = false;
  std::string endpoint;

  int64_t capacity() const { return static_cast<int64_t>(devices.size()); }
  int64_t allocatable() const;
  std::set<std::string> Healthy() const;
};

class DeviceRegistry {
 public:
  // A plugin registered on `endpoint`: the resource exists from now on (empty until its first
  // snapshot when new; its previous devices kept otherwise).
  void Connected(const std::string& resource, const std::string& endpoint) ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the resource's devices with a ListAndWatch snapshot.
  void Update(const std::string& resource, const v1beta1::ListAndWatchResponse& snapshot)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The plugin's stream ended: every device becomes unhealthy (PluginDisconnected).
  void Disconnected(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);
  // A resource read back from the checkpoint: known, disconnected, no devices (capacity 0) until
  // its plugin registers again. No-op when the resource is already known.
  void Restore(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets the resource (its stop grace period expired).
  void Remove(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);

  std::optional<ResourceDevices> Get(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every resource, ordered by name.
  std::vector<ResourceDevices> List() const ABSL_LOCKS_EXCLUDED(mu_);
  bool Has(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, ResourceDevices> resources_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_
