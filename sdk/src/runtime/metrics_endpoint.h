// What both SDK runners share for their metrics: the RPC latency buckets and the check of a
// runner's metrics address (the server itself: metrics::StartMetricsServer). Private to the SDK.
//
// Thread-safety: the functions are thread-safe.
#ifndef KDP_SDK_SRC_RUNTIME_METRICS_ENDPOINT_H_
#define KDP_SDK_SRC_RUNTIME_METRICS_ENDPOINT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kdp::internal {

// Buckets of the SDK's RPC latency histograms: 0.5 ms to ~16 s by doubling, since a device plugin
// answers Allocate in microseconds and a DRA driver may take seconds.
std::vector<double> RpcLatencyBuckets();

// Validates a runner's metrics address: OK for "" and "host:port"; INVALID_ARGUMENT naming
// `option` and the rule broken.
[[nodiscard]] absl::Status ValidateMetricsAddress(const std::string& address,
                                                  const std::string& option);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_RUNTIME_METRICS_ENDPOINT_H_
