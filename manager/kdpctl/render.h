// kdpctl's rendering of kdp.admin.v1 messages: the JSON contract documented in docs/kdpctl.md
// (what tests and scripts parse) and the human-readable text printed without `-o json`. Kept
// header-only and free of I/O so kdpctl's main and the unit tests share one rendering: an
// admitted ApplyPod answer and each entry of ListPods go through the same AdmittedPodJson.
// Every function is a pure function of its arguments and therefore thread-safe.
//
// JSON rules: keys exactly as docs/kdpctl.md lists them, int64 counts as JSON numbers, maps
// always objects and lists always arrays (an empty one is `{}` / `[]`, never null or absent),
// protobuf map entries in key order (nlohmann::json objects are sorted) and repeated fields in
// wire order.
#ifndef KDP_MANAGER_KDPCTL_RENDER_H_
#define KDP_MANAGER_KDPCTL_RENDER_H_

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kdp/admin/v1/admin.pb.h"
#include "nlohmann/json.hpp"

namespace kdp::kdpctl {

// {"id","health","numa":[numbers]}.
inline nlohmann::json DeviceStatusJson(const kdp::admin::v1::DeviceStatus& device) {
  nlohmann::json numa = nlohmann::json::array();
  for (int64_t node : device.numa()) numa.push_back(node);
  return {{"id", device.id()},
          {"health", device.health()},
          {"numa", std::move(numa)},
          {"pod", device.pod()}};
}

// {"driver","pool","device","requests":[...],"cdi_device_ids":[...],"share_id"?}.
inline nlohmann::json ClaimDeviceJson(const kdp::admin::v1::ClaimDevice& device) {
  nlohmann::json requests = nlohmann::json::array();
  for (const auto& request : device.requests()) requests.push_back(request);
  nlohmann::json cdi = nlohmann::json::array();
  for (const auto& id : device.cdi_device_ids()) cdi.push_back(id);
  nlohmann::json out = {{"driver", device.driver()},
                        {"pool", device.pool()},
                        {"device", device.device()},
                        {"requests", std::move(requests)},
                        {"cdi_device_ids", std::move(cdi)}};
  if (!device.share_id().empty()) out["share_id"] = device.share_id();
  if (!device.health().empty()) out["health"] = device.health();
  if (!device.health_message().empty()) out["health_message"] = device.health_message();
  return out;
}

// The pod status's allocatedResourcesStatus, in the API's JSON names:
// [{"name","resources":[{"resourceID","health","message"?}]}].
inline nlohmann::json AllocatedResourcesStatusJson(
    const kdp::admin::v1::ContainerStatus& container) {
  nlohmann::json statuses = nlohmann::json::array();
  for (const auto& status : container.allocated_resources_status()) {
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& resource : status.resources()) {
      nlohmann::json r = {{"resourceID", resource.resource_id()}, {"health", resource.health()}};
      if (!resource.message().empty()) r["message"] = resource.message();
      resources.push_back(std::move(r));
    }
    statuses.push_back({{"name", status.name()}, {"resources", std::move(resources)}});
  }
  return statuses;
}

// {"pod_claim_name","claim_name","claim_uid","devices":[ClaimDeviceJson...]}.
inline nlohmann::json PodClaimJson(const kdp::admin::v1::PodClaim& claim) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& device : claim.devices()) devices.push_back(ClaimDeviceJson(device));
  return {{"pod_claim_name", claim.pod_claim_name()},
          {"claim_name", claim.claim_name()},
          {"claim_uid", claim.claim_uid()},
          {"devices", std::move(devices)}};
}

// "driver/pool/device", the kubelet's resourceID for a device without CDI IDs, then " share
// <id>" for one share of a device allocated to several claims.
inline std::string ClaimDeviceText(const kdp::admin::v1::ClaimDevice& device) {
  std::string text = absl::StrCat(device.driver(), "/", device.pool(), "/", device.device());
  if (!device.share_id().empty()) absl::StrAppend(&text, " share ", device.share_id());
  return text;
}

