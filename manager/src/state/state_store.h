// StateStore keeps kdp-manager's state across crashes and restarts: the device manager's
// allocations (in the kubelet's own `kubelet_internal_checkpoint`), the DRA manager's claims (in
// the kubelet's own `dra_manager_state`) and the manager's pod store (the stand-in for the API
// server's pods, in `kdp/pods.json`), made durable through an append-only journal (`kdp/journal`,
// journal.h) so that acknowledging an admission costs one small fsync, not a rewrite of the whole
// state as in the kubelet (O(pods) per allocation).
//
// - Every change is appended to the journal first. Pod records are synced before they are
//   acknowledged; device records are written unsynced and made durable by the pod record that
//   follows them (an allocation is only acknowledged as part of its pod's admission). A DRA claim
//   record is synced when the DRA manager asks (before NodePrepareResources), else made durable
//   by the pod record after it.
// - A background compaction (at most `compaction_delay` after a change, and on Close) snapshots the
//   state, appends a marker naming the files it is about to write (by a hash of their bytes),
//   writes pods.json and the checkpoint atomically and durably, then rewrites the journal as a
//   header naming both files followed by only the records that came after the snapshot. Each file
//   is complete and valid on its own at every moment; the checkpoint is byte for byte what a
//   kubelet writes.
// - Open() restores: each file, plus the journal records that came after it. Which records those
//   are follows from the file's hash: the journal header's (replay all), a marker's (replay what
//   follows it), or none (a file put there by someone else, e.g. a kubelet's checkpoint copied in:
//   it is taken as it is, and the journal's records for it are set aside, never replayed over it).
//   Replaying a record twice is harmless: every record sets or deletes by key.
// - A checkpoint or pods file that cannot be read (bad JSON, checksum mismatch) is copied to
//   `<file>.corrupt-<time>` and the manager starts without it, logging the kubelet's warning, as
//   the kubelet does; with `strict` Open() fails instead (DATA_LOSS).
//
// docs/state.md has the design and the crash analysis. Thread-safe.
#ifndef KDP_MANAGER_SRC_STATE_STATE_STORE_H_
#define KDP_MANAGER_SRC_STATE_STATE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "manager/src/pod/pod.h"
#include "manager/src/state/journal/journal.h"

namespace kdp::manager {

struct StateStoreOptions {
  // The kubelet-format checkpoint: <kubelet-root>/device-plugins/kubelet_internal_checkpoint.
  std::string checkpoint_path;
  // The pod store: <kubelet-root>/kdp/pods.json.
  std::string pods_path;
  // The journal: <kubelet-root>/kdp/journal.
  std::string journal_path;
  // The DRA manager's checkpoint in the kubelet's format: <kubelet-root>/dra_manager_state.
  // Empty: the store keeps no DRA state (the DRA manager then writes its own checkpoint).
  std::string dra_checkpoint_path = {};
  // Longest time between a change and the compaction that writes it into the two files.
  absl::Duration compaction_delay = absl::Seconds(1);
  // Refuse to start (Open fails) when a file cannot be read, instead of starting without it.
  bool strict = false;
};

// What Open() read back.
struct RestoredState {
  // Allocations, and the resources known at the last write (only the keys of
  // registered_devices matter: each comes back as a stopped endpoint).
  checkpoint::Data devices = {};
  // The pod store, ordered by UID.
  std::vector<Pod> pods = {};
  // The DRA manager's claims (dra_manager_state plus the journal), by "<namespace>/<name>"; every
  // one unprepared, as the kubelet restores them.
  std::vector<dra::state::ClaimInfoState> dra_claims = {};
  // The checkpoint was not written by this manager's store (a kubelet's file copied in, or one
  // found without kdp's journal), or the pod store was unreadable: pods of the checkpoint may be
  // missing from the pod store, and the caller adopts them rather than letting garbage collection
  // free devices that running pods use. Stays true across restarts until the first compaction.
  bool foreign_checkpoint = false;
};

// What a compaction writes: taken from the live objects by the snapshot callback.
struct StateSnapshot {
  checkpoint::Data devices = {};
  std::vector<Pod> pods = {};
  std::vector<dra::state::ClaimInfoState> dra_claims = {};  // when dra_checkpoint_path is set
};

class StateStore {
 public:
  // Reads the files and the journal (creating what is missing) into *restored. Errors:
  // DATA_LOSS when `strict` and a file is unreadable, or when the journal is not a journal;
  // other codes naming the path for I/O errors.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(StateStoreOptions options,
                                                          RestoredState* restored);
  ~StateStore();  // Close().

  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Starts background compaction; `snapshot` is called on the compaction thread and must return
  // the current state. It runs while changes are held off, so it must not need a lock that a
  // caller of Record* holds while recording. REQUIRES: called at most once, before Close().
  void StartCompaction(std::function<StateSnapshot()> snapshot) ABSL_LOCKS_EXCLUDED(mu_);

