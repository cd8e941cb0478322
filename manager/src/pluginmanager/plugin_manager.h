// PluginManager is the kubelet's pkg/kubelet/pluginmanager for kdp-manager: a PluginWatcher on
// <kubelet-root>/plugins_registry feeds the desired state of the world (socket path → which
// socket file, when seen); a reconciler drives the actual state of the world (registered
// plugins) towards it. A socket that appears is registered (RegisterPluginAt, on an operation
// thread of its own); one that goes away is deregistered (handler's DeRegisterPlugin); one
// re-created at the same path is deregistered, then registered again. A failed registration is
// retried with exponential backoff per socket (the kubelet's goroutinemap: 500 ms doubling up to
// 2 min 2 s), restarting the whole sequence. The reconciler sleeps on a condition variable until
// the watcher reports a change, an operation ends or a retry is due: nothing polls.
//
// Differences from the kubelet, on purpose: a socket whose handler's RegisterPlugin failed is
// retried (the kubelet records it as registered and never retries); a socket re-created at the
// same path starts with a fresh backoff; a directory or socket moved away counts as removed.
//
// Thread-safe. Handlers are added before Start(); Stop() may be called more than once or
// without Start(), and waits for operations in flight (at most one dial slice, GetInfo and
// NotifyRegistrationStatus deadline each). Stopping does not deregister anything, as in the
// kubelet (plugins stay registered with their consumers until those stop).
#ifndef KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_MANAGER_H_
#define KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/pluginmanager/operation_executor.h"
#include "manager/src/pluginmanager/plugin_handler.h"
#include "manager/src/pluginmanager/plugin_watcher.h"

namespace kdp::manager::pluginmanager {

struct PluginManagerOptions {
  // <kubelet-root>/plugins_registry; created (0750) when missing.
  std::string dir;
  // Dial, GetInfo and NotifyRegistrationStatus deadlines (10 s, 1 s, 5 s as in the kubelet).
  RegistrationTimeouts timeouts = {};
  // Delay before the first retry of a failed registration, doubled on every further failure of
  // the same socket up to max_backoff (goroutinemap's initialDurationBeforeRetry and
  // maxDurationBeforeRetry).
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Minutes(2) + absl::Seconds(2);
};

class PluginManager {
 public:
  explicit PluginManager(PluginManagerOptions options);
  ~PluginManager();  // Stops.

  PluginManager(const PluginManager&) = delete;
  PluginManager& operator=(const PluginManager&) = delete;

  // Routes plugins of PluginInfo.type `type` to `handler` (borrowed; must outlive the manager).
  // REQUIRES: before Start().
  void AddHandler(const std::string& type, PluginHandler* handler) ABSL_LOCKS_EXCLUDED(mu_);

  // Starts the watcher (walking the directory: sockets already there are registered) and the
  // reconciler. INTERNAL when the directory cannot be created or watched; FAILED_PRECONDITION
  // when started already.
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The actual state of the world, ordered by socket path.
  std::vector<RegisteredPlugin> Registered() const ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& dir() const { return options_.dir; }

 private:
  // One socket file wanted registered.
  struct Desired {
    SocketId id;
    uint64_t generation = 0;  // the kubelet's UUID: changes when the socket is re-created
  };
  struct Actual {
    uint64_t generation = 0;
    PluginHandler* handler = nullptr;
    RegisteredPlugin plugin;
  };
  // At most one operation per socket path at a time (goroutinemap's per-name exclusion), and
  // the backoff of its failed registrations.
  struct Operation {
    bool running = false;
    std::thread thread;
    int failures = 0;
    absl::Time retry_at = absl::InfinitePast();
  };

  void OnSocketCreated(const std::string& path, const SocketId& id) ABSL_LOCKS_EXCLUDED(mu_);
  void OnPathRemoved(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  void OnResynced(const std::map<std::string, SocketId>& sockets) ABSL_LOCKS_EXCLUDED(mu_);
  void AddDesiredLocked(const std::string& path, const SocketId& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void ReconcileLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the operations the difference between the two states calls for; returns the
  // earliest time a backed-off registration becomes due (InfiniteFuture: none).
  absl::Time ReconcileLocked(std::vector<std::thread>* finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunRegister(std::string path, uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_);
  void RunUnregister(std::string path, Actual actual) ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the operation on `path` done and wakes the reconciler.
  void FinishOperationLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PluginManagerOptions options_;
  std::map<std::string, PluginHandler*> handlers_;  // written before Start() only
  PluginWatcher watcher_;
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, Desired> desired_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Actual> actual_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Operation> operations_ ABSL_GUARDED_BY(mu_);
  std::thread reconciler_;  // started by Start(), joined by Stop()
};

}  // namespace kdp::manager::pluginmanager

#endif  // KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_MANAGER_H_
