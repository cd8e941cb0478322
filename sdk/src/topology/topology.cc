// kdp::Topology on hwloc 2.x. Every hwloc object is copied into kdp's value types and the hwloc
// topology is destroyed before a factory returns, so no hwloc handle outlives the call.
#include "kdp/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "sdk/src/topology/hwloc_plugins.h"
#include "sdk/src/topology/pci_locality.h"

namespace kdp {

namespace internal {

void ConfigureHwlocPlugins() {
  // hwloc dlopen()s every plugin it ships when the first topology of the process is initialised:
  // libxml2 with ICU, OpenCL and X11, several milliseconds of start-up and those libraries' pages,
  // for OS devices the SDK never reads and an XML parser its builtin one replaces. hwloc_pci stays:
  // on a live host the PCI devices come from it. A user's own setting wins (overwrite = 0). Once:
  // setenv() races with getenv() in other threads, so the runners' main helpers call this before
  // any thread exists, and a later call changes nothing.
  static std::once_flag once;
  std::call_once(once, [] {
    setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml", /*overwrite=*/0);
  });
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// PciAddress

namespace {

// Parses 1..max_digits hex digits (either case) into `out`; false on anything else.
bool ParseHex(std::string_view text, size_t max_digits, uint32_t* out) {
  if (text.empty() || text.size() > max_digits) return false;
  uint32_t value = 0;
  for (char c : text) {
    uint32_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    value = value * 16 + digit;
  }
  *out = value;
  return true;
}

}  // namespace

std::string PciAddress::ToString() const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", static_cast<unsigned>(domain),
                static_cast<unsigned>(bus), static_cast<unsigned>(device),
                static_cast<unsigned>(function));
  return buf;
}

absl::StatusOr<PciAddress> PciAddress::Parse(std::string_view text) {
  auto invalid = [text](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid PCI address \"", std::string(text),
                                                   "\": ", std::string(why),
                                                   " (want DDDD:BB:DD.F or BB:DD.F)"));
  };
  // Split off "DD.F" after the last ':'.
  const size_t last_colon = text.rfind(':');
  if (last_colon == std::string_view::npos) return invalid("no ':'");
  const std::string_view head = text.substr(0, last_colon);
  const std::string_view tail = text.substr(last_colon + 1);
  const size_t first_colon = head.find(':');
  const bool has_domain = first_colon != std::string_view::npos;
  const std::string_view bus_text = has_domain ? head.substr(first_colon + 1) : head;
  const size_t dot = tail.find('.');
  if (dot == std::string_view::npos) return invalid("no '.' before the function");

  PciAddress address;
  uint32_t value = 0;
  if (has_domain) {
    if (!ParseHex(head.substr(0, first_colon), 8, &value)) return invalid("bad domain");
    address.domain = value;
  }
  if (!ParseHex(bus_text, 2, &value)) return invalid("bad bus");
  address.bus = static_cast<uint8_t>(value);
  if (!ParseHex(tail.substr(0, dot), 2, &value) || value > 0x1f) return invalid("bad device");
  address.device = static_cast<uint8_t>(value);
  if (!ParseHex(tail.substr(dot + 1), 1, &value) || value > 7) return invalid("bad function");
  address.function = static_cast<uint8_t>(value);
  return address;
}

// ---------------------------------------------------------------------------------------------
// Topology

Topology::~Topology() = default;

std::vector<PciDevice> Topology::PciDevicesWithClass(
    std::initializer_list<uint16_t> class_ids) const {
  std::vector<PciDevice> out;
  for (const PciDevice& device : pci_devices_) {
    if (std::find(class_ids.begin(), class_ids.end(), device.class_id) != class_ids.end()) {
      out.push_back(device);
    }
  }
  return out;
}

