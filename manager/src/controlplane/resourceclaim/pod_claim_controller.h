// PodClaimController plays, for the pods of kdp-manager's one node, the three parts of Kubernetes
// that move a pod's ResourceClaims: the resourceclaim controller (a claim per pod from each
// ResourceClaimTemplate, owned by the pod, named "<pod>-<pod claim>-<5 random>"; reservations
// dropped and generated claims deleted when the pod goes; a claim reserved by nobody is
// deallocated), the scheduler's DynamicResources plugin (unallocated claims allocated on this
// node's ResourceSlices with the CEL-subset allocator, the pod added to status.reservedFor; a
// claim shared by several pods is allocated once) and, through the kubelet's DraManager,
// NodePrepareResources / NodeUnprepareResources and the containers' CDI device IDs. Claims live in
// the local resource API's ObjectStore, where drivers read them.
//
// Thread-safety: thread-safe. PodManager runs Reserve one pod at a time (it reads what every other
// claim holds, then writes one); Release may run concurrently with other releases and with
// Reserve, and a claim updated meanwhile (or through the REST API) is re-read and the status write
// retried (resourceVersion preconditions).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_POD_CLAIM_CONTROLLER_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_POD_CLAIM_CONTROLLER_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/dra/manager.h"
#include "manager/src/pod/pod.h"
#include "manager/src/podmanager/pod_manager.h"

namespace kdp::manager::resourceclaim {

// The ResourceClaim a pod claim refers to: resourceClaimName, or the claim generated for the pod
// from its template (pod.status.resourceClaimStatuses); empty when not generated yet.
std::string ClaimNameFor(const Pod& pod, const PodResourceClaim& claim);

// generateName of a claim made for `pod_claim` of pod `pod_name`, as the resourceclaim controller
// computes it: "<pod>-<pod claim>-", or, when that is longer than 57 characters, both names cut
// in proportion to their length and joined by "-" (no trailing "-").
std::string GenerateClaimNamePrefix(const std::string& pod_name, const std::string& pod_claim);

// One pod claim with what the DRA manager prepared for it, for display.
struct PodClaimView {
  std::string pod_claim_name;
  std::string claim_name;
  std::string claim_uid;
  // Per driver, the devices the driver prepared (empty before NodePrepareResources).
  std::vector<std::pair<std::string, dra::state::Device>> devices;
};

// The DRA manager reads claims from the local resource API, as the kubelet GETs them.
class StoreClaimGetter final : public dra::ClaimGetter {
 public:
  explicit StoreClaimGetter(resourceapi::ObjectStore* store) : store_(store) {}
  absl::StatusOr<resourceapi::ResourceClaim> Get(const std::string& namespace_,
                                                 const std::string& name) override {
    return store_->GetClaim(namespace_, name);
  }

 private:
  resourceapi::ObjectStore* const store_;
};

class PodClaimController final : public PodResourceClaims {
 public:
  // `store` and `dra` are borrowed and must outlive this.
  PodClaimController(resourceapi::ObjectStore* store, dra::DraManager* dra)
      : store_(store), dra_(dra) {}

  // PodResourceClaims. Reserve's errors name the pod claim and the claim: NOT_FOUND for a missing
  // claim, template or device class; RESOURCE_EXHAUSTED when this node's devices cannot satisfy
  // a claim; INVALID_ARGUMENT for a selector outside the CEL subset; FAILED_PRECONDITION for a
  // claim generated for another pod or being deleted.
  absl::Status Reserve(Pod* pod) override;
  void Release(const Pod& pod) override;
  // Makes the store durable first (ObjectStore::MakeDurable): the claims' allocations and
  // reservations are on disk before any driver prepares them and before the pod is recorded, so
  // a crash never brings back an admitted pod whose claims the store forgot (their devices would
  // be handed out again). The write's error is returned as it is.
  absl::Status Prepare(const Pod& pod) override;
  absl::Status Unprepare(const Pod& pod) override { return dra_->UnprepareResources(pod); }
  absl::StatusOr<std::vector<std::string>> CdiDevices(const Pod& pod,
                                                      const Container& container) override {
    return dra_->GetResources(pod, container);
  }

  // PodResourceClaims::ReleaseOrphans: what a crash between a reservation (or the deletion of
  // a pod) and the next write of the pod store left behind goes, as the resourceclaim
  // controller drops what pods that no longer exist hold. Each such reservation of an allocated
  // claim is first handed to DraManager::AdoptReservation, so that the claim's drivers are asked
  // to unprepare it even when a power loss took the DRA manager's record of the reference.
  void ReleaseOrphans(const std::set<std::string>& active_pod_uids) override;

  // The pod's claims in spec order, with the DRA manager's cached devices.
  std::vector<PodClaimView> Describe(const Pod& pod) const;

 private:
  // The claim of `pod_claim` for the pod: the named one, or one created from the template.
  absl::StatusOr<resourceapi::ResourceClaim> ClaimOf(Pod* pod, const PodResourceClaim& pod_claim,
                                                     bool* generated);
  // Allocates `claim` (when not yet) and reserves it for `pod`; retried on write conflicts.
  absl::Status AllocateAndReserve(const Pod& pod, const PodResourceClaim& pod_claim,
                                  resourceapi::ResourceClaim claim);
  absl::StatusOr<resourceapi::AllocationResult> Allocate(const resourceapi::ResourceClaim& claim);

  resourceapi::ObjectStore* const store_;
  dra::DraManager* const dra_;
};

}  // namespace kdp::manager::resourceclaim

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_POD_CLAIM_CONTROLLER_H_
