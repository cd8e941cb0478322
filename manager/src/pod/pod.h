// The Pod model kdp-manager admits: only what the kubelet's device manager reads from a v1 Pod
// (identity, container order and kind, extended-resource counts), plus the other resource limits
// as written for display. Built by ParsePodManifest (pod_manifest.h), which has already applied
// the API server's validation, so every extended-resource count here is a non-negative integer
// whose request equals its limit.
//
// Thread-safety: plain value types; externally synchronized.
#ifndef KDP_MANAGER_SRC_POD_POD_H_
#define KDP_MANAGER_SRC_POD_POD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kdp::manager {

// The three container flavours the device manager distinguishes (ManagerImpl.Allocate in the
// kubelet's pkg/kubelet/cm/devicemanager/manager.go): devices of a finished regular init container
// are reusable by later containers of the same pod; a sidecar (restartable init container) keeps
// its devices for the pod's lifetime, like an app container.
enum class ContainerKind {
  kInit,     // spec.initContainers[i] without restartPolicy
  kSidecar,  // spec.initContainers[i] with restartPolicy: Always
  kApp,      // spec.containers[i]
};

// container.resources.claims[]: a claim of the pod (by its pod-level name) the container uses,
// optionally only one request of it.
struct ContainerClaim {
  std::string name;     // a pod.spec.resourceClaims[].name
  std::string request;  // empty: every request of the claim

  friend bool operator==(const ContainerClaim&, const ContainerClaim&) = default;
};

// pod.spec.resourceClaims[]: exactly one of the two sources is set.
struct PodResourceClaim {
  std::string name;                          // unique within the pod
  std::string resource_claim_name;           // resourceClaimName: an existing claim
  std::string resource_claim_template_name;  // resourceClaimTemplateName: a claim per pod

  friend bool operator==(const PodResourceClaim&, const PodResourceClaim&) = default;
};

struct Container {
  std::string name;
  ContainerKind kind = ContainerKind::kApp;
  // Extended resources (IsExtendedResourceName) -> integer device count, from the limits (a
  // request, when present, equals its limit). Zero counts are kept; the allocator skips them.
  std::map<std::string, int64_t> extended_resources;
  // Every other resource limit as written in the manifest (cpu, memory, hugepages-<size>,
  // ephemeral-storage), e.g. {"cpu": "500m"}.
  std::map<std::string, std::string> other_limits;
  // resources.claims in manifest order.
  std::vector<ContainerClaim> claims = {};

  friend bool operator==(const Container&, const Container&) = default;
};

struct Pod {
  std::string namespace_ = "default";
  std::string name;
  // metadata.uid as written, else a random UUID v4 generated at parse time.
  std::string uid;
  // spec.initContainers in manifest order; kinds kInit or kSidecar.
  std::vector<Container> init_containers;
  // spec.containers in manifest order; kind kApp.
  std::vector<Container> containers;
  // spec.resourceClaims in manifest order.
  std::vector<PodResourceClaim> resource_claims = {};
  // status.resourceClaimStatuses: pod claim name → the name of the claim generated for this pod
  // from its template (set at admission, as the resourceclaim controller does).
  std::map<std::string, std::string> resource_claim_statuses = {};
  // metadata.deletionTimestamp is set: the deletion started (its claims may be unprepared
  // already) and completes once NodeUnprepareResources succeeds. Recorded, so that a restart
  // finishes the deletion instead of bringing the pod back as running.
  bool terminating = false;
  // The Pod object as the API client that created the pod sent it (JSON text: its labels,
  // annotations, kubectl's last-applied configuration, the spec as written), from which the local
  // API shows the pod (status/status_manager.h); empty for a pod from kdpctl. Kept with the pod,
  // so the API shows the same object after a restart.
  std::string api_object = {};

  friend bool operator==(const Pod&, const Pod&) = default;
};

// The pod's containers in the order the kubelet admits and starts them: init containers (regular
// and sidecars) in order, then app containers in order.
std::vector<const Container*> ContainersInAdmissionOrder(const Pod& pod);

// The pod's effective request of extended resource `resource`, as the scheduler, the kubelet's
// predicate and its pod-scope topology hints count it (resource.PodLimits without overhead): the
// larger of what the app containers and sidecars hold together and what any regular init
// container holds next to the sidecars started before it.
int64_t PodDeviceRequest(const Pod& pod, const std::string& resource);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_POD_H_
