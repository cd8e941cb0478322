#include "sdk/src/topology/pci_locality.h"

#include <hwloc.h>

#include <algorithm>
#include <fstream>

namespace kdp::internal {

std::optional<int> SysfsNumaNode(const std::string& pci_devices_dir, const PciAddress& address) {
  std::ifstream in(pci_devices_dir + "/" + address.ToString() + "/numa_node");
  int node = 0;
  if (!(in >> node)) return std::nullopt;
  return node;
}

PciPath PciPathOf(const hwloc_obj* pci_device) {
  PciPath path;
  const hwloc_obj* object = pci_device->parent;
  // The I/O subtree: bridges up to the host bridge, which hangs from a CPU-side object.
  for (; object != nullptr && hwloc_obj_type_is_io(object->type); object = object->parent) {
    if (object->type != HWLOC_OBJ_BRIDGE || object->attr == nullptr) continue;
    if (object->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      path.host_bridge = object->gp_index;
    } else if (path.host_bridge == PciPath::kNone) {
      // A PCI-to-PCI bridge (switch port or root port). hwloc nests no PCI bridge above a host
      // bridge, but stop collecting there all the same.
      path.bridges.push_back(object->gp_index);
    }
  }
  // The CPU side: the nearest Package (a device may hang from a cache, Die or Group inside one,
  // or from a Group or the Machine above several).
  for (; object != nullptr; object = object->parent) {
    if (object->type == HWLOC_OBJ_PACKAGE) {
      path.package = object->gp_index;
      break;
    }
  }
  return path;
}

PciLocality ComparePciPaths(const PciPath& a, const std::vector<int>& a_nodes, const PciPath& b,
                            const std::vector<int>& b_nodes) {
  if (a_nodes.empty() || b_nodes.empty()) return PciLocality::kUnknown;
  // The paths nest (it is a tree), so the first of a's bridges that b shares is the lowest
  // common ancestor when that is a bridge.
  for (uint64_t bridge : a.bridges) {
    if (std::find(b.bridges.begin(), b.bridges.end(), bridge) != b.bridges.end()) {
      return PciLocality::kSameSwitch;
    }
  }
  if (a.host_bridge != PciPath::kNone && a.host_bridge == b.host_bridge) {
    return PciLocality::kSameHostBridge;
  }
  if (a.package != PciPath::kNone && b.package != PciPath::kNone) {
    return a.package == b.package ? PciLocality::kSamePackage : PciLocality::kCrossPackage;
  }
  return a_nodes == b_nodes ? PciLocality::kSamePackage : PciLocality::kCrossPackage;
}

}  // namespace kdp::internal
