// HealthStream consumes the optional device-health service of one registered DRA driver instance
// (KEP-4680, the dra-health API, kubelet 1.34+): the kubelet's health goroutine started in
// DRAPluginManager.add, which runs NodeWatchResources on the instance's connection and hands the
// stream to the DRA manager (Manager.HandleWatchResourcesStream). kdp starts one only for an
// instance that advertised "v1.DRAResourceHealth" or "v1alpha1.DRAResourceHealth" in
// PluginInfo.supported_versions (v1 preferred), as the newest kubelet keys off the advertised
// name. Both versions carry identical messages; they reach the handler as one C++ struct.
//
// A background thread calls NodeWatchResources, feeds every message to the handler, and, when the
// call ends for any reason, tells the handler (the kubelet clears the driver's health then) and
// calls again after `retry_period` (wait.UntilWithContext, 5 s). An UNIMPLEMENTED answer ends the
// loop for good (newest kubelet: TestUnimplementedHealthStreamIsNotRetried). The watch has no
// deadline: it is meant to stay open while the instance is registered; Stop() cancels it
// (ClientContext::TryCancel) and returns once the thread has ended.
//
// Thread-safety: thread-safe. Handler calls come from the stream's own thread, one at a time,
// never under a kdp lock; the handler must outlive the stream (or its Stop()).
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_HEALTH_STREAM_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_HEALTH_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kdp::manager::dra {

class DraDriverObserver;

// PluginInfo.supported_versions entries of the health service (gRPC "<package>.<service>").
inline constexpr char kDraHealthV1Service[] = "v1.DRAResourceHealth";
inline constexpr char kDraHealthV1alpha1Service[] = "v1alpha1.DRAResourceHealth";

// The kubelet's wait between two NodeWatchResources attempts.
inline constexpr int kHealthStreamRetrySeconds = 5;

// The health service to use: kDraHealthV1Service when listed, else kDraHealthV1alpha1Service when
// listed, else "" (the instance has none; not an error).
std::string ChooseHealthService(const std::vector<std::string>& supported_services);

// dra-health HealthStatus (the same numbers in v1alpha1 and v1).
enum class WireHealthStatus { kUnknown = 0, kHealthy = 1, kUnhealthy = 2 };

// One DeviceHealth of a NodeWatchResourcesResponse, as the driver sent it.
struct WatchedDeviceHealth {
  std::string pool_name = {};    // device.pool_name
  std::string device_name = {};  // device.device_name
  WireHealthStatus health = WireHealthStatus::kUnknown;
  int64_t last_updated_time = 0;             // unix seconds (the kubelet stamps its own time)
  int64_t health_check_timeout_seconds = 0;  // 1.35+; <= 0: the kubelet's default
  std::string message = {};                  // 1.36+; may be long (the kubelet truncates)

  friend bool operator==(const WatchedDeviceHealth&, const WatchedDeviceHealth&) = default;
};

// The kubelet's StreamHandler, split into its two events. Implementations must be thread-safe
// (streams of several instances call concurrently).
class HealthStreamHandler {
 public:
  virtual ~HealthStreamHandler() = default;
  // One message of `driver`'s stream: the driver's complete device list (a device not listed is
  // no longer reported).
  virtual void HandleHealthUpdate(const std::string& driver,
                                  const std::vector<WatchedDeviceHealth>& devices) = 0;
  // A NodeWatchResources call of `driver` ended (error, end of stream, or cancelled by a
  // deregistration); not called for a Stop(/*report_end=*/false).
  virtual void HandleHealthStreamEnd(const std::string& driver) = 0;
};

struct HealthStreamOptions {
  std::string driver_name = {};  // the registered driver name, passed to the handler
  std::string endpoint = {};     // for logs only
  // kDraHealthV1Service or kDraHealthV1alpha1Service (anything else: the thread logs an error
  // and ends without a call).
  std::string service = {};
  // The instance's channel (shared with its DraPluginClient). Required.
  std::shared_ptr<grpc::Channel> channel = nullptr;
  // Borrowed; must outlive the stream. Required.
  HealthStreamHandler* handler = nullptr;
  // Wait after a call ended before the next one (the kubelet's 5 s).
  absl::Duration retry_period = absl::Seconds(kHealthStreamRetrySeconds);
  // Told of every message and of each call's end (driver_observer.h); nullptr: nobody. Borrowed;
  // must outlive the stream.
  DraDriverObserver* observer = nullptr;
};

class HealthStream {
 public:
  // Starts the thread; the first call is made at once. REQUIRES: channel and handler set.
  static std::unique_ptr<HealthStream> Start(HealthStreamOptions options);
  ~HealthStream();  // Stop(/*report_end=*/false)

  HealthStream(const HealthStream&) = delete;
  HealthStream& operator=(const HealthStream&) = delete;

  // Cancels the call in flight (or the wait for the next one) and joins the thread. With
  // `report_end` (a deregistration) a call cancelled here is reported to the handler, as the
  // kubelet clears the driver's health; without (kdp-manager shutting down) it is not, so the
  // persisted health survives a restart. Idempotent; the first call's `report_end` counts.
  void Stop(bool report_end = true) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& service() const { return options_.service; }
  // NodeWatchResources calls made so far.
  int attempts() const ABSL_LOCKS_EXCLUDED(mu_);
  // The loop ended by itself (UNIMPLEMENTED, or an unknown service); Stop() is still needed.
  bool gave_up() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit HealthStream(HealthStreamOptions options) : options_(std::move(options)) {}
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  template <typename Pb>
  grpc::Status Watch(grpc::ClientContext* context);

  const HealthStreamOptions options_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool report_end_ ABSL_GUARDED_BY(mu_) = true;
  bool gave_up_ ABSL_GUARDED_BY(mu_) = false;
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  // The call in flight (on the thread's stack), for TryCancel; null between calls.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_HEALTH_STREAM_H_
