// ClaimInfo and ClaimInfoCache: the DRA manager's record of every ResourceClaim prepared on this
// node (the kubelet's pkg/kubelet/cm/dra/claiminfo.go). A ClaimInfo holds the persistent
// ClaimInfoState (claim identity, the pods using it, and per driver the devices the driver
// prepared) plus the in-memory `prepared` flag, which is never persisted: after a restart every
// claim is unprepared again, so the next pod sandbox re-calls its drivers.
//
// The cache is keyed "<namespace>/<claimName>" and backed by the checkpoint (checkpoint.h), which
// either the cache rewrites whole (the kubelet's way) or kdp-manager's state store keeps through
// its journal (a small record per change; the file written by its compaction). Its content is
// reachable only inside WithLock/WithRLock; SyncToCheckpoint writes a snapshot outside the lock.
//
// Thread-safety: ClaimInfo is a value type (externally synchronized); ClaimInfoCache is
// thread-safe.
#ifndef KDP_MANAGER_SRC_DRA_CLAIM_INFO_H_
#define KDP_MANAGER_SRC_DRA_CLAIM_INFO_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "manager/src/state/state_store.h"

namespace kdp::manager::dra {

class ClaimInfo {
 public:
  ClaimInfo() = default;

  // newClaimInfoFromClaim: identity from the claim's metadata, no pod references, not prepared,
  // and one empty DriverState per distinct driver in status.allocation results (none when the
  // allocation has no results). FAILED_PRECONDITION "not allocated" without an allocation.
  [[nodiscard]] static absl::StatusOr<ClaimInfo> FromClaim(const resourceapi::ResourceClaim& claim);
  // newClaimInfoFromState: a copy of `state`, not prepared.
  static ClaimInfo FromState(const state::ClaimInfoState& state);

  const state::ClaimInfoState& state() const { return state_; }
  const std::string& claim_uid() const { return state_.claim_uid; }
  const std::string& claim_name() const { return state_.claim_name; }
  const std::string& namespace_() const { return state_.namespace_; }
  std::string key() const { return ClaimInfoKey(state_.claim_name, state_.namespace_); }

  // Appends a device the driver prepared (addDevice).
  void AddDevice(const std::string& driver, state::Device device);
  // Replaces the driver's devices with what its latest NodePrepareResources returned (kdp: the
  // kubelet appends, which duplicates the CDI IDs when a claim restored from the checkpoint is
  // prepared again after a restart).
  void SetDevices(const std::string& driver, std::vector<state::Device> devices);

  void AddPodReference(const std::string& pod_uid);  // idempotent
  bool HasPodReference(const std::string& pod_uid) const;
  void DeletePodReference(const std::string& pod_uid);  // no-op when absent

  void SetPrepared() { prepared_ = true; }
  bool IsPrepared() const { return prepared_; }

  // The CDI device IDs a container gets for `request` (cdiDevicesAsList): every device's IDs when
  // `request` is empty, else those of devices whose RequestNames is empty or has `request`;
  // drivers in name order, devices in the order the driver returned them.
  std::vector<std::string> CdiDeviceIds(const std::string& request) const;

  friend bool operator==(const ClaimInfo&, const ClaimInfo&) = default;

 private:
  state::ClaimInfoState state_;
  bool prepared_ = false;
};

class ClaimInfoCache {
 public:
  // The cache content, handed to the function given to WithLock/WithRLock; valid only inside it.
  class Contents {
   public:
    // Adds `info`, replacing an entry with the same key.
    void Add(ClaimInfo info);
    bool Contains(const std::string& claim_name, const std::string& namespace_) const;
    // The entry, or nullptr. Valid until the lock is released or the entry deleted.
    ClaimInfo* Get(const std::string& claim_name, const std::string& namespace_);
    const ClaimInfo* Get(const std::string& claim_name, const std::string& namespace_) const;
    void Delete(const std::string& claim_name, const std::string& namespace_);  // no-op if absent
    // Whether any cached claim references the pod.
    bool HasPodReference(const std::string& pod_uid) const;
    // The gauge dra_resource_claims_in_use: per driver the number of PREPARED claims with
    // devices of that driver, and under "<any>" (always present) the number of prepared claims.
    std::map<std::string, int64_t> ClaimsInUse() const;
    // Every entry, by key.
    const std::map<std::string, ClaimInfo>& claims() const { return claims_; }
    // The persistent state of every entry, in key order (what the checkpoint holds).
    std::vector<state::ClaimInfoState> Snapshot() const;

