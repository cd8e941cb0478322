#include "manager/src/dra/manager.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace kdp::manager::dra {
namespace {

absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// "<method>: rpc error: code = DeadlineExceeded desc = …", as the kubelet wraps a gRPC error.
absl::Status RpcError(absl::string_view method, const absl::Status& status) {
  std::string text(status.message());
  if (!absl::StartsWith(text, "rpc error:")) {
    text = absl::StrCat(
        "rpc error: code = ", GoGrpcCodeName(static_cast<grpc::StatusCode>(status.code())),
        " desc = ", text);
  }
  return absl::Status(status.code(), absl::StrCat(method, ": ", text));
}

// resourceclaim.Name: the claim a pod claim refers to. nullopt: no claim is needed (a template
// claim whose status entry names no claim).
struct ResolvedName {
  std::optional<std::string> name;
  bool must_check_owner = false;
};

absl::StatusOr<ResolvedName> ClaimName(const Pod& pod, const PodResourceClaim& pod_claim) {
  if (!pod_claim.resource_claim_name.empty()) {
    return ResolvedName{.name = pod_claim.resource_claim_name, .must_check_owner = false};
  }
  if (!pod_claim.resource_claim_template_name.empty()) {
    auto it = pod.resource_claim_statuses.find(pod_claim.name);
    if (it == pod.resource_claim_statuses.end()) {
      return absl::FailedPreconditionError(absl::StrCat("pod \"", pod.namespace_, "/", pod.name,
                                                        "\": ResourceClaim not created yet"));
    }
    if (it->second.empty()) return ResolvedName{.name = std::nullopt, .must_check_owner = true};
    return ResolvedName{.name = it->second, .must_check_owner = true};
  }
  return absl::InvalidArgumentError(absl::StrCat("pod \"", pod.namespace_, "/", pod.name,
                                                 "\", spec.resourceClaim \"", pod_claim.name,
                                                 "\": none of the supported fields are set"));
}

// resourceclaim.IsForPod: a generated claim must be controlled by the pod.
absl::Status IsForPod(const Pod& pod, const resourceapi::ResourceClaim& claim) {
  const bool controlled = std::any_of(
      claim.metadata.owner_references.begin(), claim.metadata.owner_references.end(),
      [&](const resourceapi::OwnerReference& ref) { return ref.controller && ref.uid == pod.uid; });
  if (claim.metadata.namespace_ != pod.namespace_ || !controlled) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ResourceClaim ", claim.metadata.namespace_, "/", claim.metadata.name,
        " was not created for pod ", pod.namespace_, "/", pod.name, " (pod is not owner)"));
  }
  return absl::OkStatus();
}

// resourceclaim.IsReservedForPod.
bool IsReservedForPod(const Pod& pod, const resourceapi::ResourceClaim& claim) {
  return std::any_of(claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
                     [&](const resourceapi::ConsumerReference& ref) { return ref.uid == pod.uid; });
}

drapb::Claim WireClaim(const std::string& namespace_, const std::string& uid,
                       const std::string& name) {
  drapb::Claim claim;
  claim.set_namespace_(namespace_);
  claim.set_uid(uid);
  claim.set_name(name);
  return claim;
}

const drapb::Claim* LookupClaim(const std::vector<drapb::Claim>& claims, const std::string& uid) {
  for (const drapb::Claim& claim : claims) {
    if (claim.uid() == uid) return &claim;
  }
  return nullptr;
}

