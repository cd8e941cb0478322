// DeviceTaintEviction plays, for the pods of kdp-manager's node, the kube-controller-manager's
// device taint eviction controller (KEP-5055, pkg/controller/devicetainteviction): a pod that uses
// a ResourceClaim whose allocation holds a device now carrying a NoExecute taint is deleted,
// unless the allocation result's tolerations (copied from the request when it was allocated)
// tolerate the taint; a toleration with tolerationSeconds delays the eviction to that long after
// the taint's timeAdded (when the slice gives none: after the controller first saw the taint).
// Deleting the pod unprepares its claims through the kubelet's path, so the driver sees the
// NodeUnprepareResources the eviction causes upstream. NoSchedule taints only keep new
// allocations away (claim_allocator.h); effect None is informational.
//
// kdp deviation: taints come from ResourceSlices only; DeviceTaintRule objects
// (resource.k8s.io/v1alpha3) are not served.
//
// Thread-safety: PlanEvictions is a pure function. DeviceTaintEvictor is thread-safe: Start once;
// Stop from any thread (more than once, or without Start).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_DEVICE_TAINT_EVICTION_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_DEVICE_TAINT_EVICTION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/periodic_thread.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager {
class PodManager;
}  // namespace kdp::manager

namespace kdp::manager::resourceclaim {

// One pod to evict because of one untolerated NoExecute taint.
struct Eviction {
  std::string pod_namespace = {};
  std::string pod_name = {};
  std::string pod_uid = {};
  std::string claim = {};   // "<namespace>/<name>"
  std::string device = {};  // "<driver>/<pool>/<device>"
  resourceapi::DeviceTaint taint = {};
};

struct EvictionPlan {
  std::vector<Eviction> due = {};       // evict now
  std::optional<absl::Time> next = {};  // the earliest eviction delayed by tolerationSeconds
};

// A taint seen before, by "<driver>/<pool>/<device>|<key>=<value>": when it was first seen, for
// taints without timeAdded.
using TaintFirstSeen = std::map<std::string, absl::Time>;

// The evictions `now` calls for, from the claims (their allocation and reservedFor) and the
// slices (the devices' current taints). Devices in no slice, or in a pool's older generation, are
// left alone. `first_seen` is read and updated.
EvictionPlan PlanEvictions(const std::vector<resourceapi::ResourceClaim>& claims,
                           const std::vector<resourceapi::ResourceSlice>& slices, absl::Time now,
                           TaintFirstSeen* first_seen);

// Runs PlanEvictions every `period` when the store changed or a delayed eviction is due, and
// deletes the pods it names (PodManager::Delete; a failure is logged and retried next pass).
class DeviceTaintEvictor {
 public:
  // `store` and `pods` are borrowed and must outlive this evictor (or its Stop()).
  DeviceTaintEvictor(resourceapi::ObjectStore* store, PodManager* pods, absl::Duration period);
  DeviceTaintEvictor(const DeviceTaintEvictor&) = delete;
  DeviceTaintEvictor& operator=(const DeviceTaintEvictor&) = delete;
  ~DeviceTaintEvictor() { Stop(); }

  void Start();
  void Stop() { thread_.Stop(); }
  // One pass on the caller's thread; returns the pods it deleted.
  int RunOnce() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  resourceapi::ObjectStore* const store_;
  PodManager* const pods_;
  const absl::Duration period_;
  PeriodicThread thread_;
  absl::Mutex mu_;
  int64_t seen_version_ ABSL_GUARDED_BY(mu_) = -1;
  std::optional<absl::Time> next_ ABSL_GUARDED_BY(mu_);
  TaintFirstSeen first_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager::resourceclaim

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCECLAIM_DEVICE_TAINT_EVICTION_H_
