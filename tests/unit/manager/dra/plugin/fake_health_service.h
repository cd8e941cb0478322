// Test doubles for the dra-health service: FakeHealthService<HealthV1 or HealthV1alpha1> is a DRA
// driver's DRAResourceHealth that streams whatever the test Send()s to every open
// NodeWatchResources call (a later call first gets everything sent before) and ends the open calls
// with a chosen status on EndCalls(); RecordingHandler records what a HealthStream delivers.
// ServeHealth serves any services on a unix socket.
//
// Thread-safety: thread-safe.
#ifndef KDP_TESTS_UNIT_MANAGER_DRA_PLUGIN_FAKE_HEALTH_SERVICE_H_
#define KDP_TESTS_UNIT_MANAGER_DRA_PLUGIN_FAKE_HEALTH_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "manager/src/dra/plugin/health_stream.h"

namespace kdp::testing {

struct HealthV1 {
  using DRAResourceHealth = ::v1::DRAResourceHealth;
  using NodeWatchResourcesRequest = ::v1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = ::v1::NodeWatchResourcesResponse;
};
struct HealthV1alpha1 {
  using DRAResourceHealth = ::v1alpha1::DRAResourceHealth;
  using NodeWatchResourcesRequest = ::v1alpha1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = ::v1alpha1::NodeWatchResourcesResponse;
};

template <typename Pb>
class FakeHealthService final : public Pb::DRAResourceHealth::Service {
 public:
  using Response = typename Pb::NodeWatchResourcesResponse;

  // Adds one device to a response: `health` 0 UNKNOWN, 1 HEALTHY, 2 UNHEALTHY.
  static void AddDevice(Response* response, const std::string& pool, const std::string& device,
                        int health, int64_t timeout_seconds = 0, const std::string& message = "",
                        int64_t last_updated = 0) {
    auto* d = response->add_devices();
    d->mutable_device()->set_pool_name(pool);
    d->mutable_device()->set_device_name(device);
    d->set_health(static_cast<decltype(d->health())>(health));
    d->set_health_check_timeout_seconds(timeout_seconds);
    d->set_message(message);
    d->set_last_updated_time(last_updated);
  }

  void Send(Response response) {
    absl::MutexLock lock(&mu_);
    sent_.push_back(std::move(response));
    cv_.SignalAll();
  }
  // Ends every open call with `status` (later calls stay open).
  void EndCalls(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    ++end_generation_;
    end_status_ = std::move(status);
    cv_.SignalAll();
  }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  int open_calls() const {
    absl::MutexLock lock(&mu_);
    return open_;
  }

  grpc::Status NodeWatchResources(grpc::ServerContext* context,
                                  const typename Pb::NodeWatchResourcesRequest*,
                                  grpc::ServerWriter<Response>* writer) override {
    size_t next = 0;
    int generation = 0;
    {
      absl::MutexLock lock(&mu_);
      ++calls_;
      ++open_;
      generation = end_generation_;
    }
    while (true) {
      std::vector<Response> out;
      {
        absl::MutexLock lock(&mu_);
        if (next == sent_.size() && end_generation_ == generation) {
          // Bounded wait: the sync API offers no notification of a cancelled call.
          cv_.WaitWithTimeout(&mu_, absl::Milliseconds(10));
        }
        if (end_generation_ != generation) {
          --open_;
          return end_status_;
        }
        while (next < sent_.size()) out.push_back(sent_[next++]);
      }
      bool ok = !context->IsCancelled();
      for (const Response& response : out) ok = ok && writer->Write(response);
      if (!ok) {
        absl::MutexLock lock(&mu_);
        --open_;
        return grpc::Status::CANCELLED;
      }
    }
  }

 private:
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<Response> sent_ ABSL_GUARDED_BY(mu_);
  int end_generation_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

// Serves `services` on `path` (nullptr when gRPC cannot listen there).
inline std::unique_ptr<grpc::Server> ServeHealth(const std::string& path,
                                                 std::initializer_list<grpc::Service*> services) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* service : services) builder.RegisterService(service);
  return builder.BuildAndStart();
}

class RecordingHandler final : public manager::dra::HealthStreamHandler {
 public:
  struct Update {
    std::string driver;
    std::vector<manager::dra::WatchedDeviceHealth> devices;
  };

  void HandleHealthUpdate(const std::string& driver,
                          const std::vector<manager::dra::WatchedDeviceHealth>& devices) override {
    absl::MutexLock lock(&mu_);
    updates_.push_back({driver, devices});
  }
  void HandleHealthStreamEnd(const std::string& driver) override {
    absl::MutexLock lock(&mu_);
    ends_.push_back(driver);
  }
  std::vector<Update> updates() const {
    absl::MutexLock lock(&mu_);
    return updates_;
  }
  std::vector<std::string> ends() const {
    absl::MutexLock lock(&mu_);
    return ends_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<Update> updates_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> ends_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_DRA_PLUGIN_FAKE_HEALTH_SERVICE_H_