state::Device FromWire(const drapb::Device& device) {
  state::Device out;
  out.pool_name = device.pool_name();
  out.device_name = device.device_name();
  if (device.has_share_id()) out.share_id = device.share_id();
  out.request_names.assign(device.request_names().begin(), device.request_names().end());
  out.cdi_device_ids.assign(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
  return out;
}

// Map keys in a stable order (protobuf map iteration order is unspecified).
template <typename Map>
std::vector<std::string> SortedKeys(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

absl::Status LockedOperation(const absl::Status& status) {
  return status.ok() ? status : Prefixed(status, "locked cache operation: ");
}

absl::Status CheckpointError(const absl::Status& status) {
  return status.ok() ? status
                     : Prefixed(status, "locked cache operation: checkpoint ResourceClaim state: ");
}

}  // namespace

absl::StatusOr<std::unique_ptr<DraManager>> DraManager::Create(DraManagerOptions options) {
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("DRA manager: empty state directory");
  }
  if (options.claims == nullptr || options.plugins == nullptr) {
    return absl::InvalidArgumentError("DRA manager: a ClaimGetter and DraPlugins are required");
  }
  if (options.health_state_name.empty()) {
    return absl::InvalidArgumentError("DRA manager: empty health state file name");
  }
  absl::StatusOr<std::unique_ptr<ClaimInfoCache>> cache =
      options.store != nullptr
          ? ClaimInfoCache::CreateJournaled(options.store, std::move(options.restored_claims))
          : ClaimInfoCache::Create(options.state_dir, options.checkpoint_name);
  if (!cache.ok()) return cache.status();
  // newHealthInfoCache: a broken health file is logged and ignored, never fatal.
  auto health = std::make_unique<DeviceHealthTracker>(DeviceHealthTrackerOptions{
      .claims = cache->get(),
      .health = {.state_file = options.state_dir + "/" + options.health_state_name,
                 .clock = options.clock},
      .on_pods_changed = options.on_pod_health_changed});
  return std::unique_ptr<DraManager>(
      new DraManager(std::move(options), *std::move(cache), std::move(health)));
}

// ---- PrepareResources ---------------------------------------------------------------------------

namespace {
// dra_operations_duration_seconds{operation_name, is_error} of one call.
void ObserveOperation(const ManagerMetrics* metrics, const char* operation,
                      const absl::Status& status, const metrics::ScopedTimer& timer) {
  if (metrics == nullptr) return;
  metrics->dra_operations_duration->WithLabels({operation, status.ok() ? "false" : "true"})
      ->Observe(timer.ElapsedSeconds());
}
}  // namespace

class DraManager::ClaimLocks {
 public:
  // Waits until no other prepare or unprepare holds any of `keys`, then holds them all.
  ClaimLocks(DraManager* manager, std::set<std::string> keys)
      : manager_(manager), keys_(std::move(keys)) {
    absl::Mutex& mu = manager_->claims_mu_;
    auto free = [this] {
      manager_->claims_mu_.AssertHeld();
      for (const std::string& key : keys_) {
        if (manager_->busy_claims_.contains(key)) return false;
      }
      return true;
    };
    mu.LockWhen(absl::Condition(&free));
    manager_->busy_claims_.insert(keys_.begin(), keys_.end());
    mu.Unlock();
  }
  ~ClaimLocks() {
    absl::MutexLock lock(&manager_->claims_mu_);
    for (const std::string& key : keys_) manager_->busy_claims_.erase(key);
  }
  ClaimLocks(const ClaimLocks&) = delete;
  ClaimLocks& operator=(const ClaimLocks&) = delete;

 private:
  DraManager* const manager_;
  const std::set<std::string> keys_;
};

PeerCallTracker::Scope DraManager::TrackCall(const DraPlugin& plugin, const char* method,
                                             const std::string& pod_label) {
  return peer_calls_.Begin({.kind = PeerKind::kDraDriver,
                            .peer = plugin.driver_name(),
                            .method = method,
                            .pod = pod_label,
                            .endpoint = plugin.socket(),
                            .started = {},
                            .timeout = plugin.call_timeout()});
}

absl::Status DraManager::PrepareResources(const Pod& pod) {
  {
    // Before any reference to the pod is cached (ReconcileOrphans).
    absl::MutexLock lock(&claims_mu_);
    prepared_since_reconcile_.insert(pod.uid);
  }
  const metrics::ScopedTimer timer(nullptr);
  absl::Status status = Prepare(pod);
  ObserveOperation(options_.metrics, "PrepareResources", status, timer);
  if (!status.ok()) {
    KDP_LOG_DEBUG("Failed to prepare dynamic resources", "pod", pod.namespace_ + "/" + pod.name,
                  "podUID", pod.uid, "err", status.message());
    return Prefixed(status, "prepare dynamic resources: ");
  }
  return absl::OkStatus();
}

