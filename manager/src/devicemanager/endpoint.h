// Endpoint is the manager's client of one registered device plugin (the kubelet's endpoint.go +
// plugin/v1beta1/client.go): the channel to the plugin's socket, the options it answered, the
// ListAndWatch stream consumed on a thread of its own, and the unary calls, each with a deadline.
//
// Thread-safe. Callbacks run on the endpoint's stream thread and must not call Stop().
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_ENDPOINT_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_ENDPOINT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "manager/src/devicemanager/plugin_observer.h"

namespace kdp::manager {

struct EndpointOptions {
  // Dial + GetDevicePluginOptions deadline at registration (the kubelet dials for 10 s).
  absl::Duration dial_timeout = absl::Seconds(10);
  // Deadline of Allocate and GetPreferredAllocation (the kubelet has none: a hung plugin would
  // stall every admission on the node).
  absl::Duration call_timeout = absl::Seconds(30);
  // Deadline of PreStartContainer (KubeletPreStartContainerRPCTimeoutInSecs).
  absl::Duration pre_start_timeout = absl::Seconds(30);
  // Told of the options, every ListAndWatch message and unary call (kdp-conformance); nullptr:
  // nobody. Borrowed; must outlive the endpoint.
  DevicePluginObserver* observer = nullptr;
};

class Endpoint {
 public:
  using SnapshotCallback = std::function<void(const v1beta1::ListAndWatchResponse&)>;
  using EndedCallback = std::function<void(const absl::Status&)>;

  // Dials `socket_path` and asks GetDevicePluginOptions, as the kubelet does before it answers
  // Register. Errors carry the kubelet's texts (failed to dial / failed to get options).
  static absl::StatusOr<std::unique_ptr<Endpoint>> Connect(std::string resource_name,
                                                           std::string socket_path,
                                                           EndpointOptions options);
  ~Endpoint();  // Stops.

  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& resource_name() const { return resource_name_; }
  const std::string& socket_path() const { return socket_path_; }
  const v1beta1::DevicePluginOptions& options() const { return options_; }

  // Starts consuming ListAndWatch: `on_snapshot` for every message, then `on_ended` once when
  // the stream ends for any reason other than Stop(). A no-op once stopped.
  void Run(SnapshotCallback on_snapshot, EndedCallback on_ended) ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels the stream and every call in flight and joins the stream thread. Idempotent; every
  // caller returns only once the thread is joined.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Stopped, or its stream ended: calls then fail with the kubelet's "endpoint ... has been
  // stopped" (the kubelet stops an endpoint when its plugin disconnects).
  bool stopped() const ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const std::vector<std::string>& ids);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size);
  absl::Status PreStartContainer(const std::vector<std::string>& ids);

 private:
  Endpoint(std::string resource_name, std::string socket_path, EndpointOptions options,
           std::shared_ptr<grpc::Channel> channel, v1beta1::DevicePluginOptions plugin_options);
  // Registers a unary call's context so Stop() can cancel it; the kubelet's "stopped" error when
  // the endpoint no longer runs. The guard unregisters it.
  class CallGuard;
  absl::Status BeginCall(grpc::ClientContext* context, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The stream's final status once Read() failed; cancels a stream that is still open (a message
  // that did not parse) instead of waiting for it forever.
  grpc::Status FinishStream(grpc::ClientReaderInterface<v1beta1::ListAndWatchResponse>& reader);
  void EndCall(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string resource_name_;
  const std::string socket_path_;
  const EndpointOptions config_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  // What the plugin answered to GetDevicePluginOptions (RegisterRequest.options is ignored).
  const v1beta1::DevicePluginOptions options_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);
  std::thread stream_thread_ ABSL_GUARDED_BY(mu_);
  absl::Mutex join_mu_;  // Serialises joins, so every Stop() returns after the join.
  grpc::ClientContext stream_context_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_ENDPOINT_H_
