// The health-by-ID rule both author contracts share (DevicePlugin::SetHealth() and
// DraDriver::SetHealth(), kdp/health.h): an override set for an ID holds until the next one for
// that ID, whether or not the inventory lists it (an unknown ID is remembered and applies once
// Discover() lists it, so a health monitor never races discovery), and the override of a physical
// device ("gpu3") applies to its replicas ("gpu3::0", ...) that have none of their own. Private to
// the SDK.
//
// Not thread-safe: its owner (DeviceState, DeviceHealthTable) guards it with its own lock.
#ifndef KDP_SDK_SRC_HEALTH_HEALTH_OVERRIDES_H_
#define KDP_SDK_SRC_HEALTH_HEALTH_OVERRIDES_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kdp/health.h"

namespace kdp::internal {

struct HealthOverride {
  Health health = Health::kHealthy;
  std::string message = {};

  friend bool operator==(const HealthOverride&, const HealthOverride&) = default;
};

class HealthOverrides {
 public:
  // Sets the override of each of `ids`. Returns whether any changed.
  bool Set(absl::Span<const std::string> ids, Health health, std::string_view message);

  // SetUnhealthyDevices(): the overrides become exactly `unhealthy`, Unhealthy with `message`
  // (every other override is cleared). Returns whether any changed.
  bool ReplaceWithUnhealthy(const std::set<std::string>& unhealthy, std::string_view message);

  // The override that applies to `id`: its own, else its physical device's; nullptr when none.
  const HealthOverride* Find(const std::string& id) const;

 private:
  std::map<std::string, HealthOverride, std::less<>> overrides_;
};

// OK, or INVALID_ARGUMENT naming `owner` and `id` when `health` is not a Health value (or is
// kUnknown and `allow_unknown` is false: the device plugin API has no Unknown) or when `message`
// is not UTF-8 (the kubelet's protobuf decoder would reject the whole message).
[[nodiscard]] absl::Status ValidateHealth(std::string_view owner, std::string_view id,
                                          Health health, std::string_view message,
                                          bool allow_unknown);

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF),
// which proto3 requires of every string field.
bool IsValidUtf8(std::string_view text);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_HEALTH_HEALTH_OVERRIDES_H_
