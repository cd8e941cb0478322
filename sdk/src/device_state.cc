#include "sdk/src/device_state.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

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
  }
  absl::MutexLock lock(&mu_);
  discovered_health_.clear();
  discovered_health_.reserve(discovered.size());
  for (const Device& device : discovered) discovered_health_.push_back(device.health);
  PublishLocked(std::move(discovered));
  return absl::OkStatus();
}

void DeviceState::SetHealth(absl::Span<const std::string> ids, Health health) {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) overrides_[id] = health;
  // The snapshot is the discovered inventory with health re-derived below.
  PublishLocked(snapshot_->devices);
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
    auto it = overrides_.find(devices[i].id);
    if (it == overrides_.end()) it = overrides_.find(PhysicalId(devices[i].id));
    devices[i].health = it != overrides_.end() ? it->second : discovered_health_[i];
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
