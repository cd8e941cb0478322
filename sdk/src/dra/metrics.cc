// The DRA runner's metrics and health checks (dra_metrics.h).
#include "sdk/src/dra/metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "sdk/src/runtime/metrics_endpoint.h"

namespace kdp::internal {

DraRunnerMetrics::DraRunnerMetrics(std::string driver, std::shared_ptr<DraDriverLink> link,
                                   const DraRegistrationService* registration)
    : driver_(std::move(driver)), link_(std::move(link)), registration_(registration) {
  const std::vector<std::string> label = {"driver_name"};
  const metrics::LabelValues value = {driver_};
  rpc_duration_ = registry_.AddHistogram(
      "kdp_dra_driver_rpc_duration_seconds",
      "Duration in seconds of the kubelet's NodePrepareResources and NodeUnprepareResources calls "
      "(v1 and v1beta1), by gRPC status code of the call.",
      {"driver_name", "method", "code"}, RpcLatencyBuckets());
  claim_errors_ = registry_.AddCounter(
      "kdp_dra_driver_claim_errors_total",
      "Claims answered with an error inside a successful NodePrepareResources or "
      "NodeUnprepareResources call (the kubelet retries them).",
      {"driver_name", "method"});
  prepared_claims_ =
      registry_
          .AddGauge("kdp_dra_driver_prepared_claims",
                    "Claims prepared on this node (completed records of the driver's checkpoint).",
                    label)
          ->WithLabels(value);
  publish_attempts_ =
      registry_
          .AddCounter("kdp_dra_driver_resource_slice_publish_attempts_total",
                      "ResourceSlice reconciliations against the API server.", label)
          ->WithLabels(value);
  publish_failures_ =
      registry_
          .AddCounter("kdp_dra_driver_resource_slice_publish_failures_total",
                      "ResourceSlice reconciliations that failed (retried with backoff).", label)
          ->WithLabels(value);
  registry_.AddCallback(
      "kdp_dra_driver_devices",
      "Devices of the driver's last device list, by the health the driver set (Healthy, "
      "Unhealthy or Unknown).",
      metrics::MetricType::kGauge, {"driver_name", "health"}, [this] { return DeviceCounts(); });
  registry_.AddCallback(
      "kdp_dra_driver_registered",
      "1 when the kubelet reported the driver registered (NotifyRegistrationStatus), else 0.",
      metrics::MetricType::kGauge, label, [this] {
        return std::vector<metrics::LabeledValue>{
            {.label_values = {driver_}, .value = registration_->record().registered ? 1.0 : 0.0}};
      });
  registry_.AddCallback(
      "kdp_dra_driver_registrations_total",
      "NotifyRegistrationStatus calls from the kubelet reporting the driver registered.",
      metrics::MetricType::kCounter, label, [this] {
        return std::vector<metrics::LabeledValue>{
            {.label_values = {driver_},
             .value = static_cast<double>(registration_->record().accepted)}};
      });
  registry_.AddCallback(
      "kdp_dra_driver_registration_failures_total",
      "NotifyRegistrationStatus calls from the kubelet reporting a failed registration.",
      metrics::MetricType::kCounter, label, [this] {
        return std::vector<metrics::LabeledValue>{
            {.label_values = {driver_},
             .value = static_cast<double>(registration_->record().rejected)}};
      });
  registry_.AddCallback(
      "kdp_dra_driver_device_discovery_failures_total",
      "Discover() calls (at start and by Publish()) that failed or returned invalid devices.",
      metrics::MetricType::kCounter, label, [this] {
        return std::vector<metrics::LabeledValue>{
            {.label_values = {driver_},
             .value = static_cast<double>(link_->devices_record().failures)}};
      });
}

DraNodeMetrics DraRunnerMetrics::NodeMetrics() const {
  return {.rpc_duration = rpc_duration_,
          .claim_errors = claim_errors_,
          .prepared_claims = prepared_claims_};
}

void DraRunnerMetrics::PublishAttempted(const absl::Status& status) {
  publish_attempts_->Inc();
  if (!status.ok()) publish_failures_->Inc();
  absl::MutexLock lock(&mu_);
  last_publish_ = status;
}

std::vector<metrics::HealthCheck> DraRunnerMetrics::HealthChecks(bool slices) const {
  std::vector<metrics::HealthCheck> checks = {
      {.name = "registration", .check = [this] { return RegistrationHealth(); }, .liveness = true},
      {.name = "device-source",
       .check = [this] { return DeviceSourceHealth(); },
       .liveness = true}};
  // Readiness only (/readyz, /healthz): an API server that is away is not cured by restarting
  // every driver of the cluster.
  if (slices) {
    checks.push_back({.name = "resource-slices", .check = [this] { return SliceHealth(); }});
  }
  return checks;
}

absl::Status DraRunnerMetrics::RegistrationHealth() const {
  const DraRegistrationRecord record = registration_->record();
  if (record.registered) return absl::OkStatus();
  if (!record.error.empty()) {
    return absl::UnavailableError(
        absl::StrCat(driver_, ": the kubelet reported the registration failed: ", record.error));
  }
  return absl::UnavailableError(
      absl::StrCat(driver_, ": not registered with the kubelet yet (plugins_registry)"));
}

absl::Status DraRunnerMetrics::DeviceSourceHealth() const {
  const DevicesRecord record = link_->devices_record();
  if (record.last.ok()) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(driver_, ": device source failing: Discover(): ", record.last.ToString()));
}

absl::Status DraRunnerMetrics::SliceHealth() const {
  absl::MutexLock lock(&mu_);
  if (last_publish_.ok()) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(driver_, ": publishing ResourceSlices failing: ", last_publish_.ToString()));
}

std::vector<metrics::LabeledValue> DraRunnerMetrics::DeviceCounts() const {
  int counts[3] = {0, 0, 0};
  const Health order[3] = {Health::kHealthy, Health::kUnhealthy, Health::kUnknown};
  for (const DeviceHealthEntry& entry : link_->health()->Snapshot()) {
    for (int i = 0; i < 3; ++i) counts[i] += entry.health == order[i];
  }
  std::vector<metrics::LabeledValue> out;
  for (int i = 0; i < 3; ++i) {
    out.push_back(
        {.label_values = {driver_, HealthName(order[i])}, .value = static_cast<double>(counts[i])});
  }
  return out;
}

}  // namespace kdp::internal