const PciDevice* Topology::FindPciDevice(const PciAddress& address) const {
  auto it = std::lower_bound(
      pci_devices_.begin(), pci_devices_.end(), address,
      [](const PciDevice& device, const PciAddress& a) { return device.address < a; });
  if (it == pci_devices_.end() || it->address != address) return nullptr;
  return &*it;
}

const NumaNode* Topology::FindNumaNode(int os_index) const {
  auto it = std::lower_bound(numa_nodes_.begin(), numa_nodes_.end(), os_index,
                             [](const NumaNode& node, int index) { return node.os_index < index; });
  if (it == numa_nodes_.end() || it->os_index != os_index) return nullptr;
  return &*it;
}

int Topology::NumaDistance(int from, int to) const {
  const auto from_it = std::find(distance_nodes_.begin(), distance_nodes_.end(), from);
  const auto to_it = std::find(distance_nodes_.begin(), distance_nodes_.end(), to);
  if (from_it == distance_nodes_.end() || to_it == distance_nodes_.end()) return 0;
  const size_t n = distance_nodes_.size();
  const auto row = static_cast<size_t>(std::distance(distance_nodes_.begin(), from_it));
  const auto column = static_cast<size_t>(std::distance(distance_nodes_.begin(), to_it));
  return distances_[row * n + column];
}

const char* OsDeviceTypeName(OsDeviceType type) {
  switch (type) {
    case OsDeviceType::kBlock:
      return "block";
    case OsDeviceType::kGpu:
      return "gpu";
    case OsDeviceType::kNetwork:
      return "network";
    case OsDeviceType::kOpenFabrics:
      return "openfabrics";
    case OsDeviceType::kDma:
      return "dma";
    case OsDeviceType::kCoprocessor:
      return "coprocessor";
    case OsDeviceType::kOther:
      break;
  }
  return "other";
}

const char* PciLocalityName(PciLocality locality) {
  switch (locality) {
    case PciLocality::kSameSwitch:
      return "same-switch";
    case PciLocality::kSameHostBridge:
      return "same-host-bridge";
    case PciLocality::kSamePackage:
      return "same-package";
    case PciLocality::kCrossPackage:
      return "cross-package";
    case PciLocality::kUnknown:
      break;
  }
  return "unknown";
}

PciLocality Topology::Locality(const PciAddress& a, const PciAddress& b) const {
  const PciDevice* da = FindPciDevice(a);
  const PciDevice* db = FindPciDevice(b);
  if (da == nullptr || db == nullptr || da->numa_nodes.empty() || db->numa_nodes.empty()) {
    return PciLocality::kUnknown;
  }
  const internal::PciPath& pa = pci_paths_[static_cast<size_t>(da - pci_devices_.data())];
  if (da == db) {
    return pa.bridges.empty() ? PciLocality::kSameHostBridge : PciLocality::kSameSwitch;
  }
  const internal::PciPath& pb = pci_paths_[static_cast<size_t>(db - pci_devices_.data())];
  return internal::ComparePciPaths(pa, da->numa_nodes, pb, db->numa_nodes);
}

