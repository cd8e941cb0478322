// Where PCI devices sit, as the SDK decides it (private to the SDK):
//   - the kernel's own record of a device's NUMA node, which the SDK trusts over hwloc's placement
//     on a live host: sysfs says -1 when the firmware gave no locality, and hwloc then attaches
//     the device at the machine root, which on a one-node machine looks like node 0;
//   - a device's path up the hwloc tree (bridges, host bridge, package) and the PciLocality of
//     two such paths, for Topology::Locality().
#ifndef KDP_SDK_SRC_TOPOLOGY_PCI_LOCALITY_H_
#define KDP_SDK_SRC_TOPOLOGY_PCI_LOCALITY_H_

#include <optional>
#include <string>
#include <vector>

#include "kdp/topology.h"

struct hwloc_obj;  // hwloc.h's hwloc_obj_t is a pointer to it.

namespace kdp::internal {

// Where Linux lists PCI devices.
inline constexpr char kSysfsPciDevices[] = "/sys/bus/pci/devices";

// Reads <pci_devices_dir>/<address>/numa_node: the node number, -1 when the kernel does not know,
// nullopt when the file is missing or does not hold a number.
std::optional<int> SysfsNumaNode(const std::string& pci_devices_dir, const PciAddress& address);

// The path of hwloc object `pci_device` (an hwloc PCI device) up to the machine: the PCI-to-PCI
// bridges above it (nearest first), the host bridge that ends its I/O subtree, and the Package
// above the CPU-side object it hangs from. Reads only the object and its ancestors. REQUIRES:
// `pci_device` is not null and belongs to a loaded topology.
PciPath PciPathOf(const hwloc_obj* pci_device);

// The locality of two devices from their paths and NUMA nodes, following Topology::Locality()
// (which handles missing devices and a device compared with itself): kUnknown when either node
// list is empty; else the kind of their lowest common ancestor; above the host bridges, the
// Package objects when both have one, else the node lists.
PciLocality ComparePciPaths(const PciPath& a, const std::vector<int>& a_nodes, const PciPath& b,
                            const std::vector<int>& b_nodes);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_TOPOLOGY_PCI_LOCALITY_H_
