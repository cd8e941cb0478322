// The DRA health streams of a driver (KEP-4680): v1alpha1.DRAResourceHealth (kubelet 1.34+) and
// v1.DRAResourceHealth (newest kubelets), whose one method NodeWatchResources streams the health
// of every device of the driver, served on the DRA socket next to the DRAPlugin services. Each
// message is the complete list (dra-health api.proto: the kubelet replaces the driver's entries
// with it), sent when the stream opens, after every change in the DeviceHealthTable, and again
// every `resend_interval` without a change: the kubelet reads a device as Unknown once its
// last_updated_time is older than its timeout (healthinfo.go), so the resend keeps a live
// driver's devices fresh. last_updated_time is the time of sending: the driver's last word on a
// device stands until it changes it. Several streams may be open at once; each has its own
// server thread and is never held up by another (latest list wins, as ListAndWatch).
//
// Like PluginService's ListAndWatch, the streams use gRPC's sync API: one callback method in a
// service measurably slows every unary call of its server (docs/benchmarks.md), and the DRAPlugin
// services share this server. Private to the SDK.
//
// Thread-safe. The owner calls EndStreams(), shuts the grpc::Server down, then destroys the
// services and this object (whose destructor waits for the streams).
#ifndef KDP_SDK_SRC_DRA_HEALTH_SERVICE_H_
#define KDP_SDK_SRC_DRA_HEALTH_SERVICE_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "sdk/src/dra/device_health.h"

namespace kdp::internal {

// The names a driver serving the health streams adds to supported_versions.
inline constexpr char kDraHealthServiceV1[] = "v1.DRAResourceHealth";
inline constexpr char kDraHealthServiceV1alpha1[] = "v1alpha1.DRAResourceHealth";

struct DraHealthOptions {
  std::string driver = {};  // For logs and errors.
  std::string pool = {};    // Every device's pool_name: the pool the runner publishes.
  int64_t timeout_seconds = 30;
  absl::Duration resend_interval = absl::Seconds(10);
};

// The options for `health_check_timeout` (DraRunnerOptions): whole seconds, and a resend every
// third of the timeout, of 30 s at most (kubelets before 1.35 ignore the field and use 30 s).
// REQUIRES: health_check_timeout >= 1 s.
DraHealthOptions MakeDraHealthOptions(std::string driver, std::string pool,
                                      absl::Duration health_check_timeout);

class HealthStream;

class DraHealthStreams {
 public:
  DraHealthStreams(std::shared_ptr<DeviceHealthTable> table, DraHealthOptions options);
  ~DraHealthStreams();  // Waits for the streams.

  DraHealthStreams(const DraHealthStreams&) = delete;
  DraHealthStreams& operator=(const DraHealthStreams&) = delete;

  // Ends every open stream now (UNAVAILABLE "DRA driver <driver> is stopping") and every stream
  // opened from now on at once: the kubelet keeps its stream open forever, so without this a
  // server shutdown would wait its whole deadline.
  void EndStreams() ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until every stream has returned.
  void WaitForStreams() ABSL_LOCKS_EXCLUDED(mu_);
  int open_streams() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class DraHealthServiceV1alpha1;
  friend class DraHealthServiceV1;

  // NodeWatchResources of either version (their messages are identical).
  template <typename Response>
  grpc::Status Serve(grpc::ServerContext* context, grpc::ServerWriter<Response>* writer,
                     const char* version) ABSL_LOCKS_EXCLUDED(mu_);
  // False when the streams were ended: the new one must not start.
  bool StreamStarted(HealthStream* stream) ABSL_LOCKS_EXCLUDED(mu_);
  void StreamDone(HealthStream* stream) ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<DeviceHealthTable> table_;
  const DraHealthOptions options_;

  mutable absl::Mutex mu_;
  std::set<HealthStream*> open_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

class DraHealthServiceV1alpha1 final : public ::v1alpha1::DRAResourceHealth::Service {
 public:
  explicit DraHealthServiceV1alpha1(DraHealthStreams* streams) : streams_(streams) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest* request,
      grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) override;

 private:
  DraHealthStreams* const streams_;
};

class DraHealthServiceV1 final : public ::v1::DRAResourceHealth::Service {
 public:
  explicit DraHealthServiceV1(DraHealthStreams* streams) : streams_(streams) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest* request,
      grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) override;

 private:
  DraHealthStreams* const streams_;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_HEALTH_SERVICE_H_
