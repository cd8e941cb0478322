// DeviceHealthTable holds a DRA driver's device health for the health streams
// (dra_health_service.h) to send: one entry per device of the driver's latest device list (the
// Discover() result the SDK last validated, at DraRunner::Start() or Publish()), each with the
// health the driver set for it under the rule of kdp/health.h (health_overrides.h), Healthy
// without a message when none was set. A device leaves the report when a list no longer has it:
// the kubelet wants the complete device list in every message (dra-health api.proto), so a
// removed device must drop out rather than linger. Every change is signalled to the subscribers
// (the open streams), which then read a fresh Snapshot(). The table lives in the driver
// (DraDriverLink), so SetHealth() works with or without a running runner. Private to the SDK.
//
// Thread-safe. Subscribers are called with the table's lock held, so they must only set a flag
// and never call back into the table.
#ifndef KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_
#define KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "kdp/dra_driver.h"
#include "sdk/src/health/health_overrides.h"

namespace kdp::internal {

// One device's health as the driver last set it.
struct DeviceHealthEntry {
  std::string device = {};
  Health health = Health::kHealthy;
  std::string message = {};

  friend bool operator==(const DeviceHealthEntry&, const DeviceHealthEntry&) = default;
};

class DeviceHealthSubscriber {
 public:
  virtual ~DeviceHealthSubscriber() = default;
  // Something in the table changed; called with the table's lock held.
  virtual void OnHealthChanged() = 0;
};

class DeviceHealthTable {
 public:
  // `driver` names the driver in error messages.
  explicit DeviceHealthTable(std::string driver) : driver_(std::move(driver)) {}

  DeviceHealthTable(const DeviceHealthTable&) = delete;
  DeviceHealthTable& operator=(const DeviceHealthTable&) = delete;

  // Makes `devices` the device list. Signals the subscribers when the set of names changed.
  // REQUIRES: ValidateDraDevices(devices).ok().
  void SetDevices(const std::vector<DraDevice>& devices) ABSL_LOCKS_EXCLUDED(mu_);

  // DraDriver::SetHealth(): INVALID_ARGUMENT (ValidateHealth()) and nothing set for a value
  // outside the enum or a message that is not UTF-8. Signals the subscribers when a listed
  // device's health or message changed; the same report again is OK and changes nothing.
  [[nodiscard]] absl::Status Set(absl::Span<const std::string> devices, Health health,
                                 std::string_view message) ABSL_LOCKS_EXCLUDED(mu_);

  // DraDriver::SetUnhealthyDevices(): HealthOverrides::ReplaceWithUnhealthy().
  [[nodiscard]] absl::Status SetUnhealthy(const std::set<std::string>& unhealthy,
                                          std::string_view message) ABSL_LOCKS_EXCLUDED(mu_);

  // The whole list, in device name order.
  std::vector<DeviceHealthEntry> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Number of changes signalled so far.
  int64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `subscriber`, which is signalled once at once (so that it sends the current list) and
  // then on every change. After Unsubscribe() returns it is never called again.
  void Subscribe(DeviceHealthSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void Unsubscribe(DeviceHealthSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::vector<DeviceHealthEntry> SnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SignalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string driver_;
  mutable absl::Mutex mu_;
  std::vector<std::string> devices_ ABSL_GUARDED_BY(mu_);  // the last list, sorted
  HealthOverrides overrides_ ABSL_GUARDED_BY(mu_);
  std::set<DeviceHealthSubscriber*> subscribers_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_
