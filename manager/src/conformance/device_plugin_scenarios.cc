#include "manager/src/conformance/device_plugin_scenarios.h"

#include "manager/src/conformance/device_plugin_checks.h"

namespace kdp::manager::conformance {

const std::vector<Scenario>& DevicePluginScenarios() {
  static const auto* const kScenarios = new std::vector<Scenario>{
      {"dp.register", "registers on kubelet.sock once it serves, and sends a first device list",
       "Register validates version v1beta1 and the extended resource name, then dials the "
       "plugin's socket (a file name in the device-plugins directory) synchronously and calls "
       "GetDevicePluginOptions before it answers; it then opens ListAndWatch",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go (RegisterPlugin, validation); "
       "handler.go (connectClient)",
       CheckRegister},
      {"dp.options", "serves every RPC its options advertise",
       "GetDevicePluginOptions decides whether the kubelet calls GetPreferredAllocation (before "
       "choosing devices) and PreStartContainer (before each container starts); an advertised "
       "RPC that fails fails the pod",
       "pkg/kubelet/cm/devicemanager/manager.go (callGetPreferredAllocationIfAvailable, "
       "callPreStartContainerIfNeeded)",
       CheckOptions},
      {"dp.devices", "lists devices with unique, non-empty IDs and valid health and NUMA nodes",
       "the kubelet counts a device per ID (duplicates collapse), treats any health other than "
       "\"Healthy\" as unhealthy and builds topology hints from the NUMA node IDs",
       "pkg/kubelet/cm/devicemanager/manager.go (genericDeviceUpdateCallback); topology_hints.go",
       CheckDevices},
      {"dp.health-full-list", "sends a device's health change as a new full list",
       "every ListAndWatch message replaces the resource's whole device list: a device left out "
       "of a message is gone from the node",
       "pkg/kubelet/cm/devicemanager/manager.go (genericDeviceUpdateCallback)",
       CheckHealthFullList},
      {"dp.allocate", "answers Allocate with a container response the runtime can apply",
       "the kubelet admits a pod only once Allocate answered (it refuses an answer without "
       "container responses and reads the first; the API asks for one per container request) "
       "and hands its device nodes, mounts, environment and CDI devices to the container "
       "runtime, which needs absolute paths and cgroup permissions of r, w and m",
       "pkg/kubelet/cm/devicemanager/manager.go (allocateContainerResources); "
       "CRI DeviceSpec/Mount; CDI device names",
       CheckAllocate},
      {"dp.preferred-allocation",
       "honours must_include and the allocation size in GetPreferredAllocation",
       "the API asks for `allocation_size` devices among `available_deviceIDs` including "
       "`must_include_deviceIDs` (devices the container already holds or topology requires); "
       "the kubelet takes the answer as advice (what is available of it, the rest filled in), so "
       "an answer that drops must_include silently loses the plugin's choice",
       "pkg/kubelet/cm/devicemanager/manager.go (filterByAffinity, "
       "callGetPreferredAllocationIfAvailable)",
       CheckPreferredAllocation},
      {"dp.kubelet-restart", "registers again after a kubelet restart",
       "a starting kubelet removes every socket in the device-plugins directory and serves "
       "kubelet.sock anew; it never dials a plugin by itself, so the resource stays at 0 "
       "allocatable until the plugin registers again (removed after 5 minutes)",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go (CleanupPluginDirectory); "
       "kubernetes#121994",
       CheckKubeletRestart},
      {"dp.plugin-restart", "serves and registers again after its own crash",
       "a crashed plugin's socket file stays in the device-plugins directory; the restarted "
       "plugin must serve on it again and register, or its resource stays unavailable",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go (Start removes the old socket)",
       CheckPluginRestart},
      {"dp.sigterm", "exits cleanly on SIGTERM and removes its socket",
       "a DaemonSet pod gets SIGTERM and then SIGKILL after its grace period; a socket left "
       "behind is hygiene, not safety: the kubelet removes stale sockets when it starts, but "
       "until then tools and a restarted plugin find it",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go (Stop removes the socket)",
       CheckSigterm},
      {"dp.unexpected-calls", "survives calls the API allows that it may not expect",
       "the kubelet opens a new ListAndWatch stream before an old one ends (re-registration) and "
       "asks GetDevicePluginOptions at every registration; it sends one container per Allocate "
       "and calls the optional RPCs only when advertised, but the API allows more and other "
       "clients (a newer kubelet, a debugging tool) may send it: an error answer is fine, a crash "
       "takes the node's devices away",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go; kubernetes#121994",
       CheckUnexpectedCalls},
  };
  return *kScenarios;
}

}  // namespace kdp::manager::conformance
