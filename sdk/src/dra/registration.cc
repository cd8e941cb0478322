#include "sdk/src/dra/registration.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "sdk/src/dra/health_service.h"

namespace kdp::internal {

grpc::Status DraRegistrationService::GetInfo(grpc::ServerContext*,
                                             const pluginregistration::InfoRequest*,
                                             pluginregistration::PluginInfo* response) {
  response->set_type("DRAPlugin");
  response->set_name(driver_);
  response->set_endpoint(dra_endpoint_);
  response->add_supported_versions("v1.DRAPlugin");
  response->add_supported_versions("v1beta1.DRAPlugin");
  if (advertise_health_) {
    // Newest first, as the Go helper lists what it serves; the kubelet only checks presence.
    response->add_supported_versions(kDraHealthServiceV1);
    response->add_supported_versions(kDraHealthServiceV1alpha1);
  }
  return grpc::Status::OK;
}

grpc::Status DraRegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse*) {
  {
    absl::MutexLock lock(&mu_);
    registered_ = request->plugin_registered();
    if (registered_) {
      ++accepted_;
      error_.clear();
    } else {
      ++rejected_;
      error_ = request->error().empty() ? "(no error given)" : request->error();
    }
  }
  if (!request->plugin_registered()) {
    KDP_LOG_ERROR("kubelet rejected the DRA driver's registration", "driver", driver_, "err",
                  request->error());
    // The Go helper returns fmt.Errorf("failed registration process: %+v", status.Error), which
    // gRPC sends as UNKNOWN.
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        absl::StrCat("failed registration process: ", request->error()));
  }
  KDP_LOG_INFO("Registered with the kubelet", "driver", driver_, "endpoint", dra_endpoint_);
  if (on_registered_) on_registered_();
  return grpc::Status::OK;
}

bool DraRegistrationService::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

DraRegistrationRecord DraRegistrationService::record() const {
  absl::MutexLock lock(&mu_);
  return {.registered = registered_, .accepted = accepted_, .rejected = rejected_, .error = error_};
}

bool DraRegistrationService::WaitForRegistration(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&registered_), timeout);
  return registered_;
}

}  // namespace kdp::internal
