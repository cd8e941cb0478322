// PodManager admits Pods on kdp-manager's node and keeps the admitted ones, playing the part of
// the kubelet's pod workers and admit handlers: containers are allocated serially, init containers
// first; a device manager error rejects the pod with the kubelet's UnexpectedAdmissionError, and
// each container's runtime options are computed as at its start. It is also the node's pod source
// for the device manager's garbage collection, and keeps its pods in the StateStore (the stand-in
// for the API server: a restarted manager knows which pods still run).
//
// Thread-safe. No lock is held across a call to a device plugin or a DRA driver. Admissions of
// pods that share an extended resource are serialised (each admission holds its resources, all at
// once, from its topology hints to its last container's allocation, so the hints stay true to the
// devices the allocation finds, as on a kubelet that admits one pod at a time); admissions that
// share none run concurrently, so a plugin that hangs holds up only the pods of its resource. The
// scheduler's part of DRA (PodResourceClaims::Reserve) runs one pod at a time, as the scheduler
// allocates claims; preparing and unpreparing claims is serialised per claim by the DRA manager.
// Deletions of one pod are serialised, and wait for an admission of the same name to end.
#ifndef KDP_MANAGER_SRC_PODMANAGER_POD_MANAGER_H_
#define KDP_MANAGER_SRC_PODMANAGER_POD_MANAGER_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/pod/pod.h"
#include "manager/src/state/state_store.h"
#include "manager/src/topologymanager/topology_manager.h"

namespace kdp::manager {

struct AdmittedContainer {
  Container spec;
  // Resource → device IDs (natural order), and per resource the devices by NUMA node.
  std::map<std::string, std::vector<std::string>> devices;
  std::map<std::string, DevicesPerNuma> devices_per_numa;
  RunContainerOptions options;
  // The topology manager's merged hint the container was allocated with; nullopt under policy
  // "none" and for pods restored at start (kdp does not re-admit them, as a restarted kubelet
  // does).
  std::optional<TopologyHint> topology_hint;
};

// The DRA side of a pod's life on kdp-manager, behind a narrow interface so that pod admission does
// not depend on how claims are scheduled and prepared (controlplane/resourceclaim/
// pod_claim_controller.h implements it; tests fake it). Implementations are thread-safe.
class PodResourceClaims {
 public:
  virtual ~PodResourceClaims() = default;
  // The scheduler's part, before any device is allocated: creates the claims of the pod's
  // templates, allocates unallocated claims on this node and reserves every claim for the pod,
  // recording generated claim names in pod->resource_claim_statuses. On error nothing stays
  // reserved or created for the pod; the error says which claim and why (the pod is then
  // rejected as unschedulable).
  [[nodiscard]] virtual absl::Status Reserve(Pod* pod) = 0;
  // Undoes Reserve for a pod that is rejected or deleted: its reservations go, claims generated
  // for it are deleted, claims reserved by nobody are deallocated. Best effort (logged).
  virtual void Release(const Pod& pod) = 0;
  // The kubelet's DRA manager: NodePrepareResources before the pod's containers start,
  // NodeUnprepareResources once it is gone, the CDI device IDs of each container.
  [[nodiscard]] virtual absl::Status Prepare(const Pod& pod) = 0;
  [[nodiscard]] virtual absl::Status Unprepare(const Pod& pod) = 0;
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> CdiDevices(
      const Pod& pod, const Container& container) = 0;
  // The resourceclaim controller's clean-up after a restart: reservations held for pods that
  // are not in `active_pod_uids` (deleted, or whose admission a crash cut short) are dropped,
  // claims generated for them deleted, claims then reserved by nobody deallocated. Best effort
  // (logged). The default does nothing.
  virtual void ReleaseOrphans(const std::set<std::string>& /*active_pod_uids*/) {}
};

struct AdmittedPod {
  Pod pod;
  // Init containers (regular and sidecar) in order, then app containers in order.
  std::vector<AdmittedContainer> containers;
};

struct AdmitResult {
  bool admitted = false;
  // When rejected: the kubelet's reason and message.
  std::string reason;
  std::string message;
  AdmittedPod pod;
};

// Pods for the allocations of a checkpoint written elsewhere (a kubelet's, copied in to replay a
// node) whose UIDs are not in `known`: one pod per UID, named "adopted-<uid>" in namespace
// "kdp-adopted", one app container per checkpointed container with an extended-resource count
// per resource equal to its device count. Ordered by UID.
std::vector<Pod> PodsForCheckpointEntries(const checkpoint::Data& data,
                                          const std::set<std::string>& known);

class PodManager : public ActivePodsSource {
 public:
  // `devices`, `store` (nullptr: pods are not persisted) and `topology` (nullptr: policy "none"
  // over `devices`) are borrowed and must outlive this.
  explicit PodManager(DeviceManager* devices, StateStore* store = nullptr,
                      TopologyManager* topology = nullptr, PodResourceClaims* claims = nullptr);

  // Takes back the pods read from the pod store at start, each container with the devices and
  // runtime options the device manager restored (no PreStartContainer: the containers run
  // already), then declares the pod source ready, so garbage collection frees the devices of
  // pods that are gone. REQUIRES: called once, before any admission.
  void Restore(std::vector<Pod> pods) ABSL_LOCKS_EXCLUDED(mu_);

