// ClusterSlicePublisher is kdp::ResourceSlicePublisher's implementation (kdp/
// resource_slice_publisher.h): validation of the options and pools, then the SDK's slice publisher
// (slice_publisher.h) in its cluster scope (no nodeName, the given owner). ResourceSlicePublisher-
// Factory builds the public object around an injected API client, for tests. Private to the SDK.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DRA_CLUSTER_PUBLISHER_H_
#define KDP_SDK_SRC_DRA_CLUSTER_PUBLISHER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kdp/resource_slice_publisher.h"
#include "sdk/src/dra/slice_publisher.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::internal {

// INVALID_ARGUMENT naming the rule: a valid driver name, an owner with a uid that is not a Node,
// positive timeouts and backoffs.
[[nodiscard]] absl::Status ValidatePublisherOptions(const ResourceSlicePublisherOptions& options);

class ClusterSlicePublisher {
 public:
  // `now` stamps new taints; empty: absl::Now(). REQUIRES: ValidatePublisherOptions(options).ok().
  ClusterSlicePublisher(const ResourceSlicePublisherOptions& options,
                        std::shared_ptr<KubeClient> client, std::function<absl::Time()> now = {});

  ClusterSlicePublisher(const ClusterSlicePublisher&) = delete;
  ClusterSlicePublisher& operator=(const ClusterSlicePublisher&) = delete;

  // As ResourceSlicePublisher.
  [[nodiscard]] absl::Status Publish(std::vector<DraPool> pools) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  bool WaitUntilPublished(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  SlicePublisher publisher_;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

struct ResourceSlicePublisherFactory {
  // A publisher over `client`; INVALID_ARGUMENT as ValidatePublisherOptions().
  static absl::StatusOr<std::unique_ptr<ResourceSlicePublisher>> Make(
      const ResourceSlicePublisherOptions& options, std::shared_ptr<KubeClient> client,
      std::function<absl::Time()> now = {});
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_CLUSTER_PUBLISHER_H_
