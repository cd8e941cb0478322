// DeviceRegistry is the manager's view of every device-plugin resource, kept as the kubelet keeps
// allDevices / healthyDevices / unhealthyDevices: each ListAndWatch message replaces a resource's
// device list whole (a full snapshot), only the exact string "Healthy" is healthy, and duplicate
// IDs collapse into one device, unhealthy when any of its entries is (the kubelet would put such
// an ID in both health sets and count it twice). A resource whose plugin disconnected keeps its
// devices, all unhealthy.
//
// Each resource's state is an immutable ResourceDevices shared with its readers (Shared(),
// GetShared()): reading a resource of 100,000 devices costs no copy, and a change replaces the
// whole entry (copy on write).
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
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
  // The healthy devices, counted once by CountHealthy() (the registry's entries are), so that
  // allocatable() costs nothing for 100,000 devices; -1: not counted, allocatable() counts.
  int64_t healthy_count = -1;

  int64_t capacity() const { return static_cast<int64_t>(devices.size()); }
  int64_t allocatable() const;
  std::set<std::string> Healthy() const;
  // Sets healthy_count from `devices`. REQUIRES: called again after any change to `devices`.
  void CountHealthy();
};

// What a snapshot lists that kdp takes otherwise than as sent, or that no plugin should send;
// the manager logs it once per snapshot. Examples are the first offending values.
struct SnapshotAnomalies {
  int empty_ids = 0;
  int duplicate_ids = 0;
  std::string duplicate_example = {};
  // Health strings other than "Healthy" and "Unhealthy" (taken as unhealthy, as the kubelet does).
  int other_health = 0;
  std::string health_example = {};

  bool any() const { return empty_ids > 0 || duplicate_ids > 0 || other_health > 0; }
};

// The devices of one ListAndWatch message by ID: only "Healthy" is healthy; an ID listed more than
// once is one device, unhealthy when any entry says so. Any other ID is taken as the kubelet
// takes it (an opaque string, empty and "../x" included: device IDs never become paths). When
// `anomalies` is given it receives what the message did wrong.
std::map<std::string, DeviceInfo> ParseSnapshot(const v1beta1::ListAndWatchResponse& snapshot,
                                                SnapshotAnomalies* anomalies = nullptr);

class DeviceRegistry {
 public:
  // A plugin registered on `endpoint`: the resource exists from now on (empty until its first
  // snapshot when new; its previous devices kept otherwise).
  void Connected(const std::string& resource, const std::string& endpoint) ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the resource's devices with a ListAndWatch snapshot (its connection state stays).
  void Update(const std::string& resource, const v1beta1::ListAndWatchResponse& snapshot)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `devices` the resource's whole state (devices and connection), shared as it is.
  // REQUIRES: devices != nullptr and devices->name == resource.
  void Publish(std::shared_ptr<const ResourceDevices> devices) ABSL_LOCKS_EXCLUDED(mu_);
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
  // The same without copying devices: the entries are immutable and stay valid as long as the
  // caller holds them. GetShared: null when the resource is unknown.
  std::shared_ptr<const ResourceDevices> GetShared(const std::string& resource) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<const ResourceDevices>> Shared() const ABSL_LOCKS_EXCLUDED(mu_);
  bool Has(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const ResourceDevices>> resources_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_DEVICE_REGISTRY_H_
