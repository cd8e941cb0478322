// DeviceHealthTracker is the health half of the DRA manager (the kubelet's Manager methods
// HandleWatchResourcesStream and UpdateAllocatedResourcesStatus, KEP-4680, kubelet 1.34+; gates
// ResourceHealthStatus and ResourceHealthStatusMessage on). It is the HealthStreamHandler the
// plugin manager's health streams feed: each message is converted (buildDeviceHealth) and
// applied to the HealthInfoCache, and when devices changed the pods whose prepared claims use
// them are reported through `on_pods_changed` (the kubelet pushes their UIDs to the pod status
// sync). A stream end forgets the driver's health (clearDriver).
//
// For a pod it builds what the kubelet writes to containerStatuses[].allocatedResourcesStatus:
// per app container and per entry of its resources.claims, an entry named "claim:<podClaimName>"
// (the container uses the whole claim) or "claim:<podClaimName>/<request>" (one request), listing
// every device of the claim that serves it with its health. DraManager owns one and exposes it.
//
// Thread-safety: thread-safe. The claim cache and the health cache are never locked together, and
// `on_pods_changed` runs without any lock held (on the calling stream's thread).
#ifndef KDP_MANAGER_SRC_DRA_DEVICE_HEALTH_TRACKER_H_
#define KDP_MANAGER_SRC_DRA_DEVICE_HEALTH_TRACKER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "manager/src/dra/claim_info.h"
#include "manager/src/dra/health_info.h"
#include "manager/src/dra/plugin/health_stream.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager::dra {

// v1.ResourceHealth.
struct ResourceHealth {
  // The device's first CDI device ID, else "<driver>/<pool>/<device>".
  std::string resource_id = {};
  std::string health = {};   // "Healthy", "Unhealthy" or "Unknown"
  std::string message = {};  // the driver's message; "" when none (omitted from JSON)

  friend bool operator==(const ResourceHealth&, const ResourceHealth&) = default;
};

// v1.ResourceStatus: one allocatedResourcesStatus entry.
struct ResourceStatus {
  std::string name = {};  // "claim:<podClaimName>" or "claim:<podClaimName>/<request>"
  std::vector<ResourceHealth> resources = {};  // never empty; no resource_id twice

  friend bool operator==(const ResourceStatus&, const ResourceStatus&) = default;
};

// Container name → its allocatedResourcesStatus, entries in the order of the container's
// resources.claims. Containers without an entry are absent.
using AllocatedResourcesStatus = std::map<std::string, std::vector<ResourceStatus>>;

// One device of the health cache, for status output.
struct DeviceHealthSummary {
  std::string driver = {};
  std::string pool = {};
  std::string device = {};
  // As a pod would see it now: "Unknown" (and no message) once older than its timeout.
  std::string health = {};
  std::string message = {};
  absl::Time last_updated = absl::UnixEpoch();
  absl::Duration health_check_timeout = absl::ZeroDuration();

  friend bool operator==(const DeviceHealthSummary&, const DeviceHealthSummary&) = default;
};

struct DeviceHealthTrackerOptions {
  // The DRA manager's claim cache. Borrowed; must outlive the tracker. Required.
  const ClaimInfoCache* claims = nullptr;
  // Where the health is persisted and which clock stamps it.
  HealthInfoCacheOptions health = {};
  // Called with the UIDs (sorted, no duplicates) of the pods whose claims use a device whose
  // health changed. Runs on a health stream's thread; must not block for long. Empty: not told.
  std::function<void(std::vector<std::string> pod_uids)> on_pods_changed = {};
};

class DeviceHealthTracker final : public HealthStreamHandler {
 public:
  // Loads the persisted health (errors logged, see HealthInfoCache). REQUIRES: claims set.
  explicit DeviceHealthTracker(DeviceHealthTrackerOptions options);

  DeviceHealthTracker(const DeviceHealthTracker&) = delete;
  DeviceHealthTracker& operator=(const DeviceHealthTracker&) = delete;

  // HealthStreamHandler.
  void HandleHealthUpdate(const std::string& driver,
                          const std::vector<WatchedDeviceHealth>& devices) override;
  void HandleHealthStreamEnd(const std::string& driver) override;

  // UpdateAllocatedResourcesStatus for `pod`'s app containers (the kubelet walks
  // status.containerStatuses, which hold no init containers). A container claim whose claim is
  // not generated yet or not cached (not prepared) adds nothing. A device serves an entry when
  // the entry names no request, the device has no request names, or they contain the entry's
  // base request ("req" of "req/sub").
  AllocatedResourcesStatus UpdateAllocatedResourcesStatus(const Pod& pod) const;

  // Every device of the health cache, by driver and "<pool>/<device>".
  std::vector<DeviceHealthSummary> Summary() const;

  const HealthInfoCache& cache() const { return health_; }

 private:
  const DeviceHealthTrackerOptions options_;
  HealthInfoCache health_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_DEVICE_HEALTH_TRACKER_H_
