// The container runtime options a container's devices add up to: the kubelet's
// GetDeviceRunContainerOptions merge of the cached Allocate answers of every resource the
// container holds (deviceRunContainerOptions in pkg/kubelet/cm/devicemanager/pod_devices.go).
// Conflicts never fail; the first answer wins.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_RUN_OPTIONS_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_RUN_OPTIONS_H_

#include <map>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::manager {

struct RunContainerOptions {
  std::map<std::string, std::string> envs;
  std::vector<v1beta1::Mount> mounts;
  std::vector<v1beta1::DeviceSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

// Merges `responses` in order: envs and annotations by name, mounts and devices by container
// path, first one wins (a conflicting value is logged, never an error); CDI device names
// de-duplicated in order of first appearance.
RunContainerOptions MergeRunContainerOptions(
    const std::vector<const v1beta1::ContainerAllocateResponse*>& responses);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_RUN_OPTIONS_H_