uint64_t Topology::LinkBandwidth(const PciAddress& a, const PciAddress& b) const {
  if (a == b) return 0;
  uint64_t total = 0;
  for (const LinkMatrix& matrix : link_matrices_) {
    const size_t n = matrix.endpoints.size();
    auto index_of = [&matrix, n](const PciAddress& address) {
      for (size_t i = 0; i < n; ++i) {
        if (matrix.endpoints[i].pci_address == address) return i;
      }
      return n;
    };
    const size_t ia = index_of(a);
    const size_t ib = index_of(b);
    if (ia == n || ib == n || matrix.bandwidth.size() != n * n) continue;
    auto link = [&matrix, n](size_t i, size_t j) {
      return std::max(matrix.bandwidth[i * n + j], matrix.bandwidth[j * n + i]);
    };
    auto is_switch = [this, &matrix](size_t i) {
      const std::optional<PciAddress>& address = matrix.endpoints[i].pci_address;
      return address.has_value() &&
             std::binary_search(link_switches_.begin(), link_switches_.end(), *address);
    };
    total += link(ia, ib);
    if (is_switch(ia) || is_switch(ib)) continue;
    // The matrix's switches form one fabric (hwloc's MERGE_SWITCH_PORTS): each device reaches it
    // with the sum of its switch links, and the fabric carries the smaller of the two sums
    // between them (TRANSITIVE_CLOSURE), whichever switches each of them is linked to.
    uint64_t a_to_fabric = 0;
    uint64_t b_to_fabric = 0;
    for (size_t s = 0; s < n; ++s) {
      if (!is_switch(s)) continue;
      a_to_fabric += link(ia, s);
      b_to_fabric += link(ib, s);
    }
    total += std::min(a_to_fabric, b_to_fabric);
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Building from hwloc

namespace {

struct HwlocTopologyDeleter {
  void operator()(hwloc_topology_t topology) const { hwloc_topology_destroy(topology); }
};
using HwlocTopologyPtr = std::unique_ptr<hwloc_topology, HwlocTopologyDeleter>;

std::string ErrnoText(int error) { return error == 0 ? "unknown error" : std::strerror(error); }

// A fresh topology with I/O discovery on. In hwloc 2.x bridges, PCI devices and OS devices are
// filtered out (KEEP_NONE) unless asked for; KEEP_IMPORTANT keeps GPUs, NICs, storage and
// accelerators and only the bridges that lead to them.
//
// INCLUDE_DISALLOWED: the machine as it is, not the part this process's cgroup cpuset allows. By
// default hwloc drops the CPUs and NUMA nodes outside it, and a device of a dropped node then
// hangs from a package without memory: a plugin pinned to node 0 would report node 1's GPU on
// node 0 (or nowhere) and lose the NUMALatency matrix.
absl::StatusOr<HwlocTopologyPtr> NewHwlocTopology() {
  internal::ConfigureHwlocPlugins();
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::InternalError(absl::StrCat("hwloc_topology_init failed: ", ErrnoText(errno)));
  }
  HwlocTopologyPtr topology(raw);
  if (hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    return absl::InternalError(absl::StrCat("hwloc_topology_set_flags failed: ", ErrnoText(errno)));
  }
  if (hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    return absl::InternalError(
        absl::StrCat("hwloc_topology_set_io_types_filter failed: ", ErrnoText(errno)));
  }
  return topology;
}

std::vector<hwloc_obj_t> NumaNodeObjects(hwloc_topology_t topology) {
  std::vector<hwloc_obj_t> out;
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr);
       node != nullptr; node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) {
    if (node->os_index != HWLOC_UNKNOWN_INDEX) out.push_back(node);
  }
  return out;
}

int CpusetWeight(hwloc_obj_t object) {
  return object->cpuset == nullptr ? INT_MAX : hwloc_bitmap_weight(object->cpuset);
}

// True when `a` is a better home (or locality) node than `b`: smaller locality, then lower
// Linux number.
bool MoreLocal(hwloc_obj_t a, hwloc_obj_t b) {
  const int wa = CpusetWeight(a);
  const int wb = CpusetWeight(b);
  if (wa != wb) return wa < wb;
  return a->os_index < b->os_index;
}

