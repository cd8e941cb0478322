// PodAdmission is the one way a pod starts or ends on kdp-manager, whoever asks: kdpctl apply and
// delete (admin_server.h) and a Pod created or deleted through the local API (kubectl, client-go:
// controlplane/resourceapi/pod_writer.h). On a cluster the API server stores the Pod, the scheduler
// binds it and the kubelet admits it; here one call does what they would, in the same order:
//   - a pod of that namespace and name already in the API (running, or refused and not deleted
//     yet) is refused: 409 `pods "x" already exists`;
//   - PodManager::Admit (device plugins, topology manager, DRA claims from templates);
//   - a refusal is a Warning Event with the kubelet's or the scheduler's reason
//     (UnexpectedAdmissionError, TopologyAffinityError, OutOf<resource>,
//     FailedPrepareDynamicResources, FailedScheduling, ...) and a Pod in the API that says so
//     (status_manager.h RecordRejected: Failed, or Pending and unschedulable), kept until deleted;
//     an admitted pod is in the API, Running, before the call returns.
// Deleting frees the pod's devices and unprepares its claims (PodManager::Delete), or removes a
// refused pod's record, and brings the API up to date before returning.
//
// Thread-safety: thread-safe. Admissions and deletions of one pod name are serialised here (the
// refusal a concurrent apply records must not outlive a pod admitted under the same name);
// PodManager runs those of different pods concurrently where they share no resource.
#ifndef KDP_MANAGER_SRC_LIFECYCLE_POD_ADMISSION_H_
#define KDP_MANAGER_SRC_LIFECYCLE_POD_ADMISSION_H_

#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/controlplane/resourceapi/persistence.h"
#include "manager/src/controlplane/resourceapi/pod_writer.h"
#include "manager/src/events/event_recorder.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/status/status_manager.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

struct PodAdmissionOptions {
  std::string node_name;
  // Borrowed; may be null: no API Pods (status), no Events (events), nothing to flush (persister).
  StatusManager* status = nullptr;
  EventRecorder* events = nullptr;
  // The resource API's state (claims generated and released by admissions and deletions):
  // flushed before a deletion is answered, so what the client is told is on disk.
  resourceapi::StorePersister* persister = nullptr;
};

struct PodDeletion {
  std::string uid;
  // Set when the deletion is done and recorded but the resource API's state could not be written
  // yet (retried in the background): kdpctl prints it.
  std::string warning;
  // The pod's API object as it was (null without a status manager).
  nlohmann::json object;
};

class PodAdmission final : public resourceapi::PodWriter {
 public:
  // `pods` is borrowed and must outlive this.
  PodAdmission(PodManager* pods, PodAdmissionOptions options)
      : pods_(pods), options_(std::move(options)) {}

  // Admits `pod` as described above. `submitted`: the Pod object as an API client sent it (kept
  // as the API's Pod, so labels, annotations and the spec are the client's), null for kdpctl.
  // `retry_refused`: a refused pod of that name is deleted and this one admitted in its place
  // (kdpctl apply: applying a refused pod again tries again) instead of ALREADY_EXISTS.
  // A refusal is a result; errors: ALREADY_EXISTS, and PodManager::Admit's.
  [[nodiscard]] absl::StatusOr<AdmitResult> Admit(Pod pod, nlohmann::json submitted = nullptr,
                                                  bool retry_refused = false);
  // Deletes the pod (running or refused). NOT_FOUND when there is none; `uid` (empty: any) must
  // be its UID (ABORTED otherwise); PodManager::Delete's errors.
  [[nodiscard]] absl::StatusOr<PodDeletion> Delete(const std::string& namespace_,
                                                   const std::string& name,
                                                   const std::string& uid = "");

  // resourceapi::PodWriter, for the local API: the Pod object is parsed with kdpctl's parser
  // (pod_manifest.h: the same validation, its errors as the API server's 422 Invalid / 400).
  absl::StatusOr<nlohmann::json> CreatePod(nlohmann::json pod) override;
  absl::StatusOr<nlohmann::json> DeletePod(const std::string& namespace_, const std::string& name,
                                           const std::string& uid) override;

 private:
  // Holds the pod name (namespace, name) from construction to destruction, once no other
  // admission or deletion of it runs.
  class NameLock;

  void RecordRejection(const AdmitResult& result);

  PodManager* const pods_;
  const PodAdmissionOptions options_;
  absl::Mutex mu_;
  std::set<std::pair<std::string, std::string>> busy_names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_LIFECYCLE_POD_ADMISSION_H_
