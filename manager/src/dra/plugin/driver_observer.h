// DraDriverObserver is told of every exchange between the DRA manager and a DRA driver, as the
// manager saw it: each registration its plugins_registry handler accepted or refused, each
// NodePrepareResources and NodeUnprepareResources call with its request and outcome, every
// message of a health stream (NodeWatchResources) and the end of each such call. kdp-conformance
// judges a driver by what it is told (manager/src/conformance/); kdp-manager itself runs without
// one.
//
// Thread-safety: called synchronously on the manager's threads (the plugin manager's reconciler,
// the admitting or reconciling thread making a call, a health stream's own thread), never under a
// lock of the DRA plugin manager. Implementations must be thread-safe, quick, and must not call
// back into the manager.
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_DRIVER_OBSERVER_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_DRIVER_OBSERVER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/dra/plugin/health_stream.h"
#include "manager/src/dra/plugin/plugin.h"

namespace kdp::manager::dra {

class DraDriverObserver {
 public:
  virtual ~DraDriverObserver() = default;

  // A registration of a "DRAPlugin" through plugins_registry: RegisterPlugin's answer, or
  // ValidatePlugin's when it refused (then RegisterPlugin is never called).
  virtual void Registered(const std::string& driver, const std::string& endpoint,
                          const std::vector<std::string>& versions, const absl::Status& answer) = 0;
  // NodePrepareResources and NodeUnprepareResources, in v1 form (a v1beta1 driver's answer
  // converted), once the call returned.
  virtual void Prepared(const std::string& driver, const std::string& endpoint,
                        const drapb::NodePrepareResourcesRequest& request,
                        const absl::StatusOr<drapb::NodePrepareResourcesResponse>& response) = 0;
  virtual void Unprepared(
      const std::string& driver, const std::string& endpoint,
      const drapb::NodeUnprepareResourcesRequest& request,
      const absl::StatusOr<drapb::NodeUnprepareResourcesResponse>& response) = 0;
  // One NodeWatchResources message as the driver sent it (told before the DRA manager takes it).
  virtual void HealthListed(const std::string& driver, const std::string& endpoint,
                            const std::vector<WatchedDeviceHealth>& devices) = 0;
  // A NodeWatchResources call ended, with its status (also when cancelled by a deregistration).
  virtual void HealthStreamEnded(const std::string& driver, const std::string& endpoint,
                                 const absl::Status& status) = 0;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_DRIVER_OBSERVER_H_
