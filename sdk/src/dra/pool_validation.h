// Validation of the resource.k8s.io/v1 (Kubernetes 1.35) device model beyond names, attributes and
// capacities (resource_slice.h): consumable capacity (requestPolicy, allowMultipleAllocations),
// counter consumption and shared counter sets, taints, binding conditions, node selection of pools
// and devices, pool names. The rules and message texts are the API server's
// (pkg/apis/resource/validation/validation.go), each prefixed with the pool, the device and the
// field, so that a bad pool fails Publish() instead of an HTTP 422 in a background loop.
//
// Thread-safety: pure functions.
#ifndef KDP_SDK_SRC_DRA_POOL_VALIDATION_H_
#define KDP_SDK_SRC_DRA_POOL_VALIDATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kdp/dra_device.h"

namespace kdp::internal {

// Limits of resource.k8s.io/v1 (k8s.io/api/resource/v1/types.go, 1.35).
inline constexpr size_t kMaxDevicesPerSliceWithTaintsOrCounters = 64;
inline constexpr size_t kMaxCounterSetsPerSlice = 8;
inline constexpr size_t kMaxCountersPerCounterSet = 32;
inline constexpr size_t kMaxCounterConsumptionsPerDevice = 2;
inline constexpr size_t kMaxCountersPerConsumption = 32;
inline constexpr size_t kMaxTaintsPerDevice = 16;
inline constexpr size_t kMaxBindingConditions = 4;
inline constexpr size_t kMaxValidValues = 10;  // CapacityRequestPolicyDiscreteMaxOptions
inline constexpr size_t kMaxPoolNameLength = 253;

// Where a pool is published: by a node plugin (nodeName set by the SDK) or by
// kdp::ResourceSlicePublisher (the pool's own node selection).
enum class PoolScope { kNodeLocal, kCluster };

// The rules of the fields kdp/dra_device.h added to DraDevice, for a device of a pool with (or
// without) perDeviceNodeSelection. INVALID_ARGUMENT "<field>: <rule>" (no device prefix).
[[nodiscard]] absl::Status ValidateDeviceModel(const DraDevice& device,
                                               bool per_device_node_selection);

// Every rule for `pools`: unique valid pool names (an empty name only for kNodeLocal: the node's),
// node selection per scope, counter sets, the devices (ValidateDraDevices and the above), and that
// a device consumes only counters of a counter set of its own pool. INVALID_ARGUMENT
// "pool \"<name>\": ..." naming the device, the field and the rule.
[[nodiscard]] absl::Status ValidateDraPools(const std::vector<DraPool>& pools, PoolScope scope);

// A quantity in thousandths (resource.Quantity.MilliValue()); nullopt when it is not a quantity,
// is finer than 1m, or does not fit in int64.
std::optional<int64_t> QuantityMilli(std::string_view text);

// IsValidLabelValue: empty, or ≤ 63 of [A-Za-z0-9-_.] starting and ending alphanumeric.
bool IsLabelValue(std::string_view value);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_POOL_VALIDATION_H_
