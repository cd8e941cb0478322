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
  std::string path = (*checkpointer)->path();
  std::unique_ptr<ClaimInfoCache> cache(
      new ClaimInfoCache(*std::move(checkpointer), nullptr, std::move(path)));
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

absl::StatusOr<std::unique_ptr<ClaimInfoCache>> ClaimInfoCache::CreateJournaled(
    StateStore* store, std::vector<state::ClaimInfoState> restored) {
  if (store == nullptr || !store->keeps_dra_state()) {
    return absl::InvalidArgumentError(
        "a journalled claim cache needs a state store with DRA state");
  }
  std::unique_ptr<ClaimInfoCache> cache(
      new ClaimInfoCache(nullptr, store, store->dra_checkpoint_path()));
  {
    absl::MutexLock lock(&cache->mu_);
    for (const state::ClaimInfoState& claim : restored) {
      cache->contents_.Add(ClaimInfo::FromState(claim));  // not prepared, as in Create
    }
  }
  absl::MutexLock write_lock(&cache->write_mu_);
  for (state::ClaimInfoState& claim : restored) {
    std::string key = ClaimInfoKey(claim.claim_name, claim.namespace_);
    cache->recorded_[std::move(key)] = std::move(claim);
  }
  cache->written_once_ = true;
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

absl::Status ClaimInfoCache::SyncToCheckpoint(Durability durability) {
  std::vector<state::ClaimInfoState> snapshot;
  uint64_t generation = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    snapshot = contents_.Snapshot();
    generation = generation_;
  }
  absl::MutexLock write_lock(&write_mu_);
  const bool sync = durability == Durability::kDurable;
  if (written_once_ && written_generation_ >= generation) {
    // A newer snapshot already written holds everything this one does; journalled, it may not
    // be durable yet (an empty synced record makes it so).
    return store_ != nullptr && sync ? store_->RecordDraClaims({}, {}, /*sync=*/true)
                                     : absl::OkStatus();
  }
  if (store_ == nullptr) {
    if (absl::Status stored = checkpointer_->Store(snapshot); !stored.ok()) return stored;
  } else {
    std::map<std::string, state::ClaimInfoState> now;
    for (state::ClaimInfoState& claim : snapshot) {
      std::string key = ClaimInfoKey(claim.claim_name, claim.namespace_);
      now.emplace(std::move(key), std::move(claim));
    }
    std::vector<state::ClaimInfoState> changed;
    std::vector<std::string> deleted;
    for (const auto& [key, claim] : now) {
      auto it = recorded_.find(key);
      if (it == recorded_.end() || it->second != claim) changed.push_back(claim);
    }
    for (const auto& [key, claim] : recorded_) {
      if (now.count(key) == 0) deleted.push_back(key);
    }
    if (!changed.empty() || !deleted.empty() || sync) {
      if (absl::Status recorded = store_->RecordDraClaims(changed, deleted, sync); !recorded.ok()) {
        return recorded;
      }
    }
    recorded_ = std::move(now);
  }
  written_generation_ = generation;
  written_once_ = true;
  return absl::OkStatus();
}

}  // namespace kdp::manager::dra