std::vector<NumaNode> CollectNumaNodes(hwloc_topology_t topology,
                                       const std::vector<hwloc_obj_t>& node_objects) {
  std::vector<NumaNode> nodes;
  nodes.reserve(node_objects.size());
  for (hwloc_obj_t object : node_objects) {
    NumaNode node;
    node.os_index = static_cast<int>(object->os_index);
    node.memory_bytes = object->attr != nullptr ? object->attr->numanode.local_memory : 0;
    nodes.push_back(std::move(node));
  }
  // hwloc gives a CPU-less node the cpuset of the object it is attached to (its locality), so a
  // node's cpuset is not its CPU list. Each PU goes to its most local node instead (see NumaNode).
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, nullptr); pu != nullptr;
       pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) {
    if (pu->os_index == HWLOC_UNKNOWN_INDEX) continue;
    size_t best = node_objects.size();
    for (size_t i = 0; i < node_objects.size(); ++i) {
      hwloc_const_cpuset_t cpuset = node_objects[i]->cpuset;
      if (cpuset == nullptr || !hwloc_bitmap_isset(cpuset, pu->os_index)) continue;
      if (best == node_objects.size() || MoreLocal(node_objects[i], node_objects[best])) best = i;
    }
    if (best != node_objects.size()) nodes[best].cpus.push_back(static_cast<int>(pu->os_index));
  }
  for (NumaNode& node : nodes) std::sort(node.cpus.begin(), node.cpus.end());
  std::sort(nodes.begin(), nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });
  return nodes;
}

// hwloc_get_local_numanode_objs for `location` with `flags`; empty on error.
std::vector<hwloc_obj_t> LocalNumaNodeObjects(hwloc_topology_t topology, hwloc_obj_t location,
                                              unsigned long flags) {
  const int all_nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  std::vector<hwloc_obj_t> buffer(static_cast<size_t>(std::max(all_nodes, 0)), nullptr);
  unsigned nr = static_cast<unsigned>(buffer.size());
  hwloc_location where;
  where.type = HWLOC_LOCATION_TYPE_OBJECT;
  where.location.object = location;
  if (hwloc_get_local_numanode_objs(topology, &where, &nr, buffer.data(), flags) != 0) return {};
  buffer.resize(std::min<size_t>(nr, buffer.size()));
  return buffer;
}

// Linux NUMA node numbers of a PCI device, following the rule documented on kdp::Topology.
std::vector<int> DeviceNumaNodes(hwloc_topology_t topology, hwloc_obj_t pci_device,
                                 size_t node_count) {
  if (node_count == 0) return {};
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, pci_device);
  if (ancestor == nullptr || ancestor->cpuset == nullptr) return {};
  // Nodes at the ancestor's locality or inside it. Not ancestor->nodeset: that also holds nodes
  // of larger locality (a machine-wide CPU-less node would show up under every package).
  std::vector<hwloc_obj_t> found =
      LocalNumaNodeObjects(topology, ancestor, HWLOC_LOCAL_NUMANODE_FLAG_SMALLER_LOCALITY);
  if (found.empty()) {
    // The ancestor is narrower than any node (an L3 cache, a die): take the closest covering
    // nodes, those with the smallest locality.
    found = LocalNumaNodeObjects(topology, ancestor, HWLOC_LOCAL_NUMANODE_FLAG_LARGER_LOCALITY);
    if (!found.empty()) {
      const int smallest = CpusetWeight(*std::min_element(found.begin(), found.end(), MoreLocal));
      std::erase_if(found, [smallest](hwloc_obj_t node) { return CpusetWeight(node) != smallest; });
    }
  }
  std::vector<int> nodes;
  for (hwloc_obj_t node : found) {
    if (node->os_index != HWLOC_UNKNOWN_INDEX) nodes.push_back(static_cast<int>(node->os_index));
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  // Every node of a multi-node machine is "we do not know" (attached at the root), not a fact.
  if (node_count > 1 && nodes.size() >= node_count) return {};
  return nodes;
}

OsDeviceType ToOsDeviceType(hwloc_obj_osdev_type_t type) {
  switch (type) {
    case HWLOC_OBJ_OSDEV_BLOCK:
      return OsDeviceType::kBlock;
    case HWLOC_OBJ_OSDEV_GPU:
      return OsDeviceType::kGpu;
    case HWLOC_OBJ_OSDEV_NETWORK:
      return OsDeviceType::kNetwork;
    case HWLOC_OBJ_OSDEV_OPENFABRICS:
      return OsDeviceType::kOpenFabrics;
    case HWLOC_OBJ_OSDEV_DMA:
      return OsDeviceType::kDma;
    case HWLOC_OBJ_OSDEV_COPROC:
      return OsDeviceType::kCoprocessor;
  }
  return OsDeviceType::kOther;
}

