// PluginRecorder keeps what an embedded kdp-manager's device manager told it
// (DevicePluginObserver): every Register call with its answer, the options each dialled-back
// plugin answered, every ListAndWatch message, the end of each stream and each unary call, with
// the time it happened, so that a scenario can wait for an exchange and judge it.
//
// Thread-safety: thread-safe. The observer methods run on the manager's threads; the waits and
// the copies on the scenario's.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_RECORDER_H_
#define KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_RECORDER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "manager/src/devicemanager/plugin_observer.h"

namespace kdp::manager::conformance {

struct RecordedRegistration {
  absl::Time at;
  v1beta1::RegisterRequest request;
  absl::Status answer;
};

struct RecordedConnection {
  absl::Time at;
  std::string resource;
  std::string socket;
  v1beta1::DevicePluginOptions options;
};

struct RecordedList {
  absl::Time at;
  std::string resource;
  std::string socket;
  v1beta1::ListAndWatchResponse response;
};

struct RecordedStreamEnd {
  absl::Time at;
  std::string resource;
  std::string socket;
  absl::Status status;
};

struct RecordedAllocate {
  absl::Time at;
  std::string resource;
  v1beta1::AllocateRequest request;
  absl::StatusOr<v1beta1::AllocateResponse> response;
};

struct RecordedPreStart {
  absl::Time at;
  std::string resource;
  v1beta1::PreStartContainerRequest request;
  absl::Status status;
};

// Everything recorded so far, copied.
struct PluginRecord {
  std::vector<RecordedRegistration> registrations;
  std::vector<RecordedConnection> connections;
  std::vector<RecordedList> lists;
  std::vector<RecordedStreamEnd> stream_ends;
  std::vector<RecordedAllocate> allocations;
  std::vector<RecordedPreStart> pre_starts;
};

class PluginRecorder final : public DevicePluginObserver {
 public:
  // DevicePluginObserver.
  void Registered(const v1beta1::RegisterRequest& request, const absl::Status& answer) override;
  void Connected(const std::string& resource, const std::string& socket,
                 const v1beta1::DevicePluginOptions& options) override;
  void Listed(const std::string& resource, const std::string& socket,
              const v1beta1::ListAndWatchResponse& response) override;
  void StreamEnded(const std::string& resource, const std::string& socket,
                   const absl::Status& status) override;
  void Allocated(const std::string& resource, const std::string& socket,
                 const v1beta1::AllocateRequest& request,
                 const absl::StatusOr<v1beta1::AllocateResponse>& response) override;
  void Preferred(const std::string& resource, const std::string& socket,
                 const v1beta1::PreferredAllocationRequest& request,
                 const absl::StatusOr<v1beta1::PreferredAllocationResponse>& response) override;
  void PreStarted(const std::string& resource, const std::string& socket,
                  const v1beta1::PreStartContainerRequest& request,
                  const absl::Status& status) override;

  PluginRecord Copy() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `done` holds for what was recorded, or `deadline`; returns whether it held.
  // `done` runs with the recorder locked: it must not call back into it.
  bool WaitUntil(const std::function<bool(const PluginRecord&)>& done, absl::Time deadline) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  PluginRecord record_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_RECORDER_H_
