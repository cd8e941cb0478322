// The resource pools a node can allocate from, gathered from ResourceSlices as the scheduler's
// structured allocator does (k8s.io/dynamic-resource-allocation/structured, GatherPools): slices
// bound to the node (spec.nodeName) or to all nodes (spec.allNodes) are grouped by (driver,
// pool name); only the slices of a pool's highest generation are kept, older ones are silently
// ignored; a pool is incomplete while fewer than pool.resourceSliceCount slices of that
// generation are present, and invalid when a device name repeats. The claim allocator
// (claim_allocator.h) calls it; kdpctl-style status output may too.
//
// kdp deviations, on purpose: slices with a spec.nodeSelector are ignored (kdp-manager knows no
// node labels to match them against), and the result is ordered (pools by driver then pool
// name, a pool's slices by object name) where upstream iterates a Go map.
//
// Thread-safety: stateless function; the result borrows from its input.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::scheduling {

struct ResourcePoolView {
  std::string driver;
  std::string name;
  int64_t generation = 0;
  // The slices of `generation`, ordered by metadata.name. Borrowed from GatherPools' input:
  // valid while that vector is alive and unchanged.
  std::vector<const resourceapi::ResourceSlice*> slices = {};
  // Fewer slices than pool.resourceSliceCount: the driver is still publishing.
  bool incomplete = false;
  // A device name occurs twice in the pool; invalid_reason says which.
  bool invalid = false;
  std::string invalid_reason = {};

  // "<driver>/<pool>", as upstream's PoolID prints.
  std::string id() const { return driver + "/" + name; }
};

// Returns the pools of `slices` usable on `node_name`, complete or not, ordered by (driver,
// pool name).
std::vector<ResourcePoolView> GatherPools(std::string_view node_name,
                                          const std::vector<resourceapi::ResourceSlice>& slices);

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_RESOURCE_POOLS_H_
