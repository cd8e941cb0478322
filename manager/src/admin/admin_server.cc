#include "manager/src/admin/admin_server.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/admin/manifest.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/field_validation.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/pod/pod_manifest.h"

namespace kdp::manager {
namespace {

// Devices GetStatus lists per resource (ResourceStatus.devices_omitted counts the others): a
// plugin may list 100,000 devices, and an answer of that size takes over 100 ms to build, send
// and parse on a small node, for every `kdpctl status`.
constexpr int64_t kStatusDevicesPerResource = 1024;

const char* KindName(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kInit:
      return "init";
    case ContainerKind::kSidecar:
      return "sidecar";
    case ContainerKind::kApp:
      return "app";
  }
  return "app";
}

}  // namespace

void ToAdminPod(const AdmittedPod& admitted, kdp::admin::v1::Pod* out,
                const std::vector<resourceclaim::PodClaimView>& claims) {
  for (const resourceclaim::PodClaimView& view : claims) {
    auto* claim = out->add_claims();
    claim->set_pod_claim_name(view.pod_claim_name);
    claim->set_claim_name(view.claim_name);
    claim->set_claim_uid(view.claim_uid);
    for (const auto& [driver, device] : view.devices) {
      auto* d = claim->add_devices();
      d->set_driver(driver);
      d->set_pool(device.pool_name);
      d->set_device(device.device_name);
      for (const std::string& request : device.request_names) d->add_requests(request);
      for (const std::string& id : device.cdi_device_ids) d->add_cdi_device_ids(id);
      if (device.share_id) d->set_share_id(*device.share_id);
    }
  }
  out->set_namespace_(admitted.pod.namespace_);
  out->set_name(admitted.pod.name);
  out->set_uid(admitted.pod.uid);
  out->set_terminating(admitted.pod.terminating);
  for (const AdmittedContainer& container : admitted.containers) {
    auto* c = out->add_containers();
    c->set_name(container.spec.name);
    c->set_kind(KindName(container.spec.kind));
    for (const auto& [resource, ids] : container.devices) {
      auto& list = (*c->mutable_devices())[resource];
      for (const std::string& id : ids) list.add_ids(id);
    }
    const RunContainerOptions& options = container.options;
    for (const auto& [name, value] : options.envs) (*c->mutable_envs())[name] = value;
    for (const auto& [name, value] : options.annotations) (*c->mutable_annotations())[name] = value;
    for (const v1beta1::Mount& mount : options.mounts) {
      auto* m = c->add_mounts();
      m->set_container_path(mount.container_path());
      m->set_host_path(mount.host_path());
      m->set_read_only(mount.read_only());
    }
    for (const v1beta1::DeviceSpec& device : options.devices) {
      auto* d = c->add_device_specs();
      d->set_container_path(device.container_path());
      d->set_host_path(device.host_path());
      d->set_permissions(device.permissions());
    }
    for (const std::string& cdi : options.cdi_devices) c->add_cdi_devices(cdi);
    if (container.topology_hint.has_value()) {
      auto* hint = c->mutable_topology_hint();
      if (container.topology_hint->numa_affinity.has_value()) {
        for (int node : container.topology_hint->numa_affinity->Nodes()) hint->add_numa_nodes(node);
      }
      hint->set_preferred(container.topology_hint->preferred);
    }
  }
}

grpc::Status AdminServer::ListPeerCalls(grpc::ServerContext*,
                                        const kdp::admin::v1::ListPeerCallsRequest*,
                                        kdp::admin::v1::ListPeerCallsResponse* response) {
  const absl::Time now = devices_->peer_calls().Now();
  for (const PeerCall& call : InFlightPeerCalls(
           {&devices_->peer_calls(), dra_.dra != nullptr ? &dra_.dra->peer_calls() : nullptr})) {
    kdp::admin::v1::PeerCall* out = response->add_calls();
    out->set_kind(PeerKindName(call.kind));
    out->set_peer(call.peer);
    out->set_method(call.method);
    out->set_pod(call.pod);
    out->set_endpoint(call.endpoint);
    out->set_elapsed_ms(
        absl::ToInt64Milliseconds(std::max(now - call.started, absl::ZeroDuration())));
    out->set_timeout_ms(absl::ToInt64Milliseconds(call.timeout));
  }
  return grpc::Status::OK;
}

