// kdp-topology: prints what kdp::Topology discovers, on this host or in an hwloc XML file, as a
// readable tree (default) or as JSON (--json). Exit status: 0 printed, 1 the topology could not
// be loaded (the message names the file), 2 bad usage.
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "common/cli_flags.h"
#include "kdp/topology.h"
#include "sdk/tools/topology_report.h"

int main(int argc, char** argv) {
  std::string xml;
  bool json = false;

  CLI::App app{
      "kdp-topology: prints the hardware the kdp SDK discovers with hwloc: NUMA nodes with "
      "their CPUs and memory, the PCI devices local to each node (class, vendor:device, OS "
      "devices such as card1, eth0, mlx5_0, nvml0), devices of unknown locality, the NUMA "
      "distance matrix and any link-bandwidth matrix (NVLink, xGMI, XeLink). Exit status: 0 "
      "printed, 1 the topology could not be loaded, 2 bad usage."};
  kdp::cli::AddVersionFlag(app, "kdp-topology");
  app.add_option("--xml", xml,
                 "read this hwloc 2.x XML file (lstopo --of xml) instead of discovering the "
                 "host; without it the host is discovered, and hwloc's HWLOC_XMLFILE and "
                 "HWLOC_PCI_LOCALITY environment variables apply");
  app.add_flag("--json", json,
               "print JSON instead of the tree: numa_nodes, distances, pci_devices, "
               "link_matrices (field names are stable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Prints the help (exit 0) or the error (exit 2).
    return app.exit(error) == 0 ? 0 : 2;
  }

  absl::StatusOr<std::unique_ptr<kdp::Topology>> topology =
      xml.empty() ? kdp::Topology::FromHost() : kdp::Topology::FromXmlFile(xml);
  if (!topology.ok()) {
    // FromXmlFile's messages name the file.
    std::fprintf(stderr, "kdp-topology: %s\n", std::string(topology.status().message()).c_str());
    return 1;
  }
  const std::string out =
      json ? kdp::RenderTopologyJson(**topology) : kdp::RenderTopologyTree(**topology);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
