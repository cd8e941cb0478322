#include "manager/src/dra/plugin/dra_plugin.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/resource_name.h"
#include "common/unix_socket.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "manager/src/dra/plugin/conversion.h"
#include "manager/src/dra/plugin/driver_observer.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/pluginmanager/grpc_error.h"

namespace kdp::manager::dra {
namespace {

// As DialUnixSocket (a private subchannel pool: a driver instance that replaced another at the
// same path is never served by the old process's connection; no proxy), with reconnect backoff
// capped at 5 s instead of gRPC's 120 s, so a restarted driver is reachable again promptly.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // The kubelet's :authority for its local sockets.
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  return grpc::CreateCustomChannel(UnixTarget(endpoint), grpc::InsecureChannelCredentials(), args);
}

absl::Status UnsupportedService(const std::string& service) {
  return absl::InternalError(
      absl::StrCat("internal error: unsupported chosen service: ", GoQuote(service)));
}

}  // namespace

DraPluginClient::DraPluginClient(std::string driver_name, std::string endpoint, std::string service,
                                 absl::Duration call_timeout,
                                 metrics::HistogramFamily* grpc_durations,
                                 DraDriverObserver* observer)
    : driver_name_(std::move(driver_name)),
      endpoint_(std::move(endpoint)),
      service_(std::move(service)),
      call_timeout_(call_timeout),
      registered_at_(absl::Now()),
      channel_(NewChannel(endpoint_)),
      grpc_durations_(grpc_durations),
      observer_(observer) {
  // grpc.NewClient + conn.Connect(): find out early whether the plugin is really there.
  channel_->GetState(/*try_to_connect=*/true);
}

bool DraPluginClient::Connected() const {
  return channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
}

void DraPluginClient::Observe(const char* method, const grpc::Status& status,
                              const metrics::ScopedTimer& timer) {
  if (grpc_durations_ == nullptr) return;
  // The full gRPC path of the service actually called, as the kubelet's interceptor sees it.
  const char* service = service_ == kDraV1beta1Service
                            ? drapbv1beta1::DRAPlugin::service_full_name()
                            : drapb::DRAPlugin::service_full_name();
  grpc_durations_
      ->WithLabels({driver_name_, absl::StrCat("/", service, "/", method),
                    GoGrpcCodeName(status.error_code())})
      ->Observe(timer.ElapsedSeconds());
}

void DraPluginClient::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + call_timeout_));
}

absl::StatusOr<drapb::NodePrepareResourcesResponse> DraPluginClient::NodePrepareResources(
    const drapb::NodePrepareResourcesRequest& request) {
  KDP_LOG_DEBUG("Calling NodePrepareResources rpc", "driverName", driver_name_, "endpoint",
                endpoint_, "claims", request.claims_size());
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status status;
  drapb::NodePrepareResourcesResponse response;
  const metrics::ScopedTimer timer(nullptr);
  if (service_ == kDraV1Service) {
    status =
        drapb::DRAPlugin::NewStub(channel_)->NodePrepareResources(&context, request, &response);
  } else if (service_ == kDraV1beta1Service) {
    drapbv1beta1::NodePrepareResourcesResponse old;
    status = drapbv1beta1::DRAPlugin::NewStub(channel_)->NodePrepareResources(
        &context, ToV1Beta1(request), &old);
    if (status.ok()) response = ToV1(old);
  } else {
    return UnsupportedService(service_);
  }
  Observe("NodePrepareResources", status, timer);
  absl::StatusOr<drapb::NodePrepareResourcesResponse> result =
      status.ok() ? absl::StatusOr<drapb::NodePrepareResourcesResponse>(std::move(response))
                  : FromGrpcStatusGoStyle(status);
  if (observer_ != nullptr) observer_->Prepared(driver_name_, endpoint_, request, result);
  return result;
}

absl::StatusOr<drapb::NodeUnprepareResourcesResponse> DraPluginClient::NodeUnprepareResources(
    const drapb::NodeUnprepareResourcesRequest& request) {
  KDP_LOG_DEBUG("Calling NodeUnprepareResources rpc", "driverName", driver_name_, "endpoint",
                endpoint_, "claims", request.claims_size());
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status status;
  drapb::NodeUnprepareResourcesResponse response;
  const metrics::ScopedTimer timer(nullptr);
  if (service_ == kDraV1Service) {
    status =
        drapb::DRAPlugin::NewStub(channel_)->NodeUnprepareResources(&context, request, &response);
  } else if (service_ == kDraV1beta1Service) {
    drapbv1beta1::NodeUnprepareResourcesResponse old;
    status = drapbv1beta1::DRAPlugin::NewStub(channel_)->NodeUnprepareResources(
        &context, ToV1Beta1(request), &old);
    if (status.ok()) response = ToV1(old);
  } else {
    return UnsupportedService(service_);
  }
  Observe("NodeUnprepareResources", status, timer);
  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> result =
      status.ok() ? absl::StatusOr<drapb::NodeUnprepareResourcesResponse>(std::move(response))
                  : FromGrpcStatusGoStyle(status);
  if (observer_ != nullptr) observer_->Unprepared(driver_name_, endpoint_, request, result);
  return result;
}

}  // namespace kdp::manager::dra
