// DeviceHealthTable holds what a DRA driver last said about its devices' health, for the health
// streams (dra_health_service.h) to send: one entry per device of the driver's latest device list
// (the Devices() result the SDK last validated, at DraRunner::Start() or PublishDevices()).
// A device enters Healthy with no message when it first appears in a list, keeps whatever the
// driver set while it stays listed, and leaves the table when a list no longer has it: the
// kubelet wants the complete device list in every message (dra-health api.proto), so a removed
// device must drop out rather than linger. Every change is signalled to the subscribers (the open
// streams), which then read a fresh Snapshot(). The table lives in the driver (DraDriverLink), so
// SetDeviceHealth() works with or without a running runner. Private to the SDK.
//
// Thread-safe. Subscribers are called with the table's lock held, so they must only set a flag
// and never call back into the table.
#ifndef KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_
#define KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "kdp/dra_driver.h"

namespace kdp::internal {

// One device's health as the driver last set it.
struct DeviceHealthEntry {
  std::string device = {};
  DeviceHealthStatus health = DeviceHealthStatus::kHealthy;
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

  // Makes `devices` the device list: new names enter Healthy, names no longer listed are dropped,
  // the others keep their health. Signals the subscribers when the set of names changed.
  // REQUIRES: ValidateDraDevices(devices).ok().
  void SetDevices(const std::vector<DraDevice>& devices) ABSL_LOCKS_EXCLUDED(mu_);

  // DraDriver::SetDeviceHealth: NOT_FOUND for a device not in the list, INVALID_ARGUMENT for a
  // status outside the enum or a message that is not UTF-8 (the kubelet's protobuf decoder would
  // reject the whole message, hiding every device's health). Signals the subscribers when the
  // health or the message changed; the same report again is OK and changes nothing.
  [[nodiscard]] absl::Status Set(std::string_view device, DeviceHealthStatus health,
                                 std::string message) ABSL_LOCKS_EXCLUDED(mu_);

  // The whole list, in device name order.
  std::vector<DeviceHealthEntry> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Number of changes signalled so far.
  int64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `subscriber`, which is signalled once at once (so that it sends the current list) and
  // then on every change. After Unsubscribe() returns it is never called again.
  void Subscribe(DeviceHealthSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void Unsubscribe(DeviceHealthSubscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct State {
    DeviceHealthStatus health = DeviceHealthStatus::kHealthy;
    std::string message = {};
  };
  void SignalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string driver_;
  mutable absl::Mutex mu_;
  std::map<std::string, State, std::less<>> devices_ ABSL_GUARDED_BY(mu_);
  std::set<DeviceHealthSubscriber*> subscribers_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF),
// which proto3 requires of every string field.
bool IsValidUtf8(std::string_view text);

// DraDriver::SetUnhealthyDevices() on `table`: every listed device Unhealthy with `message` when
// `unhealthy` names it, else Healthy; the first error of Set(), the other devices still set.
[[nodiscard]] absl::Status SetUnhealthyDevices(DeviceHealthTable& table,
                                               const std::set<std::string>& unhealthy,
                                               const std::string& message);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_DEVICE_HEALTH_H_
