// The DRA manager's view of registered DRA drivers (the kubelet's pkg/kubelet/cm/dra/plugin):
// a DraPlugin sends one batched call to one driver, in whichever service version was negotiated at
// registration (v1 or v1beta1, converted to and from v1 here), with the kubelet's call deadline
// (45 s unless configured). DraPlugins finds the driver's plugin: with several registered
// instances, the newest connected one, else the newest.
//
// Thread-safety: implementations are thread-safe.
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_PLUGIN_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_PLUGIN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/v1/api.pb.h"

namespace kdp::manager::dra {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

// The kubelet's per-call deadline for NodePrepareResources and NodeUnprepareResources
// (defaultClientCallTimeout: "half of the kubelet retry period").
inline constexpr int kDefaultCallTimeoutSeconds = 45;

class DraPlugin {
 public:
  virtual ~DraPlugin() = default;
  virtual const std::string& driver_name() const = 0;
  // The deadline every call gets, and the socket it goes to (empty: unknown), for the list of
  // calls in flight (DraManager::peer_calls()).
  virtual absl::Duration call_timeout() const { return absl::Seconds(kDefaultCallTimeoutSeconds); }
  virtual std::string socket() const { return {}; }
  // The RPC's error as a status (a deadline gives DEADLINE_EXCEEDED, the message the gRPC error's
  // text, e.g. "rpc error: code = DeadlineExceeded desc = context deadline exceeded" style is up
  // to the caller), else the response as the driver sent it.
  virtual absl::StatusOr<drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const drapb::NodePrepareResourcesRequest& request) = 0;
  virtual absl::StatusOr<drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const drapb::NodeUnprepareResourcesRequest& request) = 0;
};

class DraPlugins {
 public:
  virtual ~DraPlugins() = default;
  // FAILED_PRECONDITION "DRA driver <driver> is not registered" when no instance is registered.
  virtual absl::StatusOr<std::shared_ptr<DraPlugin>> Get(const std::string& driver) = 0;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_PLUGIN_H_