   private:
    std::map<std::string, ClaimInfo> claims_;
  };

  // newClaimInfoCache: opens (or creates) the checkpoint `<state_dir>/<checkpoint_name>` and
  // fills the cache from it, every claim unprepared. INVALID_ARGUMENT for an empty state_dir or
  // checkpoint_name; DATA_LOSS "... checkpoint is corrupted ..." for a corrupted file; other
  // errors as Checkpointer::GetOrCreate.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClaimInfoCache>> Create(
      const std::string& state_dir, const std::string& checkpoint_name = kCheckpointFileName);
  // A cache kept by kdp-manager's state store instead (journal records, dra_manager_state written
  // by its compaction), filled with `restored` (RestoredState::dra_claims), every claim
  // unprepared. INVALID_ARGUMENT when `store` is null or keeps no DRA state. `store` is borrowed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClaimInfoCache>> CreateJournaled(
      StateStore* store, std::vector<state::ClaimInfoState> restored);

  ClaimInfoCache(const ClaimInfoCache&) = delete;
  ClaimInfoCache& operator=(const ClaimInfoCache&) = delete;

  // Runs `f` with the cache locked for writing and returns its status. `f` must not call back
  // into the cache, do RPCs or file I/O. A change of the claims-in-use counts is logged
  // ("ResourceClaim usage changed", debug level).
  [[nodiscard]] absl::Status WithLock(absl::FunctionRef<absl::Status(Contents&)> f)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `f` with the cache locked for reading (other readers may run at the same time).
  [[nodiscard]] absl::Status WithRLock(absl::FunctionRef<absl::Status(const Contents&)> f) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // How durable a SyncToCheckpoint must be on return.
  enum class Durability {
    // On disk (the record before NodePrepareResources, #116411).
    kDurable,
    // Journalled cache only: written (a crash of the process keeps it) and made durable by the
    // next synced record, which kdp-manager's pod admission or deletion writes right after (the
    // pod record carries the CDI device IDs the admission acknowledged). Without a store: durable.
    kByNextRecord,
  };

  // Writes the current content: a snapshot taken under the read lock, written outside it.
  // Concurrent calls never let an older snapshot replace a newer one. Without a store the whole
  // checkpoint file is replaced durably (as the kubelet does), and on return (OK) it holds the
  // content as of the call or newer; with one, the claims that changed since the last write are
  // journalled as one record. Errors as Checkpointer::Store or StateStore::RecordDraClaims.
  [[nodiscard]] absl::Status SyncToCheckpoint(Durability durability = Durability::kDurable)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // The checkpoint file (written by the store's compaction when journalled).
  const std::string& checkpoint_path() const { return checkpoint_path_; }

 private:
  friend class ClaimInfoCacheTestPeer;

  ClaimInfoCache(std::unique_ptr<Checkpointer> checkpointer, StateStore* store,
                 std::string checkpoint_path)
      : checkpointer_(std::move(checkpointer)),
        store_(store),
        checkpoint_path_(std::move(checkpoint_path)) {}

  // Exactly one of the two is set.
  const std::unique_ptr<Checkpointer> checkpointer_;
  StateStore* const store_;
  const std::string checkpoint_path_;
  mutable absl::Mutex mu_;
  Contents contents_ ABSL_GUARDED_BY(mu_);
  // Bumped by every WithLock, so SyncToCheckpoint can tell snapshots apart.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Serializes checkpoint writes; never held together with mu_.
  absl::Mutex write_mu_;
  uint64_t written_generation_ ABSL_GUARDED_BY(write_mu_) = 0;
  bool written_once_ ABSL_GUARDED_BY(write_mu_) = false;
  // Journalled: the claims as last recorded, by key (what the next record is the difference to).
  std::map<std::string, state::ClaimInfoState> recorded_ ABSL_GUARDED_BY(write_mu_);
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_CLAIM_INFO_H_
