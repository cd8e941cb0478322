// StorePersister keeps the local resource API's objects (DeviceClasses, ResourceClaims with their
// allocations, templates, slices) in <kubelet-root>/kdp/resources.json, so a restarted
// kdp-manager knows the claims its pods hold, as an API server would. The file is the store's
// Snapshot(), written durably (temp file, fsync, rename) by a background thread shortly after each
// change, and at once by Flush(), which kdp-manager calls before it acknowledges a kdpctl apply
// or delete: what kdpctl was told is on disk. From construction to destruction it is also the
// store's durability hook (ObjectStore::MakeDurable() calls Flush()). Changes through the REST API
// alone (drivers' slices, claims written by clients) are on disk within `delay`.
//
// Thread-safety: thread-safe. Stop() is idempotent.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {

class StorePersister {
 public:
  // Reads the file at `path` into `store`. A missing file is an empty store (OK). DATA_LOSS
  // naming the file when it is not a snapshot (bad JSON, an invalid object): kdp-manager then
  // refuses to start rather than lose the claims it holds.
  [[nodiscard]] static absl::Status Load(const std::string& path, ObjectStore* store);

  // `store` is borrowed and must outlive this.
  StorePersister(std::string path, ObjectStore* store,
                 absl::Duration delay = absl::Milliseconds(50));
  ~StorePersister();  // Stops.

  StorePersister(const StorePersister&) = delete;
  StorePersister& operator=(const StorePersister&) = delete;

  // Starts the background writer. REQUIRES: called once.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the store now when it changed since the last write. The write's error (disk full:
  // RESOURCE_EXHAUSTED) is returned; the background writer retries it.
  [[nodiscard]] absl::Status Flush() ABSL_LOCKS_EXCLUDED(write_mu_, mu_);
  // Ends the writer after a last Flush().
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  ObjectStore* const store_;
  const absl::Duration delay_;
  std::thread thread_;
  // Serializes writes, so a newer snapshot is never overwritten by an older one.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  int64_t written_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PERSISTENCE_H_
