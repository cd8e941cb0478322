#include "sdk/src/deviceplugin/service.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "sdk/src/runtime/metrics_endpoint.h"

namespace kdp::internal {
namespace {

// How often a waiting ListAndWatch checks whether the kubelet went away (the sync API has no
// cancellation callback).
constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);

// One ListAndWatch stream. The DeviceState parks each new snapshot here (a newer one replaces an
// unsent one: latest wins, which is exactly full-snapshot semantics); the stream's handler thread
// takes it and writes it, so the producer never waits for a slow kubelet.
class ListAndWatchStream final : public DeviceSubscriber, public OpenStream {
 public:
  void OnDevices(DeviceSnapshot snapshot) override {
    absl::MutexLock lock(&mu_);
    parked_ = std::move(snapshot);
  }

  void End() override {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  // Blocks until there is a snapshot to send; nullptr when the stream must end instead.
  DeviceSnapshot Next(grpc::ServerContext* context) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return parked_ != nullptr || ended_; };
    while (!mu_.AwaitWithTimeout(absl::Condition(&ready), kCancelPoll)) {
      if (context->IsCancelled()) return nullptr;
    }
    if (ended_) return nullptr;
    return std::exchange(parked_, nullptr);
  }

  bool ended() {
    absl::MutexLock lock(&mu_);
    return ended_;
  }

 private:
  absl::Mutex mu_;
  DeviceSnapshot parked_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

std::vector<std::string> ToVector(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

}  // namespace

v1beta1::ListAndWatchResponse ToListAndWatchResponse(const std::vector<Device>& devices) {
  v1beta1::ListAndWatchResponse response;
  response.mutable_devices()->Reserve(static_cast<int>(devices.size()));
  for (const Device& device : devices) {
    v1beta1::Device* out = response.add_devices();
    out->set_id(device.id);
    out->set_health(HealthName(device.health));
    if (!device.numa_nodes.empty()) {
      for (int node : device.numa_nodes) out->mutable_topology()->add_nodes()->set_id(node);
    }
  }
  return response;
}

v1beta1::ContainerAllocateResponse ToContainerAllocateResponse(const ContainerAllocation& in) {
  v1beta1::ContainerAllocateResponse out;
  for (const auto& [name, value] : in.envs) (*out.mutable_envs())[name] = value;
  for (const auto& [name, value] : in.annotations) (*out.mutable_annotations())[name] = value;
  for (const Mount& mount : in.mounts) {
    v1beta1::Mount* m = out.add_mounts();
    m->set_container_path(mount.container_path);
    m->set_host_path(mount.host_path);
    m->set_read_only(mount.read_only);
  }
  for (const DeviceSpec& spec : in.devices) {
    v1beta1::DeviceSpec* d = out.add_devices();
    d->set_container_path(spec.container_path);
    d->set_host_path(spec.host_path);
    d->set_permissions(spec.permissions);
  }
  for (const std::string& name : in.cdi_devices) out.add_cdi_devices()->set_name(name);
  return out;
}

PluginService::PluginService(DevicePlugin* plugin, std::shared_ptr<DeviceState> state,
                             PluginServiceMetrics metrics)
    : plugin_(plugin),
      preferred_(dynamic_cast<PreferredAllocator*>(plugin)),
      pre_starter_(dynamic_cast<ContainerPreStarter*>(plugin)),
      state_(std::move(state)),
      metrics_(metrics) {
  options_.set_get_preferred_allocation_available(preferred_ != nullptr);
  options_.set_pre_start_required(pre_starter_ != nullptr);
}

PluginService::~PluginService() { WaitForStreams(); }

grpc::Status PluginService::Observe(const char* method, absl::Time start,
                                    grpc::Status status) const {
  if (metrics_.rpc_duration != nullptr) {
    metrics_.rpc_duration
        ->WithLabels({plugin_->resource_name(), method, GoGrpcCodeName(status.error_code())})
        ->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return status;
}

grpc::Status PluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* response) {
  const absl::Time start = absl::Now();
  *response = options_;
  return Observe("GetDevicePluginOptions", start, grpc::Status::OK);
}

grpc::Status PluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  const absl::Time start = absl::Now();
  return Observe("GetPreferredAllocation", start, DoGetPreferredAllocation(request, response));
}

grpc::Status PluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) {
  const absl::Time start = absl::Now();
  return Observe("Allocate", start, DoAllocate(request, response));
}