grpc::Status AdminServer::GetStatus(grpc::ServerContext*, const kdp::admin::v1::GetStatusRequest*,
                                    kdp::admin::v1::NodeStatus* response) {
  // Resource → device → "namespace/name" of the pod holding it.
  std::map<std::string, std::map<std::string, std::string>> holders;
  for (const AdmittedPod& pod : pods_->List()) {
    for (const AdmittedContainer& container : pod.containers) {
      for (const auto& [resource, ids] : container.devices) {
        std::map<std::string, std::string>& held = holders[resource];
        for (const std::string& id : ids) {
          held[id] = absl::StrCat(pod.pod.namespace_, "/", pod.pod.name);
        }
      }
    }
  }
  // As the kubelet's node status sync: resources past their grace period are removed first.
  std::vector<ResourceCapacity> capacity = devices_->GetCapacity();
  // Shared, not copied: a plugin may list 100,000 devices.
  const std::map<std::string, std::string> none;
  for (const std::shared_ptr<const ResourceDevices>& shared : devices_->SharedResources()) {
    const ResourceDevices& resource = *shared;
    auto* r = response->add_resources();
    r->set_name(resource.name);
    r->set_capacity(resource.capacity());
    r->set_connected(resource.connected);
    r->set_endpoint(resource.endpoint);
    auto found = holders.find(resource.name);
    const std::map<std::string, std::string>& held = found == holders.end() ? none : found->second;
    r->set_allocatable(resource.allocatable());
    // Counted from the (few) held devices, not from the (maybe 100,000) listed ones.
    for (const auto& [id, pod] : held) {
      r->set_allocated(r->allocated() + static_cast<int64_t>(resource.devices.count(id)));
    }
    int64_t listed = 0;
    for (const auto& [id, info] : resource.devices) {
      if (listed == kStatusDevicesPerResource) break;
      ++listed;
      auto* d = r->add_devices();
      d->set_id(id);
      d->set_health(info.healthy ? "Healthy" : "Unhealthy");
      for (int64_t node : info.numa_nodes) d->add_numa(node);
      if (auto it = held.find(id); it != held.end()) d->set_pod(it->second);
    }
    r->set_devices_omitted(resource.capacity() - listed);
  }
  for (const ResourceCapacity& resource : capacity) {
    if (!resource.removed) continue;
    auto* r = response->add_resources();
    r->set_name(resource.name);
    r->set_removed(true);
  }
  const TopologyManagerConfig& topology = pods_->topology_config();
  response->set_topology_policy(TopologyPolicyName(topology.policy));
  response->set_topology_scope(TopologyScopeName(topology.scope));
  for (int node : topology.numa.nodes) response->add_numa_nodes(node);
  AddDraStatus(response);
  return grpc::Status::OK;
}

void AdminServer::RenderPod(const AdmittedPod& pod, const Registry& resources,
                            kdp::admin::v1::Pod* out) const {
  if (dra_.claims == nullptr || pod.pod.resource_claims.empty()) {
    ToAdminPod(pod, out);
  } else {
    ToAdminPod(pod, out, dra_.claims->Describe(pod.pod));
  }
  AddAllocatedResourcesStatus(pod, resources, out);
}

void AdminServer::AddAllocatedResourcesStatus(const AdmittedPod& pod, const Registry& resources,
                                              kdp::admin::v1::Pod* out) const {
  // Device plugins (the device manager's UpdateAllocatedResourcesStatus): one entry per
  // resource, each device Healthy or Unhealthy as its plugin last reported it, Unknown when the
  // plugin no longer lists it.
  std::map<std::string, const ResourceDevices*> by_name;
  for (const auto& resource : resources) by_name[resource->name] = resource.get();
  for (size_t i = 0; i < pod.containers.size() && i < static_cast<size_t>(out->containers_size());
       ++i) {
    kdp::admin::v1::ContainerStatus* container = out->mutable_containers(static_cast<int>(i));
    for (const auto& [resource, ids] : pod.containers[i].devices) {
      auto* status = container->add_allocated_resources_status();
      status->set_name(resource);
      const auto known = by_name.find(resource);
      for (const std::string& id : ids) {
        auto* health = status->add_resources();
        health->set_resource_id(id);
        health->set_health("Unknown");
        if (known == by_name.end()) continue;
        if (auto device = known->second->devices.find(id); device != known->second->devices.end()) {
          health->set_health(device->second.healthy ? "Healthy" : "Unhealthy");
        }
      }
    }
  }
  // DRA (the DRA manager's UpdateAllocatedResourcesStatus): one entry per claim (or claim and
  // request) a container uses, each device as its driver's health stream last reported it.
  if (dra_.dra == nullptr || pod.pod.resource_claims.empty()) return;
  const dra::AllocatedResourcesStatus statuses = dra_.dra->UpdateAllocatedResourcesStatus(pod.pod);
  for (kdp::admin::v1::ContainerStatus& container : *out->mutable_containers()) {
    const auto found = statuses.find(container.name());
    if (found == statuses.end()) continue;
    for (const dra::ResourceStatus& status : found->second) {
      auto* entry = container.add_allocated_resources_status();
      entry->set_name(status.name);
      for (const dra::ResourceHealth& resource : status.resources) {
        auto* health = entry->add_resources();
        health->set_resource_id(resource.resource_id);
        health->set_health(resource.health);
        health->set_message(resource.message);
      }
    }
  }
}

