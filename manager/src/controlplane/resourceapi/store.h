// ObjectStore: the in-memory object store behind kdp-manager's local resource API, holding
// ResourceSlices, DeviceClasses, ResourceClaims and ResourceClaimTemplates of resource.k8s.io and
// the manager's own Node, each as JSON in canonical v1 form (what a client wrote, defaulted, with
// fields kdp does not type kept as they are). It does what the API server's generic registry and
// storage layer do for these kinds: generateName, uid, creationTimestamp, generation and ONE
// cluster-wide resourceVersion counter that every write moves forward; optimistic concurrency on
// resourceVersion; per-kind rules (strategy.h) and validation (codec.h); finalizers delaying a
// delete; field and label selectors (selectors.h).
//
// Callers: the REST server (server.h) uses the JSON methods; the manager uses the typed accessors
// (ListSlices, GetClaim, UpdateClaimStatus, ...). Every change is appended to an event log keyed
// by resourceVersion (EventsSince / WaitForEvents), which is what watches will be built on.
// Persistence is not done here; Snapshot and Restore are the seam a persisting caller uses.
//
// Errors are Kubernetes API errors (api_errors.h): NotFound, AlreadyExists, Conflict (ABORTED),
// Invalid and BadRequest (INVALID_ARGUMENT), Expired (OUT_OF_RANGE).
//
// Thread-safety: thread-safe; every method may be called from any thread. No callback runs
// under the store's lock.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STORE_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STORE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/selectors.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// Whether objects of `kind` are in Snapshot() and what a persister keeps: not the Node (made at
// start), not Pods (the manager writes them from its pod store) and not Events (short-lived, as
// the API server's 1-hour TTL makes them).
bool IsPersistedKind(Kind kind);

struct StoreOptions {
  // The manager's node: the one Node object, created with the store. Required.
  std::string node_name;
  // Extra Node labels; kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch are added
  // as the kubelet adds them unless given here.
  std::map<std::string, std::string> node_labels = {};
  // How many change events the log keeps for watches; older resourceVersions are Expired.
  size_t event_log_capacity = 10000;
  // The clock for creationTimestamp and deletionTimestamp; absl::Now when empty.
  std::function<absl::Time()> now = nullptr;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  Kind kind = Kind::kResourceSlice;
  int64_t resource_version = 0;
  // The v1 object after the change; for kDeleted its last state, carrying the deletion's
  // resourceVersion (as the API server's DELETED events do).
  nlohmann::json object = nullptr;
  // For kModified, SelectableProjection of the object before the change (null otherwise).
  nlohmann::json previous = nullptr;
};
// "ADDED", "MODIFIED", "DELETED".
const char* WatchEventTypeName(WatchEvent::Type type);

struct ListOptions {
  FieldSelector fields = {};
  LabelSelector labels = {};
};

struct ListResult {
  std::vector<nlohmann::json> items;  // v1 objects, ordered by namespace then name
  int64_t resource_version = 0;       // the store's resourceVersion when the list was taken
};

// The answer of a delete: `object` is the deleted object, or, when finalizers keep it
// (`deleted` false), the object now carrying metadata.deletionTimestamp.
struct DeleteResult {
  nlohmann::json object = nullptr;
  bool deleted = false;
};

// Preconditions of a delete (DeleteOptions.preconditions); empty means none.
struct Preconditions {
  std::string uid = {};
  std::string resource_version = {};
};

class ObjectStore {
 public:
  explicit ObjectStore(StoreOptions options);
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // ---- JSON API (objects in v1 form; namespaced kinds carry metadata.namespace) ----

