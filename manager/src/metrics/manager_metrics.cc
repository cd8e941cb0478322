// kdp-manager's kubelet-named metric families.
#include "manager/src/metrics/manager_metrics.h"

namespace kdp::manager {

ManagerMetrics::ManagerMetrics(metrics::Registry* registry)
    // Help texts as the kubelet's /metrics shows them, stability prefix included.
    : plugin_registrations(registry->AddCounter(
          "kubelet_device_plugin_registration_total",
          "[ALPHA] Cumulative number of device plugin registrations. Broken down by resource name.",
          {"resource_name"})),
      plugin_alloc_duration(registry->AddHistogram(
          "kubelet_device_plugin_alloc_duration_seconds",
          "[ALPHA] Duration in seconds to serve a device plugin Allocation request. Broken down by "
          "resource name.",
          {"resource_name"}, metrics::DefaultBuckets())),
      dra_operations_duration(registry->AddHistogram(
          "dra_operations_duration_seconds",
          "[ALPHA] Latency histogram in seconds for the duration of handling all ResourceClaims "
          "referenced by a pod when the pod starts or stops. Identified by the name of the "
          "operation (PrepareResources or UnprepareResources) and separated by the success of the "
          "operation. The number of failed operations is provided through the histogram's overall "
          "count.",
          {"operation_name", "is_error"}, metrics::DefaultBuckets())),
      dra_grpc_operations_duration(registry->AddHistogram(
          "dra_grpc_operations_duration_seconds",
          "[ALPHA] Duration in seconds of the DRA gRPC operations",
          {"driver_name", "method_name", "grpc_status_code"}, metrics::DefaultBuckets())) {}

}  // namespace kdp::manager