void AdminServer::AddDraStatus(kdp::admin::v1::NodeStatus* status) const {
  if (dra_.resources != nullptr) status->set_node_name(dra_.resources->node_name());
  status->set_resource_api(dra_.resource_api_url);
  status->set_kubeconfig(dra_.kubeconfig);
  if (dra_.dra_plugins != nullptr) {
    // Newest first, as the DRA manager prefers them.
    std::map<std::string, std::vector<dra::DraPluginInstance>> by_driver;
    for (dra::DraPluginInstance& instance : dra_.dra_plugins->Instances()) {
      by_driver[instance.driver].insert(by_driver[instance.driver].begin(), std::move(instance));
    }
    for (const auto& [driver, instances] : by_driver) {
      auto* d = status->add_dra_drivers();
      d->set_name(driver);
      for (const dra::DraPluginInstance& instance : instances) {
        auto* e = d->add_endpoints();
        e->set_endpoint(instance.endpoint);
        e->set_service(instance.service);
        e->set_connected(instance.connected);
      }
    }
  }
  if (dra_.plugins != nullptr) {
    for (const pluginmanager::RegisteredPlugin& plugin : dra_.plugins->Registered()) {
      auto* p = status->add_registered_plugins();
      p->set_type(plugin.type);
      p->set_name(plugin.name);
      p->set_endpoint(plugin.endpoint);
      p->set_socket(plugin.socket_path);
      for (const std::string& version : plugin.versions) p->add_versions(version);
    }
  }
  if (dra_.dra != nullptr) {
    std::map<std::string, std::string> pod_names;  // uid → namespace/name
    for (const AdmittedPod& pod : pods_->List()) {
      pod_names[pod.pod.uid] = absl::StrCat(pod.pod.namespace_, "/", pod.pod.name);
    }
    for (const dra::ClaimInfo& info : dra_.dra->Claims()) {
      auto* c = status->add_prepared_claims();
      c->set_namespace_(info.namespace_());
      c->set_name(info.claim_name());
      c->set_uid(info.claim_uid());
      c->set_prepared(info.IsPrepared());
      for (const std::string& uid : info.state().pod_uids) {
        auto it = pod_names.find(uid);
        c->add_pods(it != pod_names.end() ? it->second : uid);
      }
      for (const auto& [driver, state] : info.state().driver_state) {
        for (const dra::state::Device& device : state.devices) {
          auto* d = c->add_devices();
          d->set_driver(driver);
          d->set_pool(device.pool_name);
          d->set_device(device.device_name);
          for (const std::string& request : device.request_names) d->add_requests(request);
          for (const std::string& id : device.cdi_device_ids) d->add_cdi_device_ids(id);
          if (device.share_id) d->set_share_id(*device.share_id);
          const dra::DeviceHealth health =
              dra_.dra->GetDeviceHealth(driver, device.pool_name, device.device_name);
          d->set_health(dra::DeviceHealthStatusName(health.health));
          d->set_health_message(health.message);
        }
      }
    }
    for (const dra::DeviceHealthSummary& device : dra_.dra->HealthSummary()) {
      auto* h = status->add_dra_device_health();
      h->set_driver(device.driver);
      h->set_pool(device.pool);
      h->set_device(device.device);
      h->set_health(device.health);
      h->set_message(device.message);
      if (device.last_updated > absl::UnixEpoch()) {
        h->set_last_updated(absl::ToUnixSeconds(device.last_updated));
      }
    }
  }
}

