// kdp::Topology is the SDK's hardware discovery: a snapshot of the NUMA nodes, the PCI devices
// (GPUs, NICs, accelerators, ...) with their NUMA locality and OS device names, and the NUMA
// distance matrix (the value types are in kdp/hardware.h; GPUs by name in kdp/gpus.h). Plugins
// build one with FromHost() on a node, or with FromXmlFile() / FromXmlBuffer() from an hwloc 2.x
// XML file in tests (FromHost() also honours HWLOC_XMLFILE, so a plugin binary can run against a
// fake machine unchanged). The discovery uses hwloc, whose types never appear here: everything is
// copied into plain value types and the hwloc topology is freed before the factory returns. It
// describes the whole machine, including the CPUs and NUMA nodes that this process's cgroup cpuset
// does not allow (a plugin pinned to a few CPUs still reports every device on its own node).
// hwloc's optional plugins that the SDK never needs (GL, OpenCL, libxml2) are not loaded unless
// HWLOC_PLUGINS_BLACKLIST says otherwise: the user's setting wins.
//
// Thread-safety: a Topology is immutable after construction, so it is const-safe (any number of
// threads may call its methods concurrently). The value types are regular and externally
// synchronized like any std::vector.
#ifndef KDP_TOPOLOGY_H_
#define KDP_TOPOLOGY_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kdp/hardware.h"  // IWYU pragma: export

namespace kdp {

namespace internal {
class TopologyBuilder;

// Implementation detail of Topology::Locality(), not API: where one PCI device sits on the PCIe
// fabric, as hwloc global persistent indexes (sdk/src/topology/pci_locality.h fills and compares
// it).
struct PciPath {
  static constexpr uint64_t kNone = UINT64_MAX;
  std::vector<uint64_t> bridges = {};  // PCI-to-PCI bridges above the device, nearest first
  uint64_t host_bridge = kNone;        // the host bridge (root complex) above it
  uint64_t package = kNone;            // the Package object above it
};
}  // namespace internal

// Source of NUMA distances on a live host: libnuma's numa_distance() in production, a fake in
// tests. Implementations must be safe to call from one thread at a time; Topology::FromHost()
// calls Distance() only while it builds the snapshot.
class NumaDistanceSource {
 public:
  virtual ~NumaDistanceSource() = default;
  // The ACPI SLIT distance between Linux NUMA nodes `from` and `to`: 10 for the same node,
  // larger for remote nodes, 0 when unknown (including nodes that do not exist).
  virtual int Distance(int from, int to) const = 0;
};

// libnuma's numa_distance() (reads /sys/devices/system/node). Distance() returns 0 for every pair
// when the kernel has no NUMA support (numa_available() < 0). Never null.
std::unique_ptr<NumaDistanceSource> NewLibnumaDistanceSource();

// The hardware snapshot. Non-copyable; built only through the factories.
//
// NUMA locality rule for a PCI device: hwloc attaches the device below a CPU-side object (its
// non-I/O ancestor: Package, Group, cache or Machine). The device's nodes are the NUMA nodes whose
// locality is that object's or smaller (hwloc_get_local_numanode_objs with SMALLER_LOCALITY), so
// a machine-wide CPU-less node is not reported for a device local to one package. When no node
// is that local (the object is narrower than a node, e.g. an L3 cache), the nodes with the
// smallest locality covering the object are used. Then:
//   - on a machine with more than one NUMA node, a result that covers every node (typically a
//     device attached at the Machine root because sysfs says numa_node = -1) means "unknown" and
//     becomes EMPTY, so the kubelet receives no topology rather than a false "all nodes";
//   - on a machine with exactly one NUMA node, a device anywhere (the root included) is local to
//     that node and reports it (an XML topology cannot say more);
//   - on a live host (FromHost() without HWLOC_XMLFILE), the kernel has the last word: a device
//     whose /sys/bus/pci/devices/<address>/numa_node reads -1 gets no topology, on one node as on
//     many, unless HWLOC_PCI_LOCALITY is set (the operator's override wins).
class Topology {
 public:
  // Discovers the live host with hwloc (PCI devices and OS devices included). hwloc honours its
  // environment: HWLOC_XMLFILE loads a file instead, HWLOC_PCI_LOCALITY overrides PCI locality.
  // NUMA distances come from hwloc's "NUMALatency" matrix when it has one; otherwise from
  // `distances` when given; otherwise, when the topology describes this machine (not an
  // HWLOC_XMLFILE), from libnuma; otherwise they stay unknown (NumaDistance() returns 0).
  // INTERNAL when hwloc cannot initialise or load.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Topology>> FromHost(
      std::unique_ptr<NumaDistanceSource> distances = nullptr);

