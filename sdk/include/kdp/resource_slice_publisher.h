// kdp::ResourceSlicePublisher publishes ResourceSlices of pools that are not tied to one node
// (network-attached devices: a pool reachable from all nodes, from the nodes a node selector picks,
// or per device), from any process that can reach the API server, typically a driver's controller
// Deployment rather than a node plugin. It is the Go resourceslice controller without a Node owner:
// the slices have no nodeName, carry the given cluster-scoped owner (or none: then the driver must
// delete them at uninstall, garbage collection will not) and are named "<owner>-<driver>-<random>"
// (or "<driver>-<random>"). It owns every slice of the driver without a nodeName: pools it no
// longer publishes are deleted. One background thread reconciles after each Publish() (bumping a
// pool's generation when its content changes, writing all of its slices, then deleting obsolete
// ones) and retries API errors with exponential backoff; the newest pools always win.
//
// Thread-safety: thread-safe. Stop() is idempotent and may be called without a Publish().
#ifndef KDP_RESOURCE_SLICE_PUBLISHER_H_
#define KDP_RESOURCE_SLICE_PUBLISHER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kdp/dra_device.h"

namespace kdp {

namespace internal {
class ClusterSlicePublisher;
struct ResourceSlicePublisherFactory;
}  // namespace internal

// The controller owner reference of the slices: a cluster-scoped object (not a Node).
struct SliceOwner {
  std::string api_version = {};  // e.g. "v1"
  std::string kind = {};         // e.g. "Namespace", or a cluster-scoped custom resource
  std::string name = {};
  std::string uid = {};  // required
  friend bool operator==(const SliceOwner&, const SliceOwner&) = default;
};

struct ResourceSlicePublisherOptions {
  // The DRA driver's name (a DNS subdomain of at most 63 characters).
  std::string driver = {};
  // Kubeconfig file; empty: $KUBECONFIG, then the in-cluster service account (as DraRunner).
  std::string kubeconfig = {};
  // Timeout of each API server request.
  absl::Duration api_timeout = absl::Seconds(10);
  // Owner reference of every slice; none: no owner reference (as upstream allows).
  std::optional<SliceOwner> owner = {};
  // First and longest wait between failed publication attempts (doubling in between).
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
};

class ResourceSlicePublisher {
 public:
  // Validates the options (INVALID_ARGUMENT naming the rule) and builds the API client (its
  // configuration error). Starts nothing.
  static absl::StatusOr<std::unique_ptr<ResourceSlicePublisher>> Create(
      ResourceSlicePublisherOptions options);
  ~ResourceSlicePublisher();  // Stops.

  ResourceSlicePublisher(const ResourceSlicePublisher&) = delete;
  ResourceSlicePublisher& operator=(const ResourceSlicePublisher&) = delete;

  // Validates `pools` with the API server's rules (INVALID_ARGUMENT naming the pool, device, field
  // and rule; nothing changes) and hands them to the background thread, started by the first call.
  // Each pool needs exactly one of all_nodes, node_selector and per_device_node_selection, and a
  // name. An empty list deletes every slice of the driver without a nodeName. FAILED_PRECONDITION
  // after Stop().
  [[nodiscard]] absl::Status Publish(std::vector<DraPool> pools);

  // Ends the thread after the reconciliation in progress, if any. Slices stay.
  void Stop();

  // Blocks until the pools last handed over are published or `timeout` passes; false also when
  // nothing was handed over.
  bool WaitUntilPublished(absl::Duration timeout) const;

 private:
  friend struct internal::ResourceSlicePublisherFactory;
  explicit ResourceSlicePublisher(std::unique_ptr<internal::ClusterSlicePublisher> impl);
  std::unique_ptr<internal::ClusterSlicePublisher> impl_;
};

}  // namespace kdp

#endif  // KDP_RESOURCE_SLICE_PUBLISHER_H_
