#include "manager/src/devicemanager/device_registry.h"

namespace kdp::manager {

int64_t ResourceDevices::allocatable() const {
  int64_t healthy = 0;
  for (const auto& [id, info] : devices) healthy += info.healthy ? 1 : 0;
  return healthy;
}

std::set<std::string> ResourceDevices::Healthy() const {
  std::set<std::string> out;
  for (const auto& [id, info] : devices) {
    if (info.healthy) out.insert(id);
  }
  return out;
}

void DeviceRegistry::Connected(const std::string& resource, const std::string& endpoint) {
  absl::MutexLock lock(&mu_);
  ResourceDevices& entry = resources_[resource];
  entry.name = resource;
  entry.connected = true;
  entry.endpoint = endpoint;
}

void DeviceRegistry::Update(const std::string& resource,
                            const v1beta1::ListAndWatchResponse& snapshot) {
  std::map<std::string, DeviceInfo> devices;
  for (const v1beta1::Device& device : snapshot.devices()) {
    DeviceInfo info;
    info.healthy = device.health() == "Healthy";
    for (const v1beta1::NUMANode& node : device.topology().nodes()) {
      info.numa_nodes.push_back(node.id());
    }
    devices[device.id()] = std::move(info);
  }
  absl::MutexLock lock(&mu_);
  ResourceDevices& entry = resources_[resource];
  entry.name = resource;
  entry.devices = std::move(devices);
}

void DeviceRegistry::Disconnected(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return;
  it->second.connected = false;
  for (auto& [id, info] : it->second.devices) info.healthy = false;
}

void DeviceRegistry::Restore(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  if (resources_.contains(resource)) return;
  ResourceDevices& entry = resources_[resource];
  entry.name = resource;
}

void DeviceRegistry::Remove(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  resources_.erase(resource);
}

std::optional<ResourceDevices> DeviceRegistry::Get(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return std::nullopt;
  return it->second;
}

std::vector<ResourceDevices> DeviceRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<ResourceDevices> out;
  out.reserve(resources_.size());
  for (const auto& [name, entry] : resources_) out.push_back(entry);
  return out;
}

bool DeviceRegistry::Has(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  return resources_.contains(resource);
}

}  // namespace kdp::manager