// {"resources":[{"name","capacity","allocatable","allocated","connected","removed","endpoint",
// "devices":[...],"devices_omitted"?}],"topology_policy","topology_scope","numa_nodes":[numbers],
// "node_name","dra_drivers":[{"name","endpoints":[{"endpoint","service","connected"}]}],
// "registered_plugins":[{"type","name","endpoint","socket","versions"}],
// "prepared_claims":[{"namespace","name","uid","pods","prepared","devices"}],"resource_api",
// "kubeconfig","dra_device_health":[{"driver","pool","device","health","message","last_updated"}]}.
inline nlohmann::json NodeStatusJson(const kdp::admin::v1::NodeStatus& status) {
  nlohmann::json resources = nlohmann::json::array();
  for (const auto& resource : status.resources()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& device : resource.devices()) devices.push_back(DeviceStatusJson(device));
    resources.push_back({{"name", resource.name()},
                         {"capacity", resource.capacity()},
                         {"allocatable", resource.allocatable()},
                         {"allocated", resource.allocated()},
                         {"connected", resource.connected()},
                         {"removed", resource.removed()},
                         {"endpoint", resource.endpoint()},
                         {"devices", std::move(devices)}});
    // Only when the manager left devices out (more than it lists per resource).
    if (resource.devices_omitted() > 0) {
      resources.back()["devices_omitted"] = resource.devices_omitted();
    }
  }
  nlohmann::json numa_nodes = nlohmann::json::array();
  for (int64_t node : status.numa_nodes()) numa_nodes.push_back(node);
  nlohmann::json drivers = nlohmann::json::array();
  for (const auto& driver : status.dra_drivers()) {
    nlohmann::json endpoints = nlohmann::json::array();
    for (const auto& endpoint : driver.endpoints()) {
      endpoints.push_back({{"endpoint", endpoint.endpoint()},
                           {"service", endpoint.service()},
                           {"connected", endpoint.connected()}});
    }
    drivers.push_back({{"name", driver.name()}, {"endpoints", std::move(endpoints)}});
  }
  nlohmann::json plugins = nlohmann::json::array();
  for (const auto& plugin : status.registered_plugins()) {
    nlohmann::json versions = nlohmann::json::array();
    for (const auto& version : plugin.versions()) versions.push_back(version);
    plugins.push_back({{"type", plugin.type()},
                       {"name", plugin.name()},
                       {"endpoint", plugin.endpoint()},
                       {"socket", plugin.socket()},
                       {"versions", std::move(versions)}});
  }
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& claim : status.prepared_claims()) {
    nlohmann::json pods = nlohmann::json::array();
    for (const auto& pod : claim.pods()) pods.push_back(pod);
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& device : claim.devices()) devices.push_back(ClaimDeviceJson(device));
    claims.push_back({{"namespace", claim.namespace_()},
                      {"name", claim.name()},
                      {"uid", claim.uid()},
                      {"pods", std::move(pods)},
                      {"prepared", claim.prepared()},
                      {"devices", std::move(devices)}});
  }
  nlohmann::json health = nlohmann::json::array();
  for (const auto& device : status.dra_device_health()) {
    health.push_back({{"driver", device.driver()},
                      {"pool", device.pool()},
                      {"device", device.device()},
                      {"health", device.health()},
                      {"message", device.message()},
                      {"last_updated", device.last_updated()}});
  }
  return {
      {"resources", std::move(resources)},         {"topology_policy", status.topology_policy()},
      {"topology_scope", status.topology_scope()}, {"numa_nodes", std::move(numa_nodes)},
      {"node_name", status.node_name()},           {"dra_drivers", std::move(drivers)},
      {"registered_plugins", std::move(plugins)},  {"prepared_claims", std::move(claims)},
      {"resource_api", status.resource_api()},     {"kubeconfig", status.kubeconfig()},
      {"dra_device_health", std::move(health)}};
}

// A protobuf map<string,string> as a JSON object ({} when empty).
template <typename Map>
nlohmann::json StringMapJson(const Map& map) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : map) object[key] = value;
  return object;
}

