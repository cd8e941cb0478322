// Allocates the devices of one ResourceClaim on this node: kdp-manager's stand-in for the
// scheduler's structured-parameters allocator (k8s.io/dynamic-resource-allocation/structured,
// internal/stable allocator_stable.go), run for a single node and a single claim. The DRA claim
// flow calls it for each unallocated claim of a pod before NodePrepareResources, passing the
// devices other claims already hold; it writes the result into claim.status.allocation.
//
// What it reproduces:
//  * pools from GatherPools (resource_pools.h); ExactCount requests never use devices of an
//    incomplete or invalid pool; an All request fails while any pool of the node is incomplete
//    or invalid (UNAVAILABLE, upstream's "asks for all devices, but resource pool <p> is
//    currently being updated"), since "all" is not known yet.
//  * a device matches a request when every selector of the request's DeviceClass and every
//    selector of the request evaluate to true (cel_subset.h). A CEL runtime error for a device
//    the search examines fails the allocation (INVALID_ARGUMENT, upstream's "class <c>: selector
//    #<i> on device <d>: CEL runtime error: ..."), as upstream does; it is not "no match".
//  * ExactCount takes `count` devices; All takes every matching device and needs at least one
//    (upstream: "At least one device is required for 'All' allocation mode"); an All request
//    whose devices include one allocated to another claim cannot be satisfied.
//  * devices of other claims (AllocatorInputs::allocated) are never used twice, except by a
//    request with adminAccess, which still never takes a device twice within the claim.
//  * firstAvailable sub-requests are tried in order; the result names "<request>/<sub>".
//  * matchAttribute constraints: all devices of the named requests (none named: all requests;
//    a request name covers its sub-requests) carry the attribute with one value (same type);
//    a device without it cannot be used. A device of an All request that breaks a constraint
//    is an error (INVALID_ARGUMENT), as upstream.
//  * distinctAttribute constraints (1.34): the devices of the named requests carry the attribute
//    with pairwise different values; a device without it cannot be used.
//  * partitionable devices (KEP-4815): a device's consumesCounters are taken from its pool's
//    shared counter sets while it is in use (by other claims, or earlier in this claim; a
//    shared device takes them once, however many shares it has); a device whose consumption
//    exceeds what is left cannot be used, so counters are never over-committed. Pools whose
//    devices consume undefined counters are invalid (resource_pools.h).
//  * consumable capacity (KEP-5075): a device with allowMultipleAllocations is not made busy by
//    other claims; each allocation consumes of every capacity the request's capacity.requests
//    amount (or the requestPolicy's default, or all of it), rounded up to the policy's next
//    valid value (validValues, validRange min/step); a request that names a capacity the device
//    lacks, or one the policy cannot satisfy (above max), cannot use it, and the sum over all
//    allocations never exceeds the capacity. Such a result carries a new shareID and the
//    consumedCapacity of every capacity. A shared device may serve several requests of one
//    claim, each with its own shareID, but one request takes distinct devices. A request with
//    capacity.requests on a device without allowMultipleAllocations needs at least that
//    capacity.
//  * taints (KEP-5055): a device with a NoSchedule or NoExecute taint is used only by a request
//    whose tolerations tolerate every such taint (effect None is informational); the result
//    records the request's tolerations. Binding conditions are copied from the device.
//  * node selection: slices for this node by nodeName, allNodes, a nodeSelector matching the
//    node's labels, or perDeviceNodeSelection with a matching device (resource_pools.h).
//  * a claim holds at most 32 results (AllocationResultsMaxSize).
//  * the search is upstream's depth-first search in device order, first solution wins. kdp
//    tries each request's devices as combinations in device order (upstream tries
//    permutations, which finds the same first set), skips a branch when too few candidates
//    remain, and checks each request and the claim as a whole (bipartite matching, constraints
//    ignored) before searching, so a hopeless claim fails at once instead of exploring
//    exponentially many sets. AllocatorInputs::max_search_steps bounds what is left
//    (DEADLINE_EXCEEDED, upstream's scheduler times the search out instead).
//  * result: results in request order, devices in pool/slice/device order; config = each used
//    class's configs once, source FromClass, requests = the (sub-)requests that use the class
//    (upstream since 1.35, #134793), then the claim's configs that apply, source FromClaim,
//    each once (upstream can repeat one naming two requests); nodeSelector = matchFields
//    metadata.name In [node] when a device comes from a nodeName slice (or has its own
//    nodeName), else the one term of the devices' nodeSelectors merged, unset when all come from
//    allNodes (available everywhere), as upstream's createNodeSelector.
//
// Errors: RESOURCE_EXHAUSTED "cannot allocate all claims: claim <ns>/<name>, request <r>: ..."
// when the node cannot satisfy the claim (the scheduler's Unschedulable); NOT_FOUND for a missing
// DeviceClass; INVALID_ARGUMENT for a selector that does not compile (naming the class or claim,
// the request and the expression), a CEL runtime error, or a request the allocator cannot read;
// UNAVAILABLE and DEADLINE_EXCEEDED as above.
//
// kdp deviation: each request's selectors are evaluated for every device before the search (to
// check feasibility and to word the reason); when a request cannot be satisfied at all the claim
// fails with its reason even if upstream's search would first have met a device whose selector
// errors.
//
// Thread-safety: stateless function; safe to call concurrently with distinct or const inputs.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CLAIM_ALLOCATOR_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CLAIM_ALLOCATOR_H_

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager::scheduling {

// One device of one pool (upstream DeviceID).
struct DeviceId {
  std::string driver = {};
  std::string pool = {};
  std::string device = {};

  // "<driver>/<pool>/<device>".
  std::string ToString() const { return driver + "/" + pool + "/" + device; }
  friend auto operator<=>(const DeviceId&, const DeviceId&) = default;
};

// A claim's exclusively allocated devices (what other claims' status.allocation hold), for
// AllocatorInputs::allocated. Admin-access results and shares of a device with
// allowMultipleAllocations (results with a shareID) are left out: they do not make a device busy.
std::set<DeviceId> AllocatedDevices(const resourceapi::AllocationResult& allocation);

struct AllocatorInputs {
  // The node allocating; slices bound to another node are ignored.
  std::string node_name = {};
  // Its labels, for slices (and devices) with a nodeSelector.
  std::map<std::string, std::string> node_labels = {};
  // The ResourceSlices known (any node); GatherPools picks this node's pools.
  std::vector<resourceapi::ResourceSlice> slices = {};
  // DeviceClasses by metadata.name.
  std::map<std::string, resourceapi::DeviceClass> classes = {};
  // Devices allocated to other claims (exclusively).
  std::set<DeviceId> allocated = {};
  // Shares of devices with allowMultipleAllocations held by other claims: per device, the sum
  // of their consumedCapacity by capacity name.
  std::map<DeviceId, std::map<std::string, Quantity>> shared = {};
  // Makes the shareID of a new share; a random UUID when empty (tests make it predictable).
  std::function<std::string()> new_share_id = nullptr;
  // Upper bound on search steps (devices tried) before giving up with DEADLINE_EXCEEDED.
  int64_t max_search_steps = 1'000'000;
};

// Adds what `allocation` (another claim's) holds to inputs->allocated and inputs->shared. A
// consumedCapacity that does not parse counts as zero (the API server refuses such a claim).
void AddAllocation(const resourceapi::AllocationResult& allocation, AllocatorInputs* inputs);

// The most results one claim can hold (resource.k8s.io AllocationResultsMaxSize).
inline constexpr int kAllocationResultsMaxSize = 32;

// Allocates `claim` (its spec; its status is ignored) on inputs.node_name. Returns the
// allocation to store in claim.status.allocation, or an error as described above.
[[nodiscard]] absl::StatusOr<resourceapi::AllocationResult> Allocate(
    const resourceapi::ResourceClaim& claim, const AllocatorInputs& inputs);

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CLAIM_ALLOCATOR_H_
