// DraManager: kdp-manager's copy of the kubelet's DRA manager (pkg/kubelet/cm/dra/manager.go,
// kubelet 1.34 behaviour). The pod lifecycle calls PrepareResources before it creates a pod
// sandbox, GetResources while it builds a container (the CDI device IDs go to the runtime),
// UnprepareResources once every container of a terminating pod has stopped, and
// PodMightNeedToUnprepareResources before it forgets a pod; a periodic task (the kubelet: every
// 60 s, once all config sources are ready) calls ReconcileOrphans with the active pods.
//
// It fetches ResourceClaims through a ClaimGetter (the API server in the kubelet), reaches drivers
// through DraPlugins (plugin/plugin.h) and keeps what was prepared in a ClaimInfoCache backed by
// `<state_dir>/dra_manager_state`, so after a restart unprepare still works without the API server
// and GetResources still answers for running pods.
//
// Error texts are the kubelet's (1.34+, as pkg/kubelet/cm/dra/manager_test.go checks them):
// "prepare dynamic resources: …", "unprepare dynamic resources: …",
// "fetch ResourceClaim <name>: …", "DRA driver <d> is not registered",
// "NodePrepareResources skipped <n> ResourceClaims", ...
//
// Device health (KEP-4680, kubelet 1.34+) lives in a DeviceHealthTracker the manager owns: the
// drivers' health streams feed it through health_stream_handler() (hand it to
// DraPluginManager::SetHealthStreamHandler), it persists `<state_dir>/dra_health_state`, and the
// pod side reads UpdateAllocatedResourcesStatus for containerStatuses[].allocatedResourcesStatus.
//
// Thread-safety: thread-safe. Calls for different pods may run concurrently; the cache lock is
// never held across an RPC, a claim fetch or a checkpoint write. Unlike the kubelet (whose pod
// workers never prepare and unprepare one pod at once, but may a claim shared by two pods), a
// prepare and an unprepare that touch the same claim are serialised: each takes its claims'
// claim locks, all at once, from before it reads or changes their cache entries until it is done
// with them, driver calls included. Calls on other claims never wait for them, so a driver that
// hangs holds up only the pods that use its claims. The calls in flight to drivers are listed by
// peer_calls().
#ifndef KDP_MANAGER_SRC_DRA_MANAGER_H_
#define KDP_MANAGER_SRC_DRA_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "manager/src/dra/claim_info.h"
#include "manager/src/dra/device_health_tracker.h"
#include "manager/src/dra/health_info.h"
#include "manager/src/dra/plugin/plugin.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/peercalls/peer_calls.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager::dra {

// Where ResourceClaims come from (the kubelet GETs them from the API server).
// Implementations must be thread-safe.
class ClaimGetter {
 public:
  virtual ~ClaimGetter() = default;
  // The claim `name` in `namespace_`: NOT_FOUND when it does not exist, other codes for failures.
  virtual absl::StatusOr<resourceapi::ResourceClaim> Get(const std::string& namespace_,
                                                         const std::string& name) = 0;
};

struct DraManagerOptions {
  // The kubelet root directory; the checkpoint is `<state_dir>/<checkpoint_name>`. Required.
  std::string state_dir = {};
  // Default "dra_manager_state".
  std::string checkpoint_name = kCheckpointFileName;
  // Borrowed; must outlive the manager. Required.
  ClaimGetter* claims = nullptr;
  // Borrowed; must outlive the manager. Required.
  DraPlugins* plugins = nullptr;
  // The device health file is `<state_dir>/<health_state_name>`; default "dra_health_state".
  std::string health_state_name = kHealthStateFileName;
  // Called with the UIDs (sorted) of the pods whose claims use a device whose health changed
  // (the kubelet's update channel to the pod status sync), on a health stream's thread, no lock
  // held; must not block for long. Empty: nobody is told.
  std::function<void(std::vector<std::string> pod_uids)> on_pod_health_changed = {};
  // The health cache's clock; empty: absl::Now. For tests.
  std::function<absl::Time()> clock = {};
  // Where PrepareResources/UnprepareResources durations are recorded
  // (dra_operations_duration_seconds); nullptr: nowhere. Borrowed; must outlive the manager.
  const ManagerMetrics* metrics = nullptr;
  // kdp-manager's state store, when it keeps the DRA state (StateStoreOptions::
  // dra_checkpoint_path): the cache is then journalled (ClaimInfoCache::CreateJournaled) and
  // filled with `restored_claims` instead of reading `<state_dir>/<checkpoint_name>` itself.
  // Borrowed; must outlive the manager. nullptr: the cache writes the checkpoint itself.
  StateStore* store = nullptr;
  std::vector<state::ClaimInfoState> restored_claims = {};
  // Whether the record of a pod's reference, written before NodePrepareResources (#116411), is
  // durable before the call, as the kubelet's is. kdp-manager sets false: PodClaimController
  // makes the claim's reservation for the pod durable in the resource store before any prepare,
  // and at restart hands every reservation of a pod that is gone to AdoptReservation, which
  // re-creates a reference a power loss took. The record is then made durable by the pod's own
  // synced record, one fdatasync fewer per admission.
  bool sync_reference_before_prepare = true;
};

