#include "manager/src/controlplane/resourceclaim/device_taint_eviction.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "manager/src/controlplane/scheduling/device_sharing.h"
#include "manager/src/podmanager/pod_manager.h"

namespace kdp::manager::resourceclaim {
namespace {

using resourceapi::DeviceTaint;
using resourceapi::DeviceToleration;

// The newest generation's devices of each pool, by "<driver>/<pool>/<device>".
std::map<std::string, const resourceapi::Device*> CurrentDevices(
    const std::vector<resourceapi::ResourceSlice>& slices) {
  std::map<std::pair<std::string, std::string>, int64_t> generation;
  for (const resourceapi::ResourceSlice& s : slices) {
    auto key = std::make_pair(s.spec.driver, s.spec.pool.name);
    auto [it, inserted] = generation.emplace(key, s.spec.pool.generation);
    if (!inserted && s.spec.pool.generation > it->second) it->second = s.spec.pool.generation;
  }
  std::map<std::string, const resourceapi::Device*> out;
  for (const resourceapi::ResourceSlice& s : slices) {
    if (s.spec.pool.generation != generation[{s.spec.driver, s.spec.pool.name}]) continue;
    for (const resourceapi::Device& d : s.spec.devices) {
      out[absl::StrCat(s.spec.driver, "/", s.spec.pool.name, "/", d.name)] = &d;
    }
  }
  return out;
}

absl::Time ParseTime(const std::optional<std::string>& text) {
  absl::Time t;
  std::string err;
  if (text && absl::ParseTime(absl::RFC3339_full, *text, &t, &err)) return t;
  return absl::InfinitePast();
}

}  // namespace

EvictionPlan PlanEvictions(const std::vector<resourceapi::ResourceClaim>& claims,
                           const std::vector<resourceapi::ResourceSlice>& slices, absl::Time now,
                           TaintFirstSeen* first_seen) {
  EvictionPlan plan;
  const std::map<std::string, const resourceapi::Device*> devices = CurrentDevices(slices);
  TaintFirstSeen still_seen;
  for (const resourceapi::ResourceClaim& claim : claims) {
    if (!claim.status.allocation || claim.status.reserved_for.empty()) continue;
    for (const resourceapi::DeviceRequestAllocationResult& r : claim.status.allocation->results) {
      const std::string id = absl::StrCat(r.driver, "/", r.pool, "/", r.device);
      auto device = devices.find(id);
      if (device == devices.end()) continue;
      for (const DeviceTaint& taint : device->second->taints) {
        if (taint.effect != resourceapi::kTaintEffectNoExecute) continue;
        const std::string seen_key = absl::StrCat(id, "|", taint.key, "=", taint.value);
        auto [seen, inserted] = first_seen->emplace(seen_key, now);
        still_seen[seen_key] = seen->second;
        absl::Time added = ParseTime(taint.time_added);
        if (added == absl::InfinitePast()) added = seen->second;
        // Tolerated forever, or until the longest tolerationSeconds of a matching toleration.
        std::optional<absl::Time> evict_at = now;
        for (const DeviceToleration& t : r.tolerations) {
          if (!scheduling::ToleratesTaint(t, taint)) continue;
          if (!t.toleration_seconds) {
            evict_at.reset();
            break;
          }
          absl::Time at = added + absl::Seconds(std::max<int64_t>(0, *t.toleration_seconds));
          if (evict_at == now || at > *evict_at) evict_at = at;
        }
        if (!evict_at) continue;
        if (*evict_at > now) {
          if (!plan.next || *evict_at < *plan.next) plan.next = *evict_at;
          continue;
        }
        for (const resourceapi::ConsumerReference& consumer : claim.status.reserved_for) {
          if (consumer.resource != "pods" || !consumer.api_group.empty()) continue;
          plan.due.push_back({claim.metadata.namespace_, consumer.name, consumer.uid,
                              absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name), id,
                              taint});
        }
      }
    }
  }
  *first_seen = std::move(still_seen);  // forget taints that went away
  return plan;
}

DeviceTaintEvictor::DeviceTaintEvictor(resourceapi::ObjectStore* store, PodManager* pods,
                                       absl::Duration period)
    : store_(store), pods_(pods), period_(period) {}

void DeviceTaintEvictor::Start() {
  thread_.Start(
      period_, [this] { RunOnce(); }, /*run_at_start=*/true);
}

int DeviceTaintEvictor::RunOnce() {
  std::vector<Eviction> due;
  {
    absl::MutexLock lock(&mu_);
    const int64_t version = store_->ResourceVersion();
    const absl::Time now = absl::Now();
    if (version == seen_version_ && (!next_ || *next_ > now)) return 0;
    absl::StatusOr<std::vector<resourceapi::ResourceClaim>> claims = store_->ListClaims("");
    absl::StatusOr<std::vector<resourceapi::ResourceSlice>> slices = store_->ListSlices("");
    if (!claims.ok() || !slices.ok()) {
      KDP_LOG_ERROR("Device taint eviction cannot read the resource API", "err",
                    (!claims.ok() ? claims.status() : slices.status()).ToString());
      return 0;
    }
    EvictionPlan plan = PlanEvictions(*claims, *slices, now, &first_seen_);
    seen_version_ = version;
    next_ = plan.next;
    due = std::move(plan.due);
  }
  int deleted = 0;
  std::set<std::string> done;
  for (const Eviction& e : due) {
    if (!done.insert(e.pod_uid).second) continue;
    // The claim names the pod by UID: a pod since re-created under the name is not the one.
    std::optional<AdmittedPod> pod = pods_->Get(e.pod_namespace, e.pod_name);
    if (!pod || pod->pod.uid != e.pod_uid) continue;
    KDP_LOG_INFO("Evicting pod: a device of its claim has a NoExecute taint it does not tolerate",
                 "pod", absl::StrCat(e.pod_namespace, "/", e.pod_name), "claim", e.claim, "device",
                 e.device, "taint",
                 absl::StrCat(e.taint.key, "=", e.taint.value, ":", e.taint.effect));
    absl::StatusOr<std::string> uid = pods_->Delete(e.pod_namespace, e.pod_name);
    if (uid.ok()) {
      ++deleted;
    } else if (!absl::IsNotFound(uid.status())) {
      KDP_LOG_ERROR("Device taint eviction failed; retried next pass", "pod", e.pod_name, "err",
                    uid.status().ToString());
      absl::MutexLock lock(&mu_);
      seen_version_ = -1;
    }
  }
  return deleted;
}

}  // namespace kdp::manager::resourceclaim
