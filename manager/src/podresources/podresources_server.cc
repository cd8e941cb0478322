#include "manager/src/podresources/podresources_server.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kdp::manager {
namespace {

void AddDevice(const std::string& resource, const std::string& id, int64_t numa,
               google::protobuf::RepeatedPtrField<v1::ContainerDevices>* out) {
  v1::ContainerDevices* devices = out->Add();
  devices->set_resource_name(resource);
  devices->add_device_ids(id);
  if (numa >= 0) devices->mutable_topology()->add_nodes()->set_id(numa);
}

// The container's claims (DRA manager GetContainerClaimInfos, then the podresources server's
// GetDynamicResources): each claim the container names, once, with every device the drivers
// prepared for it.
void AddDynamicResources(const Pod& pod, const Container& container,
                         const std::vector<resourceclaim::PodClaimView>& claims,
                         v1::ContainerResources* out) {
  std::set<std::string> done;
  for (const ContainerClaim& used : container.claims) {
    if (!done.insert(used.name).second) continue;
    for (const resourceclaim::PodClaimView& view : claims) {
      if (view.pod_claim_name != used.name || view.claim_name.empty()) continue;
      v1::DynamicResource* dynamic = out->add_dynamic_resources();
      dynamic->set_claim_name(view.claim_name);
      dynamic->set_claim_namespace(pod.namespace_);
      for (const auto& [driver, device] : view.devices) {
        v1::ClaimResource* resource = dynamic->add_claim_resources();
        for (const std::string& id : device.cdi_device_ids) {
          resource->add_cdi_devices()->set_name(id);
        }
        resource->set_driver_name(driver);
        resource->set_pool_name(device.pool_name);
        resource->set_device_name(device.device_name);
        if (device.share_id.has_value()) resource->set_share_id(*device.share_id);
      }
    }
  }
}

}  // namespace

void PodResourcesServer::FillPod(const AdmittedPod& admitted, v1::PodResources* out) const {
  out->set_name(admitted.pod.name);
  out->set_namespace_(admitted.pod.namespace_);
  std::vector<resourceclaim::PodClaimView> claims;
  if (claims_ && !admitted.pod.resource_claims.empty()) claims = claims_(admitted.pod);
  for (const AdmittedContainer& container : admitted.containers) {
    // The kubelet reports sidecars and app containers; regular init containers have finished.
    if (container.spec.kind == ContainerKind::kInit) continue;
    v1::ContainerResources* resources = out->add_containers();
    resources->set_name(container.spec.name);
    for (const auto& [resource, per_numa] : container.devices_per_numa) {
      for (const auto& [node, ids] : per_numa) {
        for (const std::string& id : ids)
          AddDevice(resource, id, node, resources->mutable_devices());
      }
    }
    if (!claims.empty()) AddDynamicResources(admitted.pod, container.spec, claims, resources);
  }
}

grpc::Status PodResourcesServer::List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                                      v1::ListPodResourcesResponse* response) {
  for (const AdmittedPod& pod : pods_->List()) FillPod(pod, response->add_pod_resources());
  return grpc::Status::OK;
}

grpc::Status PodResourcesServer::GetAllocatableResources(
    grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
    v1::AllocatableResourcesResponse* response) {
  for (const ResourceDevices& resource : devices_->Resources()) {
    for (const auto& [id, info] : resource.devices) {
      if (!info.healthy) continue;
      if (info.numa_nodes.empty()) AddDevice(resource.name, id, -1, response->mutable_devices());
      for (int64_t node : info.numa_nodes) {
        AddDevice(resource.name, id, node, response->mutable_devices());
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status PodResourcesServer::Get(grpc::ServerContext*,
                                     const v1::GetPodResourcesRequest* request,
                                     v1::GetPodResourcesResponse* response) {
  std::optional<AdmittedPod> pod = pods_->Get(request->pod_namespace(), request->pod_name());
  if (!pod.has_value()) {
    // The kubelet's text; kdp answers NOT_FOUND where the kubelet's plain error reads UNKNOWN.
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("pod ", request->pod_name(), " in namespace ",
                                     request->pod_namespace(), " not found"));
  }
  FillPod(*pod, response->mutable_pod_resources());
  return grpc::Status::OK;
}

}  // namespace kdp::manager
