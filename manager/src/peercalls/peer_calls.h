// PeerCallTracker records the calls kdp-manager has in flight to its peers (device plugins and DRA
// drivers), so that whoever waits on the manager can be told what the manager itself waits on:
// the admin API lists them (ListPeerCalls, NodeStatus.peer_calls) and kdpctl prints them while a
// command waits ("kdp-manager is waiting on example.com/gpu's Allocate (12s of 30s)"). The
// DeviceManager owns one for Allocate, GetPreferredAllocation and PreStartContainer, the
// DraManager one for NodePrepareResources and NodeUnprepareResources; a call is recorded by a
// PeerCallScope from just before the RPC until it returns.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_PEERCALLS_PEER_CALLS_H_
#define KDP_MANAGER_SRC_PEERCALLS_PEER_CALLS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kdp::manager {

// Which kind of peer a call goes to.
enum class PeerKind { kDevicePlugin, kDraDriver };
// "device-plugin" or "dra-driver", as the admin API and kdpctl name them.
inline const char* PeerKindName(PeerKind kind) {
  return kind == PeerKind::kDraDriver ? "dra-driver" : "device-plugin";
}

// One call in flight.
struct PeerCall {
  PeerKind kind = PeerKind::kDevicePlugin;
  // The resource name (device plugin) or the driver name (DRA driver).
  std::string peer;
  // The RPC: "Allocate", "GetPreferredAllocation", "PreStartContainer", "NodePrepareResources",
  // "NodeUnprepareResources".
  std::string method;
  // The pod the call is for: "<namespace>/<name>" when known, else its UID; empty for none.
  std::string pod;
  // The peer's socket.
  std::string endpoint;
  // When the call started (the tracker's clock) and its deadline's duration (zero: unknown).
  absl::Time started;
  absl::Duration timeout;
};

class PeerCallTracker {
 public:
  // `now`: the clock calls are stamped with; absl::Now when empty.
  explicit PeerCallTracker(std::function<absl::Time()> now = {}) : now_(std::move(now)) {}
  PeerCallTracker(const PeerCallTracker&) = delete;
  PeerCallTracker& operator=(const PeerCallTracker&) = delete;

  // Records `call` (stamped started now) until the returned scope is destroyed.
  class Scope;
  [[nodiscard]] inline Scope Begin(PeerCall call) ABSL_LOCKS_EXCLUDED(mu_);

  // The calls in flight now, oldest first.
  std::vector<PeerCall> InFlight() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<PeerCall> out;
    out.reserve(calls_.size());
    // Ids grow with time: the map's order is the start order.
    for (const auto& [id, call] : calls_) out.push_back(call);
    return out;
  }

  absl::Time Now() const { return now_ ? now_() : absl::Now(); }

 private:
  void End(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    calls_.erase(id);
  }

  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, PeerCall> calls_ ABSL_GUARDED_BY(mu_);
};

// Ends the recording of one call when destroyed. Move-only; a moved-from scope records nothing.
class PeerCallTracker::Scope {
 public:
  Scope(Scope&& other) noexcept : tracker_(other.tracker_), id_(other.id_) {
    other.tracker_ = nullptr;
  }
  Scope& operator=(Scope&&) = delete;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() {
    if (tracker_ != nullptr) tracker_->End(id_);
  }

 private:
  friend class PeerCallTracker;
  Scope(PeerCallTracker* tracker, uint64_t id) : tracker_(tracker), id_(id) {}
  PeerCallTracker* tracker_;
  uint64_t id_;
};

PeerCallTracker::Scope PeerCallTracker::Begin(PeerCall call) {
  call.started = Now();
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  calls_.emplace(id, std::move(call));
  return Scope(this, id);
}

// Every call of several trackers (null ones skipped), oldest first.
inline std::vector<PeerCall> InFlightPeerCalls(
    const std::vector<const PeerCallTracker*>& trackers) {
  std::vector<PeerCall> out;
  for (const PeerCallTracker* tracker : trackers) {
    if (tracker == nullptr) continue;
    std::vector<PeerCall> calls = tracker->InFlight();
    out.insert(out.end(), std::make_move_iterator(calls.begin()),
               std::make_move_iterator(calls.end()));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PeerCall& a, const PeerCall& b) { return a.started < b.started; });
  return out;
}

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_PEERCALLS_PEER_CALLS_H_
