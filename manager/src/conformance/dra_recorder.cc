#include "manager/src/conformance/dra_recorder.h"

#include "absl/time/clock.h"

namespace kdp::manager::conformance {

void DraRecorder::Registered(const std::string& driver, const std::string& endpoint,
                             const std::vector<std::string>& versions, const absl::Status& answer) {
  absl::MutexLock lock(&mu_);
  record_.registrations.push_back({absl::Now(), driver, endpoint, versions, answer});
}

void DraRecorder::Prepared(const std::string& driver, const std::string& endpoint,
                           const drapb::NodePrepareResourcesRequest& request,
                           const absl::StatusOr<drapb::NodePrepareResourcesResponse>& response) {
  absl::MutexLock lock(&mu_);
  record_.prepares.push_back({absl::Now(), driver, endpoint, request, response});
}

void DraRecorder::Unprepared(
    const std::string& driver, const std::string& endpoint,
    const drapb::NodeUnprepareResourcesRequest& request,
    const absl::StatusOr<drapb::NodeUnprepareResourcesResponse>& response) {
  absl::MutexLock lock(&mu_);
  record_.unprepares.push_back({absl::Now(), driver, endpoint, request, response});
}

void DraRecorder::HealthListed(const std::string& driver, const std::string& endpoint,
                               const std::vector<dra::WatchedDeviceHealth>& devices) {
  absl::MutexLock lock(&mu_);
  record_.health.push_back({absl::Now(), driver, endpoint, devices});
}

void DraRecorder::HealthStreamEnded(const std::string& driver, const std::string& endpoint,
                                    const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  record_.health_ends.push_back({absl::Now(), driver, endpoint, status});
}

DraRecord DraRecorder::Copy() const {
  absl::MutexLock lock(&mu_);
  return record_;
}

bool DraRecorder::WaitUntil(const std::function<bool(const DraRecord&)>& done,
                            absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto holds = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(record_); };
  return mu_.AwaitWithDeadline(absl::Condition(&holds), deadline);
}

}  // namespace kdp::manager::conformance
