// The metric families kdp-manager exports on --metrics-address, named and labelled as the kubelet
// names them (pkg/kubelet/metrics: kubelet_device_plugin_*, dra_*), created in the manager's own
// metrics::Registry and handed (as a borrowed pointer, possibly null) to the components that
// record into them: the registration server, the device manager's Allocate, the DRA manager and
// the DRA plugin clients. Gauges the manager can compute from its state (claims in use, pods,
// devices) are callback families registered by Node once everything they read runs
// (node/state_metrics.h AddStateMetrics): this component is a leaf, which the components that
// record into it link, and which depends on none of them.
//
// Thread-safe: the families are; the struct itself is immutable after construction.
#ifndef KDP_MANAGER_SRC_METRICS_MANAGER_METRICS_H_
#define KDP_MANAGER_SRC_METRICS_MANAGER_METRICS_H_

#include <memory>
#include <string>

#include "common/metrics.h"

namespace kdp::manager {

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

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_METRICS_MANAGER_METRICS_H_
