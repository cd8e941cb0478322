// DraPluginManager keeps track of the registered instances of every DRA driver (the kubelet
// 1.34's DRAPluginManager): it is the plugin manager's handler for PluginInfo.type "DRAPlugin"
// and the DRA manager's DraPlugins. Registration negotiates the service version (the plugin's
// supported_versions walked in the plugin's order, the first of "v1.DRAPlugin" /
// "v1beta1.DRAPlugin" wins) and opens one gRPC channel per instance; several instances of one
// driver may be registered at once (rolling update, kubelet ≥ 1.33), each on its own endpoint,
// and Get() prefers the newest connected one, else the newest. When a driver's last instance
// deregisters, `wipe_resource_slices` runs after `wiping_delay` (defaultWipingDelay, 30 s) unless
// an instance of the driver registers again meanwhile; the DRA manager uses it to delete the
// driver's ResourceSlices.
//
// Difference from 1.34: the wipe is scheduled by the last deregistration only; the kubelet also
// schedules it when no instance has been *connected* for the delay.
//
// Thread-safe. The wipe callback runs on the manager's timer thread, never under its lock; it
// must not call Stop(). Stop() may be called more than once.
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/dra/plugin/dra_plugin.h"
#include "manager/src/dra/plugin/plugin.h"
#include "manager/src/pluginmanager/plugin_handler.h"

namespace kdp::manager::dra {

struct DraPluginManagerOptions {
  // Deadline of NodePrepareResources / NodeUnprepareResources (defaultClientCallTimeout).
  absl::Duration call_timeout = absl::Seconds(kDefaultCallTimeoutSeconds);
  // How long after a driver's last instance deregistered its ResourceSlices are wiped
  // (defaultWipingDelay).
  absl::Duration wiping_delay = absl::Seconds(30);
  // Called with the driver name when the delay passed; empty: nothing to wipe (standalone).
  std::function<void(const std::string& driver)> wipe_resource_slices = {};
};

// One registered instance, for status output.
struct DraPluginInstance {
  std::string driver;
  std::string endpoint;
  std::string service;  // "v1.DRAPlugin" or "v1beta1.DRAPlugin"
  absl::Time registered_at = absl::InfinitePast();
  bool connected = false;
};

// The kubelet's validateSupportedServices: the first entry of `supported_services` (in the
// plugin's order) that is kDraV1Service or kDraV1beta1Service. INVALID_ARGUMENT "empty list of
// supported gRPC services (aka supported versions)" for an empty list; INVALID_ARGUMENT "none of
// services supported by the plugin ([\"1.0.0\"]) are supported by the kubelet ([\"v1.DRAPlugin\"
// \"v1beta1.DRAPlugin\"])" (Go's %q of a []string) when nothing matches, legacy semver included.
absl::StatusOr<std::string> ChooseDraService(const std::vector<std::string>& supported_services);

class DraPluginManager final : public DraPlugins, public pluginmanager::PluginHandler {
 public:
  explicit DraPluginManager(DraPluginManagerOptions options = {});
  ~DraPluginManager() override;  // Stops.

  DraPluginManager(const DraPluginManager&) = delete;
  DraPluginManager& operator=(const DraPluginManager&) = delete;

  // Cancels pending wipes and ends the timer thread. Registered instances stay (Get() works).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // DraPlugins: the newest connected instance of `driver`, else the newest. FAILED_PRECONDITION
  // "DRA driver <driver> is not registered"; INVALID_ARGUMENT "DRA driver name is empty".
  absl::StatusOr<std::shared_ptr<DraPlugin>> Get(const std::string& driver) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // PluginHandler. Validate: ChooseDraService's error wrapped as "invalid supported gRPC versions
  // of DRA driver plugin <driver> at endpoint <endpoint>: <err>". Register: the same, then
  // ALREADY_EXISTS "endpoint <endpoint> already registered for DRA driver plugin <driver>" when
  // that endpoint is registered already; otherwise the instance is added (newest) and a pending
  // wipe of the driver is cancelled. DeRegister: drops that instance only (unknown: no-op).
  absl::Status ValidatePlugin(const std::string& driver, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  absl::Status RegisterPlugin(const std::string& driver, const std::string& endpoint,
                              const std::vector<std::string>& versions) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void DeRegisterPlugin(const std::string& driver, const std::string& endpoint) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every registered instance, by driver, oldest first.
  std::vector<DraPluginInstance> Instances() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void TimerLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const DraPluginManagerOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar wipes_changed_;
  // Driver → instances in registration order.
  std::map<std::string, std::vector<std::shared_ptr<DraPluginClient>>> store_ ABSL_GUARDED_BY(mu_);
  // Driver → when its ResourceSlices are wiped.
  std::map<std::string, absl::Time> pending_wipes_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_
