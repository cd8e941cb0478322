// The kernel's own record of a PCI device's NUMA node, which the SDK trusts over hwloc's
// placement on a live host: sysfs says -1 when the firmware gave no locality, and hwloc then
// attaches the device at the machine root, which on a one-node machine looks like node 0.
// Private to the SDK.
#ifndef KDP_SDK_SRC_PCI_LOCALITY_H_
#define KDP_SDK_SRC_PCI_LOCALITY_H_

#include <optional>
#include <string>

#include "kdp/topology.h"

namespace kdp::internal {

// Where Linux lists PCI devices.
inline constexpr char kSysfsPciDevices[] = "/sys/bus/pci/devices";

// Reads <pci_devices_dir>/<address>/numa_node: the node number, -1 when the kernel does not know,
// nullopt when the file is missing or does not hold a number.
std::optional<int> SysfsNumaNode(const std::string& pci_devices_dir, const PciAddress& address);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_PCI_LOCALITY_H_
