// DevicePluginObserver is told of every exchange between the device manager and a device plugin,
// as the manager saw it: each Register call on kubelet.sock with the manager's answer, the options
// a plugin answered when dialled back, every ListAndWatch message and the end of each stream, and
// each Allocate, GetPreferredAllocation and PreStartContainer with its request and outcome.
// kdp-conformance judges a plugin by what it is told (manager/src/conformance/); kdp-manager itself
// runs without one.
//
// Thread-safety: called synchronously on the manager's threads (Register handlers, the plugin
// watcher, an endpoint's stream thread, the admitting thread), Preferred with the device
// manager's allocation lock held. Implementations must be thread-safe, quick, and must not call
// back into the manager.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_OBSERVER_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_OBSERVER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::manager {

class DevicePluginObserver {
 public:
  virtual ~DevicePluginObserver() = default;

  // A Register call on kubelet.sock and the manager's answer to it (OK once the plugin was
  // dialled back); a registration through plugins_registry as such a call would carry it
  // (version "v1beta1", the socket's absolute path as the endpoint).
  virtual void Registered(const v1beta1::RegisterRequest& request, const absl::Status& answer) = 0;
  // GetDevicePluginOptions answered when the manager dialled the plugin at `socket` back.
  virtual void Connected(const std::string& resource, const std::string& socket,
                         const v1beta1::DevicePluginOptions& options) = 0;
  // A ListAndWatch message, once the manager took it: its devices are the node's (allocatable,
  // when the socket is the resource's active endpoint).
  virtual void Listed(const std::string& resource, const std::string& socket,
                      const v1beta1::ListAndWatchResponse& response) = 0;
  // The ListAndWatch stream ended, not by the manager's own Stop: the plugin's status. Told after
  // the manager handled the end (the endpoint is stopped, a new registration of the socket is
  // accepted).
  virtual void StreamEnded(const std::string& resource, const std::string& socket,
                           const absl::Status& status) = 0;
  virtual void Allocated(const std::string& resource, const std::string& socket,
                         const v1beta1::AllocateRequest& request,
                         const absl::StatusOr<v1beta1::AllocateResponse>& response) = 0;
  virtual void Preferred(const std::string& resource, const std::string& socket,
                         const v1beta1::PreferredAllocationRequest& request,
                         const absl::StatusOr<v1beta1::PreferredAllocationResponse>& response) = 0;
  virtual void PreStarted(const std::string& resource, const std::string& socket,
                          const v1beta1::PreStartContainerRequest& request,
                          const absl::Status& status) = 0;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_OBSERVER_H_
