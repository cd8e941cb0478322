#include "sdk/src/deviceplugin/device_state.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace kdp::internal {

const Device* Inventory::Find(const std::string& id) const {
  auto it = index.find(id);
  return it == index.end() ? nullptr : &devices[it->second];
}

absl::Status DeviceState::Replace(std::vector<Device> discovered) {
  std::set<std::string> seen;
  for (const Device& device : discovered) {
    if (device.id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Discover() of ", resource_name_, " returned a device with an empty ID"));
    }
    if (!seen.insert(device.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("Discover() of ", resource_name_,
                                                     " returned device ID \"", device.id,
                                                     "\" more than once"));
    }
    if (device.health != Health::kHealthy && device.health != Health::kUnhealthy) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Discover() of ", resource_name_, " returned device \"", device.id, "\" with health ",
          HealthName(device.health), " (the device plugin API has Healthy and Unhealthy only)"));
    }
  }
  absl::MutexLock lock(&mu_);
  discovered_health_.clear();
  discovered_health_.reserve(discovered.size());
  for (const Device& device : discovered) discovered_health_.push_back(device.health);
  PublishLocked(std::move(discovered));
  return absl::OkStatus();
}

absl::Status DeviceState::SetHealth(absl::Span<const std::string> ids, Health health,
                                    std::string_view message) {
  for (const std::string& id : ids) {
    if (absl::Status valid = ValidateHealth(resource_name_, id, health, message, false);
        !valid.ok()) {
      return valid;
    }
  }
  if (!message.empty() && !ids.empty()) {
    KDP_LOG_INFO("Device health set", "resource", resource_name_, "devices",
                 absl::StrJoin(ids, ","), "health", HealthName(health), "message",
                 std::string(message));
  }
  absl::MutexLock lock(&mu_);
  // The snapshot is the discovered inventory with health re-derived below.
  if (overrides_.Set(ids, health, message)) PublishLocked(snapshot_->devices);
  return absl::OkStatus();
}

absl::Status DeviceState::SetUnhealthy(const std::set<std::string>& unhealthy,
                                       std::string_view message) {
  for (const std::string& id : unhealthy) {
    if (absl::Status valid = ValidateHealth(resource_name_, id, Health::kUnhealthy, message, false);
        !valid.ok()) {
      return valid;
    }
  }
  absl::MutexLock lock(&mu_);
  if (overrides_.ReplaceWithUnhealthy(unhealthy, message)) PublishLocked(snapshot_->devices);
  return absl::OkStatus();
}

DeviceSnapshot DeviceState::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return snapshot_;
}

void DeviceState::Subscribe(DeviceSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.insert(subscriber);
  subscriber->OnDevices(snapshot_);
}

void DeviceState::Unsubscribe(DeviceSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(subscriber);
}

int DeviceState::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

void DeviceState::RecordDiscovery(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  discovery_.last = status;
  if (!status.ok()) ++discovery_.failures;
}

DiscoveryRecord DeviceState::discovery() const {
  absl::MutexLock lock(&mu_);
  return discovery_;
}

void DeviceState::PublishLocked(std::vector<Device> devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    // The device's own override wins; then its physical device's (a replica's GPU).
    const HealthOverride* set = overrides_.Find(devices[i].id);
    devices[i].health = set != nullptr ? set->health : discovered_health_[i];
  }
  // Full-snapshot semantics make a repeat harmless, but an unchanged list is not worth a message
  // (nor, on the kubelet side, a checkpoint write).
  if (generation_ > 0 && devices == snapshot_->devices) return;
  auto next = std::make_shared<Inventory>();
  next->devices = std::move(devices);
  next->index.reserve(next->devices.size());
  for (size_t i = 0; i < next->devices.size(); ++i) next->index.emplace(next->devices[i].id, i);
  snapshot_ = std::move(next);
  ++generation_;
  for (DeviceSubscriber* subscriber : subscribers_) subscriber->OnDevices(snapshot_);
}

}  // namespace kdp::internal
