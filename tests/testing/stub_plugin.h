// StubPlugin is the tests' test double for a third-party device plugin, written directly on the
// wire API (no kdp SDK), like the kubelet's plugin/v1beta1/stub.go: it serves v1beta1.DevicePlugin
// on any socket path, streams whatever device list the test sets (duplicates and repeats
// included), and registers with a raw Register call. Its unary answers can be replaced, and any
// unary call can be held in flight until the test releases it, so a test can stop the manager in
// the middle of an Allocate or GetPreferredAllocation RPC.
//
// Thread-safe. Handlers run on gRPC threads, without the stub's lock held.
#ifndef KDP_TESTS_TESTING_STUB_PLUGIN_H_
#define KDP_TESTS_TESTING_STUB_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
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
  // The unary calls Hold() and Release() act on.
  enum class Call { kAllocate, kGetPreferredAllocation, kPreStartContainer };

  // Replaces the default Allocate answer (one container response per container request, with
  // env STUB_DEVICES=<ids joined by ','>). A non-OK status fails the call with it.
  using AllocateHandler =
      std::function<grpc::Status(const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*)>;
  // Replaces the default GetPreferredAllocation answer (must_include, then the last IDs offered
  // up to allocation_size: distinguishable from the manager's own natural-order fill).
  using PreferredAllocationHandler = std::function<grpc::Status(
      const v1beta1::PreferredAllocationRequest&, v1beta1::PreferredAllocationResponse*)>;

  explicit StubPlugin(std::string socket_path, v1beta1::DevicePluginOptions options = {});
  ~StubPlugin() override;

  StubPlugin(const StubPlugin&) = delete;
  StubPlugin& operator=(const StubPlugin&) = delete;

  // Serves on the socket path (a stale socket file there is replaced). The server's error
  // otherwise.
  [[nodiscard]] absl::Status Start();
  // Ends every stream and held call and shuts the server down. Idempotent; the stub cannot be
  // started again.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& socket_path() const { return socket_path_; }

  // Sends `devices` on every open ListAndWatch stream (and as the first message of new ones).
  void SetDevices(std::vector<v1beta1::Device> devices) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the current list again, unchanged.
  void Resend() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends every ListAndWatch stream open now (status OK), as a plugin that returns from
  // ListAndWatch does; the server keeps serving and later streams work as usual.
  void EndStreams() ABSL_LOCKS_EXCLUDED(mu_);

  // Register on `kubelet_socket` with the given fields.
  static absl::Status Register(const std::string& kubelet_socket, const std::string& version,
                               const std::string& endpoint, const std::string& resource_name);

  void SetAllocateHandler(AllocateHandler handler) ABSL_LOCKS_EXCLUDED(mu_);
  void SetPreferredAllocationHandler(PreferredAllocationHandler handler) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes every later PreStartContainer call fail with `status` (OK: succeed again).
  void FailPreStart(grpc::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  // Every later call of `call` is counted and recorded, then waits until Release(call), Stop() or
  // its cancellation by the client (it then fails with CANCELLED and is not answered).
  void Hold(Call call) ABSL_LOCKS_EXCLUDED(mu_);
  // Lets the held calls of `call` (and later ones) go on.
  void Release(Call call) ABSL_LOCKS_EXCLUDED(mu_);
  // Calls of `call` waiting in Hold now.
  int waiting(Call call) const ABSL_LOCKS_EXCLUDED(mu_);

  // Calls received so far (held ones included).
  int allocate_calls() const { return allocate_calls_.load(); }
  int preferred_calls() const { return preferred_calls_.load(); }
  std::vector<v1beta1::AllocateRequest> allocate_requests() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests() const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Device IDs of every PreStartContainer call so far.
  std::vector<std::vector<std::string>> pre_start_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  // ListAndWatch messages written so far, over every stream.
  int messages_sent() const ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse*) override;

 private:
  // Waits while `call` is held; false when the call must end instead (stopped or cancelled).
  bool PassHold(Call call, grpc::ServerContext* context) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string socket_path_;
  const v1beta1::DevicePluginOptions options_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> allocate_calls_{0};
  std::atomic<int> preferred_calls_{0};

  mutable absl::Mutex mu_;
  std::vector<v1beta1::Device> devices_ ABSL_GUARDED_BY(mu_);
  int generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Streams started before the last EndStreams() end.
  int stream_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int messages_sent_ ABSL_GUARDED_BY(mu_) = 0;
  AllocateHandler allocate_handler_ ABSL_GUARDED_BY(mu_);
  PreferredAllocationHandler preferred_handler_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::AllocateRequest> allocate_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<std::string>> pre_start_calls_ ABSL_GUARDED_BY(mu_);
  grpc::Status pre_start_status_ ABSL_GUARDED_BY(mu_);
  bool held_[3] ABSL_GUARDED_BY(mu_) = {false, false, false};
  int waiting_[3] ABSL_GUARDED_BY(mu_) = {0, 0, 0};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_STUB_PLUGIN_H_
