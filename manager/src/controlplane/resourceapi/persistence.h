// StorePersister keeps the local resource API's objects (DeviceClasses, ResourceClaims with their
// allocations, templates, slices) on disk, so a restarted kdp-manager knows the claims its pods
// hold, as an API server would. Two files in <kubelet-root>/kdp/:
//
//   resources.json     the store's Snapshot(), written durably (temp file, fsync, rename,
//                      directory fsync): {"resourceVersion": "<n>", "objects": [...]}
//   resources.journal  the changes since that snapshot, one kdp journal record
//                      (manager/src/state/journal/journal.h) per write, synced:
//                      {"resourceVersion": "<n>", "objects": [<object as stored>...],
//                       "deleted": [{"kind": "...", "namespace": "...", "name": "..."}...]}
//                      under the header {"snapshotResourceVersion": "<n>"}
//
// A write appends the objects changed since the last one (from the store's change log) with one
// fdatasync, so what a write costs does not grow with the store; the first write of a process,
// and a write the change log no longer reaches back for, writes the whole snapshot instead. The
// snapshot is rewritten (and the journal emptied) in the background once the journal holds
// kCompactionBytes, once no change came for kCompactionIdle, and at Stop(): a manager stopped
// cleanly leaves the whole state in resources.json. Load() replays the journal's records newer
// than the snapshot over it; a crash between the two halves of a compaction leaves records the
// snapshot already holds, which are skipped.
//
// When: a background thread writes shortly (`delay`) after each change, and Flush() at once;
// kdp-manager calls it before it acknowledges a kdpctl apply or delete (what kdpctl was told is on
// disk). From construction to destruction it is also the store's durability hook
// (ObjectStore::MakeDurable() calls Flush()), which a DRA admission pays before any driver
// prepares the pod's claims. Changes through the REST API alone (drivers' slices, claims written
// by clients) are on disk within `delay`.
//
// Thread-safety: thread-safe. Stop() is idempotent.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/state/journal/journal.h"

namespace kdp::manager::resourceapi {

class StorePersister {
 public:
  // The journal grows to this size before the background thread rewrites the snapshot.
  static constexpr uint64_t kCompactionBytes = 1u << 20;
  // ... or until no change came for this long.
  static constexpr absl::Duration kCompactionIdle = absl::Seconds(1);

  // The journal beside the snapshot at `path`: its ".json" replaced by ".journal" (else
  // `path` + ".journal").
  static std::string JournalPath(const std::string& path);

  // Reads the snapshot at `path` and the records of its journal into `store`. Missing files are
  // an empty store and an empty journal (OK). A torn journal tail (a crash during an append: that
  // write was never acknowledged) is cut off, a copy of the file kept, and a warning logged.
  // DATA_LOSS naming the file when the snapshot is not one (bad JSON, an invalid object), when a
  // journal record is not one, or when the journal is not a kdp journal: kdp-manager then refuses
  // to start rather than lose the claims it holds. Other errors (the journal locked by a running
  // manager, a read failing) name the file too.
  [[nodiscard]] static absl::Status Load(const std::string& path, ObjectStore* store);

  // The step of Load between reading the files and restoring the store: `snapshot` (the parsed
  // resources.json at `path`, whose resourceVersion is `snapshot_rv`) with the journal's
  // `records` applied in order; a record at or below `snapshot_rv` is skipped (the snapshot holds
  // it: a crash between the two halves of a compaction). DATA_LOSS naming the journal and the
  // record's number for a record that is not {"resourceVersion": "<n>", "objects": [...],
  // "deleted": [...]}, and naming `path` for a snapshot without an "objects" array. The objects
  // themselves are validated by ObjectStore::Restore.
  [[nodiscard]] static absl::StatusOr<nlohmann::json> Replay(
      nlohmann::json snapshot, int64_t snapshot_rv, const std::vector<JournalRecord>& records,
      const std::string& path);

  // `store` is borrowed and must outlive this.
  StorePersister(std::string path, ObjectStore* store,
                 absl::Duration delay = absl::Milliseconds(50));
  ~StorePersister();  // Stops.

  StorePersister(const StorePersister&) = delete;
  StorePersister& operator=(const StorePersister&) = delete;

  // Starts the background writer. REQUIRES: called once.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Makes every change so far durable when one came since the last write: a journal record, or
  // the whole snapshot (see above). The write's error, naming the file (disk full:
  // RESOURCE_EXHAUSTED), is returned; the background writer retries it.
  [[nodiscard]] absl::Status Flush() ABSL_LOCKS_EXCLUDED(write_mu_, mu_);
  // Rewrites the snapshot with every change so far and empties the journal; what the background
  // thread and Stop() do. The snapshot's error, naming it.
  [[nodiscard]] absl::Status Compact() ABSL_LOCKS_EXCLUDED(write_mu_, mu_);
  // Ends the writer after a last Flush() and Compact(), and closes the journal.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CompactLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  const std::string journal_path_;
  ObjectStore* const store_;
  const absl::Duration delay_;
  std::thread thread_;
  // Serializes writes, so a newer state is never overwritten by an older one.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Opened by the first snapshot write.
  std::unique_ptr<Journal> journal_ ABSL_GUARDED_BY(write_mu_);
  // Journal records since the last snapshot.
  int journal_records_ ABSL_GUARDED_BY(write_mu_) = 0;
  absl::Mutex mu_;
  // The store's PersistedVersion() that is on disk (-1: nothing written by this process yet).
  int64_t written_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_
