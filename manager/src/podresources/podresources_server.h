// PodResourcesServer serves v1.PodResourcesLister on <kubelet-root>/pod-resources/kubelet.sock,
// shaped as the kubelet's: one ContainerDevices per (device, NUMA node), regular init containers
// left out of List and Get, and GetAllocatableResources listing every healthy device. Each
// container's DRA claims are its dynamic_resources, as a kubelet with
// KubeletPodResourcesDynamicResources (beta, on by default since 1.34) reports them: per claim
// the container uses, its name and namespace and every device the drivers prepared for it
// (driver, pool, device, CDI device IDs, share ID).
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_
#define KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_

#include <functional>
#include <vector>

#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/podmanager/pod_manager.h"
#include "podresources/v1/api.grpc.pb.h"

namespace kdp::manager {

class PodResourcesServer final : public v1::PodResourcesLister::Service {
 public:
  // The pod's claims with their prepared devices (PodClaimController::Describe); nullptr: no
  // dynamic_resources.
  using ClaimsLookup = std::function<std::vector<resourceclaim::PodClaimView>(const Pod&)>;

  PodResourcesServer(const PodManager* pods, const DeviceManager* devices,
                     ClaimsLookup claims = nullptr)
      : pods_(pods), devices_(devices), claims_(std::move(claims)) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest* request,
                    v1::ListPodResourcesResponse* response) override;
  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const v1::AllocatableResourcesRequest* request,
                                       v1::AllocatableResourcesResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override;

 private:
  void FillPod(const AdmittedPod& admitted, v1::PodResources* out) const;

  const PodManager* const pods_;
  const DeviceManager* const devices_;
  const ClaimsLookup claims_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_