absl::Status DraManager::Prepare(const Pod& pod) {
  struct Validated {
    resourceapi::ResourceClaim claim;
    ClaimInfo info;
  };
  std::vector<Validated> validated;
  std::map<std::string, std::shared_ptr<DraPlugin>> plugins;  // driver → plugin

  // Validation pass: nothing is cached until every claim passed (#131957).
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    absl::StatusOr<ResolvedName> name = ClaimName(pod, pod_claim);
    if (!name.ok()) return Prefixed(name.status(), "prepare resource claim: ");
    if (!name->name.has_value()) continue;
    absl::StatusOr<resourceapi::ResourceClaim> claim =
        options_.claims->Get(pod.namespace_, *name->name);
    if (!claim.ok()) {
      return Prefixed(claim.status(), absl::StrCat("fetch ResourceClaim ", *name->name, ": "));
    }
    if (name->must_check_owner) {
      if (absl::Status owned = IsForPod(pod, *claim); !owned.ok()) return owned;
    }
    if (!IsReservedForPod(pod, *claim)) {
      return absl::FailedPreconditionError(
          absl::StrCat("pod ", pod.name, " (", pod.uid, ") is not allowed to use ResourceClaim ",
                       *name->name, " (", claim->metadata.uid, ")"));
    }
    absl::StatusOr<ClaimInfo> info = ClaimInfo::FromClaim(*claim);
    if (!info.ok()) {
      return Prefixed(info.status(), absl::StrCat("ResourceClaim ", *name->name, ": "));
    }
    for (const auto& [driver, unused] : info->state().driver_state) {
      if (plugins.count(driver) > 0) continue;
      absl::StatusOr<std::shared_ptr<DraPlugin>> plugin = options_.plugins->Get(driver);
      if (!plugin.ok()) return plugin.status();
      plugins[driver] = *std::move(plugin);
    }
    validated.push_back({*std::move(claim), *std::move(info)});
  }

  // kdp: a pod without claims has nothing to record (the kubelet still rewrites the checkpoint).
  if (validated.empty()) return absl::OkStatus();

  // From the first reference to the last mark, no unprepare of these claims runs (it could
  // unprepare a claim this pod finds prepared and skips).
  std::set<std::string> keys;
  for (const Validated& v : validated) {
    keys.insert(ClaimInfoKey(v.info.claim_name(), v.info.namespace_()));
  }
  const ClaimLocks claim_locks(this, std::move(keys));

  // Reference the pod from every claim, checkpointing before any RPC (#116411), and batch the
  // claims that still need preparing, one batch per driver.
  std::map<std::string, std::vector<drapb::Claim>> batches;  // driver → claims
  std::map<std::string, ClaimRef> to_mark;                   // claim UID → claim
  for (const Validated& v : validated) {
    const ClaimInfo& info = v.info;
    bool prepared = false;
    std::vector<std::string> drivers;
    absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
      ClaimInfo* cached = contents.Get(info.claim_name(), info.namespace_());
      if (cached == nullptr) {
        contents.Add(info);
        cached = contents.Get(info.claim_name(), info.namespace_());
      }
      if (cached->claim_uid() != info.claim_uid()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "old ResourceClaim with same name ", info.claim_name(), " and different UID ",
            cached->claim_uid(), " still exists (previous pod force-deleted?!)"));
      }
      cached->AddPodReference(pod.uid);
      prepared = cached->IsPrepared();
      for (const auto& [driver, unused] : cached->state().driver_state) drivers.push_back(driver);
      return absl::OkStatus();
    });
    if (!locked.ok()) return LockedOperation(locked);
    if (absl::Status synced = cache_->SyncToCheckpoint(
            options_.sync_reference_before_prepare ? ClaimInfoCache::Durability::kDurable
                                                   : ClaimInfoCache::Durability::kByNextRecord);
        !synced.ok()) {
      return CheckpointError(synced);
    }
    // Already prepared (by another pod, or an earlier attempt): nothing to do for this claim,
    // but the pod's other claims still are prepared (the `continue` of #135919).
    if (prepared || to_mark.count(info.claim_uid()) > 0) continue;
    to_mark[info.claim_uid()] = ClaimRef{info.namespace_(), info.claim_name()};
    for (const std::string& driver : drivers) {
      batches[driver].push_back(WireClaim(info.namespace_(), info.claim_uid(), info.claim_name()));
    }
  }

  // One NodePrepareResources per driver, in driver-name order; the first error aborts.
  for (const auto& batch : batches) {
    const std::string& driver = batch.first;  // clang 14 cannot capture structured bindings
    const std::vector<drapb::Claim>& claims = batch.second;
    std::shared_ptr<DraPlugin> plugin = plugins[driver];
    if (plugin == nullptr) {  // a driver of a cached entry that validation did not see
      absl::StatusOr<std::shared_ptr<DraPlugin>> found = options_.plugins->Get(driver);
      if (!found.ok()) return found.status();
      plugin = *std::move(found);
    }
    drapb::NodePrepareResourcesRequest request;
    for (const drapb::Claim& claim : claims) *request.add_claims() = claim;
    absl::StatusOr<drapb::NodePrepareResourcesResponse> response;
    {
      PeerCallTracker::Scope tracked =
          TrackCall(*plugin, "NodePrepareResources", absl::StrCat(pod.namespace_, "/", pod.name));
      response = plugin->NodePrepareResources(request);
    }
    if (!response.ok()) return RpcError("NodePrepareResources", response.status());
    for (const std::string& uid : SortedKeys(response->claims())) {
      const drapb::Claim* requested = LookupClaim(claims, uid);
      if (requested == nullptr) {
        return absl::InternalError(
            absl::StrCat("NodePrepareResources returned result for unknown claim UID ", uid));
      }
      const drapb::NodePrepareResourceResponse& result = response->claims().at(uid);
      if (!result.error().empty()) {
        return absl::InternalError(absl::StrCat("NodePrepareResources failed for ResourceClaim ",
                                                requested->name(), ": ", result.error()));
      }
      std::vector<state::Device> devices;
      for (const drapb::Device& device : result.devices()) devices.push_back(FromWire(device));
      absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
        ClaimInfo* cached = contents.Get(requested->name(), requested->namespace_());
        if (cached == nullptr || cached->claim_uid() != uid) {
          return absl::InternalError(absl::StrCat(
              "internal error: unable to get claim info for ResourceClaim ", requested->name()));
        }
        cached->SetDevices(driver, std::move(devices));
        return absl::OkStatus();
      });
      if (!locked.ok()) return LockedOperation(locked);
    }
    const int unfinished = static_cast<int>(claims.size()) - response->claims_size();
    if (unfinished != 0) {
      return absl::InternalError(
          absl::StrCat("NodePrepareResources skipped ", unfinished, " ResourceClaims"));
    }
  }

  // Every driver succeeded: mark the claims prepared and checkpoint.
  absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
    for (const auto& [uid, ref] : to_mark) {
      ClaimInfo* cached = contents.Get(ref.name, ref.namespace_);
      if (cached == nullptr || cached->claim_uid() != uid) {
        return absl::InternalError(
            absl::StrCat("internal error: unable to get claim info for ResourceClaim ", ref.name));
      }
      cached->SetPrepared();
    }
    return absl::OkStatus();
  });
  if (!locked.ok()) return LockedOperation(locked);
  return CheckpointError(cache_->SyncToCheckpoint(ClaimInfoCache::Durability::kByNextRecord));
}

