// AdminServer serves kdp.admin.v1.Admin on <kubelet-root>/kdp/manager.sock: the node's status,
// pod admission from manifests, listing and deletion. kdpctl is its client.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_
#define KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_

#include "kdp/admin/v1/admin.grpc.pb.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/pod_manager.h"

namespace kdp::manager {

// Renders an admitted (or rejected) pod as the admin API's message.
void ToAdminPod(const AdmittedPod& pod, kdp::admin::v1::Pod* out);

class AdminServer final : public kdp::admin::v1::Admin::Service {
 public:
  AdminServer(PodManager* pods, DeviceManager* devices) : pods_(pods), devices_(devices) {}

  grpc::Status GetStatus(grpc::ServerContext* context,
                         const kdp::admin::v1::GetStatusRequest* request,
                         kdp::admin::v1::NodeStatus* response) override;
  grpc::Status ApplyPod(grpc::ServerContext* context,
                        const kdp::admin::v1::ApplyPodRequest* request,
                        kdp::admin::v1::ApplyPodResponse* response) override;
  grpc::Status ListPods(grpc::ServerContext* context,
                        const kdp::admin::v1::ListPodsRequest* request,
                        kdp::admin::v1::ListPodsResponse* response) override;
  grpc::Status DeletePod(grpc::ServerContext* context,
                         const kdp::admin::v1::DeletePodRequest* request,
                         kdp::admin::v1::DeletePodResponse* response) override;

 private:
  PodManager* const pods_;
  DeviceManager* const devices_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_
