// RegistrationServer serves v1beta1.Registration on <device-plugins>/kubelet.sock, as the
// kubelet's plugin/v1beta1/server.go does: it removes stale sockets from the directory, listens at
// once, validates each Register request with the kubelet's rules and error texts, and hands a
// valid one to the RegistrationHandler, which dials the plugin back before the answer is sent.
//
// Thread-safe. Stop() may be called more than once or without Start().
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_REGISTRATION_SERVER_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_REGISTRATION_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "manager/src/devicemanager/plugin_observer.h"

namespace kdp::manager {

// The narrow interface between transport and state (the kubelet's ClientHandler).
class RegistrationHandler {
 public:
  virtual ~RegistrationHandler() = default;
  // Connects to the plugin serving `resource_name` on `socket_path` (already validated) and starts
  // consuming its devices. Errors are returned to the registering plugin.
  virtual absl::Status RegisterPlugin(const std::string& resource_name,
                                      const std::string& socket_path) = 0;
};

// Validates a RegisterRequest: version, resource name, endpoint. INVALID_ARGUMENT with the
// kubelet's text; for the endpoint, kdp's own rule (the kubelet joins it unchecked): one file
// name in `plugins_dir` (common/path_safety.h ValidateFileName), so "../x.sock", "/abs.sock",
// "a/b", "", "." and ".." are refused. On success returns OK and sets `*socket_path` to
// dir/endpoint.
absl::Status ValidateRegisterRequest(const v1beta1::RegisterRequest& request,
                                     const std::string& plugins_dir, std::string* socket_path);

class RegistrationServer final : public v1beta1::Registration::Service {
 public:
  // `registrations` (borrowed, may be null): kubelet_device_plugin_registration_total, counted on
  // every Register call before anything else, as the kubelet counts it.
  // `observer` (borrowed, may be null) is told of every Register call and its answer.
  RegistrationServer(std::string plugins_dir, RegistrationHandler* handler,
                     metrics::CounterFamily* registrations = nullptr,
                     DevicePluginObserver* observer = nullptr);
  ~RegistrationServer() override;

  // Removes every socket in the directory (never the checkpoint), then serves kubelet.sock.
  [[nodiscard]] absl::Status Start();
  void Stop();

  // The threads that run Register handlers: the device manager's dials in flight (at most 32,
  // each holding its thread for up to the dial timeout) and room beside them for refusals, which
  // take microseconds. Without a bound gRPC started a thread per queued call: +200 threads in
  // fault.hostile_peers_test's flood under ThreadSanitizer. A call beyond it is answered
  // RESOURCE_EXHAUSTED at once and the plugin retries, as after any failed registration.
  static constexpr int kMaxHandlerThreads = 48;

  const std::string& socket_path() const { return socket_path_; }
  // True between a successful Start() and Stop(): kubelet.sock is served.
  bool serving() const;

  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* response) override;

 private:
  const std::string plugins_dir_;
  const std::string socket_path_;
  RegistrationHandler* const handler_;
  metrics::CounterFamily* const registrations_;
  DevicePluginObserver* const observer_;
  mutable absl::Mutex mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_REGISTRATION_SERVER_H_
