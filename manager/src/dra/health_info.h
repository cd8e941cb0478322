// HealthInfoCache: the DRA manager's record of the device health that drivers report through
// their health streams (the kubelet's healthInfoCache, pkg/kubelet/cm/dra/healthinfo.go, and the
// state.DevicesHealthMap types; KEP-4680, kubelet 1.34+). Per driver, devices keyed
// "<pool>/<device>" with their health, the time kdp last heard of them, their health-check
// timeout and the driver's message. Each stream message is the driver's complete list:
// UpdateHealthInfo replaces what was reported, turns an unreported device Unknown once its
// timeout passed, and returns the devices whose health, message or timeout changed. Reads of an
// entry older than its timeout give Unknown. The content is persisted as plain JSON (no checksum)
// at `<kubelet root>/dra_health_state` in the kubelet's layout, replaced atomically and only when
// something changed; a file that cannot be read or parsed is logged and ignored.
//
// Thread-safety: thread-safe. The lock is never held across the file write; concurrent writes
// never let an older snapshot replace a newer one.
#ifndef KDP_MANAGER_SRC_DRA_HEALTH_INFO_H_
#define KDP_MANAGER_SRC_DRA_HEALTH_INFO_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/dra/plugin/health_stream.h"

namespace kdp::manager::dra {

inline constexpr char kHealthStateFileName[] = "dra_health_state";
// DefaultHealthTimeout: a device not heard of for this long reads as Unknown, unless the driver
// gave its own health_check_timeout_seconds.
inline constexpr absl::Duration kDefaultHealthTimeout = absl::Seconds(30);
// v1.ResourceHealthMessageMaxLength: longer messages are cut to 1021 bytes + "...".
inline constexpr size_t kResourceHealthMessageMaxLength = 1024;

// state.DeviceHealthStatus.
enum class DeviceHealthStatus { kUnknown, kHealthy, kUnhealthy };

// "Healthy", "Unhealthy" or "Unknown" (the JSON and pod-status spelling).
const char* DeviceHealthStatusName(DeviceHealthStatus health);

// state.DeviceHealth.
struct DeviceHealth {
  std::string pool_name = {};    // PoolName
  std::string device_name = {};  // DeviceName
  DeviceHealthStatus health = DeviceHealthStatus::kUnknown;
  absl::Time last_updated = absl::UnixEpoch();  // LastUpdated: kdp's clock when reported
  // HealthCheckTimeout; zero: kDefaultHealthTimeout (entries written before 1.35).
  absl::Duration health_check_timeout = absl::ZeroDuration();
  std::string message = {};  // Message; "" when none

  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// truncateHealthMessage: at most kResourceHealthMessageMaxLength bytes, "..." marking a cut.
std::string TruncateHealthMessage(std::string message);

// buildDeviceHealth: a stream entry as the cache keeps it (health mapped, a timeout <= 0 replaced
// by kDefaultHealthTimeout, the message truncated; last_updated left for UpdateHealthInfo, which
// stamps its own clock as the kubelet does).
DeviceHealth BuildDeviceHealth(const WatchedDeviceHealth& device);

// The kubelet's JSON of a DevicesHealthMap: {"<driver>":{"Devices":{"<pool>/<device>":
// {"PoolName":…,"DeviceName":…,"Health":"Healthy","LastUpdated":"<RFC 3339, UTC>",
// "HealthCheckTimeout":<ns>,"Message":…}}}}, keys sorted as Go writes maps.
std::string EncodeHealthState(
    const std::map<std::string, std::map<std::string, DeviceHealth>>& drivers);
// The reverse. INVALID_ARGUMENT (naming the field) for anything that is not that layout; an
// unknown Health string reads as Unknown.
absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> DecodeHealthState(
    absl::string_view json);

struct HealthInfoCacheOptions {
  // The file, normally `<kubelet root>/dra_health_state`; empty: not persisted.
  std::string state_file = {};
  // The time source; empty: absl::Now. Tests inject a fake clock.
  std::function<absl::Time()> clock = {};
};

class HealthInfoCache {
 public:
  // newHealthInfoCache: loads `state_file` when it exists. Never fails: a missing file is an empty
  // cache, a broken one is logged ("Failed to load health checkpoint, proceeding with empty
  // cache") and ignored.
  explicit HealthInfoCache(HealthInfoCacheOptions options);

  HealthInfoCache(const HealthInfoCache&) = delete;
  HealthInfoCache& operator=(const HealthInfoCache&) = delete;

  // getHealthInfo: the device's entry, or {pool, device, Unknown} when it was never reported,
  // its driver was cleared, or it is older than its timeout (then with an empty message).
  DeviceHealth GetHealthInfo(const std::string& driver, const std::string& pool,
                             const std::string& device) const ABSL_LOCKS_EXCLUDED(mu_);

  // updateHealthInfo with one complete report of `driver`: every reported device is stored with
  // last_updated = now (changed when new, or its health, message or timeout differ); every
  // unreported device that is not Unknown and older than its timeout becomes Unknown with an
  // empty message and last_updated = now (changed). Returns the changed devices (reported ones in
  // report order, then the timed-out ones by key) as stored; writes the file when any changed (a
  // failed write is logged and counted in save_failures()).
  std::vector<DeviceHealth> UpdateHealthInfo(const std::string& driver,
                                             std::vector<DeviceHealth> devices)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // clearDriver: forgets every device of `driver` (its stream ended). Writes the file when the
  // driver had entries (the kubelet writes it every time).
  void ClearDriver(const std::string& driver) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  // Every entry as stored (not adjusted for timeouts), by driver and key.
  std::map<std::string, std::map<std::string, DeviceHealth>> Snapshot() const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether an entry's health still counts at `now` (kdp's reading of the timeout rule).
  static bool Fresh(const DeviceHealth& device, absl::Time now);

  absl::Time Now() const;
  const std::string& state_file() const { return options_.state_file; }
  int64_t save_failures() const ABSL_LOCKS_EXCLUDED(write_mu_);

 private:
  // Writes `data` (generation `generation`) unless a newer snapshot was written already.
  void Save(uint64_t generation, const std::string& data) ABSL_LOCKS_EXCLUDED(write_mu_);

  const HealthInfoCacheOptions options_;
  mutable absl::Mutex mu_;
  // driver → "<pool>/<device>" → health.
  std::map<std::string, std::map<std::string, DeviceHealth>> drivers_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Serializes file writes; never held together with mu_.
  mutable absl::Mutex write_mu_;
  uint64_t written_generation_ ABSL_GUARDED_BY(write_mu_) = 0;
  int64_t save_failures_ ABSL_GUARDED_BY(write_mu_) = 0;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_HEALTH_INFO_H_