  // Loads an hwloc 2.x XML export (lstopo --of xml). Distances come only from the file.
  // NOT_FOUND / PERMISSION_DENIED when the file cannot be read, INVALID_ARGUMENT when hwloc
  // rejects its content; every error message names `path`. HWLOC_XMLFILE does not interfere.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Topology>> FromXmlFile(
      const std::string& path);

  // Same as FromXmlFile() for XML text held in memory (borrowed for the call only).
  // INVALID_ARGUMENT when it is empty or hwloc rejects it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Topology>> FromXmlBuffer(
      std::string_view xml);

  // FromXmlFile(xml_path) when `xml_path` is not empty, else FromHost(): what a plugin's
  // --topology-xml flag means. Errors as those.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Topology>> Load(const std::string& xml_path);

  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology();

  // All NUMA nodes, ascending os_index. At least one on any topology hwloc loads.
  const std::vector<NumaNode>& numa_nodes() const { return numa_nodes_; }

  // All PCI devices (not bridges), ascending address.
  const std::vector<PciDevice>& pci_devices() const { return pci_devices_; }

  // Copies of the devices whose class_id is one of `class_ids`, ascending address. Empty when
  // none matches.
  std::vector<PciDevice> PciDevicesWithClass(std::initializer_list<uint16_t> class_ids) const;

  // The device at `address`, or nullptr when there is none. Valid while this Topology lives.
  const PciDevice* FindPciDevice(const PciAddress& address) const;

  // The node with Linux number `os_index`, or nullptr. Valid while this Topology lives.
  const NumaNode* FindNumaNode(int os_index) const;

  // The SLIT distance between Linux NUMA nodes `from` and `to` (10 = local); 0 when unknown,
  // including nodes that do not exist.
  int NumaDistance(int from, int to) const;

  // How closely devices `a` and `b` sit on the PCIe fabric, from their lowest common ancestor in
  // hwloc's tree: a PCI-to-PCI bridge (a switch port, or the root port above a multi-function
  // device) gives kSameSwitch, a host bridge kSameHostBridge; above that, one Package object gives
  // kSamePackage and two give kCrossPackage; where either has no Package above it (a device
  // attached to a Group or the Machine), equal numa_nodes give kSamePackage and different ones
  // kCrossPackage. kUnknown when either is not a device of this topology or has no NUMA locality
  // (empty numa_nodes). A device with itself is kSameSwitch when it sits below a PCI-to-PCI
  // bridge, else kSameHostBridge.
  PciLocality Locality(const PciAddress& a, const PciAddress& b) const;

  // The link matrices the topology carries, in hwloc's order: hwloc distance matrices that mean
  // bandwidth (kind HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH, or a name ending in "Bandwidth") with at
  // least one PCI device among their endpoints. Empty when none (always on a live host with
  // Debian's hwloc, which has no NVML / RSMI / Level Zero backend).
  const std::vector<LinkMatrix>& link_matrices() const { return link_matrices_; }

  // Bandwidth between PCI devices `a` and `b` over all link matrices, in MB/s: the sum, over the
  // matrices that have both as endpoints, of
  //   - their direct link, and
  //   - when neither is a switch endpoint, the bandwidth through the matrix's switch fabric: all
  //     the switch endpoints of one matrix form a single fabric, so this is the smaller of a's
  //     and b's total links to the matrix's switches (0 when either has none), whichever
  //     switches those are. This is what hwloc_distances_transform() does with
  //     MERGE_SWITCH_PORTS then TRANSITIVE_CLOSURE (except that hwloc drops the direct link):
  //     on a DGX-2 each GPU links only to the six NVSwitches of its baseboard and the trunks
  //     between the boards are not in the matrix, yet every GPU pair gets 6 x 25000 = 150000.
  // A link is the larger of its two directions. A switch endpoint is a PCI device of base class
  // 0x06 (an NVSwitch is 0x0680) or one hwloc marks as an NVSwitch (its subtype; real DGX-2
  // exports have an NVSwitch whose class reads 0x0000); a CPU package is not one. Links between
  // switches add nothing between other endpoints; with a switch as `a` or `b`, only the direct
  // links count. 0 when they have no link, when either is not a matrix endpoint, and for a == b.
  uint64_t LinkBandwidth(const PciAddress& a, const PciAddress& b) const;

 private:
  friend class internal::TopologyBuilder;
  Topology() = default;

  std::vector<NumaNode> numa_nodes_;
  std::vector<PciDevice> pci_devices_;
  // Row-major matrix over distance_nodes_ (Linux node numbers); 0 entries are unknown.
  std::vector<int> distance_nodes_;
  std::vector<int> distances_;
  std::vector<LinkMatrix> link_matrices_;
  // Per device of pci_devices_ (same index): its place on the PCIe fabric, for Locality().
  std::vector<internal::PciPath> pci_paths_;
  // The link-matrix endpoints that are switches (see LinkBandwidth()), ascending.
  std::vector<PciAddress> link_switches_;
};

}  // namespace kdp

#endif  // KDP_TOPOLOGY_H_
