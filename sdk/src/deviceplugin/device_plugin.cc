#include "kdp/device_plugin.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sdk/src/deviceplugin/device_state.h"

namespace kdp {

DevicePlugin::DevicePlugin(std::string resource_name)
    : resource_name_(std::move(resource_name)),
      state_(std::make_shared<internal::DeviceState>(resource_name_)) {}

DevicePlugin::~DevicePlugin() = default;

absl::StatusOr<ContainerAllocation> DevicePlugin::Allocate(const AllocateRequest& request) {
  return DefaultAllocate(request);
}

absl::Status DevicePlugin::SetHealth(absl::Span<const std::string> ids, Health health,
                                     std::string_view message) {
  return state_->SetHealth(ids, health, message);
}

absl::Status DevicePlugin::SetHealth(const std::string& id, Health health,
                                     std::string_view message) {
  return state_->SetHealth(absl::MakeConstSpan(&id, 1), health, message);
}

absl::Status DevicePlugin::SetUnhealthyDevices(const std::set<std::string>& unhealthy,
                                               std::string_view message) {
  return state_->SetUnhealthy(unhealthy, message);
}

absl::Status DevicePlugin::Refresh() { return Publish(); }

absl::Status DevicePlugin::Publish() {
  absl::StatusOr<std::vector<Device>> devices = Discover();
  absl::Status status = devices.ok() ? state_->Replace(*std::move(devices)) : devices.status();
  state_->RecordDiscovery(status);
  return status;
}

std::vector<Device> DevicePlugin::Devices() const { return state_->Snapshot()->devices; }

absl::StatusOr<ContainerAllocation> DevicePlugin::DefaultAllocate(
    const AllocateRequest& request) const {
  internal::DeviceSnapshot snapshot = state_->Snapshot();
  ContainerAllocation allocation;
  auto append_unique = [](auto& list, const auto& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
  };
  for (const std::string& id : request.device_ids) {
    const Device* found = snapshot->Find(id);
    if (found == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("device \"", id, "\" is not in the inventory of ", resource_name_));
    }
    const Device& device = *found;
    for (const DeviceSpec& spec : device.specs) append_unique(allocation.devices, spec);
    for (const Mount& mount : device.mounts) append_unique(allocation.mounts, mount);
    for (const std::string& cdi : device.cdi_devices) append_unique(allocation.cdi_devices, cdi);
    for (const auto& [name, value] : device.envs) allocation.envs.emplace(name, value);
  }
  return allocation;
}

AllocateRequest DevicePlugin::InInventoryOrder(const AllocateRequest& request) const {
  std::set<std::string> requested(request.device_ids.begin(), request.device_ids.end());
  AllocateRequest in_order;
  for (const Device& device : state_->Snapshot()->devices) {
    if (requested.erase(device.id) != 0) in_order.device_ids.push_back(device.id);
  }
  in_order.device_ids.insert(in_order.device_ids.end(), requested.begin(), requested.end());
  return in_order;
}

}  // namespace kdp
