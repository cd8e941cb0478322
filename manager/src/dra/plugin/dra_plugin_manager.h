// DraPluginManager keeps track of the registered instances of every DRA driver (the kubelet
// 1.34's DRAPluginManager): it is the plugin manager's handler for PluginInfo.type "DRAPlugin"
// and the DRA manager's DraPlugins. Registration negotiates the service version (the plugin's
// supported_versions walked in the plugin's order, the first of "v1.DRAPlugin" /
// "v1beta1.DRAPlugin" wins; the health services may be listed too) and opens one gRPC channel
// per instance; several instances of one driver may be registered at once (rolling update,
// kubelet ≥ 1.33), each on its own endpoint, and Get() prefers the newest connected one, else
// the newest.
//
// An instance that advertises "v1.DRAResourceHealth" or "v1alpha1.DRAResourceHealth" gets a
// HealthStream (health_stream.h) feeding the handler set by SetHealthStreamHandler (the DRA
// manager's), from registration until it deregisters (or Stop()).
//
// ResourceSlice wiping (the kubelet's sync/usable): when no registered instance of a driver is
// connected — its last instance deregistered, or none has a READY channel — `wipe_resource_slices`
// runs after `wiping_delay` (defaultWipingDelay, 30 s) unless an instance of the driver is
// connected again meanwhile; a deadline once set is kept (a second reason does not extend it),
// and after a wipe the driver is not wiped again until one of its instances was connected.
// gRPC C++ has no connection stats handler, so the timer thread polls the instances' channel
// state every `connection_check_interval`, which also asks idle channels to reconnect (the
// kubelet's Connect() on ConnEnd). Registering alone does not cancel a pending wipe: the new
// instance must connect, as in 1.34.
//
// Thread-safety: thread-safe. The wipe callback runs on the manager's timer thread, never under
// its lock; it must not call Stop(). Stop() may be called more than once.
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/dra/plugin/dra_plugin.h"
#include "manager/src/dra/plugin/driver_observer.h"
#include "manager/src/dra/plugin/health_stream.h"
#include "manager/src/dra/plugin/plugin.h"
#include "manager/src/pluginmanager/plugin_handler.h"

namespace kdp::manager::dra {

struct DraPluginManagerOptions {
  // Deadline of NodePrepareResources / NodeUnprepareResources (defaultClientCallTimeout).
  absl::Duration call_timeout = absl::Seconds(kDefaultCallTimeoutSeconds);
  // How long a driver may have no connected instance (none registered, or none with a READY
  // channel) before its ResourceSlices are wiped (defaultWipingDelay).
  absl::Duration wiping_delay = absl::Seconds(30);
  // Called with the driver name when the delay passed; empty: nothing to wipe (standalone), and
  // connections are not watched.
  std::function<void(const std::string& driver)> wipe_resource_slices = {};
  // How often the timer thread looks at every instance's channel state (kdp's stand-in for the
  // kubelet's connection stats handler): a lost connection is noticed this much later at most.
  absl::Duration connection_check_interval = absl::Seconds(1);
  // Wait between two NodeWatchResources calls of an instance's health stream (the kubelet's 5 s).
  absl::Duration health_retry_period = absl::Seconds(kHealthStreamRetrySeconds);
  // dra_grpc_operations_duration_seconds, handed to every client; nullptr: not recorded.
  // Borrowed; must outlive the manager.
  metrics::HistogramFamily* grpc_durations = nullptr;
  // Told of every registration, call and health message (driver_observer.h); nullptr: nobody.
  // Borrowed; must outlive the manager.
  DraDriverObserver* observer = nullptr;
};

// One registered instance, for status output.
struct DraPluginInstance {
  std::string driver;
  std::string endpoint;
  std::string service;  // "v1.DRAPlugin" or "v1beta1.DRAPlugin"
  // The health service streamed from ("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"),
  // "" when the instance advertises none or no handler is set.
  std::string health_service = {};
  absl::Time registered_at = absl::InfinitePast();
  bool connected = false;  // the channel is READY now
  // What the last connection check saw (the wipe decision's input); false before the first
  // check, and always when connections are not watched (no wipe callback).
  bool last_check_connected = false;
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

