#include "manager/src/status/pod_object.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "manager/src/admission/errors.h"
#include "manager/src/controlplane/resourceapi/kube_time.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

// spec.containers[i] / spec.initContainers[i]: what the model keeps of a container.
Json ContainerSpec(const Container& container) {
  Json limits = Json::object();
  for (const auto& [name, count] : container.extended_resources)
    limits[name] = std::to_string(count);
  for (const auto& [name, value] : container.other_limits) limits[name] = value;
  Json spec = {{"name", container.name},
               {"image", ""},
               {"imagePullPolicy", "IfNotPresent"},
               {"terminationMessagePath", "/dev/termination-log"},
               {"terminationMessagePolicy", "File"}};
  if (!limits.empty()) {
    // The API server defaults a request from its limit when the request is not given.
    spec["resources"] = {{"limits", limits}, {"requests", limits}};
  }
  if (!container.claims.empty()) {
    Json claims = Json::array();
    for (const ContainerClaim& claim : container.claims) {
      Json entry = {{"name", claim.name}};
      if (!claim.request.empty()) entry["request"] = claim.request;
      claims.push_back(std::move(entry));
    }
    spec["resources"]["claims"] = std::move(claims);
  }
  if (container.kind == ContainerKind::kSidecar) spec["restartPolicy"] = "Always";
  return spec;
}

Json Condition(const char* type, const std::string& at) {
  return {
      {"type", type}, {"status", "True"}, {"lastProbeTime", nullptr}, {"lastTransitionTime", at}};
}

// The spec the API server keeps of `pod` (with its defaults), bound to `node_name` ("" when the
// scheduler did not bind it).
Json SpecOf(const Pod& pod, const std::string& node_name) {
  Json init = Json::array();
  Json app = Json::array();
  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    (container->kind == ContainerKind::kApp ? app : init).push_back(ContainerSpec(*container));
  }
  Json spec = {{"containers", std::move(app)},
               {"restartPolicy", "Always"},
               {"schedulerName", "default-scheduler"},
               {"terminationGracePeriodSeconds", 30},
               {"dnsPolicy", "ClusterFirst"},
               {"enableServiceLinks", true},
               {"priority", 0},
               {"preemptionPolicy", "PreemptLowerPriority"}};
  if (!node_name.empty()) spec["nodeName"] = node_name;
  if (!init.empty()) spec["initContainers"] = std::move(init);
  if (!pod.resource_claims.empty()) {
    Json claims = Json::array();
    for (const PodResourceClaim& claim : pod.resource_claims) {
      Json entry = {{"name", claim.name}};
      if (!claim.resource_claim_name.empty()) {
        entry["resourceClaimName"] = claim.resource_claim_name;
      }
      if (!claim.resource_claim_template_name.empty()) {
        entry["resourceClaimTemplateName"] = claim.resource_claim_template_name;
      }
      claims.push_back(std::move(entry));
    }
    spec["resourceClaims"] = std::move(claims);
  }
  return spec;
}

Json Metadata(const Pod& pod, const std::string& at) {
  return {{"name", pod.name},
          {"namespace", pod.namespace_},
          {"uid", pod.uid},
          {"creationTimestamp", at}};
}

}  // namespace

