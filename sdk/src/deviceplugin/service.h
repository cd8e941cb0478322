// PluginService is the gRPC face of one DevicePlugin: the v1beta1.DevicePlugin service, all on
// gRPC's sync API, where vendor code may block. Each ListAndWatch stream holds one server thread
// that waits for the plugin's DeviceState to park a newer full snapshot (latest wins). The sync
// API was chosen over a callback-API ListAndWatch by measurement: one callback method in the
// service made every unary call 1.2-2.8x slower (docs/benchmarks.md). Private to the SDK.
//
// Thread-safe. The owner must shut the grpc::Server down and then call WaitForStreams() before
// destroying the service.
#ifndef KDP_SDK_SRC_DEVICEPLUGIN_SERVICE_H_
#define KDP_SDK_SRC_DEVICEPLUGIN_SERVICE_H_

#include <memory>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kdp/device_plugin.h"
#include "sdk/src/deviceplugin/device_state.h"
#include "sdk/src/deviceplugin/metrics.h"

namespace kdp::internal {

// Converts a snapshot into the wire message (topology only for devices with NUMA nodes).
v1beta1::ListAndWatchResponse ToListAndWatchResponse(const std::vector<Device>& devices);
// Converts a vendor answer into the wire message.
v1beta1::ContainerAllocateResponse ToContainerAllocateResponse(const ContainerAllocation& in);

// An open ListAndWatch stream as its service sees it.
class OpenStream {
 public:
  virtual ~OpenStream() = default;
  // Ends the stream now (the plugin is stopping); a no-op when it already ended.
  virtual void End() = 0;
};

class PluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // `metrics`: what to update for each call and stream (none by default).
  PluginService(DevicePlugin* plugin, std::shared_ptr<DeviceState> state,
                PluginServiceMetrics metrics = {});
  ~PluginService() override;

  // The options derived from the capabilities `plugin` implements.
  const v1beta1::DevicePluginOptions& options() const { return options_; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

  // Ends every open ListAndWatch stream. A kubelet keeps one open forever, so without this a
  // server shutdown would wait its whole deadline.
  void EndStreams() ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until every ListAndWatch stream of this service has returned.
  void WaitForStreams() ABSL_LOCKS_EXCLUDED(mu_);
  int open_streams() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void StreamStarted(OpenStream* stream) ABSL_LOCKS_EXCLUDED(mu_);
  void StreamDone(OpenStream* stream) ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status DoGetPreferredAllocation(const v1beta1::PreferredAllocationRequest* request,
                                        v1beta1::PreferredAllocationResponse* response);
  grpc::Status DoAllocate(const v1beta1::AllocateRequest* request,
                          v1beta1::AllocateResponse* response);
  grpc::Status DoPreStartContainer(const v1beta1::PreStartContainerRequest* request);
  // Observes the call's duration since `start` into metrics_.rpc_duration; returns `status`.
  grpc::Status Observe(const char* method, absl::Time start, grpc::Status status) const;

  // INVALID_ARGUMENT naming the first ID not in the current inventory.
  absl::Status CheckKnown(const google::protobuf::RepeatedPtrField<std::string>& ids) const;

  DevicePlugin* const plugin_;
  PreferredAllocator* const preferred_;
  ContainerPreStarter* const pre_starter_;
  const std::shared_ptr<DeviceState> state_;
  v1beta1::DevicePluginOptions options_;
  const PluginServiceMetrics metrics_;

  mutable absl::Mutex mu_;
  std::set<OpenStream*> open_streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DEVICEPLUGIN_SERVICE_H_
