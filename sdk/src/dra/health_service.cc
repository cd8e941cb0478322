#include "sdk/src/dra/health_service.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace kdp::internal {

// How often a waiting stream checks whether the kubelet went away (the sync API has no
// cancellation callback).
constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);
// The kubelet's default health timeout, which kubelets before 1.35 apply to every device.
constexpr int64_t kKubeletDefaultTimeoutSeconds = 30;

// One open NodeWatchResources stream. The table signals changes here; the stream's handler thread
// takes the signal and sends a fresh snapshot, so SetHealth() never waits for a kubelet.
class HealthStream final : public DeviceHealthSubscriber {
 public:
  void OnHealthChanged() override {
    absl::MutexLock lock(&mu_);
    changed_ = true;
  }

  void End() {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  bool ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }

  // Blocks until the list changed or `resend_at` came (true: send), or the stream must end
  // (false: ended, or the client went away).
  bool WaitToSend(grpc::ServerContext* context, absl::Time resend_at) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changed_ || ended_; };
    while (!mu_.AwaitWithTimeout(absl::Condition(&ready),
                                 std::min(kCancelPoll, resend_at - absl::Now()))) {
      if (context->IsCancelled()) return false;
      if (absl::Now() >= resend_at) return true;
    }
    if (ended_) return false;
    changed_ = false;  // Cleared before the snapshot is read: a later change signals again.
    return true;
  }

 private:
  mutable absl::Mutex mu_;
  bool changed_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

// The HealthStatus number of dra-health api.proto, the same in v1alpha1 and v1.
int WireHealthNumber(Health health) {
  switch (health) {
    case Health::kHealthy:
      return 1;  // HEALTHY
    case Health::kUnhealthy:
      return 2;  // UNHEALTHY
    case Health::kUnknown:
      return 0;  // UNKNOWN
  }
  return 0;
}

template <typename Response>
Response ToResponse(const std::vector<DeviceHealthEntry>& entries, const DraHealthOptions& options,
                    absl::Time now) {
  Response response;
  response.mutable_devices()->Reserve(static_cast<int>(entries.size()));
  for (const DeviceHealthEntry& entry : entries) {
    auto* device = response.add_devices();
    device->mutable_device()->set_pool_name(options.pool);
    device->mutable_device()->set_device_name(entry.device);
    using WireHealth = std::remove_cvref_t<decltype(device->health())>;
    device->set_health(static_cast<WireHealth>(WireHealthNumber(entry.health)));
    device->set_last_updated_time(absl::ToUnixSeconds(now));
    device->set_health_check_timeout_seconds(options.timeout_seconds);
    device->set_message(entry.message);
  }
  return response;
}

}  // namespace

DraHealthOptions MakeDraHealthOptions(std::string driver, std::string pool,
                                      absl::Duration health_check_timeout) {
  const int64_t seconds = std::max<int64_t>(1, absl::ToInt64Seconds(health_check_timeout));
  return {.driver = std::move(driver),
          .pool = std::move(pool),
          .timeout_seconds = seconds,
          .resend_interval = absl::Seconds(std::min(seconds, kKubeletDefaultTimeoutSeconds)) / 3};
}

DraHealthStreams::DraHealthStreams(std::shared_ptr<DeviceHealthTable> table,
                                   DraHealthOptions options)
    : table_(std::move(table)), options_(std::move(options)) {}

DraHealthStreams::~DraHealthStreams() {
  EndStreams();
  WaitForStreams();
}

template <typename Response>
grpc::Status DraHealthStreams::Serve(grpc::ServerContext* context,
                                     grpc::ServerWriter<Response>* writer, const char* version) {
  const grpc::Status stopping(grpc::StatusCode::UNAVAILABLE,
                              absl::StrCat("DRA driver ", options_.driver, " is stopping"));
  HealthStream stream;
  if (!StreamStarted(&stream)) return stopping;
  KDP_LOG_INFO("NodeWatchResources stream opened", "driver", options_.driver, "version", version);
  table_->Subscribe(&stream);  // Signals at once: the first message is the current list.
  absl::Time resend_at = absl::InfiniteFuture();
  while (stream.WaitToSend(context, resend_at)) {
    const absl::Time now = absl::Now();
    if (!writer->Write(ToResponse<Response>(table_->Snapshot(), options_, now))) break;
    resend_at = now + options_.resend_interval;
  }
  table_->Unsubscribe(&stream);  // No OnHealthChanged() can be running or start after this.
  const bool ended = stream.ended();
  StreamDone(&stream);  // Nor an End().
  KDP_LOG_INFO("NodeWatchResources stream closed", "driver", options_.driver, "version", version);
  return ended ? stopping : grpc::Status::CANCELLED;
}

bool DraHealthStreams::StreamStarted(HealthStream* stream) {
  absl::MutexLock lock(&mu_);
  if (ended_) return false;
  open_.insert(stream);
  return true;
}

void DraHealthStreams::StreamDone(HealthStream* stream) {
  absl::MutexLock lock(&mu_);
  open_.erase(stream);
}

void DraHealthStreams::EndStreams() {
  absl::MutexLock lock(&mu_);
  ended_ = true;
  for (HealthStream* stream : open_) stream->End();
}

void DraHealthStreams::WaitForStreams() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::set<HealthStream*>* open) { return open->empty(); }, &open_));
}

int DraHealthStreams::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(open_.size());
}

grpc::Status DraHealthServiceV1alpha1::NodeWatchResources(
    grpc::ServerContext* context, const ::v1alpha1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) {
  return streams_->Serve(context, writer, "v1alpha1");
}

grpc::Status DraHealthServiceV1::NodeWatchResources(
    grpc::ServerContext* context, const ::v1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* writer) {
  return streams_->Serve(context, writer, "v1");
}

}  // namespace kdp::internal