absl::Status DraManager::AdoptReservation(const resourceapi::ResourceClaim& claim,
                                          const std::string& pod_uid) {
  absl::StatusOr<ClaimInfo> info = ClaimInfo::FromClaim(claim);
  if (!info.ok()) return absl::OkStatus();  // not allocated: never prepared
  const ClaimLocks claim_locks(this, {info->key()});
  bool changed = false;
  absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
    ClaimInfo* cached = contents.Get(info->claim_name(), info->namespace_());
    if (cached == nullptr) {
      contents.Add(*info);
      cached = contents.Get(info->claim_name(), info->namespace_());
    } else if (cached->claim_uid() != info->claim_uid()) {
      KDP_LOG_WARNING(
          "A ResourceClaim reserved for a pod that is gone has the name of another "
          "cached claim; left to the reconcile loop",
          "claim", info->key(), "uid", info->claim_uid(), "cachedUID", cached->claim_uid(),
          "podUID", pod_uid);
      return absl::OkStatus();
    }
    if (cached->HasPodReference(pod_uid)) return absl::OkStatus();
    cached->AddPodReference(pod_uid);
    changed = true;
    return absl::OkStatus();
  });
  if (!locked.ok()) return LockedOperation(locked);
  if (!changed) return absl::OkStatus();
  KDP_RETURN_IF_ERROR(
      CheckpointError(cache_->SyncToCheckpoint(ClaimInfoCache::Durability::kDurable)));
  KDP_LOG_INFO("Recorded the reservation of a ResourceClaim by a pod that is gone, to unprepare it",
               "claim", info->key(), "podUID", pod_uid);
  return absl::OkStatus();
}

