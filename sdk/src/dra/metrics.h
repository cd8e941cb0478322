// DraRunnerMetrics: what a DraRunner reports at /metrics (kdp_dra_driver_*, each with a
// driver_name label) and its /healthz checks. The node server reports its calls and the prepared
// claims, the slice publisher each attempt; device health, the registration state and Discover()
// failures are read at scrape time from the objects that hold them. The metrics are kept whether
// or not they are served. Private to the SDK.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DRA_METRICS_H_
#define KDP_SDK_SRC_DRA_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "common/metrics_server.h"
#include "sdk/src/dra/driver_link.h"
#include "sdk/src/dra/registration.h"

namespace kdp::internal {

// The metrics a DraNodeServer updates; null members are not updated.
struct DraNodeMetrics {
  // kdp_dra_driver_rpc_duration_seconds{driver_name, method, code}.
  metrics::HistogramFamily* rpc_duration = nullptr;
  // kdp_dra_driver_claim_errors_total{driver_name, method}.
  metrics::CounterFamily* claim_errors = nullptr;
  // kdp_dra_driver_prepared_claims{driver_name}.
  metrics::Gauge* prepared_claims = nullptr;
};

class DraRunnerMetrics {
 public:
  // `link` and `registration` are read at every scrape and health check; `registration` must
  // outlive this.
  DraRunnerMetrics(std::string driver, std::shared_ptr<DraDriverLink> link,
                   const DraRegistrationService* registration);
  DraRunnerMetrics(const DraRunnerMetrics&) = delete;
  DraRunnerMetrics& operator=(const DraRunnerMetrics&) = delete;

  const metrics::Registry& registry() const { return registry_; }
  DraNodeMetrics NodeMetrics() const;

  // One ResourceSlice reconciliation finished with `status`.
  void PublishAttempted(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // The /healthz checks: "registration" (the kubelet reported the driver registered),
  // "device-source" (the last Discover() succeeded) and, with `slices`, "resource-slices" (the
  // last publication attempt succeeded). Each fails with UNAVAILABLE naming the driver and why.
  std::vector<metrics::HealthCheck> HealthChecks(bool slices) const;

 private:
  absl::Status RegistrationHealth() const;
  absl::Status DeviceSourceHealth() const;
  absl::Status SliceHealth() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<metrics::LabeledValue> DeviceCounts() const;

  const std::string driver_;
  const std::shared_ptr<DraDriverLink> link_;
  const DraRegistrationService* const registration_;
  mutable absl::Mutex mu_;
  absl::Status last_publish_ ABSL_GUARDED_BY(mu_);
  // Declared after what its callbacks read, so that it goes first.
  metrics::Registry registry_;
  metrics::HistogramFamily* rpc_duration_ = nullptr;
  metrics::CounterFamily* claim_errors_ = nullptr;
  metrics::Gauge* prepared_claims_ = nullptr;
  metrics::Counter* publish_attempts_ = nullptr;
  metrics::Counter* publish_failures_ = nullptr;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_METRICS_H_
