// DeviceState holds one plugin's inventory (Discover() results with health overrides applied) and
// fans every change out to its subscribers (the open ListAndWatch streams) as an immutable full
// snapshot. Private to the SDK.
//
// Thread-safe. Subscribers are called with the state's lock held, so they must only park or start
// a write and never call back into the DeviceState.
#ifndef KDP_SDK_SRC_DEVICEPLUGIN_DEVICE_STATE_H_
#define KDP_SDK_SRC_DEVICEPLUGIN_DEVICE_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "kdp/device_plugin.h"
#include "sdk/src/health/health_overrides.h"

namespace kdp::internal {

// One published inventory: the devices in Discover() order with health overrides applied, and an
// index by ID built once per publication (Allocate looks IDs up on every call).
struct Inventory {
  std::vector<Device> devices;
  absl::flat_hash_map<std::string, size_t> index;

  // The device with `id`, or nullptr.
  const Device* Find(const std::string& id) const;
};

using DeviceSnapshot = std::shared_ptr<const Inventory>;

// How the plugin's device source (Discover()) fared: the last outcome and the failures so far.
struct DiscoveryRecord {
  absl::Status last = absl::OkStatus();  // Discover()'s or Replace()'s error of the last call
  int64_t failures = 0;
};

class DeviceSubscriber {
 public:
  virtual ~DeviceSubscriber() = default;
  // Receives every new snapshot; called with the DeviceState's lock held.
  virtual void OnDevices(DeviceSnapshot snapshot) = 0;
};

class DeviceState {
 public:
  explicit DeviceState(std::string resource_name) : resource_name_(std::move(resource_name)) {}

  // Replaces the discovered inventory. INVALID_ARGUMENT (naming the device) for an empty or
  // duplicate ID or a health other than Healthy and Unhealthy; the previous inventory is kept
  // then. Publishes when anything changed.
  [[nodiscard]] absl::Status Replace(std::vector<Device> discovered) ABSL_LOCKS_EXCLUDED(mu_);

  // DevicePlugin::SetHealth(): records a health override for `ids` (health_overrides.h) and
  // publishes when an effective health changed. INVALID_ARGUMENT (ValidateHealth()), nothing set,
  // for kUnknown or a message that is not UTF-8. The message is logged, as the device plugin API
  // has no field for it.
  [[nodiscard]] absl::Status SetHealth(absl::Span<const std::string> ids, Health health,
                                       std::string_view message) ABSL_LOCKS_EXCLUDED(mu_);
  // DevicePlugin::SetUnhealthyDevices(): HealthOverrides::ReplaceWithUnhealthy().
  [[nodiscard]] absl::Status SetUnhealthy(const std::set<std::string>& unhealthy,
                                          std::string_view message) ABSL_LOCKS_EXCLUDED(mu_);

  DeviceSnapshot Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `subscriber` and hands it the current snapshot before any later one, atomically.
  void Subscribe(DeviceSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  // After it returns, `subscriber` is never called again.
  void Unsubscribe(DeviceSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);

  // Number of snapshots published so far (the first Replace() included).
  int generation() const ABSL_LOCKS_EXCLUDED(mu_);

  // Records the outcome of one Discover() (at the runner's Start(), by Publish()), with the
  // error of Replace() when the inventory was rejected: the device source counts as failing
  // from an error until the next success (the runner's /healthz).
  void RecordDiscovery(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  DiscoveryRecord discovery() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Publishes `devices` (the discovered inventory, in its order) with the health overrides
  // applied over discovered_health_, unless nothing changed since the last publication.
  void PublishLocked(std::vector<Device> devices) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string resource_name_;
  mutable absl::Mutex mu_;
  // The health Discover() gave each device of the snapshot, by position. Only this is kept of the
  // discovered inventory: the snapshot holds everything else, so the inventory is stored once
  // (a plugin with 1,000 devices keeps ~0.5 MiB less).
  std::vector<Health> discovered_health_ ABSL_GUARDED_BY(mu_);
  HealthOverrides overrides_ ABSL_GUARDED_BY(mu_);
  DeviceSnapshot snapshot_ ABSL_GUARDED_BY(mu_) = std::make_shared<const Inventory>();
  std::set<DeviceSubscriber*> subscribers_ ABSL_GUARDED_BY(mu_);
  int generation_ ABSL_GUARDED_BY(mu_) = 0;
  DiscoveryRecord discovery_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DEVICEPLUGIN_DEVICE_STATE_H_
