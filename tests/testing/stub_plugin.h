// StubPlugin is the integration tests' test double for a third-party device plugin, written
// directly on the wire API (no kdp SDK), like the kubelet's plugin/v1beta1/stub.go: it serves
// v1beta1.DevicePlugin on any socket path, streams whatever device list the test sets (duplicates
// and repeats included), and registers with a raw Register call.
//
// Thread-safe.
#ifndef KDP_TESTS_TESTING_STUB_PLUGIN_H_
#define KDP_TESTS_TESTING_STUB_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace kdp::testing {

// A device for a stub list: ID, health string as sent, NUMA nodes.
v1beta1::Device MakeDevice(const std::string& id, const std::string& health = "Healthy",
                           std::vector<int64_t> numa = {});

class StubPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  explicit StubPlugin(std::string socket_path, v1beta1::DevicePluginOptions options = {});
  ~StubPlugin() override;

  [[nodiscard]] absl::Status Start();
  void Stop();

  // Sends `devices` on every open ListAndWatch stream (and as the first message of new ones).
  void SetDevices(std::vector<v1beta1::Device> devices) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the current list again, unchanged.
  void Resend() ABSL_LOCKS_EXCLUDED(mu_);

  // Register on `kubelet_socket` with the given fields.
  static absl::Status Register(const std::string& kubelet_socket, const std::string& version,
                               const std::string& endpoint, const std::string& resource_name);

  // The Allocate answer's env gets STUB_DEVICES=<ids joined by ','>.
  int allocate_calls() const { return allocate_calls_.load(); }
  int preferred_calls() const { return preferred_calls_.load(); }
  // Makes every later PreStartContainer call fail with `status`.
  void FailPreStart(grpc::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // Device IDs of every PreStartContainer call so far.
  std::vector<std::vector<std::string>> pre_start_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  int messages_sent() const ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override;

 private:
  const std::string socket_path_;
  const v1beta1::DevicePluginOptions options_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> allocate_calls_{0};
  std::atomic<int> preferred_calls_{0};

  mutable absl::Mutex mu_;
  std::vector<v1beta1::Device> devices_ ABSL_GUARDED_BY(mu_);
  int generation_ ABSL_GUARDED_BY(mu_) = 0;
  int messages_sent_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<std::string>> pre_start_calls_ ABSL_GUARDED_BY(mu_);
  grpc::Status pre_start_status_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_STUB_PLUGIN_H_
