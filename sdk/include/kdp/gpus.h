// The GPUs of a kdp::Topology by stable name, for device plugins and DRA drivers that advertise
// whole GPUs: FindGpus() takes the PCI functions of class 0x0300 (VGA) and 0x0302 (3D controller),
// names them gpu0..gpuN-1 in ascending PCI address order and lists their DRM device nodes.
// GpuDiscovery binds the --topology-xml and --vendor flags that choose them; ParsePciId() reads
// the PCI vendor or device ID a --vendor flag gives.
//
// Thread-safety: the functions are pure and thread-safe; Gpu is a regular value type.
#ifndef KDP_GPUS_H_
#define KDP_GPUS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kdp/flags.h"
#include "kdp/hardware.h"
#include "kdp/topology.h"

namespace kdp {

// One physical GPU found on the PCI bus.
struct Gpu {
  // "gpu0", "gpu1", ...: the index in ascending PCI address order, so IDs are stable across
  // restarts and readable in `kubectl describe node`, unlike raw PCI addresses.
  std::string id = {};
  PciAddress address = {};
  uint16_t vendor_id = 0;
  // Linux NUMA node numbers local to the GPU (PciDevice::numa_nodes); empty when unknown.
  std::vector<int> numa_nodes = {};
  // Host paths of the GPU's DRM nodes: "/dev/dri/card1", "/dev/dri/renderD128". Other OS devices
  // hwloc lists under a GPU ("cuda0", "nvml0", "opencl0d0") are not files a container opens.
  std::vector<std::string> dev_nodes = {};

  friend bool operator==(const Gpu&, const Gpu&) = default;
};

// The GPUs of `topology` (of vendor `vendor_id` when given), in ascending PCI address order and
// named gpu0..gpuN-1 in that order. Empty when there is none: not an error.
[[nodiscard]] std::vector<Gpu> FindGpus(const Topology& topology,
                                        std::optional<uint16_t> vendor_id = std::nullopt);

// Which GPUs a plugin or driver serves, as its --topology-xml and --vendor flags say.
struct GpuDiscovery {
  std::string topology_xml = {};                     // empty: the live host (Topology::Load)
  std::optional<uint16_t> vendor_id = std::nullopt;  // unset: any vendor

  // Binds --topology-xml and --vendor to this object (borrowed until the factory has run).
  void AddFlags(Flags& flags);
  // Topology::Load(topology_xml).
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Topology>> LoadTopology() const;
  // FindGpus(LoadTopology()); the topology's error.
  [[nodiscard]] absl::StatusOr<std::vector<Gpu>> Find() const;
};

// Parses a PCI vendor or device ID in hex, with or without "0x" ("10de", "0x10DE").
// INVALID_ARGUMENT, naming `text`, for anything else (empty, non-hex, above 0xffff).
[[nodiscard]] absl::StatusOr<uint16_t> ParsePciId(std::string_view text);

}  // namespace kdp

#endif  // KDP_GPUS_H_