std::vector<state::ClaimInfoState> DraManager::ClaimStates() const {
  std::vector<state::ClaimInfoState> states;
  (void)cache_->WithRLock([&](const ClaimInfoCache::Contents& contents) {
    states = contents.Snapshot();
    return absl::OkStatus();
  });
  return states;
}

// ---- UnprepareResources -------------------------------------------------------------------------

std::vector<DraManager::ClaimRef> DraManager::CachedClaimsOf(const std::string& pod_uid) const {
  std::vector<ClaimRef> refs;
  cache_
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        for (const auto& [key, info] : contents.claims()) {
          if (info.HasPodReference(pod_uid)) {
            refs.push_back(ClaimRef{info.namespace_(), info.claim_name()});
          }
        }
        return absl::OkStatus();
      })
      .IgnoreError();
  return refs;
}

absl::Status DraManager::UnprepareResources(const Pod& pod) {
  // The newest kubelet takes the claim names from the cache (claimNamesForPod), so a pod whose
  // spec can no longer be resolved is still cleaned up; the pod spec is the fallback.
  std::vector<ClaimRef> refs = CachedClaimsOf(pod.uid);
  if (refs.empty()) {
    for (const PodResourceClaim& pod_claim : pod.resource_claims) {
      absl::StatusOr<ResolvedName> name = ClaimName(pod, pod_claim);
      if (!name.ok()) {
        return Prefixed(name.status(), "unprepare dynamic resources: unprepare resource claim: ");
      }
      if (name->name.has_value()) refs.push_back(ClaimRef{pod.namespace_, *name->name});
    }
  }
  const metrics::ScopedTimer timer(nullptr);
  absl::Status status = Unprepare(pod.uid, absl::StrCat(pod.namespace_, "/", pod.name), refs);
  ObserveOperation(options_.metrics, "UnprepareResources", status, timer);
  if (status.ok()) {
    // Nothing references the pod any more: nothing for ReconcileOrphans to hold back.
    absl::MutexLock lock(&claims_mu_);
    prepared_since_reconcile_.erase(pod.uid);
  }
  return status.ok() ? status : Prefixed(status, "unprepare dynamic resources: ");
}

absl::Status DraManager::UnprepareResourcesForPod(const std::string& pod_uid) {
  const metrics::ScopedTimer timer(nullptr);
  absl::Status status = Unprepare(pod_uid, pod_uid, CachedClaimsOf(pod_uid));
  ObserveOperation(options_.metrics, "UnprepareResources", status, timer);
  return status.ok() ? status : Prefixed(status, "unprepare dynamic resources: ");
}