// {"name","kind","devices":{RESOURCE:[IDS]},"envs":{},"mounts":[...],"device_specs":[...],
//  "annotations":{},"cdi_devices":[...]}.
inline nlohmann::json ContainerJson(const kdp::admin::v1::ContainerStatus& container) {
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [resource, ids] : container.devices()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& id : ids.ids()) list.push_back(id);
    devices[resource] = std::move(list);
  }
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& mount : container.mounts()) {
    mounts.push_back({{"container_path", mount.container_path()},
                      {"host_path", mount.host_path()},
                      {"read_only", mount.read_only()}});
  }
  nlohmann::json specs = nlohmann::json::array();
  for (const auto& spec : container.device_specs()) {
    specs.push_back({{"container_path", spec.container_path()},
                     {"host_path", spec.host_path()},
                     {"permissions", spec.permissions()}});
  }
  nlohmann::json cdi = nlohmann::json::array();
  for (const auto& name : container.cdi_devices()) cdi.push_back(name);
  nlohmann::json hint = nullptr;
  if (container.has_topology_hint()) {
    nlohmann::json nodes = nlohmann::json::array();
    for (int64_t node : container.topology_hint().numa_nodes()) nodes.push_back(node);
    hint = {{"numa_nodes", std::move(nodes)}, {"preferred", container.topology_hint().preferred()}};
  }
  return {{"name", container.name()},
          {"kind", container.kind()},
          {"devices", std::move(devices)},
          {"envs", StringMapJson(container.envs())},
          {"mounts", std::move(mounts)},
          {"device_specs", std::move(specs)},
          {"annotations", StringMapJson(container.annotations())},
          {"cdi_devices", std::move(cdi)},
          {"numa_affinity", std::move(hint)},
          {"allocatedResourcesStatus", AllocatedResourcesStatusJson(container)}};
}

// "0,1 (preferred)", "any (not preferred)": a container's merged topology hint.
inline std::string TopologyHintText(const kdp::admin::v1::TopologyHint& hint) {
  return absl::StrCat(hint.numa_nodes().empty() ? "any" : absl::StrJoin(hint.numa_nodes(), ","),
                      hint.preferred() ? " (preferred)" : " (not preferred)");
}

// {"admitted":true,"pod":{"namespace","name","uid"},"containers":[...],"claims":[...]}: the one
// rendering of an admitted pod, shared by `apply` and `get pods`.
inline nlohmann::json AdmittedPodJson(const kdp::admin::v1::Pod& pod) {
  nlohmann::json containers = nlohmann::json::array();
  for (const auto& container : pod.containers()) containers.push_back(ContainerJson(container));
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& claim : pod.claims()) claims.push_back(PodClaimJson(claim));
  nlohmann::json json = {
      {"admitted", true},
      {"pod", {{"namespace", pod.namespace_()}, {"name", pod.name()}, {"uid", pod.uid()}}},
      {"containers", std::move(containers)},
      {"claims", std::move(claims)}};
  // Only when set, as the kubelet's deletionTimestamp: the rendering of a running pod is unchanged.
  if (pod.terminating()) json["terminating"] = true;
  return json;
}

// AdmittedPodJson(pod) when admitted, else {"admitted":false,"reason","message"}.
inline nlohmann::json ApplyPodJson(const kdp::admin::v1::ApplyPodResponse& response) {
  if (response.admitted()) return AdmittedPodJson(response.pod());
  return {{"admitted", false}, {"reason", response.reason()}, {"message", response.message()}};
}

// One applied object: a Pod as ApplyPodJson, another kind as {"kind","namespace","name","result"}.
inline nlohmann::json AppliedObjectJson(const kdp::admin::v1::AppliedObject& object) {
  if (object.kind() == "Pod") {
    nlohmann::json pod = ApplyPodJson(object.pod());
    if (object.result() == "unchanged") pod["result"] = "unchanged";
    return pod;
  }
  return {{"kind", object.kind()},
          {"namespace", object.namespace_()},
          {"name", object.name()},
          {"result", object.result()}};
}

// AppliedObjectJson of the one object, or {"kind":"List","items":[...]} for several, as kubectl
// apply -o json prints them.
inline nlohmann::json ApplyJson(const kdp::admin::v1::ApplyResponse& response) {
  if (response.objects_size() == 1) return AppliedObjectJson(response.objects(0));
  nlohmann::json items = nlohmann::json::array();
  for (const auto& object : response.objects()) items.push_back(AppliedObjectJson(object));
  return {{"kind", "List"}, {"items", std::move(items)}};
}

