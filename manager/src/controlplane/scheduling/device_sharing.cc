#include "manager/src/controlplane/scheduling/device_sharing.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace kdp::manager::scheduling {

bool ToleratesTaint(const resourceapi::DeviceToleration& t, const resourceapi::DeviceTaint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.operator_ == resourceapi::kTolerationOpExists) return true;
  return (t.operator_.empty() || t.operator_ == resourceapi::kTolerationOpEqual) &&
         t.value == taint.value;
}

// Every NoSchedule and NoExecute taint of the device tolerated by one of `tolerations`.
bool AllTaintsTolerated(const resourceapi::Device& device,
                        const std::vector<resourceapi::DeviceToleration>& tolerations) {
  for (const resourceapi::DeviceTaint& taint : device.taints) {
    if (taint.effect == resourceapi::kTaintEffectNone) continue;
    bool tolerated = false;
    for (const resourceapi::DeviceToleration& t : tolerations)
      tolerated = tolerated || ToleratesTaint(t, taint);
    if (!tolerated) return false;
  }
  return true;
}

std::optional<Quantity> ParseQuantity(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  absl::StatusOr<Quantity> q = Quantity::Parse(*text);
  if (!q.ok()) return std::nullopt;
  return *q;
}

// Upstream calculateConsumedCapacity: the request's amount (or the policy's default, or the
// whole capacity) rounded up to the policy's next valid value.
Quantity ConsumedAmount(const std::optional<Quantity>& requested,
                        const resourceapi::DeviceCapacity& capacity, const Quantity& value) {
  const std::optional<resourceapi::CapacityRequestPolicy>& policy = capacity.request_policy;
  if (!requested) {
    if (policy) {
      if (std::optional<Quantity> def = ParseQuantity(policy->default_value)) return *def;
    }
    return value;
  }
  if (!policy) return *requested;
  if (policy->valid_range) {
    std::optional<Quantity> min = ParseQuantity(policy->valid_range->min);
    if (min) {
      if (*requested < *min) return *min;
      std::optional<Quantity> step = ParseQuantity(policy->valid_range->step);
      if (!step || step->Sign() <= 0) return *requested;
      const absl::int128 added = requested->nanos() - min->nanos();
      absl::int128 n = added / step->nanos();
      if (added % step->nanos() != 0) ++n;
      return Quantity::FromNanos(min->nanos() + n * step->nanos(), step->format());
    }
  }
  for (const std::string& text : policy->valid_values) {
    std::optional<Quantity> v = ParseQuantity(text);
    if (v && *requested <= *v) return *v;
  }
  return *requested;
}

// Upstream violatesPolicy: an amount the policy does not allow (above max, off the step, not one
// of the valid values).
bool ViolatesPolicy(const Quantity& amount, const resourceapi::DeviceCapacity& capacity) {
  if (!capacity.request_policy) return false;
  const resourceapi::CapacityRequestPolicy& policy = *capacity.request_policy;
  if (std::optional<Quantity> def = ParseQuantity(policy.default_value); def && *def == amount) {
    return false;
  }
  if (policy.valid_range) {
    std::optional<Quantity> max = ParseQuantity(policy.valid_range->max);
    if (max && amount > *max) return true;
    std::optional<Quantity> min = ParseQuantity(policy.valid_range->min);
    std::optional<Quantity> step = ParseQuantity(policy.valid_range->step);
    if (min && step && step->Sign() > 0 && (amount.nanos() - min->nanos()) % step->nanos() != 0) {
      return true;
    }
    return false;
  }
  if (policy.valid_values.empty()) return false;
  for (const std::string& text : policy.valid_values) {
    if (std::optional<Quantity> v = ParseQuantity(text); v && *v == amount) return false;
  }
  return true;
}

std::string RandomShareId() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen ABSL_GUARDED_BY(mu) = new absl::BitGen();
  uint64_t hi = 0, lo = 0;
  {
    absl::MutexLock lock(&mu);
    hi = absl::Uniform<uint64_t>(*gen);
    lo = absl::Uniform<uint64_t>(*gen);
  }
  hi = (hi & ~0xF000ULL) | 0x4000ULL;              // version 4
  lo = (lo & ~(0xC0ULL << 56)) | (0x80ULL << 56);  // RFC 4122 variant
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFULL);
}

std::optional<std::map<std::string, Quantity>> CapacityConsumption(
    const resourceapi::Device& device, const std::map<std::string, Quantity>& values,
    const std::map<std::string, std::string>& requests) {
  for (const auto& [name, amount] : requests) {
    if (values.count(name) == 0) return std::nullopt;
  }
  std::map<std::string, Quantity> consumption;
  if (!device.allow_multiple_allocations) {
    for (const auto& [name, amount] : requests) {
      std::optional<Quantity> want = ParseQuantity(amount);
      if (!want || *want > values.at(name)) return std::nullopt;
    }
    return consumption;
  }
  for (const auto& [name, capacity] : device.capacity) {
    std::optional<Quantity> requested;
    if (auto it = requests.find(name); it != requests.end()) requested = ParseQuantity(it->second);
    const Quantity amount = ConsumedAmount(requested, capacity, values.at(name));
    if (ViolatesPolicy(amount, capacity) || amount > values.at(name)) return std::nullopt;
    consumption[name] = amount;
  }
  return consumption;
}

}  // namespace kdp::manager::scheduling
