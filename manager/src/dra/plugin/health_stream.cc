#include "manager/src/dra/plugin/health_stream.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "manager/src/dra/plugin/driver_observer.h"
#include "manager/src/pluginmanager/grpc_error.h"

namespace kdp::manager::dra {
namespace {

// Both versions have identical messages; one template translates either.
template <typename Response>
std::vector<WatchedDeviceHealth> Translate(const Response& response) {
  std::vector<WatchedDeviceHealth> devices;
  devices.reserve(response.devices_size());
  for (const auto& device : response.devices()) {
    WireHealthStatus health = WireHealthStatus::kUnknown;
    switch (static_cast<int>(device.health())) {
      case 1:
        health = WireHealthStatus::kHealthy;
        break;
      case 2:
        health = WireHealthStatus::kUnhealthy;
        break;
      default:  // UNKNOWN, or a value newer than this proto: toDeviceHealthStatus's default
        break;
    }
    devices.push_back({.pool_name = device.device().pool_name(),
                       .device_name = device.device().device_name(),
                       .health = health,
                       .last_updated_time = device.last_updated_time(),
                       .health_check_timeout_seconds = device.health_check_timeout_seconds(),
                       .message = device.message()});
  }
  return devices;
}

// The generated namespaces (::v1, ::v1alpha1, the protos' packages) as template arguments.
struct HealthV1 {
  using DRAResourceHealth = ::v1::DRAResourceHealth;
  using NodeWatchResourcesRequest = ::v1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = ::v1::NodeWatchResourcesResponse;
};
struct HealthV1alpha1 {
  using DRAResourceHealth = ::v1alpha1::DRAResourceHealth;
  using NodeWatchResourcesRequest = ::v1alpha1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = ::v1alpha1::NodeWatchResourcesResponse;
};

}  // namespace

std::string ChooseHealthService(const std::vector<std::string>& supported_services) {
  for (const char* service : {kDraHealthV1Service, kDraHealthV1alpha1Service}) {
    if (std::find(supported_services.begin(), supported_services.end(), service) !=
        supported_services.end()) {
      return service;
    }
  }
  return "";
}

std::unique_ptr<HealthStream> HealthStream::Start(HealthStreamOptions options) {
  std::unique_ptr<HealthStream> stream(new HealthStream(std::move(options)));
  stream->thread_ = std::thread([s = stream.get()] { s->Run(); });
  return stream;
}

HealthStream::~HealthStream() { Stop(/*report_end=*/false); }

void HealthStream::Stop(bool report_end) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      report_end_ = report_end;
      // Not an RPC: TryCancel only marks the call cancelled; Read() then returns false.
      if (context_ != nullptr) context_->TryCancel();
    }
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

int HealthStream::attempts() const {
  absl::MutexLock lock(&mu_);
  return attempts_;
}

bool HealthStream::gave_up() const {
  absl::MutexLock lock(&mu_);
  return gave_up_;
}

template <typename Pb>
grpc::Status HealthStream::Watch(grpc::ClientContext* context) {
  auto stub = Pb::DRAResourceHealth::NewStub(options_.channel);
  typename Pb::NodeWatchResourcesRequest request;
  std::unique_ptr<grpc::ClientReader<typename Pb::NodeWatchResourcesResponse>> reader =
      stub->NodeWatchResources(context, request);
  typename Pb::NodeWatchResourcesResponse response;
  bool first = true;
  while (reader->Read(&response)) {
    if (first) {
      KDP_LOG_DEBUG("Successfully started WatchResources health stream", "driverName",
                    options_.driver_name, "endpoint", options_.endpoint);
      first = false;
    }
    std::vector<WatchedDeviceHealth> devices = Translate(response);
    if (options_.observer != nullptr) {
      options_.observer->HealthListed(options_.driver_name, options_.endpoint, devices);
    }
    options_.handler->HandleHealthUpdate(options_.driver_name, devices);
  }
  // Read() fails too on a message that does not parse (a device name that is not UTF-8, say)
  // while the driver's stream goes on: Finish() would wait for the driver to end it, which it
  // never does, and the stream would neither report nor be retried again. Finish() answers at
  // once when the driver ended the stream or went away; when it has not within a second, cancel.
  absl::Notification finished;
  bool unreadable = false;
  std::thread watchdog([context, &finished, &unreadable] {
    if (finished.WaitForNotificationWithTimeout(absl::Seconds(1))) return;
    unreadable = true;
    context->TryCancel();
  });
  grpc::Status status = reader->Finish();
  finished.Notify();
  watchdog.join();
  if (!unreadable) return status;
  KDP_LOG_WARNING("WatchResources health stream cancelled: a message could not be parsed",
                  "driverName", options_.driver_name, "endpoint", options_.endpoint, "err",
                  "not a NodeWatchResourcesResponse, or a string in it is not UTF-8 (proto3)");
  return grpc::Status(grpc::StatusCode::INTERNAL,
                      "a NodeWatchResources message could not be parsed; the stream was cancelled");
}

void HealthStream::Run() {
  const bool v1 = options_.service == kDraHealthV1Service;
  if (!v1 && options_.service != kDraHealthV1alpha1Service) {
    KDP_LOG_ERROR("Unsupported DRA health service", "driverName", options_.driver_name, "endpoint",
                  options_.endpoint, "service", options_.service);
    absl::MutexLock lock(&mu_);
    gave_up_ = true;
    return;
  }
  while (true) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      context_ = &context;
      ++attempts_;
    }
    KDP_LOG_DEBUG("Attempting to start WatchResources health stream", "driverName",
                  options_.driver_name, "endpoint", options_.endpoint, "service", options_.service);
    const grpc::Status status = v1 ? Watch<HealthV1>(&context) : Watch<HealthV1alpha1>(&context);
    bool report = true;
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      report = !stopping_ || report_end_;
    }
    // HandleWatchResourcesStream's deferred clearDriver: whatever ended the stream.
    if (report) options_.handler->HandleHealthStreamEnd(options_.driver_name);
    if (options_.observer != nullptr) {
      options_.observer->HealthStreamEnded(options_.driver_name, options_.endpoint,
                                           FromGrpcStatus(status));
    }
    KDP_LOG_DEBUG("WatchResources health stream has ended", "driverName", options_.driver_name,
                  "endpoint", options_.endpoint, "err", FromGrpcStatusGoStyle(status).message());
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      // The driver advertised the service but does not serve it: asking again cannot help.
      KDP_LOG_INFO("DRA driver does not implement the health service; not retrying", "driverName",
                   options_.driver_name, "endpoint", options_.endpoint, "service",
                   options_.service);
      absl::MutexLock lock(&mu_);
      gave_up_ = true;
      return;
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.retry_period);
  }
}

}  // namespace kdp::manager::dra
