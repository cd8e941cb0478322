#include "sdk/tools/topology_report.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace kdp {
namespace {

std::string Hex4(uint16_t value) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04x", static_cast<unsigned>(value));
  return buf;
}

// "512 GiB", "1.5 GiB", "256 MiB", "4096 B"; "unknown" for 0.
std::string Memory(uint64_t bytes) {
  if (bytes == 0) return "unknown";
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  char buf[64];
  if (bytes >= kGiB) {
    if (bytes % kGiB == 0) return absl::StrCat(bytes / kGiB, " GiB");
    std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / kGiB);
    return buf;
  }
  if (bytes >= kMiB) {
    if (bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / kMiB);
    return buf;
  }
  return absl::StrCat(bytes, " B");
}

std::string Plural(size_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

std::string OsDevices(const PciDevice& device) {
  std::vector<std::string> parts;
  for (const OsDevice& os : device.os_devices) {
    parts.push_back(absl::StrCat(os.name, " (", OsDeviceTypeName(os.type), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string DeviceLine(const PciDevice& device) {
  std::string line = absl::StrCat("  ", device.address.ToString(), "  ", Hex4(device.vendor_id),
                                  ":", Hex4(device.device_id), "  ", PciClassName(device.class_id));
  const std::string os = OsDevices(device);
  if (!os.empty()) absl::StrAppend(&line, "  ", os);
  if (device.numa_nodes.size() > 1) {
    absl::StrAppend(&line, "  [nodes ", absl::StrJoin(device.numa_nodes, ","), "]");
  }
  return absl::StrCat(line, "\n");
}

// Right-aligns every cell of `rows` (the first row is the header) to its column's width.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t i = 0; i < row.size(); ++i) {
      const bool label = i == 0;
      absl::StrAppend(&line, " ");
      if (label) {
        absl::StrAppend(&line, row[i], std::string(widths[i] - row[i].size(), ' '));
      } else {
        absl::StrAppend(&line, std::string(widths[i] - row[i].size(), ' '), row[i]);
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string DistanceTable(const Topology& topology) {
  const std::vector<NumaNode>& nodes = topology.numa_nodes();
  bool known = false;
  std::vector<std::vector<std::string>> rows;
  rows.emplace_back(1, "");
  for (const NumaNode& node : nodes) rows[0].push_back(absl::StrCat(node.os_index));
  for (const NumaNode& from : nodes) {
    std::vector<std::string> row = {absl::StrCat(from.os_index)};
    for (const NumaNode& to : nodes) {
      const int distance = topology.NumaDistance(from.os_index, to.os_index);
      known = known || distance != 0;
      row.push_back(distance == 0 ? "-" : absl::StrCat(distance));
    }
    rows.push_back(std::move(row));
  }
  if (!known) return "NUMA distances: unknown\n";
  return absl::StrCat("NUMA distances:\n", Table(rows));
}

std::string LinkTable(const LinkMatrix& matrix) {
  const size_t n = matrix.endpoints.size();
  std::vector<std::vector<std::string>> rows;
  rows.emplace_back(1, "");
  for (size_t j = 0; j < n; ++j) rows[0].push_back(absl::StrCat("[", j, "]"));
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> row = {absl::StrCat("[", i, "] ", matrix.endpoints[i].label)};
    for (size_t j = 0; j < n; ++j) {
      const uint64_t value = i * n + j < matrix.bandwidth.size() ? matrix.bandwidth[i * n + j] : 0;
      row.push_back(value == 0 ? "-" : absl::StrCat(value));
    }
    rows.push_back(std::move(row));
  }
  return absl::StrCat(matrix.name, " (MB/s; row to column, - = no link):\n", Table(rows));
}

}  // namespace

std::string PciClassName(uint16_t class_id) {
  switch (class_id) {
    case 0x0100:
      return "SCSI storage controller";
    case 0x0101:
      return "IDE interface";
    case 0x0104:
      return "RAID bus controller";
    case 0x0106:
      return "SATA controller";
    case 0x0107:
      return "Serial Attached SCSI controller";
    case 0x0108:
      return "Non-Volatile memory controller";
    case 0x0200:
      return "Ethernet";
    case 0x0207:
      return "InfiniBand";
    case 0x0208:
      return "Fabric controller";
    case 0x0300:
      return "VGA compatible controller";
    case 0x0302:
      return "3D controller";
    case 0x0502:
      return "CXL memory";
    case 0x0604:
      return "PCI bridge";
    case 0x0680:
      return "Bridge (other)";
    case 0x0b40:
      return "Co-processor";
    case 0x0c04:
      return "Fibre Channel";
    case 0x0c06:
      return "InfiniBand";
    case 0x1200:
      return "Processing accelerator";
    default:
      break;
  }
  switch (class_id >> 8) {
    case 0x00:
      return "Unclassified";
    case 0x01:
      return "Mass storage controller";
    case 0x02:
      return "Network controller";
    case 0x03:
      return "Display controller";
    case 0x05:
      return "Memory controller";
    case 0x06:
      return "Bridge";
    case 0x0b:
      return "Processor";
    case 0x0c:
      return "Serial bus controller";
    case 0x12:
      return "Processing accelerator";
    default:
      break;
  }
  return absl::StrCat("class 0x", Hex4(class_id));
}

std::string CompactCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::vector<std::string> ranges;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    ranges.push_back(j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]));
    i = j + 1;
  }
  return absl::StrJoin(ranges, ",");
}

