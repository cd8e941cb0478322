// The gRPC half of GoStyleDriver (go_style_driver.h): the services a DRA driver built on the Go
// kubelet-plugin helper serves, as thin adapters onto a handler the driver implements.
//   - pluginregistration.Registration on <kubelet root>/plugins_registry/<driver>-reg.sock:
//     GetInfo answers type "DRAPlugin", the driver's name, its DRA socket and the supported
//     versions (helper v0.36/v0.37: "v1.DRAPlugin", "v1beta1.DRAPlugin",
//     "v1alpha1.DRAResourceHealth"; v0.32/v0.33: "v1beta1.DRAPlugin"); every
//     NotifyRegistrationStatus is kept.
//   - k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and .v1beta1.DRAPlugin, and
//     v1alpha1.DRAResourceHealth, on <kubelet root>/plugins/<driver>/dra.sock (the helper serves
//     the health service on the DRA socket).
//
// Thread-safety: the services are called concurrently by gRPC; the handler must be thread-safe.
#ifndef KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_GRPC_H_
#define KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_GRPC_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace kdp::testing {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace healthv1alpha1 = ::v1alpha1;

// One device a claim was prepared with.
struct GoPreparedDevice {
  std::string request = {};
  std::string pool = {};
  std::string device = {};
  std::string cdi_id = {};
};

// What the services call.
class GoDriverHandler {
 public:
  virtual ~GoDriverHandler() = default;
  // The devices prepared for one claim, or the per-claim error text. `api` is "v1" or "v1beta1"
  // (the kubelet's service), used only for the record.
  virtual absl::StatusOr<std::vector<GoPreparedDevice>> PrepareClaim(const std::string& api,
                                                                     const std::string& namespace_,
                                                                     const std::string& name,
                                                                     const std::string& uid) = 0;
  virtual void UnprepareClaim(const std::string& api, const std::string& uid) = 0;
  // Streams health until the stream is cancelled or the driver stops.
  virtual grpc::Status WatchHealth(
      grpc::ServerContext* context,
      grpc::ServerWriter<healthv1alpha1::NodeWatchResourcesResponse>* writer) = 0;
};

// The message types of one version of the DRA service; `kShareId`: v1's Device has `share_id`,
// which the v0.36/v0.37 helper sets (empty for a device that is not shared).
struct DraV1Api {
  using Service = drav1::DRAPlugin::Service;
  using PrepareRequest = drav1::NodePrepareResourcesRequest;
  using PrepareResponse = drav1::NodePrepareResourcesResponse;
  using UnprepareRequest = drav1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = drav1::NodeUnprepareResourcesResponse;
  static constexpr bool kShareId = true;
};
struct DraV1beta1Api {
  using Service = drav1beta1::DRAPlugin::Service;
  using PrepareRequest = drav1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = drav1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = drav1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = drav1beta1::NodeUnprepareResourcesResponse;
  static constexpr bool kShareId = false;
};

template <typename Api>
class GoDraService final : public Api::Service {
 public:
  GoDraService(GoDriverHandler* handler, std::string api)
      : handler_(handler), api_(std::move(api)) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const typename Api::PrepareRequest* request,
                                    typename Api::PrepareResponse* response) override {
    for (const auto& claim : request->claims()) {
      auto& out = (*response->mutable_claims())[claim.uid()];
      absl::StatusOr<std::vector<GoPreparedDevice>> devices =
          handler_->PrepareClaim(api_, claim.namespace_(), claim.name(), claim.uid());
      if (!devices.ok()) {
        out.set_error(std::string(devices.status().message()));
        continue;
      }
      for (const GoPreparedDevice& device : *devices) {
        auto* d = out.add_devices();
        d->add_request_names(device.request);
        d->set_pool_name(device.pool);
        d->set_device_name(device.device);
        d->add_cdi_device_ids(device.cdi_id);
        if constexpr (Api::kShareId) d->set_share_id("");
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const typename Api::UnprepareRequest* request,
                                      typename Api::UnprepareResponse* response) override {
    for (const auto& claim : request->claims()) {
      handler_->UnprepareClaim(api_, claim.uid());
      (*response->mutable_claims())[claim.uid()];  // no error
    }
    return grpc::Status::OK;
  }

 private:
  GoDriverHandler* const handler_;
  const std::string api_;
};

class GoHealthService final : public healthv1alpha1::DRAResourceHealth::Service {
 public:
  explicit GoHealthService(GoDriverHandler* handler) : handler_(handler) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const healthv1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<healthv1alpha1::NodeWatchResourcesResponse>* writer) override {
    return handler_->WatchHealth(context, writer);
  }

 private:
  GoDriverHandler* const handler_;
};

class GoRegistrationService final : public pluginregistration::Registration::Service {
 public:
  explicit GoRegistrationService(pluginregistration::PluginInfo info) : info_(std::move(info)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) ABSL_LOCKS_EXCLUDED(mu_) override {
    *response = info_;
    absl::MutexLock lock(&mu_);
    ++get_info_calls_;
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*)
      ABSL_LOCKS_EXCLUDED(mu_) override {
    absl::MutexLock lock(&mu_);
    statuses_.push_back(*status);
    return grpc::Status::OK;
  }

  std::vector<pluginregistration::RegistrationStatus> statuses() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }
  int get_info_calls() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return get_info_calls_;
  }

 private:
  const pluginregistration::PluginInfo info_;
  mutable absl::Mutex mu_;
  std::vector<pluginregistration::RegistrationStatus> statuses_ ABSL_GUARDED_BY(mu_);
  int get_info_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_GRPC_H_