  // Each Record* appends one change to the journal and, only when that succeeded, runs `apply`
  // (the matching in-memory change), as one step: a compaction's snapshot sees both or neither.
  // Callers must not record changes to one key concurrently (their order in memory and in the
  // journal could differ); kdp-manager serialises them (admissions, deletions).
  // Device records are written, not synced; pod records are synced before returning. Errors name
  // the journal (RESOURCE_EXHAUSTED when the disk is full); `apply` has then not run. `apply` must
  // not call back into the store.
  using ApplyFn = std::function<void()>;
  [[nodiscard]] absl::Status RecordAllocation(const checkpoint::Entry& entry, const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  [[nodiscard]] absl::Status RecordPodDevicesRemoved(const std::string& pod_uid,
                                                     const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  [[nodiscard]] absl::Status RecordResource(const std::string& resource, bool registered,
                                            const ApplyFn& apply) ABSL_LOCKS_EXCLUDED(change_mu_);
  [[nodiscard]] absl::Status RecordPodAdmitted(const Pod& pod, const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  // The pod's deletion started (before its claims are unprepared); replayed as
  // Pod::terminating.
  [[nodiscard]] absl::Status RecordPodTerminating(const std::string& pod_uid, const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  [[nodiscard]] absl::Status RecordPodDeleted(const std::string& pod_uid, const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  // DRA claims changed (`set`, each replacing the claim of its namespace and name) or gone
  // (`deleted`, keys "<namespace>/<name>"), as one record. With `sync` it is durable on return
  // (the DRA manager's record before NodePrepareResources, #116411); without, the next synced
  // record makes it durable (the record after the call, which the pod's admission record follows).
  // FAILED_PRECONDITION when the store keeps no DRA state.
  [[nodiscard]] absl::Status RecordDraClaims(const std::vector<dra::state::ClaimInfoState>& set,
                                             const std::vector<std::string>& deleted, bool sync)
      ABSL_LOCKS_EXCLUDED(change_mu_);
  // Whether the store keeps the DRA manager's state (dra_checkpoint_path set).
  bool keeps_dra_state() const { return !options_.dra_checkpoint_path.empty(); }
  const std::string& dra_checkpoint_path() const { return options_.dra_checkpoint_path; }

  // Asks for a compaction within compaction_delay (e.g. after a ListAndWatch message, whose
  // healthy devices the checkpoint lists).
  void RequestCompaction() ABSL_LOCKS_EXCLUDED(mu_);
  // Compacts now, on the caller's thread. REQUIRES: StartCompaction was called.
  [[nodiscard]] absl::Status Compact() ABSL_LOCKS_EXCLUDED(compact_mu_, mu_);
  // Stops the compaction thread after a last compaction. Idempotent.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Compactions done so far (for tests and the admin status).
  uint64_t compactions() const ABSL_LOCKS_EXCLUDED(mu_);
  // The outcome of the latest write (a journal append or a compaction): OK until one fails, then
  // that failure (e.g. RESOURCE_EXHAUSTED, disk full) until a later write succeeds. /healthz.
  absl::Status last_write_status() const ABSL_LOCKS_EXCLUDED(mu_);
  // Writes that failed so far (kdp_manager_state_write_failures_total).
  uint64_t write_failures() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  StateStore(StateStoreOptions options, std::unique_ptr<Journal> journal);
  [[nodiscard]] absl::Status Record(const std::string& payload, bool sync, const ApplyFn& apply)
      ABSL_LOCKS_EXCLUDED(change_mu_, mu_);
  void CompactionLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const StateStoreOptions options_;
  const std::unique_ptr<Journal> journal_;
  std::function<StateSnapshot()> snapshot_;

  absl::Mutex compact_mu_ ABSL_ACQUIRED_BEFORE(change_mu_);  // one compaction at a time
  // Shared by each change (append + apply), exclusive while a compaction reads the journal's last
  // sequence number and snapshots the state.
  absl::Mutex change_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  // Records appended since the last compaction's snapshot (kept for the journal rewrite).
  std::vector<JournalRecord> tail_ ABSL_GUARDED_BY(mu_);
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time dirty_since_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t compactions_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_write_status_ ABSL_GUARDED_BY(mu_);
  uint64_t write_failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_STATE_STATE_STORE_H_
