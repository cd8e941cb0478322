// The device model a DRA driver publishes in ResourceSlices (resource.k8s.io/v1 as of Kubernetes
// 1.35): kdp::DraDevice (attributes, capacity, consumable capacity, counter consumption, taints,
// binding conditions, per-device node selection) and kdp::DraPool (a pool's shared counter sets,
// devices and node selection). Vendors fill these in DraDriver::Discover() or DiscoverPools()
// (kdp/dra_driver.h) or hand them to kdp::ResourceSlicePublisher (kdp/resource_slice_publisher.h);
// the SDK validates them with the API server's rules (INVALID_ARGUMENT naming the pool, device,
// field and rule) and splits each pool into slices. Field comments give upstream's JSON name.
//
// Thread-safety: plain value types (regular, thread-compatible).
#ifndef KDP_DRA_DEVICE_H_
#define KDP_DRA_DEVICE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kdp {

// A ResourceSlice attribute value: intValue, boolValue, stringValue (≤ 64 bytes) or versionValue
// (semantic version 2.0.0, ≤ 64 bytes).
struct VersionValue {
  std::string semver = {};
  friend bool operator==(const VersionValue&, const VersionValue&) = default;
};
using AttributeValue = std::variant<int64_t, bool, std::string, VersionValue>;

// Quantities ("80Gi", "4", "500m") are strings in Kubernetes' resource.Quantity format throughout.
using Quantities = std::map<std::string, std::string>;

// A named set of counters (sharedCounters[]) that devices of the same pool consume from, e.g. the
// memory and compute slices of one physical GPU its partitions share. The SDK publishes counter
// sets in slices of their own (a slice holds devices or sharedCounters, never both).
struct CounterSet {
  std::string name = {};     // name: a DNS label, unique in the pool
  Quantities counters = {};  // counters: DNS label -> {value}; 1 to 32 entries
  friend bool operator==(const CounterSet&, const CounterSet&) = default;
};

// What a device takes from one counter set of its pool while allocated (consumesCounters[]).
struct CounterConsumption {
  std::string counter_set = {};  // counterSet: a CounterSet of the same pool
  Quantities counters = {};      // counters: names of that set -> amount; 1 to 32 entries
  friend bool operator==(const CounterConsumption&, const CounterConsumption&) = default;
};

// capacity[<name>].requestPolicy.validRange: min required; max and step optional (empty: unset).
struct CapacityRange {
  std::string min = {};
  std::string max = {};
  std::string step = {};
  friend bool operator==(const CapacityRange&, const CapacityRange&) = default;
};

// How requests consume a capacity of a device with allow_multiple_allocations (consumable
// capacity, KEP-5075): at most one of valid_values (ascending, ≤ 10, each ≤ the capacity) and
// valid_range; either needs default_value among them.
struct CapacityRequestPolicy {
  std::string default_value = {};                 // default; empty: unset
  std::vector<std::string> valid_values = {};     // validValues
  std::optional<CapacityRange> valid_range = {};  // validRange
  friend bool operator==(const CapacityRequestPolicy&, const CapacityRequestPolicy&) = default;
};

enum class TaintEffect { kNoSchedule, kNoExecute, kNone };

// A driver-defined taint (taints[], KEP-5055): claims that do not tolerate it are not allocated
// the device (NoSchedule) or are evicted (NoExecute); None is informational.
struct DeviceTaint {
  std::string key = {};    // key: a label name ("gpu.example.com/xid")
  std::string value = {};  // value: a label value, may be empty
  TaintEffect effect = TaintEffect::kNoSchedule;
  // timeAdded, RFC 3339 ("2025-11-29T20:43:39Z"). Empty: the SDK sets the time it first publishes
  // the taint and keeps it (read back from the published slice) while the taint stays.
  std::string time_added = {};
  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

// core/v1 NodeSelectorRequirement: operator In, NotIn, Exists, DoesNotExist, Gt or Lt.
struct NodeSelectorRequirement {
  std::string key = {};
  std::string op = {};  // operator
  std::vector<std::string> values = {};
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions = {};  // node labels
  std::vector<NodeSelectorRequirement> match_fields = {};       // "metadata.name" only
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};
// core/v1 NodeSelector; ResourceSlices take exactly one term.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms = {};  // nodeSelectorTerms
  friend bool operator==(const NodeSelector&, const NodeSelector&) = default;
};