grpc::Status PluginService::PreStartContainer(grpc::ServerContext*,
                                              const v1beta1::PreStartContainerRequest* request,
                                              v1beta1::PreStartContainerResponse*) {
  const absl::Time start = absl::Now();
  return Observe("PreStartContainer", start, DoPreStartContainer(request));
}

grpc::Status PluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  KDP_LOG_INFO("ListAndWatch stream opened", "resourceName", plugin_->resource_name());
  ListAndWatchStream stream;
  StreamStarted(&stream);
  if (metrics_.open_streams != nullptr) metrics_.open_streams->Inc();
  state_->Subscribe(&stream);  // Parks the full list first.
  grpc::Status status = grpc::Status::CANCELLED;
  while (DeviceSnapshot snapshot = stream.Next(context)) {
    if (!writer->Write(ToListAndWatchResponse(snapshot->devices))) break;
    if (metrics_.sends != nullptr) metrics_.sends->Inc();
  }
  if (metrics_.open_streams != nullptr) metrics_.open_streams->Dec();
  if (stream.ended()) {
    status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "device plugin is stopping");
  }
  state_->Unsubscribe(&stream);  // No OnDevices() call can be running or start after this.
  StreamDone(&stream);           // Nor an End() call.
  KDP_LOG_INFO("ListAndWatch stream closed", "resourceName", plugin_->resource_name());
  return status;
}

absl::Status PluginService::CheckKnown(
    const google::protobuf::RepeatedPtrField<std::string>& ids) const {
  DeviceSnapshot snapshot = state_->Snapshot();
  for (const std::string& id : ids) {
    if (snapshot->Find(id) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown device ID \"", id, "\" for resource ", plugin_->resource_name()));
    }
  }
  return absl::OkStatus();
}

grpc::Status PluginService::DoGetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  if (preferred_ == nullptr) {
    return grpc::Status(
        grpc::StatusCode::UNIMPLEMENTED,
        absl::StrCat(plugin_->resource_name(), " does not implement GetPreferredAllocation"));
  }
  for (const auto& container : request->container_requests()) {
    if (container.allocation_size() < 0) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("allocation_size must not be negative, got ", container.allocation_size()));
    }
    PreferredRequest in{.available = ToVector(container.available_deviceids()),
                        .must_include = ToVector(container.must_include_deviceids()),
                        .size = container.allocation_size()};
    absl::StatusOr<std::vector<std::string>> ids = preferred_->PreferredAllocation(in);
    if (!ids.ok()) return ToGrpcStatus(ids.status());
    auto* out = response->add_container_responses();
    for (std::string& id : *ids) out->add_deviceids(std::move(id));
  }
  return grpc::Status::OK;
}

grpc::Status PluginService::DoAllocate(const v1beta1::AllocateRequest* request,
                                       v1beta1::AllocateResponse* response) {
  for (const auto& container : request->container_requests()) {
    if (absl::Status known = CheckKnown(container.devices_ids()); !known.ok()) {
      KDP_LOG_WARNING("Allocate rejected", "resourceName", plugin_->resource_name(), "err",
                      known.message());
      return ToGrpcStatus(known);
    }
    absl::StatusOr<ContainerAllocation> allocation =
        plugin_->Allocate(AllocateRequest{.device_ids = ToVector(container.devices_ids())});
    if (!allocation.ok()) return ToGrpcStatus(allocation.status());
    *response->add_container_responses() = ToContainerAllocateResponse(*allocation);
  }
  return grpc::Status::OK;
}

grpc::Status PluginService::DoPreStartContainer(const v1beta1::PreStartContainerRequest* request) {
  if (pre_starter_ == nullptr) {
    return grpc::Status(
        grpc::StatusCode::UNIMPLEMENTED,
        absl::StrCat(plugin_->resource_name(), " does not implement PreStartContainer"));
  }
  return ToGrpcStatus(pre_starter_->PreStartContainer(ToVector(request->devices_ids())));
}

void PluginService::EndStreams() {
  absl::MutexLock lock(&mu_);
  for (OpenStream* stream : open_streams_) stream->End();
}

void PluginService::WaitForStreams() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::set<OpenStream*>* open) { return open->empty(); }, &open_streams_));
}

int PluginService::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(open_streams_.size());
}

void PluginService::StreamStarted(OpenStream* stream) {
  absl::MutexLock lock(&mu_);
  open_streams_.insert(stream);
}

void PluginService::StreamDone(OpenStream* stream) {
  absl::MutexLock lock(&mu_);
  open_streams_.erase(stream);
}

}  // namespace kdp::internal