std::string RenderTopologyTree(const Topology& topology) {
  const std::vector<NumaNode>& nodes = topology.numa_nodes();
  const std::vector<PciDevice>& devices = topology.pci_devices();
  size_t cpu_count = 0;
  for (const NumaNode& node : nodes) cpu_count += node.cpus.size();
  std::string out = absl::StrCat(
      "Machine: ", Plural(nodes.size(), "NUMA node", "NUMA nodes"), ", ",
      Plural(cpu_count, "CPU", "CPUs"), ", ", Plural(devices.size(), "PCI device", "PCI devices"),
      ", ", Plural(topology.link_matrices().size(), "link matrix", "link matrices"), "\n");
  for (const NumaNode& node : nodes) {
    absl::StrAppend(&out, "NUMA node ", node.os_index, ": ");
    if (node.cpus.empty()) {
      absl::StrAppend(&out, "no CPUs");
    } else {
      absl::StrAppend(&out, "CPUs ", CompactCpuList(node.cpus), " (", node.cpus.size(), ")");
    }
    absl::StrAppend(&out, ", memory ", Memory(node.memory_bytes), "\n");
    for (const PciDevice& device : devices) {
      if (std::find(device.numa_nodes.begin(), device.numa_nodes.end(), node.os_index) !=
          device.numa_nodes.end()) {
        absl::StrAppend(&out, DeviceLine(device));
      }
    }
  }
  std::string unknown;
  for (const PciDevice& device : devices) {
    if (device.numa_nodes.empty()) absl::StrAppend(&unknown, DeviceLine(device));
  }
  if (!unknown.empty()) absl::StrAppend(&out, "Devices with unknown NUMA locality:\n", unknown);
  absl::StrAppend(&out, DistanceTable(topology));
  for (const LinkMatrix& matrix : topology.link_matrices()) {
    absl::StrAppend(&out, LinkTable(matrix));
  }
  return out;
}

std::string RenderTopologyJson(const Topology& topology) {
  nlohmann::json root = nlohmann::json::object();
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<int> node_numbers;
  for (const NumaNode& node : topology.numa_nodes()) {
    node_numbers.push_back(node.os_index);
    nodes.push_back({{"os_index", node.os_index},
                     {"cpus", node.cpus},
                     {"cpu_list", CompactCpuList(node.cpus)},
                     {"memory_bytes", node.memory_bytes}});
  }
  root["numa_nodes"] = std::move(nodes);
  nlohmann::json matrix = nlohmann::json::array();
  for (int from : node_numbers) {
    nlohmann::json row = nlohmann::json::array();
    for (int to : node_numbers) row.push_back(topology.NumaDistance(from, to));
    matrix.push_back(std::move(row));
  }
  root["distances"] = {{"nodes", node_numbers}, {"matrix", std::move(matrix)}};
  nlohmann::json devices = nlohmann::json::array();
  for (const PciDevice& device : topology.pci_devices()) {
    nlohmann::json os_devices = nlohmann::json::array();
    for (const OsDevice& os : device.os_devices) {
      os_devices.push_back({{"name", os.name}, {"type", OsDeviceTypeName(os.type)}});
    }
    devices.push_back({{"address", device.address.ToString()},
                       {"vendor_id", Hex4(device.vendor_id)},
                       {"device_id", Hex4(device.device_id)},
                       {"class_id", Hex4(device.class_id)},
                       {"class", PciClassName(device.class_id)},
                       {"numa_nodes", device.numa_nodes},
                       {"os_devices", std::move(os_devices)}});
  }
  root["pci_devices"] = std::move(devices);
  nlohmann::json links = nlohmann::json::array();
  for (const LinkMatrix& link : topology.link_matrices()) {
    const size_t n = link.endpoints.size();
    nlohmann::json endpoints = nlohmann::json::array();
    for (const LinkMatrix::Endpoint& endpoint : link.endpoints) {
      nlohmann::json item = {{"label", endpoint.label}};
      if (endpoint.pci_address) item["pci_address"] = endpoint.pci_address->ToString();
      if (endpoint.package) item["package"] = *endpoint.package;
      endpoints.push_back(std::move(item));
    }
    nlohmann::json bandwidth = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (size_t j = 0; j < n; ++j) {
        row.push_back(i * n + j < link.bandwidth.size() ? link.bandwidth[i * n + j] : 0);
      }
      bandwidth.push_back(std::move(row));
    }
    links.push_back({{"name", link.name},
                     {"unit", "MB/s"},
                     {"endpoints", std::move(endpoints)},
                     {"bandwidth", std::move(bandwidth)}});
  }
  root["link_matrices"] = std::move(links);
  // Names come from the OS and an XML file: never throw on bytes that are not UTF-8.
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace kdp
