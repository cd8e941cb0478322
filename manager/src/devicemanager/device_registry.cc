#include "manager/src/devicemanager/device_registry.h"

#include <utility>

namespace kdp::manager {

int64_t ResourceDevices::allocatable() const {
  if (healthy_count >= 0) return healthy_count;
  int64_t healthy = 0;
  for (const auto& [id, info] : devices) healthy += info.healthy ? 1 : 0;
  return healthy;
}

void ResourceDevices::CountHealthy() {
  healthy_count = -1;
  healthy_count = allocatable();
}

std::set<std::string> ResourceDevices::Healthy() const {
  std::set<std::string> out;
  for (const auto& [id, info] : devices) {
    if (info.healthy) out.insert(id);
  }
  return out;
}

std::map<std::string, DeviceInfo> ParseSnapshot(const v1beta1::ListAndWatchResponse& snapshot,
                                                SnapshotAnomalies* anomalies) {
  SnapshotAnomalies found;
  std::map<std::string, DeviceInfo> devices;
  for (const v1beta1::Device& device : snapshot.devices()) {
    const bool healthy = device.health() == "Healthy";
    if (!healthy && device.health() != "Unhealthy" && found.other_health++ == 0) {
      found.health_example = device.health();
    }
    if (device.id().empty()) ++found.empty_ids;
    auto [it, inserted] = devices.try_emplace(device.id());
    DeviceInfo& info = it->second;
    if (!inserted) {
      if (found.duplicate_ids++ == 0) found.duplicate_example = device.id();
      // A device the plugin also called unhealthy is never handed out.
      info.healthy = info.healthy && healthy;
      info.numa_nodes.clear();
    } else {
      info.healthy = healthy;
    }
    for (const v1beta1::NUMANode& node : device.topology().nodes()) {
      info.numa_nodes.push_back(node.id());
    }
  }
  if (anomalies != nullptr) *anomalies = std::move(found);
  return devices;
}

void DeviceRegistry::Connected(const std::string& resource, const std::string& endpoint) {
  std::shared_ptr<const ResourceDevices> previous;  // released outside the lock
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const ResourceDevices>& entry = resources_[resource];
  auto next = entry != nullptr ? std::make_shared<ResourceDevices>(*entry)
                               : std::make_shared<ResourceDevices>();
  if (entry == nullptr) next->healthy_count = 0;
  next->name = resource;
  next->connected = true;
  next->endpoint = endpoint;
  previous = std::exchange(entry, std::move(next));
}

void DeviceRegistry::Update(const std::string& resource,
                            const v1beta1::ListAndWatchResponse& snapshot) {
  auto next = std::make_shared<ResourceDevices>();
  next->name = resource;
  next->devices = ParseSnapshot(snapshot);
  next->CountHealthy();
  std::shared_ptr<const ResourceDevices> previous;  // released outside the lock
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const ResourceDevices>& entry = resources_[resource];
  if (entry != nullptr) {
    next->connected = entry->connected;
    next->endpoint = entry->endpoint;
  }
  previous = std::exchange(entry, std::move(next));
}

void DeviceRegistry::Publish(std::shared_ptr<const ResourceDevices> devices) {
  std::shared_ptr<const ResourceDevices> previous;  // released outside the lock
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const ResourceDevices>& entry = resources_[devices->name];
  previous = std::exchange(entry, std::move(devices));
}

void DeviceRegistry::Disconnected(const std::string& resource) {
  std::shared_ptr<const ResourceDevices> previous;  // released outside the lock
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return;
  auto next = std::make_shared<ResourceDevices>(*it->second);
  next->connected = false;
  for (auto& [id, info] : next->devices) info.healthy = false;
  next->healthy_count = 0;
  previous = std::exchange(it->second, std::move(next));
}

void DeviceRegistry::Restore(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  if (resources_.contains(resource)) return;
  auto entry = std::make_shared<ResourceDevices>();
  entry->name = resource;
  entry->healthy_count = 0;
  resources_[resource] = std::move(entry);
}

void DeviceRegistry::Remove(const std::string& resource) {
  std::shared_ptr<const ResourceDevices> previous;  // released outside the lock
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return;
  previous = std::move(it->second);
  resources_.erase(it);
}

std::optional<ResourceDevices> DeviceRegistry::Get(const std::string& resource) const {
  std::shared_ptr<const ResourceDevices> entry = GetShared(resource);
  if (entry == nullptr) return std::nullopt;
  return *entry;
}

std::vector<ResourceDevices> DeviceRegistry::List() const {
  std::vector<ResourceDevices> out;
  for (const auto& entry : Shared()) out.push_back(*entry);
  return out;
}

std::shared_ptr<const ResourceDevices> DeviceRegistry::GetShared(
    const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  return it == resources_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const ResourceDevices>> DeviceRegistry::Shared() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const ResourceDevices>> out;
  out.reserve(resources_.size());
  for (const auto& [name, entry] : resources_) out.push_back(entry);
  return out;
}

bool DeviceRegistry::Has(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  return resources_.contains(resource);
}

}  // namespace kdp::manager
