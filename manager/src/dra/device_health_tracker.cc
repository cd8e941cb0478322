#include "manager/src/dra/device_health_tracker.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace kdp::manager::dra {
namespace {

// resourceclaim.BaseRequestRef: "req/sub" → "req".
std::string BaseRequestRef(const std::string& request) {
  return request.substr(0, request.find('/'));
}

// The name of the ResourceClaim behind a container's claim entry: pod.status first (the claim
// generated from a template), then the pod spec's direct name; nullopt when there is none yet.
std::optional<std::string> ActualClaimName(const Pod& pod, const std::string& pod_claim_name) {
  if (auto it = pod.resource_claim_statuses.find(pod_claim_name);
      it != pod.resource_claim_statuses.end() && !it->second.empty()) {
    return it->second;
  }
  for (const PodResourceClaim& claim : pod.resource_claims) {
    if (claim.name != pod_claim_name) continue;
    if (!claim.resource_claim_name.empty()) return claim.resource_claim_name;
    break;
  }
  return std::nullopt;
}

// buildResourceHealth.
ResourceHealth BuildResourceHealth(const std::string& driver, const state::Device& device,
                                   const DeviceHealth& health) {
  ResourceHealth out;
  out.health = DeviceHealthStatusName(health.health);
  out.message = health.message;  // ResourceHealthStatusMessage: kdp reports it
  out.resource_id = !device.cdi_device_ids.empty()
                        ? device.cdi_device_ids.front()
                        : absl::StrCat(driver, "/", device.pool_name, "/", device.device_name);
  return out;
}

}  // namespace

DeviceHealthTracker::DeviceHealthTracker(DeviceHealthTrackerOptions options)
    : options_(std::move(options)), health_(options_.health) {}

void DeviceHealthTracker::HandleHealthUpdate(const std::string& driver,
                                             const std::vector<WatchedDeviceHealth>& devices) {
  std::vector<DeviceHealth> reported;
  reported.reserve(devices.size());
  for (const WatchedDeviceHealth& device : devices) reported.push_back(BuildDeviceHealth(device));
  const std::vector<DeviceHealth> changed = health_.UpdateHealthInfo(driver, std::move(reported));
  if (changed.empty()) return;
  KDP_LOG_DEBUG("Health info changed, checking affected pods", "pluginName", driver,
                "changedDevicesCount", changed.size());

  // The pods whose cached claims hold a changed device of this driver.
  std::set<std::string> pods;
  options_.claims
      ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
        for (const auto& entry : contents.claims()) {
          const state::ClaimInfoState& claim = entry.second.state();
          auto driver_state = claim.driver_state.find(driver);
          if (driver_state == claim.driver_state.end()) continue;
          const bool uses =
              std::any_of(changed.begin(), changed.end(), [&](const DeviceHealth& dev) {
                return std::any_of(driver_state->second.devices.begin(),
                                   driver_state->second.devices.end(),
                                   [&](const state::Device& allocated) {
                                     return allocated.pool_name == dev.pool_name &&
                                            allocated.device_name == dev.device_name;
                                   });
              });
          if (uses) pods.insert(claim.pod_uids.begin(), claim.pod_uids.end());
        }
        return absl::OkStatus();
      })
      .IgnoreError();
  if (pods.empty()) {
    KDP_LOG_DEBUG("Health info changed, but no active pods found using the affected devices",
                  "pluginName", driver);
    return;
  }
  std::vector<std::string> uids(pods.begin(), pods.end());
  KDP_LOG_INFO("Sending health update notification for pods", "pluginName", driver, "pods",
               absl::StrJoin(uids, ","));
  if (options_.on_pods_changed) options_.on_pods_changed(std::move(uids));
}

void DeviceHealthTracker::HandleHealthStreamEnd(const std::string& driver) {
  KDP_LOG_DEBUG("Clearing health cache for driver upon stream exit", "pluginName", driver);
  health_.ClearDriver(driver);
}

AllocatedResourcesStatus DeviceHealthTracker::UpdateAllocatedResourcesStatus(const Pod& pod) const {
  AllocatedResourcesStatus result;
  for (const Container& container : pod.containers) {
    if (container.claims.empty()) continue;
    // Entry name → its resources, in the order the names first appear.
    std::vector<ResourceStatus> statuses;
    for (const ContainerClaim& claim : container.claims) {
      std::optional<std::string> claim_name = ActualClaimName(pod, claim.name);
      if (!claim_name.has_value()) {
        KDP_LOG_DEBUG("Could not find generated name for resource claim", "pod",
                      pod.namespace_ + "/" + pod.name, "container", container.name, "claimName",
                      claim.name);
        continue;
      }
      // A copy of the claim's state, so the health cache is read without the claim lock.
      std::optional<state::ClaimInfoState> info;
      options_.claims
          ->WithRLock([&](const ClaimInfoCache::Contents& contents) {
            if (const ClaimInfo* cached = contents.Get(*claim_name, pod.namespace_)) {
              info = cached->state();
            }
            return absl::OkStatus();
          })
          .IgnoreError();
      if (!info.has_value()) {
        KDP_LOG_DEBUG("Could not find claim info for resource claim", "pod",
                      pod.namespace_ + "/" + pod.name, "container", container.name, "claimName",
                      *claim_name);
        continue;
      }
      const std::string name = claim.request.empty()
                                   ? absl::StrCat("claim:", claim.name)
                                   : absl::StrCat("claim:", claim.name, "/", claim.request);
      auto status = std::find_if(statuses.begin(), statuses.end(),
                                 [&](const ResourceStatus& s) { return s.name == name; });
      if (status == statuses.end()) {
        statuses.push_back({.name = name, .resources = {}});
        status = statuses.end() - 1;
      }
      // Clear previous health entries before adding current ones (as the kubelet does).
      status->resources.clear();
      std::set<std::string> seen;  // one entry per resource ID
      const std::string base_request = BaseRequestRef(claim.request);
      for (const auto& [driver, driver_state] : info->driver_state) {
        for (const state::Device& device : driver_state.devices) {
          if (!claim.request.empty() && !device.request_names.empty() &&
              std::find(device.request_names.begin(), device.request_names.end(), base_request) ==
                  device.request_names.end()) {
            continue;
          }
          ResourceHealth health = BuildResourceHealth(
              driver, device, health_.GetHealthInfo(driver, device.pool_name, device.device_name));
          if (!seen.insert(health.resource_id).second) continue;
          status->resources.push_back(std::move(health));
        }
      }
    }
    // Entries without resources are dropped.
    statuses.erase(std::remove_if(statuses.begin(), statuses.end(),
                                  [](const ResourceStatus& s) { return s.resources.empty(); }),
                   statuses.end());
    if (!statuses.empty()) result[container.name] = std::move(statuses);
  }
  return result;
}

std::vector<DeviceHealthSummary> DeviceHealthTracker::Summary() const {
  const absl::Time now = health_.Now();
  std::vector<DeviceHealthSummary> out;
  for (const auto& [driver, devices] : health_.Snapshot()) {
    for (const auto& [key, device] : devices) {
      const bool fresh = HealthInfoCache::Fresh(device, now);
      out.push_back(
          {.driver = driver,
           .pool = device.pool_name,
           .device = device.device_name,
           .health = DeviceHealthStatusName(fresh ? device.health : DeviceHealthStatus::kUnknown),
           .message = fresh ? device.message : "",
           .last_updated = device.last_updated,
           .health_check_timeout = device.health_check_timeout});
    }
  }
  return out;
}

}  // namespace kdp::manager::dra
