#include "manager/src/conformance/dra_driver_scenarios.h"

#include "manager/src/conformance/dra_driver_checks.h"

namespace kdp::manager::conformance {

const std::vector<Scenario>& DraDriverScenarios() {
  static const auto* const kScenarios = new std::vector<Scenario>{
      {"dra.register", "registers through plugins_registry and serves its DRA socket",
       "the plugin watcher finds the registration socket in plugins_registry, calls GetInfo, "
       "accepts type DRAPlugin with a driver name and supported versions listing v1.DRAPlugin "
       "or v1beta1.DRAPlugin (the plugin's order decides), then dials the endpoint and keeps "
       "the connection; a driver with no connected instance for 30 s has its slices wiped",
       "pkg/kubelet/pluginmanager/operationexecutor (GetInfo, ValidatePlugin); "
       "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (validateSupportedServices, wipe)",
       CheckDraRegister},
      {"dra.resource-slices",
       "publishes ResourceSlices owned by the Node, in complete pools, with unique device names",
       "the API server refuses an invalid slice; the scheduler allocates only from a pool whose "
       "slices of its highest generation number resourceSliceCount; the Node's ownerReference "
       "lets the garbage collector remove the slices with the node",
       "KEP-4381; k8s.io/dynamic-resource-allocation/resourceslice (owner); "
       "k8s.io/dynamic-resource-allocation/structured (incomplete pools)",
       CheckResourceSlices},
      {"dra.prepare",
       "prepares exactly the allocated devices, with CDI IDs defined by valid CDI specs",
       "at admission the kubelet sends the claim's namespace, UID and name; the driver reads "
       "the allocation itself and answers the devices with their CDI device IDs, which the "
       "container runtime resolves from the CDI spec directory (an unresolvable ID fails the "
       "container with CreateContainerError)",
       "pkg/kubelet/cm/dra/manager.go (prepareResources); container-device-interface SPEC.md",
       CheckPrepare},
      {"dra.prepare-idempotent", "answers a repeated NodePrepareResources with the same devices",
       "the kubelet prepares a claim again when it could not record the first answer (a crash "
       "before its checkpoint, a timeout) and on sandbox re-creation: the dra API requires "
       "NodePrepareResources to be idempotent",
       "k8s.io/kubelet/pkg/apis/dra/v1/api.proto; KEP-4381 (kubelet contract)",
       CheckPrepareIdempotent},
      {"dra.prepare-after-reboot", "writes a prepared claim's CDI specs again when they were lost",
       "the CDI directory (/var/run/cdi) is a tmpfs: after a reboot the driver's checkpoint says "
       "a claim is prepared but its specs are gone, and the kubelet prepares it again for the "
       "pod's new sandbox; an answer naming specs that do not exist fails the container",
       "kubernetes#141433; kubernetes-sigs/dra-example-driver#259", CheckPrepareAfterReboot},
      {"dra.unprepare", "unprepares a claim, removing its CDI specs",
       "when the claim's last pod is gone the kubelet calls NodeUnprepareResources and forgets "
       "the claim once it succeeds",
       "pkg/kubelet/cm/dra/manager.go (unprepareResources)", CheckUnprepare},
      {"dra.unprepare-unknown", "answers NodeUnprepareResources of an unknown claim without error",
       "the kubelet calls NodeUnprepareResources again when it could not record the first "
       "answer, and after a restart unprepares every claim its checkpoint names, including ones "
       "a driver never prepared or already unprepared; an error blocks the pod's deletion "
       "forever",
       "k8s.io/kubelet/pkg/apis/dra/v1/api.proto; kubernetes#116411", CheckUnprepareUnknown},
      {"dra.driver-restart",
       "unprepares, after its own crash, a claim the previous instance prepared",
       "a driver pod is restarted while claims stay prepared; the kubelet sends the unprepare "
       "to whichever instance is registered then, with only the claim's namespace, UID and "
       "name: the driver must keep its own record of what it prepared",
       "KEP-4381 (driver duties); kubernetes-sigs/dra-example-driver (checkpoint)",
       CheckDriverRestart},
      {"dra.kubelet-restart", "publishes its ResourceSlices again after a kubelet restart",
       "a starting kubelet deletes every ResourceSlice of its node (devices of drivers that may "
       "not come back must not be scheduled) and registers the drivers again from their sockets "
       "in plugins_registry; the driver must notice and publish again",
       "pkg/kubelet/cm/dra/plugin (wipe at start); "
       "k8s.io/dynamic-resource-allocation/resourceslice (re-create deleted slices)",
       CheckDraKubeletRestart},
      {"dra.health", "sends full device lists on its health stream, when it advertises one",
       "the kubelet opens NodeWatchResources for a driver advertising v1.DRAResourceHealth or "
       "v1alpha1.DRAResourceHealth; every message replaces the driver's whole health list (a "
       "device left out becomes Unknown)",
       "KEP-4680; k8s.io/kubelet/pkg/apis/dra-health; pkg/kubelet/cm/dra/healthinfo.go",
       CheckDraHealth},
      {"dra.sigterm", "exits on SIGTERM and removes its sockets",
       "a DaemonSet pod gets SIGTERM and then SIGKILL after its grace period; the plugin "
       "watcher deregisters a driver when its registration socket is removed, and keeps "
       "dialling one left behind",
       "pkg/kubelet/pluginmanager/pluginwatcher (README); kubernetes#128696", CheckDraSigterm},
  };
  return *kScenarios;
}

}  // namespace kdp::manager::conformance
