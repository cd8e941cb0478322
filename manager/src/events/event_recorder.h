// EventRecorder writes core v1 Events about the node's objects (Pods, the Node) to kdp-manager's
// local API, as the kubelet's and the scheduler's event recorders post them to the API server, so
// `kubectl describe pod` and `kubectl get events` show why a pod runs or was refused. Repeats of
// one event (same object, type, reason and message) are counted on the first Event (count,
// lastTimestamp), as client-go's event correlator aggregates them. The recorder keeps at most
// `max_events` of its Events, deleting the oldest beyond (kube-apiserver expires Events after an
// hour): a manager that admits pods for weeks does not grow without bound.
//
// Thread-safety: thread-safe.
#ifndef KDP_MANAGER_SRC_EVENTS_EVENT_RECORDER_H_
#define KDP_MANAGER_SRC_EVENTS_EVENT_RECORDER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager {

// The object an Event is about (involvedObject).
struct ObjectReference {
  std::string kind;        // "Pod", "Node"
  std::string namespace_;  // empty for the Node
  std::string name;
  std::string uid;
  std::string api_version = "v1";
};

// Who reports: the kubelet on its node, or the scheduler.
struct EventSource {
  std::string component;  // "kubelet", "default-scheduler"
  std::string host;       // the node name; empty for the scheduler
};

inline constexpr char kEventNormal[] = "Normal";
inline constexpr char kEventWarning[] = "Warning";

class EventRecorder {
 public:
  // `store` is borrowed and must outlive the recorder; `now` defaults to absl::Now.
  explicit EventRecorder(resourceapi::ObjectStore* store, std::function<absl::Time()> now = nullptr,
                         size_t max_events = 1000);
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Records one event. Events about cluster-scoped objects go to namespace "default", as the
  // kubelet posts its node's events. Never fails: a store error is logged (events are best
  // effort in Kubernetes too).
  void Record(const ObjectReference& object, const EventSource& source, const std::string& type,
              const std::string& reason, const std::string& message) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  resourceapi::ObjectStore* const store_;
  const std::function<absl::Time()> now_;
  const size_t max_events_;
  absl::Mutex mu_;
  // The Events this recorder made (namespace, name), oldest first.
  std::deque<std::pair<std::string, std::string>> recorded_ ABSL_GUARDED_BY(mu_);
  // (uid or namespace/name, type, reason, message) -> the Event's namespace and name.
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::pair<std::string, std::string>>
      seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_EVENTS_EVENT_RECORDER_H_
