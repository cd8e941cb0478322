// The metric families kdp-manager exports on --metrics-address, named and labelled as the kubelet
// names them (pkg/kubelet/metrics: kubelet_device_plugin_*, dra_*), created in the manager's own
// metrics::Registry and handed (as a borrowed pointer, possibly null) to the components that
// record into them: the registration server, the device manager's Allocate, the DRA manager and
// the DRA plugin clients. Gauges the manager can compute from its state (claims in use, pods,
// devices) are callback families registered by Node (node/node.h) once everything they read
// runs (AddStateMetrics).
//
// Thread-safe: the families are; the struct itself is immutable after construction.
#ifndef KDP_MANAGER_SRC_MANAGER_METRICS_H_
#define KDP_MANAGER_SRC_MANAGER_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "common/metrics_server.h"

namespace kdp::manager {

class DeviceManager;
class PodManager;
class StateStore;
namespace dra {
class DraManager;
}  // namespace dra

struct ManagerMetrics {
  // Adds the families to `registry` (borrowed; must outlive this struct's users).
  explicit ManagerMetrics(metrics::Registry* registry);

  // kubelet_device_plugin_registration_total{resource_name}: every Register call, counted first
  // (before validation), as the kubelet's registration server does.
  metrics::CounterFamily* plugin_registrations = nullptr;
  // kubelet_device_plugin_alloc_duration_seconds{resource_name}: the Allocate RPC.
  metrics::HistogramFamily* plugin_alloc_duration = nullptr;
  // dra_operations_duration_seconds{operation_name=PrepareResources|UnprepareResources,is_error}.
  metrics::HistogramFamily* dra_operations_duration = nullptr;
  // dra_grpc_operations_duration_seconds{driver_name,method_name,grpc_status_code}.
  metrics::HistogramFamily* dra_grpc_operations_duration = nullptr;
};

// The default --metrics-address (loopback; 9470 is not used by the kubelet's 10250/10255/10248).
inline constexpr char kDefaultMetricsAddress[] = "127.0.0.1:9470";

// Adds the gauges computed from the manager's state at scrape time, and the health checks:
//   dra_resource_claims_in_use{driver_name}    prepared claims per driver, and "<any>"
//   kdp_manager_pods                           active (admitted, not deleted) pods
//   kdp_manager_devices{resource_name,health}  devices per resource, health healthy|unhealthy
//   kdp_manager_state_write_failures_total     failed journal/checkpoint writes
// health checks: "registration" (kubelet.sock is served) and "state" (the last journal or
// checkpoint write succeeded). Every pointer is borrowed: `server` (may be null) must be stopped
// and `registry` must stop rendering before any of them is destroyed.
void AddStateMetrics(metrics::Registry* registry, metrics::MetricsServer* server,
                     const DeviceManager* devices, const PodManager* pods,
                     const dra::DraManager* dra, const StateStore* store);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_MANAGER_METRICS_H_
