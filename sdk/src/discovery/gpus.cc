#include "kdp/gpus.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/absl_view.h"

namespace kdp {
namespace {

constexpr uint16_t kPciClassVga = 0x0300;
constexpr uint16_t kPciClass3d = 0x0302;

}  // namespace

std::vector<Gpu> FindGpus(const Topology& topology, std::optional<uint16_t> vendor_id) {
  std::vector<Gpu> gpus;
  // Ascending PCI address: the order, and so the names, survive restarts.
  for (const PciDevice& pci : topology.PciDevicesWithClass({kPciClassVga, kPciClass3d})) {
    if (vendor_id.has_value() && pci.vendor_id != *vendor_id) continue;
    Gpu gpu{.id = absl::StrCat("gpu", gpus.size()),
            .address = pci.address,
            .vendor_id = pci.vendor_id,
            .numa_nodes = pci.numa_nodes,
            .dev_nodes = {}};
    for (const OsDevice& os_device : pci.os_devices) {
      const std::string& name = os_device.name;
      if (absl::StartsWith(name, "card") || absl::StartsWith(name, "renderD")) {
        gpu.dev_nodes.push_back("/dev/dri/" + name);
      }
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

void GpuDiscovery::AddFlags(Flags& flags) {
  flags.AddString("--topology-xml", &topology_xml,
                  "discover GPUs from this hwloc XML file (lstopo --of xml) instead of the host");
  flags.AddValue("--vendor", &vendor_id, ParsePciId,
                 "only GPUs of this PCI vendor ID, in hex with or without 0x (e.g. 10de); "
                 "default: any vendor");
}

absl::StatusOr<std::unique_ptr<Topology>> GpuDiscovery::LoadTopology() const {
  return Topology::Load(topology_xml);
}

absl::StatusOr<std::vector<Gpu>> GpuDiscovery::Find() const {
  absl::StatusOr<std::unique_ptr<Topology>> topology = LoadTopology();
  if (!topology.ok()) return topology.status();
  return FindGpus(**topology, vendor_id);
}

absl::StatusOr<uint16_t> ParsePciId(std::string_view text) {
  absl::string_view digits = Sv(text);
  if (!absl::ConsumePrefix(&digits, "0x")) absl::ConsumePrefix(&digits, "0X");
  uint32_t value = 0;
  // SimpleHexAtoi alone would also take signs, spaces and a second "0x".
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), absl::ascii_isxdigit) ||
      !absl::SimpleHexAtoi(digits, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid PCI vendor ID \"", Sv(text),
                                                   "\": want 1 to 4 hex digits, e.g. 10de"));
  }
  return static_cast<uint16_t>(value);
}

}  // namespace kdp