// A device (resource.k8s.io/v1 Device). Only name, attributes and capacity are needed; the rest is
// for partitionable, shareable, tainted or network-attached devices.
struct DraDevice {
  std::string name = {};  // DNS label, unique in its pool
  // Keys: a C identifier (≤ 32) optionally prefixed "<dns subdomain>/"; ≤ 32 entries in total
  // with capacity.
  std::map<std::string, AttributeValue> attributes = {};
  Quantities capacity = {};  // capacity[<name>].value, e.g. "80Gi"
  // capacity[<name>].requestPolicy, by capacity name. REQUIRES allow_multiple_allocations.
  std::map<std::string, CapacityRequestPolicy> request_policies = {};
  // allowMultipleAllocations: several claims (each with its share ID) may hold the device at once,
  // consuming its capacity.
  bool allow_multiple_allocations = false;
  std::vector<CounterConsumption> consumes_counters = {};  // consumesCounters; ≤ 2, one per set
  std::vector<DeviceTaint> taints = {};                    // taints; ≤ 16
  bool binds_to_node = false;                              // bindsToNode
  // bindingConditions / bindingFailureConditions: ≤ 4 condition types each, both or neither.
  std::vector<std::string> binding_conditions = {};
  std::vector<std::string> binding_failure_conditions = {};
  // Where the device can be used, in a pool with per_device_node_selection only: exactly one of
  // node_name, node_selector and all_nodes.
  std::string node_name = {};                      // nodeName
  std::optional<NodeSelector> node_selector = {};  // nodeSelector
  bool all_nodes = false;                          // allNodes

  friend bool operator==(const DraDevice&, const DraDevice&) = default;
};

// A pool of devices: its slices share pool.name, pool.generation and pool.resourceSliceCount. The
// SDK splits it into slices: its counter sets (8 per slice), then its devices (128 per slice, 64
// when a slice holds a device with taints or counter consumption).
struct DraPool {
  // pool.name: DNS subdomains joined by '/', ≤ 253. A node plugin's empty name is the node's name.
  std::string name = {};
  std::vector<CounterSet> shared_counters = {};  // sharedCounters; names unique in the pool
  std::vector<DraDevice> devices = {};           // names unique in the pool
  // Node selection of a pool not tied to one node (kdp::ResourceSlicePublisher): exactly one of
  // all_nodes, node_selector and per_device_node_selection. A node plugin's pools get the node's
  // nodeName and must leave all three unset.
  bool all_nodes = false;                          // allNodes
  std::optional<NodeSelector> node_selector = {};  // nodeSelector
  bool per_device_node_selection = false;          // perDeviceNodeSelection

  friend bool operator==(const DraPool&, const DraPool&) = default;
};

// A MIG-like partition profile (PartitionedPool()).
struct PartitionProfile {
  std::string name = {};     // "1g": devices "<device>-1g-0", "<device>-1g-1", ...
  int count = 0;             // how many partitions of this profile a device offers
  Quantities counters = {};  // what each partition takes of its device's counter set
};

// The node's pool (empty name) with each of `devices` partitionable: a counter set named after it
// holding `total`, the device consuming all of it, then each profile's partitions (the device's
// attributes plus "profile", the profile's name; no capacity) consuming their counters. The
// scheduler then never allocates a device and its partitions beyond `total`.
DraPool PartitionedPool(std::vector<DraDevice> devices, const Quantities& total,
                        const std::vector<PartitionProfile>& profiles);

// Lets several claims share `device` (allow_multiple_allocations): each consumes its capacity
// `capacity` in multiples of `step`, one step by default (a validRange from `step`).
void MakeShareable(DraDevice& device, const std::string& capacity, const std::string& step);

}  // namespace kdp

#endif  // KDP_DRA_DEVICE_H_
