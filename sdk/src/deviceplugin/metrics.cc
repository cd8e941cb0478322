// The plugin runner's metrics and health check (plugin_metrics.h).
#include "sdk/src/deviceplugin/metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kdp/device_plugin.h"
#include "sdk/src/runtime/metrics_endpoint.h"

namespace kdp::internal {

PluginRunnerMetrics::PluginRunnerMetrics(std::vector<Plugin> plugins)
    : plugins_(std::move(plugins)) {
  {
    absl::MutexLock lock(&mu_);
    for (const Plugin& plugin : plugins_) status_[plugin.resource_name] = Status();
  }
  const std::vector<std::string> resource = {"resource_name"};
  rpc_duration_ = registry_.AddHistogram(
      "kdp_device_plugin_rpc_duration_seconds",
      "Duration in seconds of the device plugin's gRPC calls from the kubelet, by method and "
      "gRPC status code (ListAndWatch is counted in kdp_device_plugin_list_and_watch_*).",
      {"resource_name", "method", "code"}, RpcLatencyBuckets());
  metrics::CounterFamily* registrations = registry_.AddCounter(
      "kdp_device_plugin_registrations_total",
      "Successful Register calls on the kubelet's registration socket, re-registrations included.",
      resource);
  metrics::CounterFamily* reregistrations = registry_.AddCounter(
      "kdp_device_plugin_reregistrations_total",
      "Successful Register calls after the first (the kubelet restarted or removed the socket).",
      resource);
  metrics::CounterFamily* failures = registry_.AddCounter(
      "kdp_device_plugin_registration_failures_total",
      "Failed registration attempts (each is retried with backoff).", resource);
  metrics::GaugeFamily* streams =
      registry_.AddGauge("kdp_device_plugin_list_and_watch_streams",
                         "ListAndWatch streams open now (the kubelet keeps one).", resource);
  metrics::CounterFamily* sends = registry_.AddCounter(
      "kdp_device_plugin_list_and_watch_sends_total",
      "Device lists sent on ListAndWatch streams (the first list of a stream included).", resource);
  for (const Plugin& plugin : plugins_) {
    const metrics::LabelValues labels = {plugin.resource_name};
    children_[plugin.resource_name] = Children{
        .registrations = registrations->WithLabels(labels),
        .reregistrations = reregistrations->WithLabels(labels),
        .registration_failures = failures->WithLabels(labels),
        .open_streams = streams->WithLabels(labels),
        .sends = sends->WithLabels(labels),
    };
  }
  registry_.AddCallback("kdp_device_plugin_devices",
                        "Devices advertised to the kubelet, by health (Healthy or Unhealthy).",
                        metrics::MetricType::kGauge, {"resource_name", "health"},
                        [this] { return DeviceCounts(); });
  registry_.AddCallback("kdp_device_plugin_registered",
                        "1 when the plugin is registered with the running kubelet, else 0.",
                        metrics::MetricType::kGauge, resource, [this] { return Registered(); });
  registry_.AddCallback(
      "kdp_device_plugin_discovery_failures_total",
      "Discover() calls (at start and by Publish()) that failed or returned an invalid inventory.",
      metrics::MetricType::kCounter, resource, [this] { return DiscoveryFailures(); });
}

PluginServiceMetrics PluginRunnerMetrics::ServiceMetrics(const std::string& resource_name) {
  const Children& children = children_.at(resource_name);
  return {.rpc_duration = rpc_duration_,
          .open_streams = children.open_streams,
          .sends = children.sends};
}

void PluginRunnerMetrics::RegistrationSucceeded(const std::string& resource_name) {
  const Children& children = children_.at(resource_name);
  bool again = false;
  {
    absl::MutexLock lock(&mu_);
    Status& status = status_[resource_name];
    again = status.registrations++ > 0;
    status.registered = true;
    status.reason.clear();
  }
  children.registrations->Inc();
  if (again) children.reregistrations->Inc();
}

void PluginRunnerMetrics::RegistrationFailed(const std::string& resource_name,
                                             const absl::Status& failure) {
  children_.at(resource_name).registration_failures->Inc();
  absl::MutexLock lock(&mu_);
  Status& status = status_[resource_name];
  status.registered = false;
  status.reason = absl::StrCat("registration failed: ", failure.ToString());
}

void PluginRunnerMetrics::RegistrationLost(const std::string& resource_name,
                                           std::string_view reason) {
  absl::MutexLock lock(&mu_);
  Status& status = status_[resource_name];
  status.registered = false;
  status.reason = absl::StrCat("not registered: ", std::string(reason));
}

void PluginRunnerMetrics::Superseded(const std::string& resource_name) {
  absl::MutexLock lock(&mu_);
  Status& status = status_[resource_name];
  status.registered = false;
  status.superseded = true;
}

absl::Status PluginRunnerMetrics::Health() const {
  std::vector<std::string> failing;
  {
    absl::MutexLock lock(&mu_);
    for (const Plugin& plugin : plugins_) {
      const Status& status = status_.at(plugin.resource_name);
      if (!status.registered && !status.superseded) {
        failing.push_back(absl::StrCat(plugin.resource_name, ": ", status.reason));
      }
    }
  }
  for (const Plugin& plugin : plugins_) {
    DiscoveryRecord discovery = plugin.state->discovery();
    if (!discovery.last.ok()) {
      failing.push_back(absl::StrCat(plugin.resource_name, ": device source failing: Discover(): ",
                                     discovery.last.ToString()));
    }
  }
  if (failing.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(failing, "; "));
}

std::vector<metrics::LabeledValue> PluginRunnerMetrics::DeviceCounts() const {
  std::vector<metrics::LabeledValue> out;
  for (const Plugin& plugin : plugins_) {
    DeviceSnapshot snapshot = plugin.state->Snapshot();
    int healthy = 0;
    for (const Device& device : snapshot->devices) healthy += device.health == Health::kHealthy;
    const int unhealthy = static_cast<int>(snapshot->devices.size()) - healthy;
    out.push_back({.label_values = {plugin.resource_name, HealthName(Health::kHealthy)},
                   .value = static_cast<double>(healthy)});
    out.push_back({.label_values = {plugin.resource_name, HealthName(Health::kUnhealthy)},
                   .value = static_cast<double>(unhealthy)});
  }
  return out;
}

std::vector<metrics::LabeledValue> PluginRunnerMetrics::Registered() const {
  std::vector<metrics::LabeledValue> out;
  absl::MutexLock lock(&mu_);
  for (const Plugin& plugin : plugins_) {
    out.push_back({.label_values = {plugin.resource_name},
                   .value = status_.at(plugin.resource_name).registered ? 1.0 : 0.0});
  }
  return out;
}

std::vector<metrics::LabeledValue> PluginRunnerMetrics::DiscoveryFailures() const {
  std::vector<metrics::LabeledValue> out;
  for (const Plugin& plugin : plugins_) {
    out.push_back({.label_values = {plugin.resource_name},
                   .value = static_cast<double>(plugin.state->discovery().failures)});
  }
  return out;
}

}  // namespace kdp::internal