  // Creates `object` and returns it as stored. A missing name is generated from
  // metadata.generateName plus 5 random characters of [bcdfghjklmnpqrstvwxz2456789] (the
  // prefix cut to 58 characters), retried on a clash as the API server does. BadRequest when
  // resourceVersion is set; Invalid/BadRequest from validation; AlreadyExists on a taken name;
  // MethodNotAllowed for Node.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Create(Kind kind, nlohmann::json object)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Create, keeping metadata.uid when the object has one: for the objects whose identity the
  // manager owns (a Pod's UID is the one its admission and checkpoints use).
  [[nodiscard]] absl::StatusOr<nlohmann::json> CreateKeepingUid(Kind kind, nlohmann::json object)
      ABSL_LOCKS_EXCLUDED(mu_);
  // NotFound when absent.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Get(Kind kind, std::string_view namespace_,
                                                   std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the object named by metadata.{namespace,name}. NotFound when absent; Conflict
  // when metadata.resourceVersion is set and is not the stored one, or metadata.uid differs;
  // Invalid on validation errors or a changed immutable spec. A write that changes nothing
  // returns the stored object without a new resourceVersion. A claim's status is kept (use
  // UpdateStatus). An object being deleted goes away once its finalizers are empty.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Update(Kind kind, nlohmann::json object)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces only `status` (the /status subresource; ResourceClaim). Same preconditions as
  // Update; MethodNotAllowed for kinds without status.
  [[nodiscard]] absl::StatusOr<nlohmann::json> UpdateStatus(Kind kind, nlohmann::json object)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes one object (or marks it deleted while finalizers remain). NotFound; Conflict on a
  // failed precondition.
  [[nodiscard]] absl::StatusOr<DeleteResult> Delete(Kind kind, std::string_view namespace_,
                                                    std::string_view name,
                                                    const Preconditions& preconditions = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // The objects of `kind` in `namespace_` ("" = all namespaces) matching `options`.
  [[nodiscard]] ListResult List(Kind kind, std::string_view namespace_,
                                const ListOptions& options = {}) const ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes every object List would return; returns them (as Delete returns each).
  [[nodiscard]] ListResult DeleteCollection(Kind kind, std::string_view namespace_,
                                            const ListOptions& options = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // The latest resourceVersion handed out.
  int64_t ResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Change log, for watches ----

  // The events with resourceVersion > `after`, oldest first (empty when none yet). Expired
  // (OUT_OF_RANGE, `too old resource version: <after> (<oldest>)`) when the log no longer
  // reaches back that far.
  [[nodiscard]] absl::StatusOr<std::vector<WatchEvent>> EventsSince(int64_t after) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same, only the events of `kind` (the other kinds' events are not copied).
  [[nodiscard]] absl::StatusOr<std::vector<WatchEvent>> EventsSince(int64_t after, Kind kind) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same, only the events of the kinds Snapshot keeps (IsPersistedKind): what a persister
  // appends.
  [[nodiscard]] absl::StatusOr<std::vector<WatchEvent>> PersistedEventsSince(int64_t after) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until ResourceVersion() > `after` or `timeout` passes; true when it moved.
  bool WaitForEvents(int64_t after, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // The resourceVersion of the latest change to an object that Snapshot keeps (not the Node, a
  // Pod or an Event): what a persister compares, so that status writes never cost a file write.
  int64_t PersistedVersion() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until PersistedVersion() > `after` or `timeout` passes; true when it moved.
  bool WaitForPersistedChange(int64_t after, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Typed accessors for the manager ----

  const std::string& node_name() const { return node_name_; }
  // The Node's uid: a UUID (version 5 layout) derived from the node name, so it is the same on
  // every start of a manager for that node.
  const std::string& node_uid() const { return node_uid_; }
  // The Node's metadata.labels as stored now (the allocator matches nodeSelectors against them).
  std::map<std::string, std::string> NodeLabels() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the Node's status (what the kubelet's node status loop writes); a MODIFIED event
  // only when it changed. Returns whether it did.
  bool SetNodeStatus(const nlohmann::json& status) ABSL_LOCKS_EXCLUDED(mu_);
  // The slices bound to `node_name` (spec.nodeName), of `driver` when non-empty.
  [[nodiscard]] absl::StatusOr<std::vector<ResourceSlice>> ListSlices(
      std::string_view node_name, std::string_view driver = "") const;
  // Deletes those slices, as the kubelet does for its node at start and for a driver that
  // unregisters; returns how many went.
  int DeleteSlices(std::string_view node_name, std::string_view driver = "");
  [[nodiscard]] absl::StatusOr<ResourceClaim> GetClaim(std::string_view namespace_,
                                                       std::string_view name) const;
  [[nodiscard]] absl::StatusOr<std::vector<ResourceClaim>> ListClaims(
      std::string_view namespace_) const;
  [[nodiscard]] absl::StatusOr<ResourceClaim> CreateClaim(const ResourceClaim& claim);
  // Writes claim.status.{allocation, reservedFor} (other stored status fields are kept), with
  // claim.metadata.resource_version as precondition when set. Returns the stored claim.
  [[nodiscard]] absl::StatusOr<ResourceClaim> UpdateClaimStatus(const ResourceClaim& claim);
  // Deletes a claim; `uid` non-empty is a precondition (Conflict when it differs).
  [[nodiscard]] absl::Status DeleteClaim(std::string_view namespace_, std::string_view name,
                                         std::string_view uid = "");
  [[nodiscard]] absl::StatusOr<DeviceClass> GetDeviceClass(std::string_view name) const;
  [[nodiscard]] absl::StatusOr<ResourceClaimTemplate> GetClaimTemplate(std::string_view namespace_,
                                                                       std::string_view name) const;

  // ---- Persistence seam ----

  // Every object but the Node, the Pods and the Events (the manager writes those again from its
  // own state at start: pods from the pod store, events are short-lived), and the
  // resourceVersion counter:
  // {"resourceVersion": "<n>", "objects": [<v1 object with apiVersion and kind>, ...]}.
  nlohmann::json Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the store's objects (not the Node) with a Snapshot's and moves the counter to at
  // least its resourceVersion; the event log restarts there. INVALID_ARGUMENT naming the first
  // object that is malformed or invalid; nothing changes then.
  [[nodiscard]] absl::Status Restore(const nlohmann::json& snapshot) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes every change so far durable through the hook its persister installed (persistence.h):
  // OK at once when none is (a store kept in memory only), else the hook's error
  // (RESOURCE_EXHAUSTED for a full disk), which names the file. For writers that must not go on
  // before their change is on disk (claims reserved for a pod, before its drivers prepare them).
  [[nodiscard]] absl::Status MakeDurable() const ABSL_LOCKS_EXCLUDED(durability_mu_);
  // Installs that hook, or removes it (an empty function); removing waits for calls in
  // progress. The hook is called without mu_ held and may read the store.
  void SetDurabilityHook(std::function<absl::Status()> hook) ABSL_LOCKS_EXCLUDED(durability_mu_);

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  using Objects = std::map<Key, nlohmann::json>;

  absl::StatusOr<nlohmann::json> CreateImpl(Kind kind, nlohmann::json object, bool keep_uid)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<nlohmann::json> UpdateLocked(Kind kind, nlohmann::json object, bool status_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<DeleteResult> DeleteLocked(Kind kind, const Key& key,
                                            const Preconditions& preconditions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<nlohmann::json> MatchingLocked(Kind kind, std::string_view namespace_,
                                             const ListOptions& options) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<WatchEvent>> EventsSinceImpl(
      int64_t after, absl::FunctionRef<bool(Kind)> wanted) const ABSL_LOCKS_EXCLUDED(mu_);
  // Stamps the next resourceVersion on `object`, stores it and logs the event.
  void CommitLocked(Kind kind, const Key& key, nlohmann::json object, WatchEvent::Type type)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NowRfc3339() const;
  // Creates default, kube-system, kube-public and kube-node-lease where they are missing, as
  // the API server's system namespaces controller does.
  void EnsureSystemNamespacesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string RandomUuid() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string node_name_;
  const std::string node_uid_;
  const size_t event_log_capacity_;
  const std::function<absl::Time()> now_;

  mutable absl::Mutex durability_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::function<absl::Status()> durability_hook_ ABSL_GUARDED_BY(durability_mu_);
  mutable absl::Mutex mu_;
  std::array<Objects, kKindCount> objects_ ABSL_GUARDED_BY(mu_);  // indexed by Kind
  // Typed copies of stored slices and claims, decoded on first use and dropped by the next commit
  // of the object: the allocator lists every slice and claim on each allocation, and decoding
  // their JSON each time cost more than the rest of the allocation.
  mutable std::map<Key, ResourceSlice> decoded_slices_ ABSL_GUARDED_BY(mu_);
  mutable std::map<Key, ResourceClaim> decoded_claims_ ABSL_GUARDED_BY(mu_);
  int64_t resource_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t persisted_version_ ABSL_GUARDED_BY(mu_) = 0;  // see PersistedVersion
  std::deque<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  // The newest resourceVersion that is NOT in events_ (events after it are all there).
  int64_t log_start_ ABSL_GUARDED_BY(mu_) = 0;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STORE_H_
