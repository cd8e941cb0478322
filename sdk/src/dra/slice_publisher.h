// Keeps the node's ResourceSlices for one driver equal to the driver's latest device list, as the
// Go helper's resourceslice controller does for a node-local pool: the pool is named after the
// node, its slices are owned by the Node object (controller owner reference), every change bumps
// the pool generation on all of its slices, surplus slices (and slices of other pools of this
// driver on this node) are deleted. One background thread reconciles after every Publish() and
// retries failures with exponential backoff, logging each error; the newest device list always
// wins over one still being retried.
//
// Thread-safety: thread-safe. Stop() is idempotent; Publish() after Stop() is ignored.
#ifndef KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_
#define KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_

#include <cstdint>
#include <functional>
#include <memory>
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

// One reconciliation: LIST the driver's slices on the node, then create, update and delete so
// that exactly the pool's slices for `devices` exist. Nothing is written when they already match
// (a restart with unchanged devices keeps the generation). Returns the first API error.
// REQUIRES: ValidateDraDevices(devices).ok(), target.node_uid set.
[[nodiscard]] absl::Status ReconcileResourceSlices(KubeClient& client, const SliceTarget& target,
                                                   const std::vector<DraDevice>& devices);

class ResourceSlicePublisher {
 public:
  struct Options {
    std::string driver = {};
    std::string node_name = {};
    absl::Duration initial_backoff = absl::Milliseconds(500);
    absl::Duration max_backoff = absl::Seconds(30);
    // Called on the publisher's thread after every reconciliation attempt with its outcome
    // (metrics, health); may be empty.
    std::function<void(const absl::Status&)> on_attempt = {};
  };

  ResourceSlicePublisher(Options options, std::shared_ptr<KubeClient> client);
  ~ResourceSlicePublisher();  // Stops.

  ResourceSlicePublisher(const ResourceSlicePublisher&) = delete;
  ResourceSlicePublisher& operator=(const ResourceSlicePublisher&) = delete;

  // Starts the background thread with `devices` as the first list to publish.
  // REQUIRES: called once, `devices` validated.
  void Start(std::vector<DraDevice> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the list to publish (latest wins). REQUIRES: validated.
  void Publish(std::vector<DraDevice> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the thread after the reconciliation in progress, if any.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until the latest list handed over has been published or `timeout` passes.
  bool WaitUntilPublished(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status PublishOnce(const std::vector<DraDevice>& devices);

  const Options options_;
  const std::shared_ptr<KubeClient> client_;
  std::string node_uid_;  // Publisher thread only.
  std::thread thread_;

  mutable absl::Mutex mu_;
  std::vector<DraDevice> desired_ ABSL_GUARDED_BY(mu_);
  int64_t desired_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t published_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_SLICE_PUBLISHER_H_