absl::Status DraManager::Unprepare(const std::string& pod_uid, const std::string& pod_label,
                                   const std::vector<ClaimRef>& refs) {
  if (refs.empty()) return absl::OkStatus();  // nothing to record (see Prepare)
  // From reading the claims' entries to forgetting them, no prepare of these claims runs (it
  // would find a claim prepared that this call is about to unprepare).
  std::set<std::string> keys;
  for (const ClaimRef& ref : refs) keys.insert(ClaimInfoKey(ref.name, ref.namespace_));
  const ClaimLocks claim_locks(this, std::move(keys));
  std::map<std::string, std::vector<drapb::Claim>> batches;  // driver → claims
  std::map<std::string, ClaimRef> to_delete;                 // claim UID → claim
  for (const ClaimRef& ref : refs) {
    absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
      ClaimInfo* cached = contents.Get(ref.name, ref.namespace_);
      // Not cached: nothing was prepared, or it is already unprepared (idempotent).
      if (cached == nullptr) return absl::OkStatus();
      // kdp: a claim that does not reference this pod is not this pod's to unprepare (the
      // kubelet only counts the references and would unprepare another pod's claim here).
      if (!cached->HasPodReference(pod_uid)) return absl::OkStatus();
      // Other pods still use it: drop this pod's reference only; checkpointed at the end, and a
      // restart before that simply repeats this idempotent step.
      if (cached->state().pod_uids.size() > 1) {
        cached->DeletePodReference(pod_uid);
        return absl::OkStatus();
      }
      if (to_delete.count(cached->claim_uid()) > 0) return absl::OkStatus();
      to_delete[cached->claim_uid()] = ref;
      for (const auto& [driver, unused] : cached->state().driver_state) {
        batches[driver].push_back(
            WireClaim(cached->namespace_(), cached->claim_uid(), cached->claim_name()));
      }
      return absl::OkStatus();
    });
    if (!locked.ok()) return LockedOperation(locked);
  }

  // One NodeUnprepareResources per driver, in driver-name order; the first error aborts.
  for (const auto& [driver, claims] : batches) {
    absl::StatusOr<std::shared_ptr<DraPlugin>> plugin = options_.plugins->Get(driver);
    if (!plugin.ok()) return plugin.status();
    drapb::NodeUnprepareResourcesRequest request;
    for (const drapb::Claim& claim : claims) *request.add_claims() = claim;
    absl::StatusOr<drapb::NodeUnprepareResourcesResponse> response;
    {
      PeerCallTracker::Scope tracked = TrackCall(**plugin, "NodeUnprepareResources", pod_label);
      response = (*plugin)->NodeUnprepareResources(request);
    }
    if (!response.ok()) return RpcError("NodeUnprepareResources", response.status());
    for (const std::string& uid : SortedKeys(response->claims())) {
      const drapb::Claim* requested = LookupClaim(claims, uid);
      if (requested == nullptr) {
        return absl::InternalError(
            absl::StrCat("NodeUnprepareResources returned result for unknown claim UID ", uid));
      }
      const std::string& error = response->claims().at(uid).error();
      if (!error.empty()) {
        return absl::InternalError(absl::StrCat("NodeUnprepareResources failed for ResourceClaim ",
                                                requested->name(), ": ", error));
      }
    }
    const int unfinished = static_cast<int>(claims.size()) - response->claims_size();
    if (unfinished != 0) {
      return absl::InternalError(
          absl::StrCat("NodeUnprepareResources skipped ", unfinished, " ResourceClaims"));
    }
  }

  // Every driver succeeded: forget the claims and checkpoint (also the dropped references).
  absl::Status locked = cache_->WithLock([&](ClaimInfoCache::Contents& contents) {
    for (const auto& [uid, ref] : to_delete) {
      const ClaimInfo* cached = contents.Get(ref.name, ref.namespace_);
      if (cached != nullptr && cached->claim_uid() == uid)
        contents.Delete(ref.name, ref.namespace_);
    }
    return absl::OkStatus();
  });
  if (!locked.ok()) return LockedOperation(locked);
  return CheckpointError(cache_->SyncToCheckpoint(ClaimInfoCache::Durability::kByNextRecord));
}

// ---- Queries ------------------------------------------------------------------------------------

absl::StatusOr<std::vector<std::string>> DraManager::GetResources(
    const Pod& pod, const Container& container) const {
  std::vector<std::string> cdi_devices;
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    absl::StatusOr<ResolvedName> name = ClaimName(pod, pod_claim);
    if (!name.ok()) return Prefixed(name.status(), "list resource claims: ");
    // No claim was generated for this pod claim: valid, nothing to add.
    if (!name->name.has_value()) continue;
    for (const ContainerClaim& claim : container.claims) {
      if (claim.name != pod_claim.name) continue;
      absl::Status locked = cache_->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        const ClaimInfo* info = contents.Get(*name->name, pod.namespace_);
        if (info == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat("unable to get claim info for ResourceClaim ", *name->name,
                           " in namespace ", pod.namespace_));
        }
        std::vector<std::string> ids = info->CdiDeviceIds(claim.request);
        cdi_devices.insert(cdi_devices.end(), ids.begin(), ids.end());
        return absl::OkStatus();
      });
      if (!locked.ok()) return LockedOperation(locked);
    }
  }
  return cdi_devices;
}

