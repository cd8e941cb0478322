// PodResourcesServer serves v1.PodResourcesLister on <kubelet-root>/pod-resources/kubelet.sock,
// shaped as the kubelet's: one ContainerDevices per (device, NUMA node), regular init containers
// left out of List and Get, and GetAllocatableResources listing every healthy device.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_
#define KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_

#include "manager/src/devicemanager/manager.h"
#include "manager/src/pod_manager.h"
#include "podresources/v1/api.grpc.pb.h"

namespace kdp::manager {

class PodResourcesServer final : public v1::PodResourcesLister::Service {
 public:
  PodResourcesServer(const PodManager* pods, const DeviceManager* devices)
      : pods_(pods), devices_(devices) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest* request,
                    v1::ListPodResourcesResponse* response) override;
  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const v1::AllocatableResourcesRequest* request,
                                       v1::AllocatableResourcesResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override;

 private:
  const PodManager* const pods_;
  const DeviceManager* const devices_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_PODRESOURCES_PODRESOURCES_SERVER_H_
