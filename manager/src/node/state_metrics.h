// The gauges kdp-manager computes from its state at scrape time, and the metrics server's health
// checks, registered where the node's parts are wired (node.cc, once everything they read runs):
// they read the device manager, the pod manager, the DRA manager and the state store, which
// themselves record into the metric families of metrics/manager_metrics.h.
//
// Thread-safe: the callbacks read through the managers' own thread-safe accessors.
#ifndef KDP_MANAGER_SRC_NODE_STATE_METRICS_H_
#define KDP_MANAGER_SRC_NODE_STATE_METRICS_H_

#include "common/metrics.h"
#include "common/metrics_server.h"

namespace kdp::manager {

class DeviceManager;
class PodManager;
class StateStore;
namespace dra {
class DraManager;
}  // namespace dra

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

#endif  // KDP_MANAGER_SRC_NODE_STATE_METRICS_H_
