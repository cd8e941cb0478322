#include "manager/src/devicemanager/topology_hints.h"

#include <algorithm>
#include <map>
#include <utility>

namespace kdp::manager {
namespace {

// Devices that share one NUMA-node set count together: a mask intersects all of them or none, so
// each mask costs O(distinct sets) instead of O(devices).
struct DeviceGroup {
  NumaMask nodes;
  int64_t all = 0;        // every device of the resource with this set
  int64_t available = 0;  // of them, available
  int64_t reusable = 0;   // of them, reusable
};

// The device's nodes restricted to `enumerated`, ascending, into `nodes` (reused by the caller
// so that thousands of devices cost no allocation each).
void NodesWithin(const DeviceInfo& device, const std::vector<int>& enumerated,
                 std::vector<int>& nodes) {
  nodes.clear();
  for (int64_t node : device.numa_nodes) {
    if (std::binary_search(enumerated.begin(), enumerated.end(), node)) {
      nodes.push_back(static_cast<int>(node));
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
}

}  // namespace

bool HasTopology(const ResourceDevices& devices) {
  return std::any_of(devices.devices.begin(), devices.devices.end(),
                     [](const auto& entry) { return !entry.second.numa_nodes.empty(); });
}

std::vector<int> DeviceNumaNodes(const ResourceDevices& devices,
                                 const std::vector<int>& machine_nodes) {
  std::set<int> nodes;
  for (const auto& [id, device] : devices.devices) {
    for (int64_t node : device.numa_nodes) {
      if (node < 0 || node > NumaMask::kMaxNode) continue;
      // The subset guard of PR #138244: a plugin cannot widen the machine.
      if (!machine_nodes.empty() &&
          std::find(machine_nodes.begin(), machine_nodes.end(), node) == machine_nodes.end()) {
        continue;
      }
      nodes.insert(static_cast<int>(node));
    }
  }
  return {nodes.begin(), nodes.end()};
}

std::vector<TopologyHint> GenerateDeviceTopologyHints(const ResourceDevices& devices,
                                                      const std::vector<int>& machine_nodes,
                                                      const std::set<std::string>& available,
                                                      const std::set<std::string>& reusable,
                                                      int64_t request) {
  const std::vector<int> enumerated = DeviceNumaNodes(devices, machine_nodes);
  std::map<std::vector<int>, DeviceGroup> groups;
  std::vector<int> nodes;
  // Consecutive devices (by ID) usually share their nodes: the last group is looked at first.
  std::map<std::vector<int>, DeviceGroup>::iterator last = groups.end();
  auto group_of = [&](const DeviceInfo& device) -> DeviceGroup& {
    NodesWithin(device, enumerated, nodes);
    if (last != groups.end() && last->first == nodes) return last->second;
    auto [it, inserted] = groups.try_emplace(nodes);
    if (inserted) it->second.nodes = NumaMask::FromNodes(nodes);
    last = it;
    return it->second;
  };
  // `available` and the devices are both ordered by ID: one merged walk instead of a lookup per
  // device.
  auto next_available = available.begin();
  for (const auto& [id, device] : devices.devices) {
    while (next_available != available.end() && *next_available < id) ++next_available;
    if (device.numa_nodes.empty()) continue;  // counts nowhere, as in the kubelet
    DeviceGroup& group = group_of(device);
    ++group.all;
    if (next_available != available.end() && *next_available == id) ++group.available;
  }
  for (const std::string& id : reusable) {
    auto it = devices.devices.find(id);
    // A reusable device without topology (or gone from the plugin's list) constrains no mask.
    if (it == devices.devices.end() || it->second.numa_nodes.empty()) continue;
    ++group_of(it->second).reusable;
  }

  const int machine_size =
      static_cast<int>(machine_nodes.empty() ? enumerated.size() : machine_nodes.size());
  int min_affinity_size = machine_size;
  std::vector<TopologyHint> hints;
  IterateMasks(enumerated, [&](const NumaMask& mask) {
    int64_t in_mask = 0;
    int64_t matching = 0;
    bool reusable_outside = false;
    for (const auto& [nodes, group] : groups) {
      const bool intersects = group.nodes.Intersects(mask);
      if (intersects) {
        in_mask += group.all;
        matching += group.available + group.reusable;
      } else if (group.reusable > 0) {
        reusable_outside = true;
      }
    }
    if (in_mask >= request && mask.Count() < min_affinity_size) min_affinity_size = mask.Count();
    // Every reusable device must be inside the mask: the container takes them first.
    if (reusable_outside || matching < request) return;
    hints.push_back({.numa_affinity = mask, .preferred = false});
  });
  for (TopologyHint& hint : hints) {
    hint.preferred = hint.numa_affinity->Count() == min_affinity_size;
  }
  return hints;
}

}  // namespace kdp::manager