grpc::Status AdminServer::ApplyPod(grpc::ServerContext*,
                                   const kdp::admin::v1::ApplyPodRequest* request,
                                   kdp::admin::v1::ApplyPodResponse* response) {
  absl::StatusOr<Pod> pod = ParsePodManifest(
      request->manifest(), request->source().empty() ? "manifest" : request->source());
  if (!pod.ok()) return ToGrpcStatus(pod.status());
  absl::StatusOr<AdmitResult> result =
      admission_->Admit(std::move(*pod), nullptr, /*retry_refused=*/true);
  if (!result.ok()) return ToGrpcStatus(result.status());
  response->set_admitted(result->admitted);
  response->set_reason(result->reason);
  response->set_message(result->message);
  RenderPod(result->pod, devices_->SharedResources(), response->mutable_pod());
  return grpc::Status::OK;
}

grpc::Status AdminServer::ListPods(grpc::ServerContext*, const kdp::admin::v1::ListPodsRequest*,
                                   kdp::admin::v1::ListPodsResponse* response) {
  // One snapshot of the device registry for every pod's health.
  const Registry resources = devices_->SharedResources();
  for (const AdmittedPod& pod : pods_->List()) RenderPod(pod, resources, response->add_pods());
  return grpc::Status::OK;
}

grpc::Status AdminServer::DeletePod(grpc::ServerContext*,
                                    const kdp::admin::v1::DeletePodRequest* request,
                                    kdp::admin::v1::DeletePodResponse* response) {
  const std::string pod_namespace =
      request->namespace_().empty() ? std::string("default") : request->namespace_();
  absl::StatusOr<PodDeletion> deleted = admission_->Delete(pod_namespace, request->name());
  if (!deleted.ok()) return ToGrpcStatus(deleted.status());
  response->set_uid(deleted->uid);
  response->set_warning(deleted->warning);
  return grpc::Status::OK;
}

namespace {

// One document of an Apply, checked and ready to apply.
struct ApplyItem {
  std::string kind;
  std::optional<Pod> pod;                     // kind Pod
  std::optional<resourceapi::Kind> resource;  // the resource.k8s.io kinds
  nlohmann::json object;                      // their v1 form
};

// The same pod as far as a manifest says: everything but the UID the parser generates and what
// admission adds (generated claim names, terminating).
bool SameSpec(const Pod& running, const Pod& applied) {
  return running.namespace_ == applied.namespace_ && running.name == applied.name &&
         running.init_containers == applied.init_containers &&
         running.containers == applied.containers &&
         running.resource_claims == applied.resource_claims;
}

constexpr char kSupportedKinds[] =
    "Pod (v1); DeviceClass, ResourceClaim, ResourceClaimTemplate (resource.k8s.io/v1, v1beta1)";

absl::StatusOr<ApplyItem> CheckDocument(const ManifestDocument& doc, bool have_resources) {
  ApplyItem item{.kind = doc.kind, .pod = std::nullopt, .resource = std::nullopt, .object = {}};
  if (doc.kind == "Pod" && doc.api_version == "v1") {
    // kdpctl is strict, as kubectl's default: a misspelt field is an error, not a pod that
    // silently asks for less (field_validation.h).
    if (std::vector<std::string> unknown =
            resourceapi::UnknownFields(resourceapi::Kind::kPod, "v1", doc.json);
        !unknown.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(doc.source, ": ", resourceapi::StrictDecodingError(unknown)));
    }
    KDP_ASSIGN_OR_RETURN(item.pod, ParsePodManifestDocument(doc.node, doc.source));
    return item;
  }
  std::optional<resourceapi::Kind> kind;
  for (const resourceapi::KindInfo& info : resourceapi::AllKinds()) {
    if (doc.kind == info.name && info.kind != resourceapi::Kind::kResourceSlice &&
        info.kind != resourceapi::Kind::kNode) {
      kind = info.kind;
    }
  }
  const std::string group_prefix = absl::StrCat(resourceapi::kGroup, "/");
  const std::string version =
      doc.api_version.starts_with(group_prefix) ? doc.api_version.substr(group_prefix.size()) : "";
  if (!kind.has_value() || !resourceapi::IsServedVersion(version)) {
    return absl::InvalidArgumentError(absl::StrCat(doc.source, ": kind ", doc.kind, " of ",
                                                   doc.api_version,
                                                   " is not supported; kdpctl "
                                                   "apply takes ",
                                                   kSupportedKinds));
  }
  if (!have_resources) {
    return absl::FailedPreconditionError(
        absl::StrCat(doc.source, ": kdp-manager runs without the local resource API"));
  }
  if (std::vector<std::string> unknown = resourceapi::UnknownFields(*kind, version, doc.json);
      !unknown.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": ", resourceapi::StrictDecodingError(unknown)));
  }
  item.resource = kind;
  item.object = resourceapi::ToV1(*kind, version, doc.json);
  if (resourceapi::InfoOf(*kind).namespaced) {
    nlohmann::json& metadata = item.object["metadata"];
    if (!metadata.is_object()) metadata = nlohmann::json::object();
    if (!metadata.contains("namespace")) metadata["namespace"] = "default";  // as kubectl
  }
  resourceapi::Normalize(*kind, &item.object);
  if (absl::Status valid = resourceapi::Validate(*kind, item.object); !valid.ok()) {
    return absl::Status(valid.code(), absl::StrCat(doc.source, ": ", valid.message()));
  }
  return item;
}

}  // namespace

