// DraRecorder keeps what an embedded kdp-manager's DRA manager told it (DraDriverObserver):
// every registration through plugins_registry with its answer, each NodePrepareResources and
// NodeUnprepareResources call with its outcome, every health-stream message and the end of each
// stream, with the time it happened, so that a scenario can wait for an exchange and judge it.
//
// Thread-safety: thread-safe. The observer methods run on the manager's threads; the waits and
// the copies on the scenario's.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DRA_RECORDER_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DRA_RECORDER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/dra/plugin/driver_observer.h"

namespace kdp::manager::conformance {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

struct RecordedDraRegistration {
  absl::Time at;
  std::string driver;
  std::string endpoint;
  std::vector<std::string> versions;
  absl::Status answer;
};

struct RecordedPrepare {
  absl::Time at;
  std::string driver;
  std::string endpoint;
  drapb::NodePrepareResourcesRequest request;
  absl::StatusOr<drapb::NodePrepareResourcesResponse> response;
};

struct RecordedUnprepare {
  absl::Time at;
  std::string driver;
  std::string endpoint;
  drapb::NodeUnprepareResourcesRequest request;
  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> response;
};

struct RecordedHealth {
  absl::Time at;
  std::string driver;
  std::string endpoint;
  std::vector<dra::WatchedDeviceHealth> devices;
};

struct RecordedHealthEnd {
  absl::Time at;
  std::string driver;
  std::string endpoint;
  absl::Status status;
};

// Everything recorded so far, copied.
struct DraRecord {
  std::vector<RecordedDraRegistration> registrations;
  std::vector<RecordedPrepare> prepares;
  std::vector<RecordedUnprepare> unprepares;
  std::vector<RecordedHealth> health;
  std::vector<RecordedHealthEnd> health_ends;
};

class DraRecorder final : public dra::DraDriverObserver {
 public:
  // DraDriverObserver.
  void Registered(const std::string& driver, const std::string& endpoint,
                  const std::vector<std::string>& versions, const absl::Status& answer) override;
  void Prepared(const std::string& driver, const std::string& endpoint,
                const drapb::NodePrepareResourcesRequest& request,
                const absl::StatusOr<drapb::NodePrepareResourcesResponse>& response) override;
  void Unprepared(const std::string& driver, const std::string& endpoint,
                  const drapb::NodeUnprepareResourcesRequest& request,
                  const absl::StatusOr<drapb::NodeUnprepareResourcesResponse>& response) override;
  void HealthListed(const std::string& driver, const std::string& endpoint,
                    const std::vector<dra::WatchedDeviceHealth>& devices) override;
  void HealthStreamEnded(const std::string& driver, const std::string& endpoint,
                         const absl::Status& status) override;

  DraRecord Copy() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `done` holds for what was recorded, or `deadline`; returns whether it held.
  // `done` runs with the recorder locked: it must not call back into it.
  bool WaitUntil(const std::function<bool(const DraRecord&)>& done, absl::Time deadline) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  DraRecord record_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DRA_RECORDER_H_
