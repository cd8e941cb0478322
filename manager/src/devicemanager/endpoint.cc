#include "manager/src/devicemanager/endpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {

absl::StatusOr<std::unique_ptr<Endpoint>> Endpoint::Connect(std::string resource_name,
                                                            std::string socket_path,
                                                            EndpointOptions options) {
  std::shared_ptr<grpc::Channel> channel = DialUnixSocket(socket_path);
  auto deadline =
      std::chrono::system_clock::now() + absl::ToChronoNanoseconds(options.dial_timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(
        errors::FailedToDial(absl::StrCat("cannot connect to ", socket_path, " within ",
                                          absl::FormatDuration(options.dial_timeout))));
  }
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(deadline);
  v1beta1::DevicePluginOptions plugin_options;
  grpc::Status status = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &plugin_options);
  if (!status.ok()) {
    return absl::UnavailableError(errors::FailedToGetOptions(status.error_message()));
  }
  return std::unique_ptr<Endpoint>(new Endpoint(std::move(resource_name), std::move(socket_path),
                                                options, std::move(channel),
                                                std::move(plugin_options)));
}

Endpoint::Endpoint(std::string resource_name, std::string socket_path, EndpointOptions options,
                   std::shared_ptr<grpc::Channel> channel,
                   v1beta1::DevicePluginOptions plugin_options)
    : resource_name_(std::move(resource_name)),
      socket_path_(std::move(socket_path)),
      config_(options),
      channel_(std::move(channel)),
      stub_(v1beta1::DevicePlugin::NewStub(channel_)),
      options_(std::move(plugin_options)) {}

Endpoint::~Endpoint() { Stop(); }

void Endpoint::Run(SnapshotCallback on_snapshot, EndedCallback on_ended) {
  absl::MutexLock lock(&mu_);
  // A registration racing a newer one may find its endpoint already replaced and stopped.
  if (stopped_ || stream_thread_.joinable()) return;
  stream_thread_ =
      std::thread([this, on_snapshot = std::move(on_snapshot), on_ended = std::move(on_ended)] {
        auto reader = stub_->ListAndWatch(&stream_context_, v1beta1::Empty());
        v1beta1::ListAndWatchResponse response;
        while (reader->Read(&response)) on_snapshot(response);
        grpc::Status status = reader->Finish();
        {
          absl::MutexLock lock(&mu_);
          stream_ended_ = true;
          if (stopped_) return;
        }
        KDP_LOG_WARNING("ListAndWatch ended", "resourceName", resource_name_, "endpoint",
                        socket_path_, "err", status.error_message());
        on_ended(FromGrpcStatus(status));
      });
}

void Endpoint::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    thread = std::move(stream_thread_);
    for (grpc::ClientContext* call : calls_) call->TryCancel();
  }
  stream_context_.TryCancel();
  absl::MutexLock join(&join_mu_);
  if (thread.joinable()) thread.join();
}

bool Endpoint::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_ || stream_ended_;
}

class Endpoint::CallGuard {
 public:
  CallGuard(Endpoint* endpoint, grpc::ClientContext* context)
      : endpoint_(endpoint), context_(context) {}
  ~CallGuard() { endpoint_->EndCall(context_); }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  Endpoint* const endpoint_;
  grpc::ClientContext* const context_;
};

absl::Status Endpoint::BeginCall(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  absl::MutexLock lock(&mu_);
  if (stopped_ || stream_ended_) {
    return absl::UnavailableError(errors::EndpointStopped(socket_path_));
  }
  calls_.insert(context);
  return absl::OkStatus();
}

void Endpoint::EndCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  calls_.erase(context);
}

absl::StatusOr<v1beta1::AllocateResponse> Endpoint::Allocate(const std::vector<std::string>& ids) {
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : ids) container->add_devices_ids(id);
  grpc::ClientContext context;
  if (absl::Status running = BeginCall(&context, config_.call_timeout); !running.ok()) {
    return running;
  }
  CallGuard guard(this, &context);
  v1beta1::AllocateResponse response;
  grpc::Status status = stub_->Allocate(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> Endpoint::GetPreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) {
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  for (const std::string& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  grpc::ClientContext context;
  if (absl::Status running = BeginCall(&context, config_.call_timeout); !running.ok()) {
    return running;
  }
  CallGuard guard(this, &context);
  v1beta1::PreferredAllocationResponse response;
  grpc::Status status = stub_->GetPreferredAllocation(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::Status Endpoint::PreStartContainer(const std::vector<std::string>& ids) {
  v1beta1::PreStartContainerRequest request;
  for (const std::string& id : ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  if (absl::Status running = BeginCall(&context, config_.pre_start_timeout); !running.ok()) {
    return running;
  }
  CallGuard guard(this, &context);
  v1beta1::PreStartContainerResponse response;
  grpc::Status status = stub_->PreStartContainer(&context, request, &response);
  if (!status.ok())
    return absl::Status(FromGrpcStatus(status).code(),
                        errors::PreStartFailed(status.error_message()));
  return absl::OkStatus();
}

}  // namespace kdp::manager
