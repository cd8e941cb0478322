#include "manager/src/devicemanager/endpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {
namespace {

// DialUnixSocket's channel (a private subchannel pool, no proxy) whose connection attempts give
// up at the dial timeout: gRPC keeps trying to connect for at least 20 s (its minimum connect
// timeout) even after the channel is gone, so a peer that accepts and never speaks would hold a
// descriptor that long after every registration naming it was refused.
std::shared_ptr<grpc::Channel> DialPlugin(const std::string& socket_path,
                                          absl::Duration dial_timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(dial_timeout))));
  return grpc::CreateCustomChannel(UnixTarget(socket_path), grpc::InsecureChannelCredentials(),
                                   args);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Endpoint>> Endpoint::Connect(std::string resource_name,
                                                            std::string socket_path,
                                                            EndpointOptions options) {
  // Nothing to wait for when no socket is there (the kubelet's blocking dial would wait its whole
  // 10 s): a registration naming a missing socket must not hold a thread for the dial timeout.
  struct stat info {};
  if (::stat(socket_path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) {
    return absl::UnavailableError(
        errors::FailedToDial(absl::StrCat("no unix socket at ", socket_path)));
  }
  std::shared_ptr<grpc::Channel> channel = DialPlugin(socket_path, options.dial_timeout);
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
  if (options.observer != nullptr) {
    options.observer->Connected(resource_name, socket_path, plugin_options);
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
        for (;;) {
          // A fresh message each time: a reused one would keep the largest list ever received
          // (100,000 devices are tens of MiB parsed) for as long as the stream lives.
          v1beta1::ListAndWatchResponse response;
          if (!reader->Read(&response)) break;
          on_snapshot(response);
          if (config_.observer != nullptr) {
            config_.observer->Listed(resource_name_, socket_path_, response);
          }
        }
        grpc::Status status = FinishStream(*reader);
        {
          absl::MutexLock lock(&mu_);
          stream_ended_ = true;
          if (stopped_) return;
        }
        KDP_LOG_WARNING("ListAndWatch ended", "resourceName", resource_name_, "endpoint",
                        socket_path_, "err", status.error_message());
        on_ended(FromGrpcStatus(status));
        if (config_.observer != nullptr) {
          config_.observer->StreamEnded(resource_name_, socket_path_, FromGrpcStatus(status));
        }
      });
}

grpc::Status Endpoint::FinishStream(
    grpc::ClientReaderInterface<v1beta1::ListAndWatchResponse>& reader) {
  // Read() fails too on a message that does not parse (a string that is not UTF-8, say) while
  // the plugin's stream goes on: Finish() would then wait for the plugin to end the stream, which
  // it never does, and the endpoint would look connected with its last good devices forever.
  // Finish() answers at once when the plugin ended the stream or went away; when it has not
  // within a second, the stream is still open and its message was unreadable: cancel it.
  absl::Notification finished;
  bool unreadable = false;
  std::thread watchdog([this, &finished, &unreadable] {
    if (finished.WaitForNotificationWithTimeout(absl::Seconds(1))) return;
    unreadable = true;
    stream_context_.TryCancel();
  });
  grpc::Status status = reader.Finish();
  finished.Notify();
  watchdog.join();
  if (!unreadable) return status;
  return grpc::Status(grpc::StatusCode::INTERNAL,
                      "a ListAndWatch message could not be parsed (not a v1beta1 "
                      "ListAndWatchResponse, or a string in it is not UTF-8, as proto3 requires); "
                      "the stream was cancelled");
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
  absl::StatusOr<v1beta1::AllocateResponse> result =
      status.ok() ? absl::StatusOr<v1beta1::AllocateResponse>(std::move(response))
                  : FromGrpcStatus(status);
  if (config_.observer != nullptr) {
    config_.observer->Allocated(resource_name_, socket_path_, request, result);
  }
  return result;
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
  absl::StatusOr<v1beta1::PreferredAllocationResponse> result =
      status.ok() ? absl::StatusOr<v1beta1::PreferredAllocationResponse>(std::move(response))
                  : FromGrpcStatus(status);
  if (config_.observer != nullptr) {
    config_.observer->Preferred(resource_name_, socket_path_, request, result);
  }
  return result;
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
  if (config_.observer != nullptr) {
    config_.observer->PreStarted(resource_name_, socket_path_, request, FromGrpcStatus(status));
  }
  if (!status.ok())
    return absl::Status(FromGrpcStatus(status).code(),
                        errors::PreStartFailed(status.error_message()));
  return absl::OkStatus();
}

}  // namespace kdp::manager
