// The plugin-watcher registration service of a DRA driver (pluginregistration.Registration on
// <kubelet_root>/plugins_registry/<driver>[-<suffix>]-reg.sock), as the Go helper's
// registrationServer: GetInfo answers {type "DRAPlugin", name <driver>, endpoint <absolute DRA
// socket path>, supported_versions ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
// "v1alpha1.DRAResourceHealth"]} (the health names only when the health streams are served). A
// 1.34+ kubelet walks the list in order and picks the first DRAPlugin entry it supports, so the
// preferred version comes first; it only checks the health names for presence (newest kubelets
// open the health stream only for a driver that lists one). NotifyRegistrationStatus records
// the status and, as upstream, answers an error ("failed registration process: <error>") when
// plugin_registered is false. Private to the SDK.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DRA_REGISTRATION_H_
#define KDP_SDK_SRC_DRA_REGISTRATION_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace kdp::internal {

// What the kubelet said about the registration so far.
struct DraRegistrationRecord {
  bool registered = false;  // the last status: plugin_registered
  int64_t accepted = 0;     // statuses with plugin_registered=true
  int64_t rejected = 0;     // statuses with plugin_registered=false
  std::string error = {};   // the last failed status' error; empty after a success
};

class DraRegistrationService final : public pluginregistration::Registration::Service {
 public:
  // `on_registered` (may be empty) runs after each plugin_registered=true, on the gRPC thread: a
  // kubelet that (re-)registers the driver has deleted the node's ResourceSlices when it started
  // (wipeResourceSlices in pkg/kubelet/cm/dra/plugin), so the runner publishes them again.
  // `advertise_health`: list the DRAResourceHealth services too.
  DraRegistrationService(std::string driver, std::string dra_endpoint, bool advertise_health,
                         std::function<void()> on_registered = {})
      : driver_(std::move(driver)),
        dra_endpoint_(std::move(dra_endpoint)),
        advertise_health_(advertise_health),
        on_registered_(std::move(on_registered)) {}

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override ABSL_LOCKS_EXCLUDED(mu_);

  // The last status the kubelet reported: true after plugin_registered=true, false before any
  // report and after a failure.
  bool registered() const ABSL_LOCKS_EXCLUDED(mu_);
  bool WaitForRegistration(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  DraRegistrationRecord record() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string driver_;
  const std::string dra_endpoint_;
  const bool advertise_health_;
  const std::function<void()> on_registered_;
  mutable absl::Mutex mu_;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  int64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rejected_ ABSL_GUARDED_BY(mu_) = 0;
  std::string error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_REGISTRATION_H_
