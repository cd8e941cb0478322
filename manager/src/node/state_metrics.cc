// The gauges and health checks computed from kdp-manager's state.
#include "manager/src/node/state_metrics.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/dra/manager.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/state/state_store.h"

namespace kdp::manager {

void AddStateMetrics(metrics::Registry* registry, metrics::MetricsServer* server,
                     const DeviceManager* devices, const PodManager* pods,
                     const dra::DraManager* dra, const StateStore* store) {
  if (dra != nullptr) {
    registry->AddCallback(
        "dra_resource_claims_in_use",
        "[ALPHA] The number of ResourceClaims that are currently in use on the node, by driver "
        "name (driver_name label value) and across all drivers (special value <any> for "
        "driver_name). Note that the sum of all by-driver counts is not the total number of "
        "in-use ResourceClaims because the same ResourceClaim might use devices from different "
        "drivers. Instead, use the count for the <any> driver_name.",
        metrics::MetricType::kGauge, {"driver_name"}, [dra] {
          std::vector<metrics::LabeledValue> values;
          for (const auto& [driver, count] : dra->ClaimsInUse()) {
            values.push_back({.label_values = {driver}, .value = static_cast<double>(count)});
          }
          return values;
        });
  }
  if (pods != nullptr) {
    registry->AddCallbackGauge("kdp_manager_pods", "Pods admitted and not deleted.", [pods] {
      return static_cast<double>(pods->ActivePodUids().size());
    });
  }
  if (devices != nullptr) {
    registry->AddCallback(
        "kdp_manager_devices",
        "Devices of each device-plugin resource as the plugins last reported them, by health.",
        metrics::MetricType::kGauge, {"resource_name", "health"}, [devices] {
          std::vector<metrics::LabeledValue> values;
          for (const auto& resource : devices->SharedResources()) {
            const int64_t healthy = resource->allocatable();
            values.push_back({.label_values = {resource->name, "healthy"},
                              .value = static_cast<double>(healthy)});
            values.push_back({.label_values = {resource->name, "unhealthy"},
                              .value = static_cast<double>(resource->capacity() - healthy)});
          }
          return values;
        });
  }
  if (store != nullptr) {
    registry->AddCallback(
        "kdp_manager_state_write_failures_total",
        "Journal appends and checkpoint compactions that failed (disk full, "
        "I/O errors).",
        metrics::MetricType::kCounter, {}, [store] {
          return std::vector<metrics::LabeledValue>{
              {.label_values = {}, .value = static_cast<double>(store->write_failures())}};
        });
  }
  if (server == nullptr) return;
  if (devices != nullptr) {
    server->AddHealthCheck({.name = "registration", .check = [devices] {
                              return devices->RegistrationServing()
                                         ? absl::OkStatus()
                                         : absl::UnavailableError(
                                               "the device plugin registration socket "
                                               "(kubelet.sock) is not served");
                            }});
  }
  if (store != nullptr) {
    server->AddHealthCheck({.name = "state", .check = [store] {
                              absl::Status last = store->last_write_status();
                              if (last.ok()) return last;
                              return absl::UnavailableError(
                                  absl::StrCat("the last state write failed: ", last.ToString()));
                            }});
  }
}

}  // namespace kdp::manager
