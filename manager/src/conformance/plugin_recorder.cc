#include "manager/src/conformance/plugin_recorder.h"

namespace kdp::manager::conformance {

void PluginRecorder::Registered(const v1beta1::RegisterRequest& request,
                                const absl::Status& answer) {
  absl::MutexLock lock(&mu_);
  record_.registrations.push_back({absl::Now(), request, answer});
}

void PluginRecorder::Connected(const std::string& resource, const std::string& socket,
                               const v1beta1::DevicePluginOptions& options) {
  absl::MutexLock lock(&mu_);
  record_.connections.push_back({absl::Now(), resource, socket, options});
}

void PluginRecorder::Listed(const std::string& resource, const std::string& socket,
                            const v1beta1::ListAndWatchResponse& response) {
  absl::MutexLock lock(&mu_);
  record_.lists.push_back({absl::Now(), resource, socket, response});
}

void PluginRecorder::StreamEnded(const std::string& resource, const std::string& socket,
                                 const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  record_.stream_ends.push_back({absl::Now(), resource, socket, status});
}

void PluginRecorder::Allocated(const std::string& resource, const std::string& /*socket*/,
                               const v1beta1::AllocateRequest& request,
                               const absl::StatusOr<v1beta1::AllocateResponse>& response) {
  absl::MutexLock lock(&mu_);
  record_.allocations.push_back({absl::Now(), resource, request, response});
}

void PluginRecorder::Preferred(const std::string& /*resource*/, const std::string& /*socket*/,
                               const v1beta1::PreferredAllocationRequest& /*request*/,
                               const absl::StatusOr<v1beta1::PreferredAllocationResponse>&
                               /*response*/) {
  // The scenarios call GetPreferredAllocation themselves, with inputs they choose.
}

void PluginRecorder::PreStarted(const std::string& resource, const std::string& /*socket*/,
                                const v1beta1::PreStartContainerRequest& request,
                                const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  record_.pre_starts.push_back({absl::Now(), resource, request, status});
}

PluginRecord PluginRecorder::Copy() const {
  absl::MutexLock lock(&mu_);
  return record_;
}

bool PluginRecorder::WaitUntil(const std::function<bool(const PluginRecord&)>& done,
                               absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto holds = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(record_); };
  return mu_.AwaitWithDeadline(absl::Condition(&holds), deadline);
}

}  // namespace kdp::manager::conformance
