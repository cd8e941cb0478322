#include "tests/testing/stub_plugin.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "common/unix_socket.h"

namespace kdp::testing {

v1beta1::Device MakeDevice(const std::string& id, const std::string& health,
                           std::vector<int64_t> numa) {
  v1beta1::Device device;
  device.set_id(id);
  device.set_health(health);
  for (int64_t node : numa) device.mutable_topology()->add_nodes()->set_id(node);
  return device;
}

StubPlugin::StubPlugin(std::string socket_path, v1beta1::DevicePluginOptions options)
    : socket_path_(std::move(socket_path)), options_(std::move(options)) {}

StubPlugin::~StubPlugin() { Stop(); }

absl::Status StubPlugin::Start() {
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = ServeOnUnixSocket(socket_path_, this);
  if (!server.ok()) return server.status();
  server_ = *std::move(server);
  return absl::OkStatus();
}

void StubPlugin::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
}

void StubPlugin::SetDevices(std::vector<v1beta1::Device> devices) {
  absl::MutexLock lock(&mu_);
  devices_ = std::move(devices);
  ++generation_;
}

void StubPlugin::Resend() {
  absl::MutexLock lock(&mu_);
  ++generation_;
}

void StubPlugin::EndStreams() {
  absl::MutexLock lock(&mu_);
  ++stream_epoch_;
}

int StubPlugin::messages_sent() const {
  absl::MutexLock lock(&mu_);
  return messages_sent_;
}

absl::Status StubPlugin::Register(const std::string& kubelet_socket, const std::string& version,
                                  const std::string& endpoint, const std::string& resource_name) {
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel(UnixTarget(kubelet_socket), grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version(version);
  request.set_endpoint(endpoint);
  request.set_resource_name(resource_name);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  context.set_wait_for_ready(true);
  v1beta1::Empty response;
  return FromGrpcStatus(stub->Register(&context, request, &response));
}

void StubPlugin::SetAllocateHandler(AllocateHandler handler) {
  absl::MutexLock lock(&mu_);
  allocate_handler_ = std::move(handler);
}

void StubPlugin::SetPreferredAllocationHandler(PreferredAllocationHandler handler) {
  absl::MutexLock lock(&mu_);
  preferred_handler_ = std::move(handler);
}

void StubPlugin::FailPreStart(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  pre_start_status_ = std::move(status);
}

void StubPlugin::Hold(Call call) {
  absl::MutexLock lock(&mu_);
  held_[static_cast<int>(call)] = true;
}

void StubPlugin::Release(Call call) {
  absl::MutexLock lock(&mu_);
  held_[static_cast<int>(call)] = false;
}

int StubPlugin::waiting(Call call) const {
  absl::MutexLock lock(&mu_);
  return waiting_[static_cast<int>(call)];
}

bool StubPlugin::PassHold(Call call, grpc::ServerContext* context) {
  const int i = static_cast<int>(call);
  absl::MutexLock lock(&mu_);
  if (!held_[i]) return !stopping_;
  ++waiting_[i];
  auto released = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !held_[i]; };
  // Wake up now and then to notice a cancelled call.
  bool cancelled = false;
  while (!mu_.AwaitWithTimeout(absl::Condition(&released), absl::Milliseconds(20))) {
    if (context->IsCancelled()) {
      cancelled = true;
      break;
    }
  }
  --waiting_[i];
  return !cancelled && !stopping_;
}

std::vector<v1beta1::AllocateRequest> StubPlugin::allocate_requests() const {
  absl::MutexLock lock(&mu_);
  return allocate_requests_;
}

std::vector<v1beta1::PreferredAllocationRequest> StubPlugin::preferred_requests() const {
  absl::MutexLock lock(&mu_);
  return preferred_requests_;
}

std::vector<std::vector<std::string>> StubPlugin::pre_start_calls() const {
  absl::MutexLock lock(&mu_);
  return pre_start_calls_;
}

grpc::Status StubPlugin::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                v1beta1::DevicePluginOptions* response) {
  *response = options_;
  return grpc::Status::OK;
}

grpc::Status StubPlugin::ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                                      grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  int sent_generation = -1;
  int epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    epoch = stream_epoch_;
  }
  for (;;) {
    v1beta1::ListAndWatchResponse response;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || stream_epoch_ != epoch || generation_ != sent_generation;
      };
      // Wake up now and then to notice a cancelled stream.
      while (!mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50))) {
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
      }
      if (stopping_ || stream_epoch_ != epoch) return grpc::Status::OK;
      sent_generation = generation_;
      for (const auto& device : devices_) *response.add_devices() = device;
      ++messages_sent_;
    }
    if (!writer->Write(response)) return grpc::Status::CANCELLED;
  }
}

grpc::Status StubPlugin::GetPreferredAllocation(grpc::ServerContext* context,
                                                const v1beta1::PreferredAllocationRequest* request,
                                                v1beta1::PreferredAllocationResponse* response) {
  ++preferred_calls_;
  PreferredAllocationHandler handler;
  {
    absl::MutexLock lock(&mu_);
    preferred_requests_.push_back(*request);
    handler = preferred_handler_;
  }
  if (!PassHold(Call::kGetPreferredAllocation, context)) return grpc::Status::CANCELLED;
  if (handler) return handler(*request, response);
  for (const auto& container : request->container_requests()) {
    auto* out = response->add_container_responses();
    for (const auto& id : container.must_include_deviceids()) out->add_deviceids(id);
    int size = container.allocation_size();
    for (int i = container.available_deviceids_size() - 1; i >= 0 && out->deviceids_size() < size;
         --i) {
      const std::string& id = container.available_deviceids(i);
      bool taken = false;
      for (const auto& have : out->deviceids()) taken = taken || have == id;
      if (!taken) out->add_deviceids(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status StubPlugin::Allocate(grpc::ServerContext* context,
                                  const v1beta1::AllocateRequest* request,
                                  v1beta1::AllocateResponse* response) {
  ++allocate_calls_;
  AllocateHandler handler;
  {
    absl::MutexLock lock(&mu_);
    allocate_requests_.push_back(*request);
    handler = allocate_handler_;
  }
  if (!PassHold(Call::kAllocate, context)) return grpc::Status::CANCELLED;
  if (handler) return handler(*request, response);
  for (const auto& container : request->container_requests()) {
    auto* out = response->add_container_responses();
    (*out->mutable_envs())["STUB_DEVICES"] = absl::StrJoin(container.devices_ids(), ",");
  }
  return grpc::Status::OK;
}

grpc::Status StubPlugin::PreStartContainer(grpc::ServerContext* context,
                                           const v1beta1::PreStartContainerRequest* request,
                                           v1beta1::PreStartContainerResponse*) {
  {
    absl::MutexLock lock(&mu_);
    pre_start_calls_.emplace_back(request->devices_ids().begin(), request->devices_ids().end());
  }
  if (!PassHold(Call::kPreStartContainer, context)) return grpc::Status::CANCELLED;
  absl::MutexLock lock(&mu_);
  return pre_start_status_;
}

}  // namespace kdp::testing
