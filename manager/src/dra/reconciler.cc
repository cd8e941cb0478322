// The kubelet's DRA reconcile loop (reconciler.h).
#include "manager/src/dra/reconciler.h"

#include <set>
#include <string>

#include "absl/status/status.h"
#include "common/logging.h"
#include "manager/src/dra/manager.h"
#include "manager/src/podmanager/pod_manager.h"

namespace kdp::manager::dra {

DraReconciler::DraReconciler(DraManager* dra, PodManager* pods, absl::Duration period)
    : dra_(dra), pods_(pods), period_(period) {}

DraReconciler::~DraReconciler() { Stop(); }

void DraReconciler::Start() {
  thread_.Start(
      period_, [this] { ReconcileOnce(); }, /*run_at_start=*/true);
}

void DraReconciler::Stop() { thread_.Stop(); }

void DraReconciler::ReconcileOnce() {
  pods_->FinishTerminating();
  pods_->WithActivePodsSettled([this](const std::set<std::string>& active) {
    if (absl::Status reconciled = dra_->ReconcileOrphans(active); !reconciled.ok()) {
      KDP_LOG_WARNING("Unpreparing claims of pods that are gone failed; will retry", "err",
                      reconciled.message());
    }
  });
}

}  // namespace kdp::manager::dra