// {"pods":[AdmittedPodJson...]}.
inline nlohmann::json PodListJson(const kdp::admin::v1::ListPodsResponse& response) {
  nlohmann::json pods = nlohmann::json::array();
  for (const auto& pod : response.pods()) pods.push_back(AdmittedPodJson(pod));
  return {{"pods", std::move(pods)}};
}

// {"deleted":true,"pod":{"namespace","name","uid"}}.
inline nlohmann::json DeletedPodJson(const std::string& pod_namespace, const std::string& name,
                                     const std::string& uid) {
  return {{"deleted", true}, {"pod", {{"namespace", pod_namespace}, {"name", name}, {"uid", uid}}}};
}

// Pretty JSON (2-space indent) plus a newline. Invalid UTF-8 is replaced by U+FFFD instead of
// throwing, so rendering never fails.
inline std::string DumpJson(const nlohmann::json& json) {
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Left-aligned columns separated by three spaces (kubectl's layout); the last column is not
// padded. Every row should have as many cells as the first (the header).
inline std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    out += "\n";
  }
  return out;
}

// "\ntopology manager: policy P, scope S, NUMA nodes 0,1\n"; empty when the manager sent none.
inline std::string TopologyManagerText(const kdp::admin::v1::NodeStatus& status) {
  if (status.topology_policy().empty()) return "";
  return absl::StrCat("\ntopology manager: policy ", status.topology_policy(), ", scope ",
                      status.topology_scope(), ", NUMA nodes ",
                      status.numa_nodes().empty() ? "-" : absl::StrJoin(status.numa_nodes(), ","),
                      "\n");
}

// A resource table (RESOURCE CAPACITY ALLOCATABLE CONNECTED ENDPOINT), a blank line, then one
// row per device (RESOURCE DEVICE HEALTH NUMA; NUMA "-" when the plugin reported none), then the
// topology manager's line.
// The DRA part of the status: a driver table (DRIVER ENDPOINT SERVICE CONNECTED) and a claim
// table (NAMESPACE CLAIM UID PODS PREPARED DEVICES); empty when there is neither.
inline std::string DraStatusText(const kdp::admin::v1::NodeStatus& status) {
  std::string out;
  if (!status.dra_drivers().empty()) {
    std::vector<std::vector<std::string>> rows = {{"DRIVER", "ENDPOINT", "SERVICE", "CONNECTED"}};
    for (const auto& driver : status.dra_drivers()) {
      for (const auto& endpoint : driver.endpoints()) {
        rows.push_back({driver.name(), endpoint.endpoint(), endpoint.service(),
                        endpoint.connected() ? "yes" : "no"});
      }
    }
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!status.prepared_claims().empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"NAMESPACE", "CLAIM", "UID", "PODS", "PREPARED", "DEVICES"}};
    for (const auto& claim : status.prepared_claims()) {
      std::vector<std::string> devices;
      for (const auto& device : claim.devices()) {
        devices.push_back(device.health().empty()
                              ? ClaimDeviceText(device)
                              : absl::StrCat(ClaimDeviceText(device), " (", device.health(), ")"));
      }
      rows.push_back({claim.namespace_(), claim.name(), claim.uid(),
                      claim.pods().empty() ? "-" : absl::StrJoin(claim.pods(), ","),
                      claim.prepared() ? "yes" : "no",
                      devices.empty() ? "-" : absl::StrJoin(devices, ",")});
    }
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!status.dra_device_health().empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"DRIVER", "POOL", "DEVICE", "HEALTH", "MESSAGE"}};
    for (const auto& device : status.dra_device_health()) {
      rows.push_back({device.driver(), device.pool(), device.device(), device.health(),
                      device.message().empty() ? "-" : device.message()});
    }
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!status.resource_api().empty()) {
    absl::StrAppend(&out, "\nnode ", status.node_name(), "; resource API ", status.resource_api(),
                    " (kubeconfig ", status.kubeconfig(), ")\n");
  }
  return out;
}