PciAddress AddressOf(hwloc_obj_t pci_device) {
  const auto& pci = pci_device->attr->pcidev;
  return PciAddress{.domain = static_cast<uint32_t>(pci.domain),
                    .bus = pci.bus,
                    .device = pci.dev,
                    .function = pci.func};
}

// Every PCI device with its path on the fabric, ascending address.
void CollectPciDevices(hwloc_topology_t topology, size_t node_count,
                       std::vector<PciDevice>* devices, std::vector<internal::PciPath>* paths) {
  std::vector<std::pair<PciDevice, internal::PciPath>> found;
  for (hwloc_obj_t object = hwloc_get_next_pcidev(topology, nullptr); object != nullptr;
       object = hwloc_get_next_pcidev(topology, object)) {
    const auto& pci = object->attr->pcidev;
    PciDevice device;
    device.address = AddressOf(object);
    device.vendor_id = pci.vendor_id;
    device.device_id = pci.device_id;
    device.class_id = pci.class_id;
    device.numa_nodes = DeviceNumaNodes(topology, object, node_count);
    for (hwloc_obj_t child = object->io_first_child; child != nullptr;
         child = child->next_sibling) {
      if (child->type == HWLOC_OBJ_OS_DEVICE && child->name != nullptr) {
        device.os_devices.push_back(
            {.name = child->name, .type = ToOsDeviceType(child->attr->osdev.type)});
      }
    }
    found.emplace_back(std::move(device), internal::PciPathOf(object));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first.address < b.first.address; });
  for (auto& [device, path] : found) {
    devices->push_back(std::move(device));
    paths->push_back(std::move(path));
  }
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The PCI device an endpoint object stands for: itself, or the PCI device above an OS device
// ("nvml0", "rsmi0", "cuda0"); nullptr for anything else.
hwloc_obj_t EndpointPciDevice(hwloc_obj_t object) {
  while (object != nullptr && object->type == HWLOC_OBJ_OS_DEVICE) object = object->parent;
  return object != nullptr && object->type == HWLOC_OBJ_PCI_DEVICE ? object : nullptr;
}

LinkMatrix::Endpoint ToEndpoint(hwloc_obj_t object) {
  LinkMatrix::Endpoint endpoint;
  if (hwloc_obj_t pci = EndpointPciDevice(object)) {
    endpoint.pci_address = AddressOf(pci);
    endpoint.label = endpoint.pci_address->ToString();
  } else if (object->type == HWLOC_OBJ_PACKAGE && object->os_index != HWLOC_UNKNOWN_INDEX) {
    endpoint.package = static_cast<int>(object->os_index);
    endpoint.label = absl::StrCat("package:", object->os_index);
  } else if (object->name != nullptr) {
    endpoint.label = object->name;
  } else {
    endpoint.label = hwloc_obj_type_string(object->type);
    if (object->os_index != HWLOC_UNKNOWN_INDEX)
      absl::StrAppend(&endpoint.label, ":", object->os_index);
  }
  return endpoint;
}

// A switch endpoint for LinkBandwidth(): a bridge-class PCI device, or one hwloc marks as an
// NVSwitch (its NVML backend does, whatever the class reads).
bool IsSwitchEndpoint(hwloc_obj_t object) {
  hwloc_obj_t pci = object != nullptr && object->type == HWLOC_OBJ_PCI_DEVICE ? object : nullptr;
  if (pci == nullptr) return false;
  return (pci->attr->pcidev.class_id >> 8) == 0x06 ||
         (pci->subtype != nullptr && std::string_view(pci->subtype) == "NVSwitch");
}

