// AdminServer serves kdp.admin.v1.Admin on <kubelet-root>/kdp/manager.sock: the node's status,
// pod admission from manifests, listing and deletion. kdpctl is its client.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_
#define KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kdp/admin/v1/admin.grpc.pb.h"
#include "manager/src/controlplane/resourceapi/persistence.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/dra/manager.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "manager/src/lifecycle/pod_admission.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "manager/src/podmanager/pod_manager.h"

namespace kdp::manager {

// Renders an admitted (or rejected) pod as the admin API's message, with its claims when given.
void ToAdminPod(const AdmittedPod& pod, kdp::admin::v1::Pod* out,
                const std::vector<resourceclaim::PodClaimView>& claims = {});

// The DRA side of the node, for Apply and the status, and the machine's CPUs for GetTopology;
// every pointer may be null (a manager without DRA) and is borrowed for the server's lifetime.
struct AdminDraSources {
  resourceapi::ObjectStore* resources = nullptr;
  resourceclaim::PodClaimController* claims = nullptr;
  dra::DraManager* dra = nullptr;
  dra::DraPluginManager* dra_plugins = nullptr;
  pluginmanager::PluginManager* plugins = nullptr;
  // Flushed before Apply and DeletePod answer: what kdpctl is told is on disk.
  resourceapi::StorePersister* persister = nullptr;
  std::string resource_api_url = {};
  std::string kubeconfig = {};
  // Linux NUMA node number → the CPUs whose home node it is (kdp::NumaNode::cpus), for
  // GetTopology; empty when the machine could not be read (CPUs are then shown as unknown).
  std::map<int, std::vector<int>> numa_cpus = {};
  // The one admission path, shared with the local API's Pods (lifecycle/pod_admission.h: Events,
  // the API's Pods, the flush after a deletion). nullptr: the server admits through its own, over
  // `pods` and `persister`, without Events or API Pods.
  PodAdmission* admission = nullptr;
};

class AdminServer final : public kdp::admin::v1::Admin::Service {
 public:
  AdminServer(PodManager* pods, DeviceManager* devices, AdminDraSources dra = {})
      : pods_(pods),
        devices_(devices),
        dra_(std::move(dra)),
        own_admission_(pods, {.persister = dra_.persister}),
        admission_(dra_.admission != nullptr ? dra_.admission : &own_admission_) {}

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
  grpc::Status Apply(grpc::ServerContext* context, const kdp::admin::v1::ApplyRequest* request,
                     kdp::admin::v1::ApplyResponse* response) override;
  grpc::Status ListPeerCalls(grpc::ServerContext* context,
                             const kdp::admin::v1::ListPeerCallsRequest* request,
                             kdp::admin::v1::ListPeerCallsResponse* response) override;
  // Defined in admin_topology.cc.
  grpc::Status GetTopology(grpc::ServerContext* context,
                           const kdp::admin::v1::GetTopologyRequest* request,
                           kdp::admin::v1::NodeTopology* response) override;

 private:
  // The device registry as DeviceManager::SharedResources() returns it.
  using Registry = std::vector<std::shared_ptr<const ResourceDevices>>;
  // `resources`: a snapshot of the device registry, for health.
  void RenderPod(const AdmittedPod& pod, const Registry& resources, kdp::admin::v1::Pod* out) const;
  void AddDraStatus(kdp::admin::v1::NodeStatus* status) const;
  // GetTopology's DRA part: the node's ResourceSlices' devices, and the prepared devices no
  // slice lists any more, with their holders and health.
  void AddDraTopology(const std::vector<AdmittedPod>& pods,
                      kdp::admin::v1::NodeTopology* topology) const;
  // The kubelet's containerStatuses[].allocatedResourcesStatus for every container of `out`.
  void AddAllocatedResourcesStatus(const AdmittedPod& pod, const Registry& resources,
                                   kdp::admin::v1::Pod* out) const;

  PodManager* const pods_;
  DeviceManager* const devices_;
  const AdminDraSources dra_;
  PodAdmission own_admission_;
  PodAdmission* const admission_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_ADMIN_ADMIN_SERVER_H_
