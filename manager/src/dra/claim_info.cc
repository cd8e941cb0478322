#include "manager/src/dra/claim_info.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace kdp::manager::dra {
namespace {

constexpr char kAnyDriver[] = "<any>";

// "driver=+1 <any>=-1" style description of a usage change, for the debug log.
std::string UsageDelta(const std::map<std::string, int64_t>& before,
                       const std::map<std::string, int64_t>& after) {
  std::map<std::string, int64_t> delta;
  for (const auto& [driver, count] : after) delta[driver] += count;
  for (const auto& [driver, count] : before) delta[driver] -= count;
  std::string out;
  for (const auto& [driver, change] : delta) {
    if (change == 0) continue;
    absl::StrAppend(&out, out.empty() ? "" : " ", driver, "=", change > 0 ? "+" : "", change);
  }
  return out;
}

}  // namespace

std::string ClaimInfoKey(const std::string& claim_name, const std::string& namespace_) {
  return absl::StrCat(namespace_, "/", claim_name);
}

// ---- ClaimInfo ----------------------------------------------------------------------------------

absl::StatusOr<ClaimInfo> ClaimInfo::FromClaim(const resourceapi::ResourceClaim& claim) {
  if (!claim.status.allocation.has_value()) return absl::FailedPreconditionError("not allocated");
  ClaimInfo info;
  info.state_.claim_uid = claim.metadata.uid;
  info.state_.claim_name = claim.metadata.name;
  info.state_.namespace_ = claim.metadata.namespace_;
  for (const resourceapi::DeviceRequestAllocationResult& result :
       claim.status.allocation->results) {
    info.state_.driver_state.try_emplace(result.driver);
  }
  return info;
}

ClaimInfo ClaimInfo::FromState(const state::ClaimInfoState& state) {
  ClaimInfo info;
  info.state_ = state;
  return info;
}

void ClaimInfo::AddDevice(const std::string& driver, state::Device device) {
  state_.driver_state[driver].devices.push_back(std::move(device));
}

void ClaimInfo::SetDevices(const std::string& driver, std::vector<state::Device> devices) {
  state_.driver_state[driver].devices = std::move(devices);
}

void ClaimInfo::AddPodReference(const std::string& pod_uid) { state_.pod_uids.insert(pod_uid); }

bool ClaimInfo::HasPodReference(const std::string& pod_uid) const {
  return state_.pod_uids.count(pod_uid) > 0;
}

void ClaimInfo::DeletePodReference(const std::string& pod_uid) { state_.pod_uids.erase(pod_uid); }

std::vector<std::string> ClaimInfo::CdiDeviceIds(const std::string& request) const {
  std::vector<std::string> ids;
  for (const auto& [driver, driver_state] : state_.driver_state) {
    for (const state::Device& device : driver_state.devices) {
      if (request.empty() || device.request_names.empty() ||
          std::find(device.request_names.begin(), device.request_names.end(), request) !=
              device.request_names.end()) {
        ids.insert(ids.end(), device.cdi_device_ids.begin(), device.cdi_device_ids.end());
      }
    }
  }
  return ids;
}

// ---- ClaimInfoCache::Contents -------------------------------------------------------------------

void ClaimInfoCache::Contents::Add(ClaimInfo info) {
  std::string key = info.key();
  claims_.insert_or_assign(std::move(key), std::move(info));
}

bool ClaimInfoCache::Contents::Contains(const std::string& claim_name,
                                        const std::string& namespace_) const {
  return claims_.count(ClaimInfoKey(claim_name, namespace_)) > 0;
}

ClaimInfo* ClaimInfoCache::Contents::Get(const std::string& claim_name,
                                         const std::string& namespace_) {
  auto it = claims_.find(ClaimInfoKey(claim_name, namespace_));
  return it == claims_.end() ? nullptr : &it->second;
}

const ClaimInfo* ClaimInfoCache::Contents::Get(const std::string& claim_name,
                                               const std::string& namespace_) const {
  auto it = claims_.find(ClaimInfoKey(claim_name, namespace_));
  return it == claims_.end() ? nullptr : &it->second;
}

void ClaimInfoCache::Contents::Delete(const std::string& claim_name,
                                      const std::string& namespace_) {
  claims_.erase(ClaimInfoKey(claim_name, namespace_));
}

bool ClaimInfoCache::Contents::HasPodReference(const std::string& pod_uid) const {
  return std::any_of(claims_.begin(), claims_.end(),
                     [&](const auto& entry) { return entry.second.HasPodReference(pod_uid); });
}

std::map<std::string, int64_t> ClaimInfoCache::Contents::ClaimsInUse() const {
  std::map<std::string, int64_t> in_use = {{kAnyDriver, 0}};
  for (const auto& [key, info] : claims_) {
    if (!info.IsPrepared()) continue;
    ++in_use[kAnyDriver];
    for (const auto& [driver, driver_state] : info.state().driver_state) ++in_use[driver];
  }
  return in_use;
}

std::vector<state::ClaimInfoState> ClaimInfoCache::Contents::Snapshot() const {
  std::vector<state::ClaimInfoState> snapshot;
  snapshot.reserve(claims_.size());
  for (const auto& [key, info] : claims_) snapshot.push_back(info.state());
  return snapshot;
}

// ---- ClaimInfoCache -----------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<ClaimInfoCache>> ClaimInfoCache::Create(
    const std::string& state_dir, const std::string& checkpoint_name) {
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer =
      Checkpointer::Create(state_dir, checkpoint_name);
  if (!checkpointer.ok()) return checkpointer.status();
  absl::StatusOr<std::vector<state::ClaimInfoState>> restored = (*checkpointer)->GetOrCreate();
  if (!restored.ok()) return restored.status();
  std::unique_ptr<ClaimInfoCache> cache(new ClaimInfoCache(*std::move(checkpointer)));
  {
    absl::MutexLock lock(&cache->mu_);
    // Restored claims are not prepared (as newClaimInfoFromState in the kubelet's
    // pkg/kubelet/cm/dra/claiminfo.go): the next sandbox re-calls the drivers.
    for (const state::ClaimInfoState& claim : *restored) {
      cache->contents_.Add(ClaimInfo::FromState(claim));
    }
  }
  return cache;
}

absl::Status ClaimInfoCache::WithLock(absl::FunctionRef<absl::Status(Contents&)> f) {
  std::map<std::string, int64_t> before, after;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    before = contents_.ClaimsInUse();
    status = f(contents_);
    ++generation_;
    after = contents_.ClaimsInUse();
  }
  if (before != after) {
    KDP_LOG_DEBUG("ResourceClaim usage changed", "delta", UsageDelta(before, after));
  }
  return status;
}

absl::Status ClaimInfoCache::WithRLock(absl::FunctionRef<absl::Status(const Contents&)> f) const {
  absl::ReaderMutexLock lock(&mu_);
  return f(contents_);
}

absl::Status ClaimInfoCache::SyncToCheckpoint() {
  std::vector<state::ClaimInfoState> snapshot;
  uint64_t generation = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    snapshot = contents_.Snapshot();
    generation = generation_;
  }
  absl::MutexLock write_lock(&write_mu_);
  // A newer snapshot already on disk holds everything this one does.
  if (written_once_ && written_generation_ >= generation) return absl::OkStatus();
  if (absl::Status stored = checkpointer_->Store(snapshot); !stored.ok()) return stored;
  written_generation_ = generation;
  written_once_ = true;
  return absl::OkStatus();
}

}  // namespace kdp::manager::dra