class DraManager {
 public:
  // Opens the checkpoint and restores the cache (every claim unprepared). INVALID_ARGUMENT for an
  // empty state_dir or checkpoint_name or a missing dependency; DATA_LOSS "failed to get
  // checkpoint dra_manager_state: checkpoint is corrupted…" for a corrupted file (the kubelet
  // then refuses to start); FAILED_PRECONDITION for the unsupported ≤1.31 layout.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DraManager>> Create(
      DraManagerOptions options);

  DraManager(const DraManager&) = delete;
  DraManager& operator=(const DraManager&) = delete;

  // Prepares every claim of the pod that is not yet prepared (prepareResources): validates all of
  // them first (claim fetched, owned by the pod for a template claim, pod in reservedFor,
  // allocated, every driver registered) without touching the cache (#131957); then per claim
  // adds the pod reference and writes the checkpoint (before any RPC, #116411); then one
  // NodePrepareResources per driver with all its unprepared claims of this pod, drivers in name
  // order, the first error aborting; finally marks the claims prepared and writes the checkpoint.
  // Already prepared claims are skipped (and the others still prepared: #135919). Errors carry
  // the prefix "prepare dynamic resources: " and keep the cause's code (the RPC's for RPC
  // errors, NOT_FOUND for a missing claim, FAILED_PRECONDITION for a rule broken, INTERNAL for a
  // bad driver answer). A claim-name status of "" for a template claim means "no claim needed"
  // and is skipped; a template claim without a status entry is an error ("ResourceClaim not
  // created yet"), as resourceclaim.Name.
  [[nodiscard]] absl::Status PrepareResources(const Pod& pod);

  // Unprepares the pod's claims (unprepareResources): those of the cache that reference the pod
  // (else those named by the pod spec). A claim still used by another pod only loses this pod's
  // reference; the others go, per driver, to one NodeUnprepareResources call, and are removed
  // from the cache once every call succeeded; the checkpoint is then written. Not cached, or
  // not referencing this pod: skipped (idempotent). Errors carry the prefix
  // "unprepare dynamic resources: "; the pod keeps its references, so a retry does the rest.
  [[nodiscard]] absl::Status UnprepareResources(const Pod& pod);
  // The same for a pod known only by UID (e.g. deleted while kdp-manager was down): the claims
  // come from the cache alone.
  [[nodiscard]] absl::Status UnprepareResourcesForPod(const std::string& pod_uid);

  // The CDI device IDs `container` of `pod` gets (the kubelet's GetResources), in the order of the
  // container's claims. FAILED_PRECONDITION "unable to get claim info for ResourceClaim …" when a
  // claim the container uses is not cached (the container must not start).
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> GetResources(
      const Pod& pod, const Container& container) const;

  // Copies of the cached claims `container` uses (GetContainerClaimInfos); FAILED_PRECONDITION
  // "unable to get information for ResourceClaim …" when one is not cached, INVALID_ARGUMENT
  // when a pod claim has neither source.
  [[nodiscard]] absl::StatusOr<std::vector<ClaimInfo>> GetContainerClaimInfos(
      const Pod& pod, const Container& container) const;

  // Whether any cached claim still references the pod: the pod must not be forgotten yet.
  bool PodMightNeedToUnprepareResources(const std::string& pod_uid) const;

  // The kubelet's reconcile loop body (reconcileLoop): unprepares every pod referenced by a cached
  // claim that is not in `active_pod_uids`. Tries every such pod; returns OK, or the first error
  // (each failure is also logged; the next run retries). `active_pod_uids` may be read before the
  // call without any admission lock held: a pod whose PrepareResources began after the previous
  // ReconcileOrphans returned may have become active after it was read, and is left for the next
  // run (a pod that really is gone is then unprepared one period later). REQUIRES: calls of
  // ReconcileOrphans do not overlap (one reconcile loop).
  [[nodiscard]] absl::Status ReconcileOrphans(const std::set<std::string>& active_pod_uids);

  // A restart found `claim` reserved for `pod_uid`, a pod that is gone (not restored), and the
  // record of its reference written before NodePrepareResources may have been lost (see
  // DraManagerOptions::sync_reference_before_prepare): caches the reference, unprepared, so that
  // ReconcileOrphans asks the claim's drivers to unprepare it (a driver answers OK for a claim it
  // never prepared). Nothing to do for an unallocated claim or a reference already cached; a
  // cached claim of the same name with another UID is left alone (logged). The record is written
  // durably. Errors as the checkpoint write.
  [[nodiscard]] absl::Status AdoptReservation(const resourceapi::ResourceClaim& claim,
                                              const std::string& pod_uid);

  // Copies of every cached claim, in key order ("<namespace>/<name>"), for status display.
  std::vector<ClaimInfo> Claims() const;
  // dra_resource_claims_in_use: prepared claims per driver, and in total under "<any>".
  std::map<std::string, int64_t> ClaimsInUse() const;

  const std::string& checkpoint_path() const { return cache_->checkpoint_path(); }
  // The persistent state of every cached claim, in key order (what dra_manager_state holds; the
  // state store's compaction writes it).
  std::vector<state::ClaimInfoState> ClaimStates() const;

  // The NodePrepareResources and NodeUnprepareResources calls in flight.
  const PeerCallTracker& peer_calls() const { return peer_calls_; }

  // The handler for the drivers' health streams (DraPluginManager::SetHealthStreamHandler).
  // Valid as long as the manager.
  HealthStreamHandler* health_stream_handler() { return health_.get(); }
  // containerStatuses[].allocatedResourcesStatus of `pod`, by app container name (see
  // DeviceHealthTracker::UpdateAllocatedResourcesStatus). Never an error: what is not prepared
  // or not generated yet is left out.
  AllocatedResourcesStatus UpdateAllocatedResourcesStatus(const Pod& pod) const {
    return health_->UpdateAllocatedResourcesStatus(pod);
  }
  // One device's health as a pod sees it (getHealthInfo): Unknown, without message, when never
  // reported, its driver's stream ended, or older than its timeout.
  DeviceHealth GetDeviceHealth(const std::string& driver, const std::string& pool,
                               const std::string& device) const {
    return health_->cache().GetHealthInfo(driver, pool, device);
  }
  // Every device whose health a driver reported, by driver, pool and device, for status output.
  std::vector<DeviceHealthSummary> HealthSummary() const { return health_->Summary(); }
  const std::string& health_state_path() const { return health_->cache().state_file(); }

 private:
  // A claim to unprepare for one pod.
  struct ClaimRef {
    std::string namespace_;
    std::string name;
    friend bool operator<(const ClaimRef& a, const ClaimRef& b) {
      return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
    }
  };

  DraManager(DraManagerOptions options, std::unique_ptr<ClaimInfoCache> cache,
             std::unique_ptr<DeviceHealthTracker> health)
      : options_(std::move(options)), cache_(std::move(cache)), health_(std::move(health)) {}

  // Holds the claim locks of a set of claims (ClaimInfoKey) from construction to destruction.
  class ClaimLocks;

  absl::Status Prepare(const Pod& pod);
  // `pod_label`: "<namespace>/<name>" when known, else the UID, for peer_calls().
  absl::Status Unprepare(const std::string& pod_uid, const std::string& pod_label,
                         const std::vector<ClaimRef>& claims);
  std::vector<ClaimRef> CachedClaimsOf(const std::string& pod_uid) const;
  PeerCallTracker::Scope TrackCall(const DraPlugin& plugin, const char* method,
                                   const std::string& pod_label);

  const DraManagerOptions options_;
  const std::unique_ptr<ClaimInfoCache> cache_;
  const std::unique_ptr<DeviceHealthTracker> health_;
  PeerCallTracker peer_calls_;
  absl::Mutex claims_mu_;
  // Claims (ClaimInfoKey) a prepare or an unprepare is working on.
  std::set<std::string> busy_claims_ ABSL_GUARDED_BY(claims_mu_);
  // Pods whose PrepareResources began since the last ReconcileOrphans returned.
  std::set<std::string> prepared_since_reconcile_ ABSL_GUARDED_BY(claims_mu_);
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_MANAGER_H_