inline std::string NodeStatusText(const kdp::admin::v1::NodeStatus& status) {
  if (status.resources().empty()) {
    return absl::StrCat("no device-plugin resources registered\n", TopologyManagerText(status),
                        DraStatusText(status));
  }
  std::vector<std::vector<std::string>> resources = {
      {"RESOURCE", "CAPACITY", "ALLOCATABLE", "ALLOCATED", "CONNECTED", "ENDPOINT"}};
  std::vector<std::vector<std::string>> devices = {{"RESOURCE", "DEVICE", "HEALTH", "NUMA", "POD"}};
  for (const auto& resource : status.resources()) {
    resources.push_back({resource.name(), absl::StrCat(resource.capacity()),
                         absl::StrCat(resource.allocatable()), absl::StrCat(resource.allocated()),
                         resource.connected() ? "yes"
                         : resource.removed() ? "removed"
                                              : "no",
                         resource.endpoint().empty() ? "-" : resource.endpoint()});
    for (const auto& device : resource.devices()) {
      devices.push_back({resource.name(), device.id(), device.health(),
                         device.numa().empty() ? "-" : absl::StrJoin(device.numa(), ","),
                         device.pod().empty() ? "-" : device.pod()});
    }
    if (resource.devices_omitted() > 0) {
      devices.push_back({resource.name(), absl::StrCat("(", resource.devices_omitted(), " more)"),
                         "-", "-", "-"});
    }
  }
  std::string out = FormatTable(resources);
  if (devices.size() > 1) absl::StrAppend(&out, "\n", FormatTable(devices));
  return absl::StrCat(out, TopologyManagerText(status), DraStatusText(status));
}

// "RESOURCE=ID,ID" for each resource of `container`, in resource order.
inline std::vector<std::string> ContainerDeviceTexts(
    const kdp::admin::v1::ContainerStatus& container) {
  std::map<std::string, std::string> sorted;
  for (const auto& [resource, ids] : container.devices()) {
    sorted[resource] = absl::StrJoin(ids.ids(), ",");
  }
  std::vector<std::string> texts;
  for (const auto& [resource, ids] : sorted) texts.push_back(absl::StrCat(resource, "=", ids));
  return texts;
}

// "pod NS/NAME admitted (uid UID)", then per container its kind, devices, envs, mounts, device
// specs, annotations and CDI devices; or "pod rejected: REASON: MESSAGE".
inline std::string ApplyPodText(const kdp::admin::v1::ApplyPodResponse& response) {
  if (!response.admitted()) {
    if (response.reason().empty()) return absl::StrCat("pod rejected: ", response.message(), "\n");
    return absl::StrCat("pod rejected: ", response.reason(), ": ", response.message(), "\n");
  }
  const auto& pod = response.pod();
  std::string out =
      absl::StrCat("pod ", pod.namespace_(), "/", pod.name(), " admitted (uid ", pod.uid(), ")\n");
  for (const auto& container : pod.containers()) {
    absl::StrAppend(&out, "  container ", container.name());
    if (!container.kind().empty()) absl::StrAppend(&out, " (", container.kind(), ")");
    out += "\n";
    std::vector<std::string> devices = ContainerDeviceTexts(container);
    if (devices.empty() && container.cdi_devices().empty()) out += "    no devices\n";
    for (const auto& text : devices) absl::StrAppend(&out, "    device ", text, "\n");
    if (container.has_topology_hint()) {
      absl::StrAppend(&out, "    numa-affinity ", TopologyHintText(container.topology_hint()),
                      "\n");
    }
    for (const auto& [key, value] :
         std::map<std::string, std::string>(container.envs().begin(), container.envs().end())) {
      absl::StrAppend(&out, "    env ", key, "=", value, "\n");
    }
    for (const auto& mount : container.mounts()) {
      absl::StrAppend(&out, "    mount ", mount.host_path(), " -> ", mount.container_path(),
                      mount.read_only() ? " (ro)" : " (rw)", "\n");
    }
    for (const auto& spec : container.device_specs()) {
      absl::StrAppend(&out, "    device-node ", spec.host_path(), " -> ", spec.container_path(),
                      " (", spec.permissions(), ")\n");
    }
    for (const auto& [key, value] : std::map<std::string, std::string>(
             container.annotations().begin(), container.annotations().end())) {
      absl::StrAppend(&out, "    annotation ", key, "=", value, "\n");
    }
    for (const auto& name : container.cdi_devices()) {
      absl::StrAppend(&out, "    cdi ", name, "\n");
    }
    for (const auto& status : container.allocated_resources_status()) {
      for (const auto& resource : status.resources()) {
        absl::StrAppend(&out, "    health ", status.name(), " ", resource.resource_id(), " ",
                        resource.health());
        if (!resource.message().empty()) absl::StrAppend(&out, " (", resource.message(), ")");
        out += "\n";
      }
    }
  }
  for (const auto& claim : pod.claims()) {
    absl::StrAppend(&out, "  claim ", claim.pod_claim_name(), " -> resourceclaim ",
                    claim.claim_name(), " (uid ", claim.claim_uid(), ")\n");
    for (const auto& device : claim.devices()) {
      absl::StrAppend(&out, "    device ", ClaimDeviceText(device));
      if (!device.requests().empty()) {
        absl::StrAppend(&out, " for ", absl::StrJoin(device.requests(), ","));
      }
      out += "\n";
      for (const auto& id : device.cdi_device_ids()) absl::StrAppend(&out, "      cdi ", id, "\n");
    }
  }
  return out;
}

