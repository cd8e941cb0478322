// PeriodicThread runs a function every period on a thread of its own until stopped, as the
// kubelet's wait.Until loops do (node status, pod status, certificate renewal, DRA reconcile).
// Stop wakes the thread at once instead of letting it sleep out its period.
//
// Thread-safety: thread-safe. Start once; Stop may be called from any thread, more than once,
// or without Start, and returns once a run in progress has finished.
#ifndef KDP_COMMON_PERIODIC_THREAD_H_
#define KDP_COMMON_PERIODIC_THREAD_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kdp {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  // Stops the thread.
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Runs `fn` every `period` (the first time at once when `run_at_start`, else after one
  // period). A Start after Stop, or a second Start, does nothing.
  void Start(absl::Duration period, std::function<void()> fn, bool run_at_start = false)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (stopping_ || thread_.joinable()) return;
    thread_ = std::thread([this, period, fn = std::move(fn), run_at_start] {
      if (run_at_start) fn();
      while (!WaitForStop(period)) fn();
    });
  }

  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    std::thread thread;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      thread = std::move(thread_);
    }
    if (thread.joinable()) thread.join();
  }

 private:
  // True when Stop was called, at once or within `period`.
  bool WaitForStop(absl::Duration period) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
  }

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp

#endif  // KDP_COMMON_PERIODIC_THREAD_H_
