#include "manager/src/devicemanager/run_options.h"

#include <set>

#include "common/logging.h"

namespace kdp::manager {
namespace {

// Keeps the first value of each key; logs a different later value, as the kubelet does.
void MergeMap(const google::protobuf::Map<std::string, std::string>& from, const char* what,
              std::map<std::string, std::string>* into) {
  // Protobuf maps iterate in no fixed order; sort for deterministic logs.
  std::map<std::string, std::string> sorted(from.begin(), from.end());
  for (const auto& [key, value] : sorted) {
    auto [it, inserted] = into->emplace(key, value);
    if (!inserted && it->second != value) {
      KDP_LOG_WARNING("Conflicting value from device plugins; keeping the first", "kind", what,
                      "name", key, "kept", it->second, "ignored", value);
    }
  }
}

}  // namespace

RunContainerOptions MergeRunContainerOptions(
    const std::vector<const v1beta1::ContainerAllocateResponse*>& responses) {
  RunContainerOptions out;
  std::map<std::string, std::string> mount_hosts, device_hosts;
  std::set<std::string> cdi_seen;
  for (const v1beta1::ContainerAllocateResponse* response : responses) {
    MergeMap(response->envs(), "env", &out.envs);
    MergeMap(response->annotations(), "annotation", &out.annotations);
    for (const v1beta1::Mount& mount : response->mounts()) {
      auto [it, inserted] = mount_hosts.emplace(mount.container_path(), mount.host_path());
      if (inserted) {
        out.mounts.push_back(mount);
      } else if (it->second != mount.host_path()) {
        KDP_LOG_WARNING("Container path mounted from two host paths; keeping the first",
                        "containerPath", mount.container_path(), "kept", it->second, "ignored",
                        mount.host_path());
      }
    }
    for (const v1beta1::DeviceSpec& device : response->devices()) {
      auto [it, inserted] = device_hosts.emplace(device.container_path(), device.host_path());
      if (inserted) {
        out.devices.push_back(device);
      } else if (it->second != device.host_path()) {
        KDP_LOG_WARNING("Container device path from two host paths; keeping the first",
                        "containerPath", device.container_path(), "kept", it->second, "ignored",
                        device.host_path());
      }
    }
    for (const v1beta1::CDIDevice& cdi : response->cdi_devices()) {
      if (cdi_seen.insert(cdi.name()).second) out.cdi_devices.push_back(cdi.name());
    }
  }
  return out;
}

}  // namespace kdp::manager
