#include "sdk/src/dra/device_health.h"

#include <algorithm>
#include <utility>

namespace kdp::internal {

void DeviceHealthTable::SetDevices(const std::vector<DraDevice>& devices) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const DraDevice& device : devices) names.push_back(device.name);
  std::sort(names.begin(), names.end());
  absl::MutexLock lock(&mu_);
  if (names == devices_) return;
  devices_ = std::move(names);
  SignalLocked();
}

absl::Status DeviceHealthTable::Set(absl::Span<const std::string> devices, Health health,
                                    std::string_view message) {
  for (const std::string& device : devices) {
    if (absl::Status valid = ValidateHealth(driver_, device, health, message, true); !valid.ok()) {
      return valid;
    }
  }
  absl::MutexLock lock(&mu_);
  const std::vector<DeviceHealthEntry> before = SnapshotLocked();
  if (overrides_.Set(devices, health, message) && SnapshotLocked() != before) SignalLocked();
  return absl::OkStatus();
}

absl::Status DeviceHealthTable::SetUnhealthy(const std::set<std::string>& unhealthy,
                                             std::string_view message) {
  for (const std::string& device : unhealthy) {
    if (absl::Status valid = ValidateHealth(driver_, device, Health::kUnhealthy, message, true);
        !valid.ok()) {
      return valid;
    }
  }
  absl::MutexLock lock(&mu_);
  const std::vector<DeviceHealthEntry> before = SnapshotLocked();
  if (overrides_.ReplaceWithUnhealthy(unhealthy, message) && SnapshotLocked() != before) {
    SignalLocked();
  }
  return absl::OkStatus();
}

std::vector<DeviceHealthEntry> DeviceHealthTable::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return SnapshotLocked();
}

std::vector<DeviceHealthEntry> DeviceHealthTable::SnapshotLocked() const {
  std::vector<DeviceHealthEntry> entries;
  entries.reserve(devices_.size());
  for (const std::string& name : devices_) {
    const HealthOverride* set = overrides_.Find(name);
    entries.push_back({.device = name,
                       .health = set != nullptr ? set->health : Health::kHealthy,
                       .message = set != nullptr ? set->message : ""});
  }
  return entries;
}

int64_t DeviceHealthTable::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

void DeviceHealthTable::Subscribe(DeviceHealthSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.insert(subscriber);
  subscriber->OnHealthChanged();
}

void DeviceHealthTable::Unsubscribe(DeviceHealthSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(subscriber);
}

void DeviceHealthTable::SignalLocked() {
  ++generation_;
  for (DeviceHealthSubscriber* subscriber : subscribers_) subscriber->OnHealthChanged();
}

}  // namespace kdp::internal
