// PluginRunnerMetrics: what a PluginRunner reports at /metrics (kdp_device_plugin_*, each with a
// resource_name label) and its /healthz check. The runner and its PluginServices report events
// (registrations, RPCs, streams); device counts and Discover() failures are read from each
// plugin's DeviceState at scrape time, so they can never disagree with what ListAndWatch sends.
// The metrics are kept whether or not they are served. Private to the SDK.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DEVICEPLUGIN_METRICS_H_
#define KDP_SDK_SRC_DEVICEPLUGIN_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "sdk/src/deviceplugin/device_state.h"

namespace kdp::internal {

// The metrics one PluginService updates; null members are not updated.
struct PluginServiceMetrics {
  // kdp_device_plugin_rpc_duration_seconds{resource_name, method, code}.
  metrics::HistogramFamily* rpc_duration = nullptr;
  // kdp_device_plugin_list_and_watch_streams{resource_name}.
  metrics::Gauge* open_streams = nullptr;
  // kdp_device_plugin_list_and_watch_sends_total{resource_name}.
  metrics::Counter* sends = nullptr;
};

class PluginRunnerMetrics {
 public:
  struct Plugin {
    std::string resource_name = {};
    std::shared_ptr<DeviceState> state = {};
  };

  explicit PluginRunnerMetrics(std::vector<Plugin> plugins);
  PluginRunnerMetrics(const PluginRunnerMetrics&) = delete;
  PluginRunnerMetrics& operator=(const PluginRunnerMetrics&) = delete;

  const metrics::Registry& registry() const { return registry_; }

  // REQUIRES: `resource_name` is one of the plugins given at construction.
  PluginServiceMetrics ServiceMetrics(const std::string& resource_name);

  // A Register call succeeded (the first, or a re-registration after a kubelet restart).
  void RegistrationSucceeded(const std::string& resource_name) ABSL_LOCKS_EXCLUDED(mu_);
  // A Register call (or serving the socket again before it) failed with `status`.
  void RegistrationFailed(const std::string& resource_name, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The plugin must register again: `reason` says why (kubelet.sock re-created, socket gone).
  void RegistrationLost(const std::string& resource_name, std::string_view reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Another instance serves the plugin's socket now: this runner no longer registers it, which
  // is not a failure of this process (it is being replaced).
  void Superseded(const std::string& resource_name) ABSL_LOCKS_EXCLUDED(mu_);

  // The /healthz check: OK when every plugin is registered (or superseded) and its last
  // Discover() succeeded; otherwise UNAVAILABLE with one "<resource>: <reason>" per failing
  // plugin, joined by "; ".
  absl::Status Health() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Status {
    bool registered = false;
    bool superseded = false;
    int64_t registrations = 0;
    std::string reason = "not registered with the kubelet yet";
  };
  struct Children {
    metrics::Counter* registrations = nullptr;
    metrics::Counter* reregistrations = nullptr;
    metrics::Counter* registration_failures = nullptr;
    metrics::Gauge* open_streams = nullptr;
    metrics::Counter* sends = nullptr;
  };

  std::vector<metrics::LabeledValue> DeviceCounts() const;
  std::vector<metrics::LabeledValue> Registered() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<metrics::LabeledValue> DiscoveryFailures() const;

  const std::vector<Plugin> plugins_;
  mutable absl::Mutex mu_;
  std::map<std::string, Status, std::less<>> status_ ABSL_GUARDED_BY(mu_);
  // Declared after what its callbacks read, so that it goes first.
  metrics::Registry registry_;
  metrics::HistogramFamily* rpc_duration_ = nullptr;
  std::map<std::string, Children, std::less<>> children_;  // Built by the constructor.
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DEVICEPLUGIN_METRICS_H_
