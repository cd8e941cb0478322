// Keeps a driver's ResourceSlices equal to its latest pools, as the Go helper's resourceslice
// controller does. For a node plugin (node_name set) the slices carry the node's nodeName and are
// owned by the Node object (controller owner reference); for a cluster publisher (node_name empty,
// kdp::ResourceSlicePublisher) they have no nodeName and carry the given owner, if any. The slices
// in scope are the driver's with that nodeName (none for a cluster publisher); slices of pools no
// longer published are deleted. Each pool is split into slices (counter sets apart from devices);
// a change of a pool bumps its generation on all of its slices, which are all written before the
// obsolete ones are deleted. One background thread reconciles after every Publish() and retries
// failures with exponential backoff, logging each error; the newest pools always win over ones
// still being retried.
//
// Thread-safety: thread-safe. Stop() is idempotent; Publish() after Stop() is ignored.
#ifndef KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_
#define KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/resource_slice.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::internal {

// The LIST path of the driver's slices on the node (field selectors spec.nodeName, spec.driver).
std::string ResourceSliceListPath(const std::string& node_name, const std::string& driver);

// One reconciliation: LIST the driver's slices in the target's scope, then create, update and
// delete so that exactly the slices of `pools` exist (a pool with an empty name is the node's).
// Nothing is written for a pool whose slices already match (a restart with unchanged devices keeps
// the generation). Taints without timeAdded get the published one, or `now`. Returns the first
// API error. REQUIRES: ValidateDraPools(pools, scope).ok(); target.node_uid set for a node.
[[nodiscard]] absl::Status ReconcilePools(KubeClient& client, const SliceTarget& target,
                                          const std::vector<DraPool>& pools, absl::Time now);

// ReconcilePools() with one pool named after the node holding `devices`.
// REQUIRES: ValidateDraDevices(devices).ok(), target.node_uid set.
[[nodiscard]] absl::Status ReconcileResourceSlices(KubeClient& client, const SliceTarget& target,
                                                   const std::vector<DraDevice>& devices);

class SlicePublisher {
 public:
  struct Options {
    std::string driver = {};
    std::string node_name = {};            // empty: a cluster publisher
    std::optional<SliceOwner> owner = {};  // a cluster publisher's owner, if any
    absl::Duration initial_backoff = absl::Milliseconds(500);
    absl::Duration max_backoff = absl::Seconds(30);
    // Called on the publisher's thread after every reconciliation attempt with its outcome
    // (metrics, health); may be empty.
    std::function<void(const absl::Status&)> on_attempt = {};
    // The clock that stamps new taints (tests); empty: absl::Now().
    std::function<absl::Time()> now = {};
  };

  SlicePublisher(Options options, std::shared_ptr<KubeClient> client);
  ~SlicePublisher();  // Stops.

  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  // Starts the background thread with `pools` as the first to publish. Ignored after Stop() or a
  // first Start(). REQUIRES: `pools` validated.
  void Start(std::vector<DraPool> pools) ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the pools to publish (latest wins). REQUIRES: validated.
  void Publish(std::vector<DraPool> pools) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the thread after the reconciliation in progress, if any.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until the latest list handed over has been published or `timeout` passes.
  bool WaitUntilPublished(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status PublishOnce(const std::vector<DraPool>& pools);

  const Options options_;
  const std::shared_ptr<KubeClient> client_;
  std::string node_uid_;  // Publisher thread only.
  std::thread thread_;

  mutable absl::Mutex mu_;
  std::vector<DraPool> desired_ ABSL_GUARDED_BY(mu_);
  int64_t desired_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t published_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_
