// StatusManager keeps the local API's Pods in step with the pods kdp-manager runs, as the
// kubelet's status manager (pkg/kubelet/status) writes each pod's status to the API server: a pod
// the manager admitted appears (created Pending, then its Running status from pod_object.h, with
// a Scheduled event), its status follows its devices' health, and a pod the manager no longer
// runs is deleted. Sync runs every period on its own thread, and whenever a caller wants the API
// up to date at once (after an admission or a deletion).
//
// Thread-safety: thread-safe (Sync calls are serialised; Start and Stop from any thread).
#ifndef KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_
#define KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/periodic_thread.h"
#include "manager/src/events/event_recorder.h"
#include "manager/src/resourceapi/store.h"
#include "manager/src/status/pod_object.h"

namespace kdp::manager {

struct StatusManagerOptions {
  std::string node_name;
  // The pods the manager runs (PodManager::List). Required.
  std::function<std::vector<AdmittedPod>()> pods = nullptr;
  // Each allocated device's health, for allocatedResourcesStatus.
  DeviceHealthLookup health = nullptr;
  absl::Duration sync_period = absl::Seconds(1);
  std::function<absl::Time()> now = nullptr;  // absl::Now when empty
};

class StatusManager {
 public:
  // `store` and `events` are borrowed and must outlive the manager; `events` may be null.
  StatusManager(resourceapi::ObjectStore* store, EventRecorder* events,
                StatusManagerOptions options);
  ~StatusManager();
  StatusManager(const StatusManager&) = delete;
  StatusManager& operator=(const StatusManager&) = delete;

  void Start();
  void Stop();
  // Brings the API's Pods in step now; returns how many it created, changed or deleted.
  int Sync() ABSL_LOCKS_EXCLUDED(sync_mu_);

 private:
  resourceapi::ObjectStore* const store_;
  EventRecorder* const events_;
  const StatusManagerOptions options_;

  absl::Mutex sync_mu_;
  PeriodicThread thread_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_