  // ActivePodsSource.
  bool SourcesReady() const override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t Generation() const override ABSL_LOCKS_EXCLUDED(mu_);
  std::set<std::string> ActivePodUids() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn` with the active pods' UIDs (admitted, terminating and being admitted), for the DRA
  // reconcile loop. No lock is held while `fn` runs (it calls drivers): admissions and deletions
  // go on meanwhile. A pod whose admission starts after the UIDs were read is not among them;
  // DraManager::ReconcileOrphans leaves the claims of pods that began preparing since its previous
  // run alone for that reason, so the claims such an admission prepares are never taken for
  // orphans.
  void WithActivePodsSettled(const std::function<void(const std::set<std::string>&)>& fn)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The admitted pods' specs, for the state store's snapshot.
  std::vector<Pod> Pods() const ABSL_LOCKS_EXCLUDED(mu_);

  // Admits `pod`. A rejection is a result, not an error; ALREADY_EXISTS when a pod of that
  // namespace and name (or that UID) is already admitted, being admitted or being deleted; the
  // store's error (e.g. RESOURCE_EXHAUSTED: disk full) when the admission could not be recorded,
  // in which case the pod is not admitted and holds no devices. Waits while another admission
  // holds one of the pod's extended resources.
  absl::StatusOr<AdmitResult> Admit(Pod pod) ABSL_LOCKS_EXCLUDED(mu_, schedule_mu_);
  // Deletes the pod and releases its devices; returns its UID. NOT_FOUND when absent; the
  // store's error when the deletion could not be recorded (the pod then stays); the DRA
  // manager's error when a driver fails NodeUnprepareResources (the pod then stays, terminating,
  // as a kubelet keeps a terminating pod until unprepare succeeds: FinishTerminating or another
  // Delete retries). A pod with claims is recorded terminating before they are unprepared. Waits
  // for another deletion of the pod, or an admission of its name, to end first.
  absl::StatusOr<std::string> Delete(const std::string& namespace_, const std::string& name)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes every terminating pod again (Pod::terminating: a driver failed
  // NodeUnprepareResources, or a crash cut the deletion), as the kubelet's pod workers keep
  // terminating a pod until it is done; the DRA reconcile loop calls it. A pod another deletion
  // is working on is skipped (that deletion retries it). Returns how many completed; failures
  // are logged and left for the next call.
  int FinishTerminating() ABSL_LOCKS_EXCLUDED(mu_);

  // The topology manager's configuration (policy, scope, the machine's NUMA nodes).
  const TopologyManagerConfig& topology_config() const { return topology_->config(); }

  // Admitted pods ordered by namespace, then name.
  std::vector<AdmittedPod> List() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<AdmittedPod> Get(const std::string& namespace_, const std::string& name) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using PodKey = std::pair<std::string, std::string>;  // namespace, name

  // Records `pod` as being admitted (ALREADY_EXISTS as Admit describes), then waits until no
  // other admission holds any of `resources` and holds them.
  absl::Status BeginAdmission(const Pod& pod, const std::set<std::string>& resources)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseResources(const std::set<std::string>& resources) ABSL_LOCKS_EXCLUDED(mu_);
  // The admission proper, between BeginAdmission and the end of Admit; calls `release_resources`
  // once the containers' devices are allocated (PreStartContainer and the DRA drivers' calls need
  // no other admission kept out).
  absl::StatusOr<AdmitResult> RunAdmission(Pod pod, const std::function<void()>& release_resources)
      ABSL_LOCKS_EXCLUDED(mu_, schedule_mu_);
  // Delete; with `skip_busy`, UNAVAILABLE at once instead of waiting for another deletion of the
  // pod (FinishTerminating).
  absl::StatusOr<std::string> DeletePod(const std::string& namespace_, const std::string& name,
                                        bool skip_busy) ABSL_LOCKS_EXCLUDED(mu_);
  AdmittedContainer Describe(const Pod& pod, const Container& container,
                             RunContainerOptions options) const;
  // Appends the CDI device IDs of the container's claims to its runtime options; the DRA
  // manager's error when a claim it uses is not prepared.
  absl::Status AddClaimCdiDevices(const Pod& pod, AdmittedContainer* container) const;

  DeviceManager* const devices_;
  StateStore* const store_;
  std::optional<TopologyManager> default_topology_;  // policy "none", when none was given
  TopologyManager* const topology_;
  PodResourceClaims* const claims_;  // nullptr: pods with resource claims are rejected
  // Held around PodResourceClaims::Reserve only (it allocates claims from what other claims
  // hold, as the scheduler does one pod at a time); it calls no driver.
  absl::Mutex schedule_mu_;
  // Held briefly, never across a call out of PodManager (the state store's record callbacks take
  // it inside the store's own lock).
  mutable absl::Mutex mu_;
  std::map<PodKey, AdmittedPod> pods_ ABSL_GUARDED_BY(mu_);
  // UID → (namespace, name) of every pod being admitted: active already, as in the kubelet.
  std::map<std::string, PodKey> admitting_ ABSL_GUARDED_BY(mu_);
  // Extended resources held by admissions in progress.
  std::set<std::string> busy_resources_ ABSL_GUARDED_BY(mu_);
  // (namespace, name) → UID of every pod being deleted.
  std::map<PodKey, std::string> deleting_ ABSL_GUARDED_BY(mu_);
  // UID → (namespace, name) of every admitted pod.
  std::map<std::string, PodKey> by_uid_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool sources_ready_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_PODMANAGER_POD_MANAGER_H_