// hwloc's bandwidth matrices with a PCI device among their endpoints (see link_matrices()), and
// the addresses of their switch endpoints, ascending.
void ReadLinkMatrices(hwloc_topology_t topology, std::vector<LinkMatrix>* matrices,
                      std::vector<PciAddress>* switches) {
  unsigned nr = 0;
  if (hwloc_distances_get(topology, &nr, nullptr, 0, 0) != 0 || nr == 0) return;
  std::vector<hwloc_distances_s*> all(nr, nullptr);
  if (hwloc_distances_get(topology, &nr, all.data(), 0, 0) != 0) return;
  all.resize(std::min<size_t>(nr, all.size()));
  for (hwloc_distances_s* distances : all) {
    if (distances == nullptr) continue;
    const char* name = hwloc_distances_get_name(topology, distances);
    const bool bandwidth = (distances->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH) != 0 ||
                           (name != nullptr && EndsWith(name, "Bandwidth"));
    const unsigned n = distances->nbobjs;
    LinkMatrix matrix;
    matrix.name = name != nullptr ? name : "";
    bool has_pci = false;
    for (unsigned i = 0; bandwidth && i < n; ++i) {
      hwloc_obj_t object = distances->objs[i];
      if (object == nullptr) continue;  // Cannot happen in hwloc 2.x; keep the indexes aligned.
      matrix.endpoints.push_back(ToEndpoint(object));
      has_pci = has_pci || matrix.endpoints.back().pci_address.has_value();
      if (IsSwitchEndpoint(object)) switches->push_back(*matrix.endpoints.back().pci_address);
    }
    if (bandwidth && has_pci && matrix.endpoints.size() == n) {
      matrix.bandwidth.assign(distances->values, distances->values + static_cast<size_t>(n) * n);
      matrices->push_back(std::move(matrix));
    }
    hwloc_distances_release(topology, distances);
  }
  std::sort(switches->begin(), switches->end());
  switches->erase(std::unique(switches->begin(), switches->end()), switches->end());
}

// Reads hwloc's "NUMALatency" matrix (from the SLIT on Linux, or from XML). False when absent.
bool ReadNumaLatency(hwloc_topology_t topology, std::vector<int>* nodes, std::vector<int>* values) {
  unsigned nr = 1;
  hwloc_distances_s* distances = nullptr;
  if (hwloc_distances_get_by_name(topology, "NUMALatency", &nr, &distances, 0) != 0 || nr == 0 ||
      distances == nullptr) {
    return false;
  }
  const unsigned n = distances->nbobjs;
  bool usable = n > 0;
  for (unsigned i = 0; usable && i < n; ++i) {
    usable = distances->objs[i] != nullptr && distances->objs[i]->type == HWLOC_OBJ_NUMANODE &&
             distances->objs[i]->os_index != HWLOC_UNKNOWN_INDEX;
  }
  if (usable) {
    nodes->clear();
    values->clear();
    for (unsigned i = 0; i < n; ++i)
      nodes->push_back(static_cast<int>(distances->objs[i]->os_index));
    for (unsigned i = 0; i < n * n; ++i) {
      values->push_back(static_cast<int>(std::min<hwloc_uint64_t>(distances->values[i], INT_MAX)));
    }
  }
  hwloc_distances_release(topology, distances);
  return usable;
}

}  // namespace

