// The transport-free heart of a DRA driver's node service, what the Go helper's
// nodePrepareResources/nodeUnprepareResources do between the gRPC layer and the vendor:
//  - NodePrepareResources GETs every claim from the API server (outside any lock), checks it is
//    allocated and still has the UID the kubelet named (an RPC-level error otherwise, as the Go
//    helper fails the whole call), decodes only this driver's results and configs, then, under the
//    serialization lock: records the claims as "PrepareStarted" in the checkpoint, calls the
//    vendor's Prepare, records the successes as "PrepareCompleted" with their devices, and only
//    then answers. Recording before the vendor call (the kubelet's own fix for kubernetes#116411)
//    means a crash or a failed write never leaves vendor work that Unprepare would skip.
//    A claim already recorded is passed to Prepare again (the vendor re-creates what vanished,
//    e.g. CDI specs after a reboot, kubernetes#141433) and its record is overwritten.
//  - NodeUnprepareResources answers success for claims the checkpoint does not list, without a
//    vendor call; the others go to the vendor's Unprepare and are removed from the checkpoint on
//    success.
// Prepare and unprepare are serialized by one mutex and, for rolling updates, a file lock
// (flock) shared with the other instance. That lock is held across the vendor call and the
// checkpoint write on purpose: ordering them is its whole job.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DRA_NODE_SERVER_H_
#define KDP_SDK_SRC_DRA_NODE_SERVER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/checkpoint.h"
#include "sdk/src/dra/metrics.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::internal {

// One claim's answer: a non-empty error fails the claim (devices are then ignored).
struct ClaimPrepareOutcome {
  std::string error = {};
  std::vector<PreparedDevice> devices = {};
};

class DraNodeServer {
 public:
  // `lock_file`: path of the rolling-update file lock; empty for none. `driver` must outlive this.
  // `metrics`: what to update for each call (none by default).
  DraNodeServer(DraDriver* driver, std::shared_ptr<KubeClient> client, DraCheckpoint checkpoint,
                std::string lock_file, DraNodeMetrics metrics = {});

  DraNodeServer(const DraNodeServer&) = delete;
  DraNodeServer& operator=(const DraNodeServer&) = delete;

  // Reads the checkpoint once, so that a corrupt file fails start-up instead of the first call
  // (and the prepared-claims gauge starts from what it lists).
  [[nodiscard]] absl::Status CheckCheckpoint() const;

  // Outcomes keyed by claim UID, one per distinct UID requested. Errors (RPC level): the GET's
  // error prefixed "retrieve claim <ns>/<name>: ", FAILED_PRECONDITION "claim <ns>/<name> not
  // allocated" / "... got replaced", INVALID_ARGUMENT for a malformed claim or request, the
  // checkpoint's read or write error.
  absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> NodePrepareResources(
      const std::vector<ClaimRef>& claims) ABSL_LOCKS_EXCLUDED(serialize_mu_);

  // Error strings keyed by claim UID (empty: unprepared). RPC-level errors: the checkpoint's.
  absl::StatusOr<std::map<std::string, std::string>> NodeUnprepareResources(
      const std::vector<ClaimRef>& claims) ABSL_LOCKS_EXCLUDED(serialize_mu_);

 private:
  absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> Prepare(
      const std::vector<ClaimRef>& claims) ABSL_LOCKS_EXCLUDED(serialize_mu_);
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(const std::vector<ClaimRef>& claims)
      ABSL_LOCKS_EXCLUDED(serialize_mu_);
  // Observes one call into the metrics: its duration since `start`, its code and how many of its
  // claims failed.
  void Observe(const char* method, absl::Time start, const absl::Status& status,
               int claim_errors) const;
  // Sets the prepared-claims gauge from `records`.
  void CountPrepared(const PreparedClaims& records) const;

  DraDriver* const driver_;
  const std::shared_ptr<KubeClient> client_;
  const DraCheckpoint checkpoint_;
  const std::string lock_file_;
  const DraNodeMetrics metrics_;
  // Serializes prepare and unprepare, vendor calls and checkpoint updates included.
  absl::Mutex serialize_mu_;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_NODE_SERVER_H_
