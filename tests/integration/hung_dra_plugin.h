// HungDraPlugin: a v1 DRA driver whose NodePrepareResources holds every call until the test calls
// Answer() (or the caller cancels it, whose delay it records), for the tests that show the
// manager's deadline firing and nothing staying prepared (dra_e2e_test, fault/hung_peers_test).
// NodeUnprepareResources answers at once.
//
// Thread-safe: the handlers run on gRPC threads; Answer() is called from the test's thread.
#ifndef KDP_TESTS_INTEGRATION_HUNG_DRA_PLUGIN_H_
#define KDP_TESTS_INTEGRATION_HUNG_DRA_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dra/v1/api.grpc.pb.h"

namespace kdp::testing {

class HungDraPlugin final : public ::k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin::Service {
 public:
  // What a prepare answers once released: device dev0 of `pool` with this CDI ID.
  static constexpr char kCdiId[] = "hung.example.com/dev=dev0";

  explicit HungDraPlugin(std::string pool) : pool_(std::move(pool)) {}

  grpc::Status NodePrepareResources(
      grpc::ServerContext* context,
      const ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest* request,
      ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse* response) override {
    const absl::Time arrived = absl::Now();
    ++prepare_calls_;
    while (!answer_.WaitForNotificationWithTimeout(absl::Milliseconds(5))) {
      if (context->IsCancelled()) {
        absl::MutexLock lock(&mu_);
        cancelled_after_.push_back(absl::Now() - arrived);
        return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
      }
    }
    for (const auto& claim : request->claims()) {
      auto* device = (*response->mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name(pool_);
      device->set_device_name("dev0");
      device->add_cdi_device_ids(kCdiId);
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*,
      const ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest* request,
      ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse* response) override {
    ++unprepare_calls_;
    for (const auto& claim : request->claims()) (*response->mutable_claims())[claim.uid()];
    return grpc::Status::OK;
  }

  // Releases every held prepare, and answers later ones at once.
  void Answer() {
    if (!answer_.HasBeenNotified()) answer_.Notify();
  }
  int prepare_calls() const { return prepare_calls_.load(); }
  int unprepare_calls() const { return unprepare_calls_.load(); }
  // For each prepare the caller cancelled: how long after its arrival.
  std::vector<absl::Duration> cancelled_after() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return cancelled_after_;
  }

 private:
  const std::string pool_;
  absl::Notification answer_;
  std::atomic<int> prepare_calls_{0};
  std::atomic<int> unprepare_calls_{0};
  mutable absl::Mutex mu_;
  std::vector<absl::Duration> cancelled_after_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_HUNG_DRA_PLUGIN_H_
