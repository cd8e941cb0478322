#include "sdk/src/plugin_service.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"

namespace kdp::internal {
namespace {

// One ListAndWatch stream, shaped like gRPC's health WatchReactor: at most one write in flight; a
// snapshot arriving meanwhile is parked, and a newer one replaces it (latest wins, which is exactly
// full-snapshot semantics); Finish() exactly once; released only in OnDone().
class ListAndWatchReactor final : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>,
                                  public DeviceSubscriber,
                                  public OpenStream {
 public:
  ListAndWatchReactor(PluginService* service, std::shared_ptr<DeviceState> state)
      : service_(service), state_(std::move(state)) {
    service_->StreamStarted(this);
    state_->Subscribe(this);  // Sends the full list first.
  }

  void OnDevices(DeviceSnapshot snapshot) override {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (write_pending_) {
      parked_ = std::move(snapshot);
      return;
    }
    WriteLocked(std::move(snapshot));
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    write_pending_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "ListAndWatch write failed"));
      return;
    }
    if (parked_ != nullptr && !finished_) WriteLocked(std::move(parked_));
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void End() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "device plugin is stopping"));
  }

  void OnDone() override {
    state_->Unsubscribe(this);   // No OnDevices() call can be running or start after this.
    service_->StreamDone(this);  // Nor an End() call.
    delete this;
  }

 private:
  void WriteLocked(DeviceSnapshot snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    parked_.reset();
    response_ = ToListAndWatchResponse(*snapshot);
    write_pending_ = true;
    StartWrite(&response_);
  }

  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    parked_.reset();
    Finish(std::move(status));
  }

  PluginService* const service_;
  const std::shared_ptr<DeviceState> state_;
  absl::Mutex mu_;
  // Untouched between StartWrite() and OnWriteDone().
  v1beta1::ListAndWatchResponse response_ ABSL_GUARDED_BY(mu_);
  DeviceSnapshot parked_ ABSL_GUARDED_BY(mu_);
  bool write_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
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

PluginService::PluginService(DevicePlugin* plugin, std::shared_ptr<DeviceState> state)
    : plugin_(plugin),
      preferred_(dynamic_cast<PreferredAllocator*>(plugin)),
      pre_starter_(dynamic_cast<ContainerPreStarter*>(plugin)),
      state_(std::move(state)) {
  options_.set_get_preferred_allocation_available(preferred_ != nullptr);
  options_.set_pre_start_required(pre_starter_ != nullptr);
}

PluginService::~PluginService() { WaitForStreams(); }

grpc::Status PluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* response) {
  *response = options_;
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* PluginService::ListAndWatch(
    grpc::CallbackServerContext*, const v1beta1::Empty*) {
  KDP_LOG_INFO("ListAndWatch stream opened", "resourceName", plugin_->resource_name());
  return new ListAndWatchReactor(this, state_);
}

absl::Status PluginService::CheckKnown(
    const google::protobuf::RepeatedPtrField<std::string>& ids) const {
  DeviceSnapshot snapshot = state_->Snapshot();
  std::set<std::string_view> known;
  for (const Device& device : *snapshot) known.insert(device.id);
  for (const std::string& id : ids) {
    if (!known.contains(id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown device ID \"", id, "\" for resource ", plugin_->resource_name()));
    }
  }
  return absl::OkStatus();
}

grpc::Status PluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
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

grpc::Status PluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
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

grpc::Status PluginService::PreStartContainer(grpc::ServerContext*,
                                              const v1beta1::PreStartContainerRequest* request,
                                              v1beta1::PreStartContainerResponse*) {
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
