#include "sdk/src/pci_locality.h"

#include <fstream>

namespace kdp::internal {

std::optional<int> SysfsNumaNode(const std::string& pci_devices_dir, const PciAddress& address) {
  std::ifstream in(pci_devices_dir + "/" + address.ToString() + "/numa_node");
  int node = 0;
  if (!(in >> node)) return std::nullopt;
  return node;
}

}  // namespace kdp::internal
