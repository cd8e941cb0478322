// The device-plugin scenarios of kdp-conformance, in the order they run: the kubelet's behaviour
// towards a device plugin (pkg/kubelet/cm/devicemanager) that a plugin must cope with, each
// judged against the embedded kdp-manager. docs/conformance.md describes each one.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_SCENARIOS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_SCENARIOS_H_

#include <vector>

#include "manager/src/conformance/scenario.h"

namespace kdp::manager::conformance {

const std::vector<Scenario>& DevicePluginScenarios();

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_SCENARIOS_H_
