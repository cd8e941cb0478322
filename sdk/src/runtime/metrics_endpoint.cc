// Shared --metrics-address plumbing of the SDK runners (metrics_endpoint.h).
#include "sdk/src/runtime/metrics_endpoint.h"

#include "common/metrics.h"
#include "common/metrics_server.h"

namespace kdp::internal {

std::vector<double> RpcLatencyBuckets() { return metrics::ExponentialBuckets(0.0005, 2, 16); }

absl::Status ValidateMetricsAddress(const std::string& address, const std::string& option) {
  return metrics::ParseListenAddress(address, option).status();
}

}  // namespace kdp::internal
