// What kdp-topology prints: a kdp::Topology rendered as a readable tree or as JSON, so a vendor
// sees what the SDK discovers (NUMA nodes with their CPUs and memory, the PCI devices local to
// each node with their OS devices, devices of unknown locality, the NUMA distance matrix and the
// link-bandwidth matrices) before writing a plugin. A small library so unit tests call it
// without a process. Pure functions of their arguments: thread-safe.
#ifndef KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_
#define KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kdp/topology.h"

namespace kdp {

// A PCI class as lspci names it: "3D controller" (0x0302), "VGA compatible controller" (0x0300),
// "Ethernet" (0x0200), "InfiniBand" (0x0207 and 0x0c06), "Non-Volatile memory controller"
// (0x0108), "Processing accelerator" (0x1200), ...; for a subclass it does not know, the base
// class ("Network controller", "Bridge", ...); "Unclassified" for 0x00xx; else "class 0xNNNN".
std::string PciClassName(uint16_t class_id);

// CPU numbers as compact ranges, ascending and without duplicates: {0,1,2,3,8,10,11} ->
// "0-3,8,10-11". "" for none.
std::string CompactCpuList(std::vector<int> cpus);

// The readable tree, one item a line, ending in a newline:
//   Machine: 2 NUMA nodes, 32 CPUs, 10 PCI devices, 1 link matrix
//   NUMA node 0: CPUs 0-7,16-23 (16), memory 512 GiB
//     0000:1b:00.0  10de:2330  3D controller  card1 (gpu), renderD128 (gpu)
//   Devices with unknown NUMA locality:
//     0000:01:00.0  8086:1521  Ethernet  eth0 (network)
//   NUMA distances:
//   NVLinkBandwidth (MB/s, direct links):
// A device local to several nodes is listed under each, with "[nodes 0,1]"; a CPU-less node says
// "no CPUs". Distances print as a matrix over the nodes ("-" where unknown), or "unknown" when
// none is known. Each link matrix prints as a table labelled by PCI address (or package).
std::string RenderTopologyTree(const Topology& topology);

// The same content as JSON (pretty-printed, 2 spaces, ending in a newline). Field names are a
// stable contract:
//   numa_nodes: [{os_index, cpus: [int], cpu_list: "0-7,16-23", memory_bytes}]
//   distances: {nodes: [int], matrix: [[int]]}   (0 = unknown)
//   pci_devices: [{address: "0000:1b:00.0", vendor_id: "10de", device_id: "2330",
//                  class_id: "0302", class: "3D controller", numa_nodes: [int] (empty =
//                  unknown), os_devices: [{name, type}]}]   (type: OsDeviceTypeName)
//   link_matrices: [{name, unit: "MB/s", endpoints: [{label, pci_address?, package?}],
//                    bandwidth: [[int]]}]
// IDs are lower-case hex strings without "0x", as lspci prints them.
std::string RenderTopologyJson(const Topology& topology);

}  // namespace kdp

#endif  // KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_