// kubectl's line for a created object ("deviceclass.resource.k8s.io/gpu.example.com created"),
// or ApplyPodText for a pod ("pod/<name> unchanged" for one applied again as it runs).
inline std::string AppliedObjectText(const kdp::admin::v1::AppliedObject& object) {
  if (object.kind() == "Pod" && object.result() == "unchanged") {
    return absl::StrCat("pod/", object.name(), " unchanged\n");
  }
  if (object.kind() == "Pod") return ApplyPodText(object.pod());
  std::string resource = object.kind();
  for (char& c : resource) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return absl::StrCat(resource, ".resource.k8s.io/", object.name(), " ", object.result(), "\n");
}

inline std::string ApplyText(const kdp::admin::v1::ApplyResponse& response) {
  std::string out;
  for (const auto& object : response.objects()) out += AppliedObjectText(object);
  return out;
}

// NAMESPACE NAME UID DEVICES HEALTH STATUS, DEVICES being "CONTAINER:RESOURCE=ID,ID" entries
// joined by ";" ("-" for a pod without devices), STATUS "Running" or "Terminating" (its deletion
// waits for NodeUnprepareResources); "no pods" when the list is empty.
inline std::string PodListText(const kdp::admin::v1::ListPodsResponse& response) {
  if (response.pods().empty()) return "no pods\n";
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "NAME", "UID", "DEVICES", "HEALTH", "STATUS"}};
  for (const auto& pod : response.pods()) {
    std::vector<std::string> devices;
    // The allocated devices that are not Healthy (allocatedResourcesStatus), else "ok".
    std::vector<std::string> not_healthy;
    bool any = false;
    for (const auto& container : pod.containers()) {
      for (const auto& text : ContainerDeviceTexts(container)) {
        devices.push_back(absl::StrCat(container.name(), ":", text));
      }
      for (const auto& status : container.allocated_resources_status()) {
        for (const auto& resource : status.resources()) {
          any = true;
          if (resource.health() != "Healthy") {
            not_healthy.push_back(absl::StrCat(resource.resource_id(), "=", resource.health()));
          }
        }
      }
    }
    rows.push_back({pod.namespace_(), pod.name(), pod.uid(),
                    devices.empty() ? "-" : absl::StrJoin(devices, ";"),
                    !any                  ? "-"
                    : not_healthy.empty() ? "ok"
                                          : absl::StrJoin(not_healthy, ","),
                    pod.terminating() ? "Terminating" : "Running"});
  }
  return FormatTable(rows);
}

}  // namespace kdp::kdpctl

#endif  // KDP_MANAGER_KDPCTL_RENDER_H_