namespace internal {

// Copies a loaded hwloc topology into a kdp::Topology. `fallback` supplies distances when hwloc
// has no NUMALatency matrix; may be null.
class TopologyBuilder {
 public:
  static std::unique_ptr<Topology> Build(hwloc_topology_t topology,
                                         const NumaDistanceSource* fallback) {
    std::unique_ptr<Topology> result(new Topology());
    const std::vector<hwloc_obj_t> node_objects = NumaNodeObjects(topology);
    result->numa_nodes_ = CollectNumaNodes(topology, node_objects);
    CollectPciDevices(topology, node_objects.size(), &result->pci_devices_, &result->pci_paths_);
    ReadLinkMatrices(topology, &result->link_matrices_, &result->link_switches_);
    if (!ReadNumaLatency(topology, &result->distance_nodes_, &result->distances_) &&
        fallback != nullptr) {
      for (const NumaNode& node : result->numa_nodes_) {
        result->distance_nodes_.push_back(node.os_index);
      }
      for (int from : result->distance_nodes_) {
        for (int to : result->distance_nodes_) {
          result->distances_.push_back(std::max(0, fallback->Distance(from, to)));
        }
      }
    }
    return result;
  }
};

}  // namespace internal

namespace {

// Loads `xml` (hwloc 2.x XML text); `origin` names the file or buffer in errors.
absl::StatusOr<std::unique_ptr<Topology>> LoadXml(std::string_view xml, const std::string& origin) {
  if (xml.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("empty hwloc XML topology in ", origin));
  }
  if (xml.size() >= static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat("hwloc XML topology too large in ", origin));
  }
  KDP_ASSIGN_OR_RETURN(HwlocTopologyPtr topology, NewHwlocTopology());
  // hwloc's own (non-libxml) parser wants a NUL-terminated buffer whose size counts the NUL, as
  // hwloc_topology_export_xmlbuffer() produces; std::string provides the terminator.
  const std::string text(xml);
  errno = 0;
  if (hwloc_topology_set_xmlbuffer(topology.get(), text.c_str(),
                                   static_cast<int>(text.size() + 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hwloc cannot read the XML topology in ", origin, ": ", ErrnoText(errno)));
  }
  errno = 0;
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hwloc cannot load the XML topology in ", origin, ": ", ErrnoText(errno)));
  }
  return internal::TopologyBuilder::Build(topology.get(), nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Topology>> Topology::FromHost(
    std::unique_ptr<NumaDistanceSource> distances) {
  KDP_ASSIGN_OR_RETURN(HwlocTopologyPtr topology, NewHwlocTopology());
  errno = 0;
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::InternalError(
        absl::StrCat("hwloc cannot discover the host topology: ", ErrnoText(errno)));
  }
  const bool this_system = hwloc_topology_is_thissystem(topology.get());
  // libnuma describes the live host: do not mix it into a topology loaded from HWLOC_XMLFILE.
  if (distances == nullptr && this_system) distances = NewLibnumaDistanceSource();
  std::unique_ptr<Topology> result =
      internal::TopologyBuilder::Build(topology.get(), distances.get());
  // A device the kernel places nowhere (numa_node -1) gets no topology, also on a one-node
  // machine where hwloc's root attachment looks local. HWLOC_PCI_LOCALITY is the operator saying
  // otherwise, so it wins.
  if (this_system && std::getenv("HWLOC_PCI_LOCALITY") == nullptr) {
    for (PciDevice& device : result->pci_devices_) {
      if (internal::SysfsNumaNode(internal::kSysfsPciDevices, device.address) == -1) {
        device.numa_nodes.clear();
      }
    }
  }
  return result;
}

absl::StatusOr<std::unique_ptr<Topology>> Topology::FromXmlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message =
        absl::StrCat("cannot read hwloc XML topology file ", path, ": ", ErrnoText(error));
    if (error == ENOENT || error == ENOTDIR) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
    return absl::InvalidArgumentError(message);
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read hwloc XML topology file ", path, ": read error"));
  }
  return LoadXml(content.str(), absl::StrCat("file ", path));
}

absl::StatusOr<std::unique_ptr<Topology>> Topology::FromXmlBuffer(std::string_view xml) {
  return LoadXml(xml, "buffer");
}

absl::StatusOr<std::unique_ptr<Topology>> Topology::Load(const std::string& xml_path) {
  return xml_path.empty() ? FromHost() : FromXmlFile(xml_path);
}

}  // namespace kdp
