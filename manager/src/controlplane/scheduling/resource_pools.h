// The resource pools a node can allocate from, gathered from ResourceSlices as the scheduler's
// structured allocator does (k8s.io/dynamic-resource-allocation/structured, GatherPools): slices
// bound to the node (spec.nodeName), to all nodes (spec.allNodes), to nodes whose labels match
// spec.nodeSelector (node_selector.h), or with spec.perDeviceNodeSelection (the slice counts for
// the pool; each device says where it is available, DeviceAvailableOn) are grouped by (driver,
// pool name); only the slices of a pool's highest generation are kept, older ones are silently
// ignored; a pool is incomplete while fewer than pool.resourceSliceCount slices of that
// generation are present. A pool is invalid when a device name or a shared counter set name
// repeats, or when a device consumes a counter set or counter the pool does not define (1.35:
// counters may live in slices of their own, so this is checked over the whole pool). The claim
// allocator (claim_allocator.h) calls it.
//
// kdp deviation, on purpose: the result is ordered (pools by driver then pool name, a pool's
// slices by object name) where upstream iterates a Go map.
//
// Thread-safety: stateless function; the result borrows from its input.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/node_selector.h"

namespace kdp::manager::scheduling {

struct ResourcePoolView {
  std::string driver;
  std::string name;
  int64_t generation = 0;
  // The slices of `generation`, ordered by metadata.name. Borrowed from GatherPools' input:
  // valid while that vector is alive and unchanged.
  std::vector<const resourceapi::ResourceSlice*> slices = {};
  // The pool's shared counter sets by name (from any of its slices), borrowed like `slices`.
  std::map<std::string, const resourceapi::CounterSet*> counter_sets = {};
  // Fewer slices than pool.resourceSliceCount: the driver is still publishing.
  bool incomplete = false;
  // A device or counter set name repeats, or a consumed counter is not defined; invalid_reason
  // says which.
  bool invalid = false;
  std::string invalid_reason = {};

  // "<driver>/<pool>", as upstream's PoolID prints.
  std::string id() const { return driver + "/" + name; }
};

// Returns the pools of `slices` usable on `node`, complete or not, ordered by (driver, pool name).
std::vector<ResourcePoolView> GatherPools(const NodeView& node,
                                          const std::vector<resourceapi::ResourceSlice>& slices);

// Whether `device` of `slice` can be used on `node`: always, unless the slice has
// perDeviceNodeSelection, then by the device's nodeName, allNodes or nodeSelector.
bool DeviceAvailableOn(const resourceapi::ResourceSlice& slice, const resourceapi::Device& device,
                       const NodeView& node);

// Upstream createNodeSelector, for an allocation of `devices` (each with its slice): this node's
// name (matchFields metadata.name In [name]) when any device is node-local (its slice's nodeName,
// or its own under perDeviceNodeSelection); else the one term of every device's nodeSelector
// merged into one; unset when all are available on all nodes.
std::optional<nlohmann::json> AllocationNodeSelector(
    const std::vector<std::pair<const resourceapi::ResourceSlice*, const resourceapi::Device*>>&
        devices);

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_
