// DraPluginClient is kdp-manager's client of one registered DRA driver instance (the kubelet's
// DRAPlugin in pkg/kubelet/cm/dra/plugin): one gRPC channel to "unix:<endpoint>", created at
// registration and asked to connect right away, and the two node calls in the service version
// chosen at registration. Calls carry the configured deadline; v1beta1 instances get the v1
// request converted down and their answer converted up; RPC errors read like grpc-go's
// ("rpc error: code = DeadlineExceeded desc = context deadline exceeded").
//
// Thread-safe. Owned by DraPluginManager; a shared_ptr handed out by Get() keeps working after
// the instance deregisters (its calls then fail once the plugin is gone).
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "manager/src/dra/plugin/plugin.h"

namespace kdp::manager::dra {

class DraDriverObserver;

// PluginInfo.supported_versions entries the kubelet (1.34) can use, in the kubelet's order
// (servicesSupportedByKubelet).
inline constexpr char kDraV1Service[] = "v1.DRAPlugin";
inline constexpr char kDraV1beta1Service[] = "v1beta1.DRAPlugin";

class DraPluginClient final : public DraPlugin {
 public:
  // `service` is kDraV1Service or kDraV1beta1Service (anything else fails every call with
  // INTERNAL "internal error: unsupported chosen service: \"<service>\"", as the kubelet does).
  // `grpc_durations` (borrowed, may be null): dra_grpc_operations_duration_seconds{driver_name,
  // method_name, grpc_status_code}, observed for every call as the kubelet's interceptor does.
  // `observer` (borrowed, may be null) is told of every call (driver_observer.h).
  DraPluginClient(std::string driver_name, std::string endpoint, std::string service,
                  absl::Duration call_timeout, metrics::HistogramFamily* grpc_durations = nullptr,
                  DraDriverObserver* observer = nullptr);

  DraPluginClient(const DraPluginClient&) = delete;
  DraPluginClient& operator=(const DraPluginClient&) = delete;

  const std::string& driver_name() const override { return driver_name_; }
  const std::string& endpoint() const { return endpoint_; }
  absl::Duration call_timeout() const override { return call_timeout_; }
  std::string socket() const override { return endpoint_; }
  const std::string& service() const { return service_; }
  absl::Time registered_at() const { return registered_at_; }
  // The instance's channel; its health stream (health_stream.h) uses the same connection.
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // The channel is READY. Asks an idle channel to reconnect (the kubelet calls Connect() when a
  // connection ends, so that a restarted plugin is noticed).
  bool Connected() const;

  absl::StatusOr<drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const drapb::NodePrepareResourcesRequest& request) override;
  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const drapb::NodeUnprepareResourcesRequest& request) override;

 private:
  void SetDeadline(grpc::ClientContext* context) const;
  void Observe(const char* method, const grpc::Status& status, const metrics::ScopedTimer& timer);

  const std::string driver_name_;
  const std::string endpoint_;
  const std::string service_;
  const absl::Duration call_timeout_;
  const absl::Time registered_at_;
  const std::shared_ptr<grpc::Channel> channel_;
  metrics::HistogramFamily* const grpc_durations_;
  DraDriverObserver* const observer_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_DRA_PLUGIN_H_
