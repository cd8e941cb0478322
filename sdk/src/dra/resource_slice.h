// What a DRA driver publishes about its node: validation of the vendor's DraDevice list with the
// API server's rules for resource.k8s.io/v1 ResourceSlices (so a bad device fails Start() or
// Publish() with a clear message instead of an HTTP 422 in a background loop), and the
// ResourceSlice JSON itself: a node plugin's pools (by default one named after the node) owned by
// the Node object (controller owner reference, so slices go away with the node), or a cluster
// publisher's pools, split into slices as the Go helper's resourceslice controller writes them.
//
// Thread-safety: pure functions.
#ifndef KDP_SDK_SRC_DRA_RESOURCE_SLICE_H_
#define KDP_SDK_SRC_DRA_RESOURCE_SLICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kdp/dra_driver.h"
#include "kdp/resource_slice_publisher.h"
#include "nlohmann/json.hpp"

namespace kdp::internal {

// Limits of resource.k8s.io/v1 validation.
inline constexpr size_t kMaxDevicesPerSlice = 128;       // ResourceSliceMaxDevices
inline constexpr size_t kMaxAttributesAndCapacity = 32;  // per device
inline constexpr size_t kMaxAttributeValueLength = 64;   // string and version values
inline constexpr size_t kMaxDriverNameLength = 63;       // DriverNameMaxLength
inline constexpr size_t kMaxIdLength = 32;               // C identifier part of a name

// OK when `name` is a DNS subdomain of at most 63 characters (a driver name), else
// INVALID_ARGUMENT naming it.
[[nodiscard]] absl::Status ValidateDriverName(const std::string& name);

// Every rule the API server applies to a device (name a DNS label, unique; attribute and capacity
// names qualified ("<dns subdomain>/<C identifier>" or a C identifier ≤ 32); at most 32 of them;
// string and version values ≤ 64 bytes; versions semantic versions; capacities quantities).
// INVALID_ARGUMENT names the device, the field and the rule.
// Also the rules of the newer fields (pool_validation.h), for a pool without
// perDeviceNodeSelection.
[[nodiscard]] absl::Status ValidateDraDevices(const std::vector<DraDevice>& devices);
// The same for the devices of a pool with (or without) perDeviceNodeSelection.
[[nodiscard]] absl::Status ValidateDraDevicesIn(const std::vector<DraDevice>& devices,
                                                bool per_device_node_selection);

// True for a Kubernetes quantity ("80Gi", "1.5", "500m", "1e3").
bool IsQuantity(std::string_view text);
// True for a semantic version 2.0.0 ("1.2.3", "1.0.0-rc.1+build.5").
bool IsSemver(std::string_view text);

// The resource.k8s.io/v1 Device object.
nlohmann::json DeviceJson(const DraDevice& device);

// The resource.k8s.io/v1 CounterSet and NodeSelector objects.
nlohmann::json CounterSetJson(const CounterSet& set);
nlohmann::json NodeSelectorJson(const NodeSelector& selector);

// Where the slices go and who owns them: a node plugin's (node_name set: nodeName, Node owner) or
// a cluster publisher's (node_name empty: no nodeName, `owner` if any).
struct SliceTarget {
  std::string driver = {};
  std::string node_name = {};
  std::string node_uid = {};
  std::optional<SliceOwner> owner = {};  // only without node_name
};

// The owner reference a slice of `target` carries: the Node, `owner`, or null for none.
nlohmann::json OwnerReferenceJson(const SliceTarget& target);

// The content of each slice of `pool`, as spec fields: first {"sharedCounters": [...]} slices of at
// most kMaxCounterSetsPerSlice sets, then {"devices": [...]} slices of at most kMaxDevicesPerSlice
// devices, kMaxDevicesPerSliceWithTaintsOrCounters when one of them has taints or consumes
// counters (devices keep their order); one {"devices": []} slice for a pool with neither. Each
// also carries "perDeviceNodeSelection": true when the pool has it.
std::vector<nlohmann::json> PoolSliceContents(const DraPool& pool);

// A complete ResourceSlice of `pool` for creation: `content` (PoolSliceContents()) with driver,
// pool, nodeName (node plugin) or the pool's allNodes/nodeSelector, the owner and generateName
// ("<node or owner>-<driver>-" or "<driver>-", trimmed to leave room for the random suffix).
nlohmann::json PoolSliceJson(const SliceTarget& target, const DraPool& pool, int64_t generation,
                             int64_t slice_count, const nlohmann::json& content);

// The devices arrays of the pool's slices: chunks of kMaxDevicesPerSlice in the given order; one
// empty array when there are no devices (the pool still exists, with no devices).
std::vector<nlohmann::json> SplitDevices(const std::vector<DraDevice>& devices);

// A complete ResourceSlice object of the node's pool (named after the node) for creation, holding
// `devices` (PoolSliceJson() of a node plugin), without metadata.name or resourceVersion.
nlohmann::json SliceJson(const SliceTarget& target, int64_t generation, int64_t slice_count,
                         const nlohmann::json& devices);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_RESOURCE_SLICE_H_
