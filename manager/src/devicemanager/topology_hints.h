// The device manager as a topology-manager hint provider (the kubelet's devicemanager
// topology_hints.go: GetTopologyHints, GetPodTopologyHints, generateDeviceTopologyHints): which
// NUMA-node masks could hold a container's (or a pod's) devices of one resource, and which of them
// are preferred (the narrowest that the resource's whole device population could fill). Pure
// functions over a snapshot, so each rule is testable without a plugin;
// DeviceManager::GetTopologyHints() feeds them.
//
// Masks are enumerated over the NUMA nodes that host devices of the resource (kubernetes PR
// #138244), not over every node of the machine: the kubelet's 2^N enumeration stalls on machines
// with many device-less NUMA nodes (GB200: 36 nodes, kubernetes #131735), and masks with
// device-less nodes only ever add non-preferred hints that no device can use.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_TOPOLOGY_HINTS_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_TOPOLOGY_HINTS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/topologymanager/policy.h"

namespace kdp::manager {

// The hints for `request` devices of one resource (generateDeviceTopologyHints):
//   - a mask counts every device of the resource whose NUMA nodes intersect it to find the
//     narrowest mask that could ever hold the request (minAffinitySize, starting at the machine's
//     node count);
//   - a mask is dropped unless every reusable device with topology intersects it, and unless the
//     reusable plus available devices intersecting it reach `request`;
//   - the surviving masks are hints, preferred when their size is the minimum.
// `machine_nodes` are the machine's NUMA nodes (the kubelet's cadvisor view); device nodes outside
// it are ignored, and when it is empty the devices' own nodes are used. Hints come in the
// enumeration order (by size, then upstream's lexicographic order).
std::vector<TopologyHint> GenerateDeviceTopologyHints(const ResourceDevices& devices,
                                                      const std::vector<int>& machine_nodes,
                                                      const std::set<std::string>& available,
                                                      const std::set<std::string>& reusable,
                                                      int64_t request);

// True when some device of the resource reports a NUMA node; a resource without any topology
// gets a nil hint list ("no preference").
bool HasTopology(const ResourceDevices& devices);

// The NUMA nodes hosting devices of the resource, ascending (deviceNUMANodes of PR #138244),
// restricted to `machine_nodes` when that is not empty.
std::vector<int> DeviceNumaNodes(const ResourceDevices& devices,
                                 const std::vector<int>& machine_nodes);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_TOPOLOGY_HINTS_H_
