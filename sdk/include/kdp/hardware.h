// The plain value types of a kdp::Topology snapshot: PCI addresses and devices with their OS
// devices and NUMA locality, NUMA nodes, PCIe locality classes and link-bandwidth matrices. They
// carry no hwloc type; kdp/topology.h builds them, kdp/gpus.h and kdp/preferred_allocation.h
// read them.
//
// Thread-safety: regular value types, externally synchronized like any std::vector; the free
// functions are thread-safe.
#ifndef KDP_HARDWARE_H_
#define KDP_HARDWARE_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kdp {

// A PCI function address (domain:bus:device.function), ordered lexicographically by its fields.
struct PciAddress {
  uint32_t domain = 0;
  uint8_t bus = 0;
  uint8_t device = 0;    // 0..0x1f
  uint8_t function = 0;  // 0..7

  // Linux sysfs form, lower-case hex: "0000:3b:00.0" (the domain takes more digits past 0xffff).
  std::string ToString() const;

  // Parses "DDDD:BB:DD.F" (domain of 1 to 8 hex digits) or "BB:DD.F" (domain 0); hex digits in
  // either case. INVALID_ARGUMENT, naming `text`, for anything else, including a device above
  // 0x1f, a function above 7 and surrounding whitespace.
  static absl::StatusOr<PciAddress> Parse(std::string_view text);

  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;
  friend bool operator==(const PciAddress&, const PciAddress&) = default;
};

// Kind of an OS device (the name the operating system gives a device function), as hwloc 2.x
// classifies it.
enum class OsDeviceType {
  kBlock,        // a disk: "sda", "nvme0n1"
  kGpu,          // a GPU handle: DRM "card1", "renderD128"; NVML "nvml0"; ROCm SMI "rsmi0"
  kNetwork,      // a network interface: "eth0", "ens1f0"
  kOpenFabrics,  // an InfiniBand / RDMA device: "mlx5_0", "ib0" (hwloc's
                 // HWLOC_OBJ_OSDEV_OPENFABRICS)
  kDma,          // a DMA engine: "dma0chan0"
  kCoprocessor,  // a compute handle: "cuda0", "opencl0d0", "ve0"
  kOther,        // anything else hwloc lists
};

// "block", "gpu", "network", "openfabrics", "dma", "coprocessor" or "other".
const char* OsDeviceTypeName(OsDeviceType type);

// One OS device under a PCI device.
struct OsDevice {
  std::string name = {};
  OsDeviceType type = OsDeviceType::kOther;

  friend bool operator==(const OsDevice&, const OsDevice&) = default;
};

// How closely two PCI devices sit on the PCIe fabric, tightest first (the order compares: a
// smaller value is a tighter locality).
enum class PciLocality {
  kSameSwitch,      // both below one PCIe switch (a PCI-to-PCI bridge below the host bridge)
  kSameHostBridge,  // below one host bridge (root complex), through different switches or none
  kSamePackage,     // below different host bridges of one CPU package (or, without packages, of
                    // one NUMA node)
  kCrossPackage,    // in different packages
  kUnknown,         // either device is not in the topology or has no known locality
};

// "same-switch", "same-host-bridge", "same-package", "cross-package" or "unknown".
const char* PciLocalityName(PciLocality locality);

// One PCI device (function) found by hwloc. Bridges are not listed.
struct PciDevice {
  PciAddress address;
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  // Base class << 8 | subclass: 0x0300 VGA, 0x0302 3D controller, 0x0200 Ethernet,
  // 0x0207 InfiniBand, 0x1200 processing accelerator.
  uint16_t class_id = 0;
  // Linux NUMA node numbers (hwloc OS indexes, never logical indexes) local to the device,
  // ascending. EMPTY when the locality is unknown: never "all nodes" of a multi-node machine.
  // See Topology for the exact rule.
  std::vector<int> numa_nodes;
  // The OS devices under the device in hwloc's order: "card1", "renderD128", "eth0", "ib0",
  // "mlx5_0", "nvme0n1", "nvml0", "cuda0", ...
  std::vector<OsDevice> os_devices;

  friend bool operator==(const PciDevice&, const PciDevice&) = default;
};

// One NUMA node.
struct NumaNode {
  // The Linux node number (hwloc OS index); may be sparse (0, 8, ...).
  int os_index = 0;
  // OS indexes of the PUs (logical CPUs as Linux numbers them) whose home node this is,
  // ascending. Empty for a CPU-less node (HBM, CXL or GPU memory). Every PU appears in exactly
  // one node: among the nodes local to a PU, the one with the smallest locality (fewest PUs),
  // then the lowest os_index, which matches Linux's node cpulists on real machines.
  std::vector<int> cpus;
  // Memory local to the node in bytes; 0 when unknown.
  uint64_t memory_bytes = 0;

  friend bool operator==(const NumaNode&, const NumaNode&) = default;
};

// A link-bandwidth matrix between devices that the topology carries (hwloc distances such as
// "NVLinkBandwidth", "XGMIBandwidth", "XeLinkBandwidth"), in hwloc's unit (MB/s).
struct LinkMatrix {
  // One end of the links: a PCI device (GPU, NVSwitch), or a CPU package (POWER's CPU NVLinks).
  struct Endpoint {
    // Set for a PCI device (an OS device of the matrix is replaced by its PCI device).
    std::optional<PciAddress> pci_address = std::nullopt;
    // Set for a package: its OS index.
    std::optional<int> package = std::nullopt;
    // Readable name: the PCI address, "package:<os index>", or hwloc's object name.
    std::string label = {};

    friend bool operator==(const Endpoint&, const Endpoint&) = default;
  };
  // hwloc's name of the matrix: "NVLinkBandwidth".
  std::string name = {};
  std::vector<Endpoint> endpoints = {};
  // Row-major, endpoints.size() squared: bandwidth from endpoint i to endpoint j; 0 = no link.
  std::vector<uint64_t> bandwidth = {};

  friend bool operator==(const LinkMatrix&, const LinkMatrix&) = default;
};

}  // namespace kdp

#endif  // KDP_HARDWARE_H_