std::string QosClass(const Pod& pod) {
  bool any = false;
  bool guaranteed = true;
  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    const bool cpu = container->other_limits.contains("cpu");
    const bool memory = container->other_limits.contains("memory");
    any |= cpu || memory;
    guaranteed &= cpu && memory;
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

Json PodObject(const AdmittedPod& admitted, const std::string& node_name, absl::Time started,
               const DeviceHealthLookup& health) {
  const Pod& pod = admitted.pod;
  const std::string at = resourceapi::KubeTime(started);
  Json init_statuses = Json::array();
  Json app_statuses = Json::array();
  for (const AdmittedContainer& container : admitted.containers) {
    Json status = {
        {"name", container.spec.name}, {"image", ""}, {"imageID", ""}, {"restartCount", 0}};
    if (container.spec.kind == ContainerKind::kInit) {
      // A regular init container ran to completion before the app containers started.
      status["ready"] = false;
      status["started"] = false;
      status["state"] = {
          {"terminated",
           {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", at}, {"finishedAt", at}}}};
    } else {
      status["ready"] = true;
      status["started"] = true;
      status["state"] = {{"running", {{"startedAt", at}}}};
    }
    // allocatedResourcesStatus (KEP-4680): each device the container holds, with its health.
    Json allocated = Json::array();
    for (const auto& [resource, ids] : container.devices) {
      Json devices = Json::array();
      for (const std::string& id : ids) {
        devices.push_back(
            {{"resourceID", id}, {"health", health ? health(resource, id) : "Unknown"}});
      }
      if (!devices.empty()) allocated.push_back({{"name", resource}, {"resources", devices}});
    }
    if (!allocated.empty()) status["allocatedResourcesStatus"] = std::move(allocated);
    const bool is_init = container.spec.kind != ContainerKind::kApp;
    (is_init ? init_statuses : app_statuses).push_back(std::move(status));
  }
  Json status = {{"phase", "Running"},
                 {"conditions",
                  Json::array({Condition("PodReadyToStartContainers", at),
                               Condition("Initialized", at), Condition("Ready", at),
                               Condition("ContainersReady", at), Condition("PodScheduled", at)})},
                 {"hostIP", "127.0.0.1"},
                 {"hostIPs", Json::array({{{"ip", "127.0.0.1"}}})},
                 {"startTime", at},
                 {"containerStatuses", std::move(app_statuses)},
                 {"qosClass", QosClass(pod)}};
  if (!init_statuses.empty()) status["initContainerStatuses"] = std::move(init_statuses);
  if (!pod.resource_claim_statuses.empty()) {
    Json claim_statuses = Json::array();
    for (const auto& [name, generated] : pod.resource_claim_statuses) {
      claim_statuses.push_back({{"name", name}, {"resourceClaimName", generated}});
    }
    status["resourceClaimStatuses"] = std::move(claim_statuses);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", Metadata(pod, at)},
          {"spec", SpecOf(pod, node_name)},
          {"status", std::move(status)}};
}

Json RejectedPodObject(const AdmitResult& result, const std::string& node_name, absl::Time at) {
  const Pod& pod = result.pod.pod;
  const std::string time = resourceapi::KubeTime(at);
  const bool unscheduled = result.reason == errors::kFailedScheduling;
  Json status;
  if (unscheduled) {
    // The scheduler's condition; the pod stays Pending (kdp's scheduler does not retry it).
    status = {{"phase", "Pending"},
              {"conditions", Json::array({{{"type", "PodScheduled"},
                                           {"status", "False"},
                                           {"lastProbeTime", nullptr},
                                           {"lastTransitionTime", time},
                                           {"reason", "Unschedulable"},
                                           {"message", result.message}}})},
              {"qosClass", QosClass(pod)}};
  } else {
    // kubelet.rejectPod: the phase, reason and message it writes, nothing more.
    status = {{"phase", "Failed"},
              {"reason", result.reason},
              {"message", absl::StrCat("Pod was rejected: ", result.message)},
              {"qosClass", QosClass(pod)}};
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", Metadata(pod, time)},
          {"spec", SpecOf(pod, unscheduled ? "" : node_name)},
          {"status", std::move(status)}};
}

Json WithSubmitted(Json object, const Json& submitted) {
  if (!submitted.is_object()) return object;
  Json out = submitted;
  out["apiVersion"] = object["apiVersion"];
  out["kind"] = object["kind"];
  Json& meta = out["metadata"];
  if (!meta.is_object()) meta = Json::object();
  for (const char* key : {"name", "namespace", "uid", "creationTimestamp"}) {
    meta[key] = object["metadata"][key];
  }
  meta.erase("resourceVersion");
  Json& spec = out["spec"];
  if (!spec.is_object()) spec = Json::object();
  for (const auto& [key, value] : object["spec"].items()) {
    // The binding is the manager's, whatever the client asked for.
    if (!spec.contains(key) || key == "nodeName") spec[key] = value;
  }
  out["status"] = std::move(object["status"]);
  return out;
}

}  // namespace kdp::manager
