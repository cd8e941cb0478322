// DraReconciler: the kubelet's DRA reconcile loop (pkg/kubelet/cm/dra: every 60 s, once all config
// sources are ready). Every `period`, and once at Start, terminating pods finish their deletion (a
// driver that failed NodeUnprepareResources, a deletion cut by a crash), then claims still
// referencing pods that are no longer active are unprepared (pods deleted while the manager was
// down, failed rejections). Node owns one and starts it once the pod source is ready (restored).
//
// Thread-safety: thread-safe. Start once; Stop may be called from any thread, more than once, or
// without Start, and returns once a pass in progress has finished.
#ifndef KDP_MANAGER_SRC_DRA_RECONCILER_H_
#define KDP_MANAGER_SRC_DRA_RECONCILER_H_

#include "absl/time/time.h"
#include "common/periodic_thread.h"

namespace kdp::manager {

class PodManager;

namespace dra {

class DraManager;

class DraReconciler {
 public:
  // `dra` and `pods` are borrowed and must outlive this reconciler (or its Stop()).
  DraReconciler(DraManager* dra, PodManager* pods, absl::Duration period);
  DraReconciler(const DraReconciler&) = delete;
  DraReconciler& operator=(const DraReconciler&) = delete;
  ~DraReconciler();  // Stops.

  // Runs one pass now, on the reconcile thread, then one every period. REQUIRES: the pod source
  // is ready (PodManager::Restore was called). A second Start does nothing.
  void Start();
  void Stop();

  // One pass on the caller's thread (what the thread runs each period). A failed unprepare is
  // logged and retried on the next pass, as the kubelet retries it.
  void ReconcileOnce();

 private:
  DraManager* const dra_;
  PodManager* const pods_;
  const absl::Duration period_;
  PeriodicThread thread_;
};

}  // namespace dra
}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DRA_RECONCILER_H_