absl::StatusOr<std::vector<ClaimInfo>> DraManager::GetContainerClaimInfos(
    const Pod& pod, const Container& container) const {
  std::vector<ClaimInfo> infos;
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    absl::StatusOr<ResolvedName> name = ClaimName(pod, pod_claim);
    if (!name.ok()) {
      return Prefixed(name.status(),
                      absl::StrCat("determine ResourceClaim ", pod_claim.name, ": "));
    }
    if (!name->name.has_value()) continue;
    for (const ContainerClaim& claim : container.claims) {
      if (claim.name != pod_claim.name) continue;
      absl::Status locked = cache_->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        const ClaimInfo* info = contents.Get(*name->name, pod.namespace_);
        if (info == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat("unable to get information for ResourceClaim ", *name->name));
        }
        infos.push_back(*info);
        return absl::OkStatus();
      });
      if (!locked.ok()) return LockedOperation(locked);
    }
  }
  return infos;
}

bool DraManager::PodMightNeedToUnprepareResources(const std::string& pod_uid) const {
  bool referenced = false;
  cache_
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        referenced = contents.HasPodReference(pod_uid);
        return absl::OkStatus();
      })
      .IgnoreError();
  return referenced;
}

absl::Status DraManager::ReconcileOrphans(const std::set<std::string>& active_pod_uids) {
  // Inactive pods still referenced by a cached claim, with their claims. The cache is read
  // before the pods that began preparing: a pod whose reference is read here had begun, so it is
  // either among them or began before the previous run returned, and so before
  // `active_pod_uids` was read (then, if it still runs, it is in it).
  std::map<std::string, std::vector<ClaimRef>> inactive;
  cache_
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        for (const auto& [key, info] : contents.claims()) {
          for (const std::string& uid : info.state().pod_uids) {
            if (active_pod_uids.count(uid) > 0) continue;
            inactive[uid].push_back(ClaimRef{info.namespace_(), info.claim_name()});
          }
        }
        return absl::OkStatus();
      })
      .IgnoreError();
  std::set<std::string> recent;
  {
    absl::MutexLock lock(&claims_mu_);
    recent = prepared_since_reconcile_;
  }
  // Once this run returns, only pods that begin preparing later are recent for the next one.
  absl::Cleanup forget_recent = [this] {
    absl::MutexLock lock(&claims_mu_);
    prepared_since_reconcile_.clear();
  };
  absl::Status first_error;
  for (const auto& [uid, refs] : inactive) {
    if (recent.contains(uid)) {
      KDP_LOG_DEBUG("Pod began preparing since the last reconcile; unprepared next time if gone",
                    "podUID", uid);
      continue;
    }
    absl::Status status = Unprepare(uid, uid, refs);
    if (!status.ok()) {
      status = Prefixed(status, "unprepare dynamic resources: ");
      KDP_LOG_INFO("Unprepare failed during reconcile loop. Will retry on next iteration.",
                   "podUID", uid, "err", status.message());
      if (first_error.ok()) first_error = status;
    }
  }
  return first_error;
}

std::vector<ClaimInfo> DraManager::Claims() const {
  std::vector<ClaimInfo> claims;
  cache_
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        for (const auto& [key, info] : contents.claims()) claims.push_back(info);
        return absl::OkStatus();
      })
      .IgnoreError();
  return claims;
}

std::map<std::string, int64_t> DraManager::ClaimsInUse() const {
  std::map<std::string, int64_t> in_use;
  cache_
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        in_use = contents.ClaimsInUse();
        return absl::OkStatus();
      })
      .IgnoreError();
  return in_use;
}

}  // namespace kdp::manager::dra
