// StatusManager keeps the local API's Pods in step with the pods kdp-manager runs, as the
// kubelet's status manager (pkg/kubelet/status) writes each pod's status to the API server: a pod
// the manager admitted appears (created Pending, then its Running status from pod_object.h, with
// a Scheduled event), its status follows its devices' health, and a pod the manager no longer
// runs is deleted. A pod the manager refused stays, Failed, until it is deleted (RecordRejected).
// Sync runs every period on its own thread; SyncPod brings one pod up to date at once (after its
// admission or deletion), without listing the others.
//
// Thread-safety: thread-safe (Sync calls are serialised; Start and Stop from any thread).
#ifndef KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_
#define KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/periodic_thread.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/events/event_recorder.h"
#include "manager/src/status/pod_object.h"

namespace kdp::manager {

struct StatusManagerOptions {
  std::string node_name;
  // The pods the manager runs (PodManager::List). Required.
  std::function<std::vector<AdmittedPod>()> pods = nullptr;
  // One pod the manager runs, by namespace and name (PodManager::Get), for SyncPod; null: SyncPod
  // syncs every pod.
  std::function<std::optional<AdmittedPod>(const std::string& namespace_, const std::string& name)>
      pod = nullptr;
  // Each allocated device's health, for allocatedResourcesStatus.
  DeviceHealthLookup health = nullptr;
  absl::Duration sync_period = absl::Seconds(1);
  std::function<absl::Time()> now = nullptr;  // absl::Now when empty
  // Where the refused pods are kept across restarts (a JSON array of their API objects, written
  // durably on each change), as the API server keeps every Pod it acknowledged; empty: in memory
  // only.
  std::string refused_pods_path = {};
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
  // The same for one pod (after its admission or deletion): O(1) in the pods the manager runs,
  // where Sync is O(pods). A refused pod is left as RecordRejected showed it.
  int SyncPod(const std::string& namespace_, const std::string& name) ABSL_LOCKS_EXCLUDED(sync_mu_);

  // Reads the refused pods kept in `refused_pods_path` into the API (the manager calls it at
  // start, before Start). A missing file is none (OK); DATA_LOSS naming the file when it is not
  // one this manager wrote (kdp-manager then refuses to start rather than drop them).
  [[nodiscard]] absl::Status LoadRefused() ABSL_LOCKS_EXCLUDED(sync_mu_);
  // Shows a pod the manager refused (`result.admitted` false) as a cluster shows it until it is
  // deleted: Failed with the kubelet's reason and "Pod was rejected: <message>", or, for the
  // scheduler's FailedScheduling, Pending with PodScheduled False (Unschedulable). `submitted`:
  // the Pod object the API client sent (its metadata and spec are shown), or null. The refusal
  // is written to `refused_pods_path` before it is shown: on an error (a full disk) nothing is
  // shown and the error is returned.
  [[nodiscard]] absl::Status RecordRejected(const AdmitResult& result, nlohmann::json submitted)
      ABSL_LOCKS_EXCLUDED(sync_mu_);
  // The API object of a refused pod; NOT_FOUND when that pod was not refused (or is deleted).
  [[nodiscard]] absl::StatusOr<nlohmann::json> Rejected(const std::string& namespace_,
                                                        const std::string& name) const
      ABSL_LOCKS_EXCLUDED(sync_mu_);
  // Removes a refused pod from the API (and from `refused_pods_path` first: the file's write
  // error, with nothing removed); returns its object. NOT_FOUND when there is none.
  [[nodiscard]] absl::StatusOr<nlohmann::json> DeleteRejected(const std::string& namespace_,
                                                              const std::string& name)
      ABSL_LOCKS_EXCLUDED(sync_mu_);
  // The API's Pod of that name (running or refused); the store's NOT_FOUND otherwise.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Get(const std::string& namespace_,
                                                   const std::string& name) const;

 private:
  resourceapi::ObjectStore* const store_;
  EventRecorder* const events_;
  const StatusManagerOptions options_;

  // Brings the API's Pod of `pod` (not terminating) in step; returns 1 when it wrote it.
  int SyncOneLocked(const AdmittedPod& pod, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);

  // Writes the refused pods' objects (`rejected_`'s, with `added` and without `removed`) to
  // options_.refused_pods_path.
  absl::Status WriteRefusedLocked(const nlohmann::json* added,
                                  const std::pair<std::string, std::string>* removed) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);

  mutable absl::Mutex sync_mu_;
  // (namespace, name) of the refused pods shown in the API.
  std::set<std::pair<std::string, std::string>> rejected_ ABSL_GUARDED_BY(sync_mu_);
  PeriodicThread thread_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_STATUS_STATUS_MANAGER_H_
