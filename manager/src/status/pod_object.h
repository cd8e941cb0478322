// The v1 Pod object kdp-manager shows in its local API for a pod it admitted: what the API server
// keeps of the pod's spec (containers with their resources and claims, resourceClaims, nodeName)
// and the status the kubelet writes for a running pod (phase Running; the conditions
// PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled; a
// containerStatus per container, running, with allocatedResourcesStatus naming each device and
// its health; init containers terminated Completed, sidecars running; resourceClaimStatuses for
// claims made from templates; qosClass), so that kubectl get, describe and wait read it as on a
// cluster's node.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_STATUS_POD_OBJECT_H_
#define KDP_MANAGER_SRC_STATUS_POD_OBJECT_H_

#include <functional>
#include <string>

#include "absl/time/time.h"
#include "manager/src/podmanager/pod_manager.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

// The health the kubelet reports for one allocated device: "Healthy", "Unhealthy" or "Unknown"
// (a device no plugin lists any more).
using DeviceHealthLookup =
    std::function<std::string(const std::string& resource, const std::string& device_id)>;

// The Pod for `pod` admitted on `node_name`; `started` is its creationTimestamp, startTime and
// every container's startedAt (the manager learns of a pod and starts it at once).
nlohmann::json PodObject(const AdmittedPod& pod, const std::string& node_name, absl::Time started,
                         const DeviceHealthLookup& health);

// The Pod for a pod the manager refused (`result.admitted` false), as the cluster shows it: the
// kubelet's rejection (phase Failed, its reason, message "Pod was rejected: <message>",
// spec.nodeName set), or the scheduler's (reason FailedScheduling: phase Pending, PodScheduled
// False with reason Unschedulable and the message, no nodeName). `at` is its creationTimestamp.
nlohmann::json RejectedPodObject(const AdmitResult& result, const std::string& node_name,
                                 absl::Time at);

// `object` (PodObject or RejectedPodObject) written over the Pod an API client sent: the client's
// metadata (labels, annotations) and spec are kept, the manager's identity fields (name,
// namespace, uid, creationTimestamp), the spec fields the client left out (nodeName and the API
// server's defaults) and the status are the manager's. `submitted` null: `object` unchanged.
nlohmann::json WithSubmitted(nlohmann::json object, const nlohmann::json& submitted);

// The pod's QoS class as the API server computes it (qos.GetPodQOS) from cpu and memory:
// "Guaranteed" when every container limits both with requests equal to the limits,
// "BestEffort" when no container requests or limits either, "Burstable" otherwise. Only limits
// are in the model: a request is its limit, as the API server defaults it.
std::string QosClass(const Pod& pod);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_STATUS_POD_OBJECT_H_