  // The handler of the health streams started from now on (the DRA manager's); null: none are
  // started. Call it before plugins register. Borrowed: it must outlive this manager, or Stop()
  // must be called before it goes.
  void SetHealthStreamHandler(HealthStreamHandler* handler) ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels pending wipes, stops the health streams (without clearing the health they
  // reported, so the persisted state survives a restart) and ends the timer thread. Registered
  // instances stay (Get() works); later registrations start no health stream.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // DraPlugins: the newest connected instance of `driver`, else the newest. FAILED_PRECONDITION
  // "DRA driver <driver> is not registered"; INVALID_ARGUMENT "DRA driver name is empty".
  absl::StatusOr<std::shared_ptr<DraPlugin>> Get(const std::string& driver) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // PluginHandler. Validate: ChooseDraService's error wrapped as "invalid supported gRPC versions
  // of DRA driver plugin <driver> at endpoint <endpoint>: <err>"; then kdp's own rules
  // (common/path_safety.h): INVALID_ARGUMENT when `driver` is not a DNS subdomain of at most 63
  // characters (ResourceSlice.spec.driver's rule) or `endpoint` not an absolute socket path
  // without ".." components, the kubelet checking neither. Register: the same, then
  // ALREADY_EXISTS "endpoint <endpoint> already registered for DRA driver plugin <driver>" when
  // that endpoint is registered already; otherwise the instance is added (newest) and a pending
  // health stream is started when the instance advertises a health service. DeRegister: drops
  // that instance only and stops its health stream (unknown: no-op).
  absl::Status ValidatePlugin(const std::string& driver, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  absl::Status RegisterPlugin(const std::string& driver, const std::string& endpoint,
                              const std::vector<std::string>& versions) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void DeRegisterPlugin(const std::string& driver, const std::string& endpoint) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every registered instance, by driver, oldest first.
  std::vector<DraPluginInstance> Instances() const ABSL_LOCKS_EXCLUDED(mu_);
  // Driver → when its ResourceSlices will be wiped, for status output.
  std::map<std::string, absl::Time> PendingWipes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One registered instance.
  struct Registered {
    std::shared_ptr<DraPluginClient> client;
    std::unique_ptr<HealthStream> health;  // null: no health service
    bool connected = false;                // as of the last connection check
  };

  // ValidatePlugin's and RegisterPlugin's work, which the public methods report to the observer.
  // Validate returns the chosen service.
  absl::StatusOr<std::string> Validate(const std::string& driver, const std::string& endpoint,
                                       const std::vector<std::string>& versions);
  absl::Status Register(const std::string& driver, const std::string& endpoint,
                        const std::vector<std::string>& versions) ABSL_LOCKS_EXCLUDED(mu_);
  void TimerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // The kubelet's sync(driver): cancels the driver's pending wipe when an instance is
  // connected, else schedules one (unless one is pending or the driver was wiped already).
  void SyncLocked(const std::string& driver) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies a connection check's results (`connected[i]` for `checked[i]`) and syncs every
  // registered driver.
  void ApplyConnectionsLocked(const std::vector<std::shared_ptr<DraPluginClient>>& checked,
                              const std::vector<bool>& connected)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DraPluginManagerOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar wipes_changed_;
  // Driver → instances in registration order.
  std::map<std::string, std::vector<Registered>> store_ ABSL_GUARDED_BY(mu_);
  // Driver → when its ResourceSlices are wiped.
  std::map<std::string, absl::Time> pending_wipes_ ABSL_GUARDED_BY(mu_);
  // Drivers wiped and not connected since (the kubelet keeps a finished work item queued, so a
  // driver is wiped once per outage).
  std::set<std::string> wiped_ ABSL_GUARDED_BY(mu_);
  // Drivers that had a connected instance at some connection check (for the log only).
  std::set<std::string> connected_before_ ABSL_GUARDED_BY(mu_);
  HealthStreamHandler* health_handler_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_MANAGER_H_
