#include "manager/src/status/pod_object.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "manager/src/resourceapi/kube_time.h"

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
  Json init = Json::array();
  Json app = Json::array();
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
    (is_init ? init : app).push_back(ContainerSpec(container.spec));
    (is_init ? init_statuses : app_statuses).push_back(std::move(status));
  }
  Json spec = {{"nodeName", node_name},
               {"containers", std::move(app)},
               {"restartPolicy", "Always"},
               {"schedulerName", "default-scheduler"},
               {"terminationGracePeriodSeconds", 30},
               {"dnsPolicy", "ClusterFirst"},
               {"enableServiceLinks", true},
               {"priority", 0},
               {"preemptionPolicy", "PreemptLowerPriority"}};
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
          {"metadata",
           {{"name", pod.name},
            {"namespace", pod.namespace_},
            {"uid", pod.uid},
            {"creationTimestamp", at}}},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

}  // namespace kdp::manager