grpc::Status AdminServer::Apply(grpc::ServerContext*, const kdp::admin::v1::ApplyRequest* request,
                                kdp::admin::v1::ApplyResponse* response) {
  absl::StatusOr<std::vector<ManifestDocument>> documents = SplitManifest(
      request->manifest(), request->source().empty() ? "manifest" : request->source());
  if (!documents.ok()) return ToGrpcStatus(documents.status());
  // Every document is checked before any is applied: a typo in the last one leaves nothing
  // half-applied.
  std::vector<ApplyItem> items;
  for (const ManifestDocument& doc : *documents) {
    absl::StatusOr<ApplyItem> item = CheckDocument(doc, dra_.resources != nullptr);
    if (!item.ok()) return ToGrpcStatus(item.status());
    items.push_back(*std::move(item));
  }
  for (ApplyItem& item : items) {
    auto* applied = response->add_objects();
    applied->set_kind(item.kind);
    if (item.pod.has_value()) {
      applied->set_namespace_(item.pod->namespace_);
      applied->set_name(item.pod->name);
      // kubectl apply: a running pod applied again as it is, is unchanged (a changed one is
      // refused below: a pod's spec cannot change).
      if (std::optional<AdmittedPod> running = pods_->Get(item.pod->namespace_, item.pod->name);
          running.has_value() && !running->pod.terminating && SameSpec(running->pod, *item.pod)) {
        applied->set_result("unchanged");
        auto* pod = applied->mutable_pod();
        pod->set_admitted(true);
        RenderPod(*running, devices_->SharedResources(), pod->mutable_pod());
        continue;
      }
      absl::StatusOr<AdmitResult> result =
          admission_->Admit(*std::move(item.pod), nullptr, /*retry_refused=*/true);
      if (!result.ok()) return ToGrpcStatus(result.status());
      applied->set_result(result->admitted ? "admitted" : "rejected");
      auto* pod = applied->mutable_pod();
      pod->set_admitted(result->admitted);
      pod->set_reason(result->reason);
      pod->set_message(result->message);
      RenderPod(result->pod, devices_->SharedResources(), pod->mutable_pod());
      continue;
    }
    const resourceapi::Kind kind = *item.resource;
    const std::string ns = item.object["metadata"].value("namespace", "");
    const std::string name = item.object["metadata"].value("name", "");
    applied->set_namespace_(ns);
    applied->set_name(name);
    absl::StatusOr<nlohmann::json> created = dra_.resources->Create(kind, item.object);
    if (created.ok()) {
      applied->set_name(created->at("metadata").value("name", name));
      applied->set_result("created");
      continue;
    }
    if (!absl::IsAlreadyExists(created.status())) return ToGrpcStatus(created.status());
    // kubectl apply: an object that exists is left alone when its spec is the same, else
    // updated (the API server refuses a changed claim spec: immutable).
    absl::StatusOr<nlohmann::json> existing = dra_.resources->Get(kind, ns, name);
    if (!existing.ok()) return ToGrpcStatus(existing.status());
    if (existing->value("spec", nlohmann::json()) == item.object.value("spec", nlohmann::json())) {
      applied->set_result("unchanged");
      continue;
    }
    item.object["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
    absl::StatusOr<nlohmann::json> updated = dra_.resources->Update(kind, item.object);
    if (!updated.ok()) return ToGrpcStatus(updated.status());
    applied->set_result("configured");
  }
  if (dra_.persister != nullptr) {
    if (absl::Status flushed = dra_.persister->Flush(); !flushed.ok()) {
      return ToGrpcStatus(flushed);
    }
  }
  return grpc::Status::OK;
}

}  // namespace kdp::manager
