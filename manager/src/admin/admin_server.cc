#include "manager/src/admin/admin_server.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "manager/src/pod/pod_manifest.h"

namespace kdp::manager {
namespace {

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

void ToAdminPod(const AdmittedPod& admitted, kdp::admin::v1::Pod* out) {
  out->set_namespace_(admitted.pod.namespace_);
  out->set_name(admitted.pod.name);
  out->set_uid(admitted.pod.uid);
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

grpc::Status AdminServer::GetStatus(grpc::ServerContext*, const kdp::admin::v1::GetStatusRequest*,
                                    kdp::admin::v1::NodeStatus* response) {
  // (resource, device) → "namespace/name" of the pod holding it.
  std::map<std::pair<std::string, std::string>, std::string> holders;
  for (const AdmittedPod& pod : pods_->List()) {
    for (const AdmittedContainer& container : pod.containers) {
      for (const auto& [resource, ids] : container.devices) {
        for (const std::string& id : ids) {
          holders[{resource, id}] = absl::StrCat(pod.pod.namespace_, "/", pod.pod.name);
        }
      }
    }
  }
  // As the kubelet's node status sync: resources past their grace period are removed first.
  std::vector<ResourceCapacity> capacity = devices_->GetCapacity();
  for (const ResourceDevices& resource : devices_->Resources()) {
    auto* r = response->add_resources();
    r->set_name(resource.name);
    r->set_capacity(resource.capacity());
    r->set_allocatable(resource.allocatable());
    r->set_connected(resource.connected);
    r->set_endpoint(resource.endpoint);
    for (const auto& [id, info] : resource.devices) {
      auto* d = r->add_devices();
      d->set_id(id);
      d->set_health(info.healthy ? "Healthy" : "Unhealthy");
      for (int64_t node : info.numa_nodes) d->add_numa(node);
      if (auto it = holders.find({resource.name, id}); it != holders.end()) {
        d->set_pod(it->second);
        r->set_allocated(r->allocated() + 1);
      }
    }
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
  return grpc::Status::OK;
}

grpc::Status AdminServer::ApplyPod(grpc::ServerContext*,
                                   const kdp::admin::v1::ApplyPodRequest* request,
                                   kdp::admin::v1::ApplyPodResponse* response) {
  absl::StatusOr<Pod> pod = ParsePodManifest(
      request->manifest(), request->source().empty() ? "manifest" : request->source());
  if (!pod.ok()) return ToGrpcStatus(pod.status());
  absl::StatusOr<AdmitResult> result = pods_->Admit(std::move(*pod));
  if (!result.ok()) return ToGrpcStatus(result.status());
  response->set_admitted(result->admitted);
  response->set_reason(result->reason);
  response->set_message(result->message);
  ToAdminPod(result->pod, response->mutable_pod());
  return grpc::Status::OK;
}

grpc::Status AdminServer::ListPods(grpc::ServerContext*, const kdp::admin::v1::ListPodsRequest*,
                                   kdp::admin::v1::ListPodsResponse* response) {
  for (const AdmittedPod& pod : pods_->List()) ToAdminPod(pod, response->add_pods());
  return grpc::Status::OK;
}

grpc::Status AdminServer::DeletePod(grpc::ServerContext*,
                                    const kdp::admin::v1::DeletePodRequest* request,
                                    kdp::admin::v1::DeletePodResponse* response) {
  absl::StatusOr<std::string> uid = pods_->Delete(
      request->namespace_().empty() ? "default" : request->namespace_(), request->name());
  if (!uid.ok()) return ToGrpcStatus(uid.status());
  response->set_uid(*uid);
  return grpc::Status::OK;
}

}  // namespace kdp::manager
