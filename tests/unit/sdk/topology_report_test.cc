#include "sdk/tools/topology_report.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/topology.h"
#include "nlohmann/json.hpp"
#include "tests/testing/topology_files.h"

namespace kdp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using ::kdp::testing::EightGpuFile;
using ::kdp::testing::LoadTopology;
using ::kdp::testing::TopologyFile;

nlohmann::json Json(const Topology& topology) {
  return nlohmann::json::parse(RenderTopologyJson(topology));
}

// The JSON object in `array` whose `key` is `value`; null when none.
nlohmann::json Find(const nlohmann::json& array, const std::string& key,
                    const nlohmann::json& value) {
  for (const nlohmann::json& item : array) {
    if (item.contains(key) && item[key] == value) return item;
  }
  return nullptr;
}

// --- Helpers ---------------------------------------------------------------------------------

TEST(PciClassName, NamesCommonClassesAsLspciDoes) {
  EXPECT_EQ(PciClassName(0x0302), "3D controller");
  EXPECT_EQ(PciClassName(0x0300), "VGA compatible controller");
  EXPECT_EQ(PciClassName(0x0200), "Ethernet");
  EXPECT_EQ(PciClassName(0x0207), "InfiniBand");
  EXPECT_EQ(PciClassName(0x0c06), "InfiniBand");
  EXPECT_EQ(PciClassName(0x0108), "Non-Volatile memory controller");
  EXPECT_EQ(PciClassName(0x1200), "Processing accelerator");
  EXPECT_EQ(PciClassName(0x0680), "Bridge (other)");
}

TEST(PciClassName, FallsBackToTheBaseClassThenTheNumber) {
  EXPECT_EQ(PciClassName(0x0280), "Network controller");
  EXPECT_EQ(PciClassName(0x0380), "Display controller");
  EXPECT_EQ(PciClassName(0x0000), "Unclassified");
  EXPECT_EQ(PciClassName(0x0b40), "Co-processor");
  EXPECT_EQ(PciClassName(0x0b20), "Processor");
  EXPECT_EQ(PciClassName(0xff00), "class 0xff00");
}

TEST(CompactCpuList, JoinsRunsIntoRanges) {
  EXPECT_EQ(CompactCpuList({}), "");
  EXPECT_EQ(CompactCpuList({5}), "5");
  EXPECT_EQ(CompactCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(CompactCpuList({16, 17, 0, 1}), "0-1,16-17");
  EXPECT_EQ(CompactCpuList({3, 3, 4}), "3-4");
}

// --- Tree ------------------------------------------------------------------------------------

TEST(RenderTopologyTree, ListsNodesWithCpusMemoryAndLocalDevices) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const std::string tree = RenderTopologyTree(*topology);
  EXPECT_THAT(tree, HasSubstr("Machine: 2 NUMA nodes, 32 CPUs, 10 PCI devices, 0 link matrices\n"));
  const size_t node0 = tree.find("NUMA node 0: CPUs 0-7,16-23 (16), memory 512 GiB\n");
  const size_t node1 = tree.find("NUMA node 1: CPUs 8-15,24-31 (16), memory 512 GiB\n");
  ASSERT_NE(node0, std::string::npos) << tree;
  ASSERT_NE(node1, std::string::npos) << tree;
  const size_t gpu =
      tree.find("  0000:1b:00.0  10de:2330  3D controller  card1 (gpu), renderD128 (gpu)\n");
  const size_t nic = tree.find("  0000:9d:00.0  15b3:1021  Ethernet  eth1 (network)\n");
  ASSERT_NE(gpu, std::string::npos) << tree;
  ASSERT_NE(nic, std::string::npos) << tree;
  EXPECT_LT(node0, gpu);
  EXPECT_LT(gpu, node1);
  EXPECT_LT(node1, nic);
  EXPECT_THAT(tree, HasSubstr("NUMA distances:\n     0  1\n  0 10 21\n  1 21 10\n"));
  EXPECT_THAT(tree, Not(HasSubstr("unknown NUMA locality")));
}

TEST(RenderTopologyTree, PutsDevicesOfUnknownLocalityInTheirOwnSection) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("unknown-locality.xml"));
  ASSERT_NE(topology, nullptr);
  const std::string tree = RenderTopologyTree(*topology);
  EXPECT_THAT(tree, HasSubstr("Devices with unknown NUMA locality:\n"
                              "  0000:01:00.0  8086:1521  Ethernet  eth0 (network)\n"));
  EXPECT_THAT(tree, HasSubstr("NUMA node 0: CPUs 0-3 (4), memory 32 GiB\n"
                              "  0000:21:00.0  144d:a80a  Non-Volatile memory controller  "
                              "nvme0n1 (block)\n"));
  EXPECT_THAT(tree, HasSubstr("NUMA distances: unknown\n"));
}

TEST(RenderTopologyTree, SaysWhenANodeHasNoCpus) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("cpuless-numa.xml"));
  ASSERT_NE(topology, nullptr);
  EXPECT_THAT(RenderTopologyTree(*topology), HasSubstr("NUMA node 2: no CPUs, memory 128 GiB\n"));
}

TEST(RenderTopologyTree, ListsAMultiNodeDeviceUnderEachOfItsNodes) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("eight-numa-snc.xml"));
  ASSERT_NE(topology, nullptr);
  const std::string tree = RenderTopologyTree(*topology);
  const std::string nvme =
      "  0000:01:00.0  144d:a824  Non-Volatile memory controller  nvme0n1 (block)  "
      "[nodes 0,1,2,3]\n";
  size_t count = 0;
  for (size_t at = tree.find(nvme); at != std::string::npos; at = tree.find(nvme, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 4u) << tree;
  EXPECT_THAT(tree, HasSubstr("NUMA node 0: CPUs 0-1,16-17 (4), memory 64 GiB\n"));
  EXPECT_THAT(tree, HasSubstr("NUMA node 6: CPUs 12-13,28-29 (4), memory 64 GiB\n"
                              "  0000:b1:00.0  15b3:1017  Ethernet  eth0 (network), "
                              "mlx5_0 (openfabrics)\n"));
  EXPECT_THAT(tree, HasSubstr("  0000:d1:00.0  1da3:1020  Processing accelerator\n"));
}

TEST(RenderTopologyTree, PrintsEachLinkMatrixLabelledByPciAddress) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  const std::string tree = RenderTopologyTree(*topology);
  EXPECT_THAT(tree, HasSubstr("Machine: 2 NUMA nodes, 16 CPUs, 18 PCI devices, 1 link matrix\n"));
  EXPECT_THAT(tree, HasSubstr("  0000:13:00.0  10de:1db1  3D controller  card1 (gpu), "
                              "renderD128 (gpu), nvml0 (gpu), cuda0 (coprocessor)\n"));
  EXPECT_THAT(tree, HasSubstr("NVLinkBandwidth (MB/s; row to column, - = no link):\n"));
  // Row of GPU 0: links to GPUs 1, 2 (one each) and 3, 4 (two each), none to the rest.
  EXPECT_THAT(tree, HasSubstr("  [0] 0000:13:00.0      - 25000 25000 50000 50000     -     -     -"
                              "     -     -     -     -     -     -     -     -\n"));
  EXPECT_THAT(tree, HasSubstr("  [15] 0000:b8:00.0 "));
}

TEST(RenderTopologyTree, LabelsAPackageEndpoint) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("nvswitch-links.xml"));
  ASSERT_NE(topology, nullptr);
  EXPECT_THAT(RenderTopologyTree(*topology),
              HasSubstr("  [4] package:0    40000 40000     -     -     -\n"));
}

// --- JSON ------------------------------------------------------------------------------------

TEST(RenderTopologyJson, HasNodesDistancesAndDevices) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const nlohmann::json json = Json(*topology);
  ASSERT_EQ(json["numa_nodes"].size(), 2u);
  const nlohmann::json& node1 = json["numa_nodes"][1];
  EXPECT_EQ(node1["os_index"], 1);
  EXPECT_EQ(node1["cpus"],
            nlohmann::json({8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}));
  EXPECT_EQ(node1["cpu_list"], "8-15,24-31");
  EXPECT_EQ(node1["memory_bytes"], 512ull << 30);
  EXPECT_EQ(json["distances"]["nodes"], nlohmann::json({0, 1}));
  EXPECT_EQ(json["distances"]["matrix"], nlohmann::json({{10, 21}, {21, 10}}));
  ASSERT_EQ(json["pci_devices"].size(), 10u);
  const nlohmann::json gpu = Find(json["pci_devices"], "address", "0000:bd:00.0");
  ASSERT_FALSE(gpu.is_null());
  EXPECT_EQ(gpu["vendor_id"], "10de");
  EXPECT_EQ(gpu["device_id"], "2330");
  EXPECT_EQ(gpu["class_id"], "0302");
  EXPECT_EQ(gpu["class"], "3D controller");
  EXPECT_EQ(gpu["numa_nodes"], nlohmann::json({1}));
  EXPECT_EQ(gpu["os_devices"], nlohmann::json::parse(R"([{"name": "card7", "type": "gpu"},
                                                         {"name": "renderD134", "type": "gpu"}])"));
  EXPECT_EQ(json["link_matrices"], nlohmann::json::array());
}

TEST(RenderTopologyJson, UnknownLocalityIsAnEmptyNodeList) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("unknown-locality.xml"));
  ASSERT_NE(topology, nullptr);
  const nlohmann::json json = Json(*topology);
  const nlohmann::json nic = Find(json["pci_devices"], "address", "0000:01:00.0");
  ASSERT_FALSE(nic.is_null());
  EXPECT_EQ(nic["numa_nodes"], nlohmann::json::array());
  EXPECT_EQ(nic["os_devices"][0]["type"], "network");
  // No NUMALatency: every distance is unknown (0).
  EXPECT_EQ(json["distances"]["matrix"], nlohmann::json({{0, 0}, {0, 0}}));
}

TEST(RenderTopologyJson, TypesOpenFabricsDevices) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  const nlohmann::json json = Json(*topology);
  const nlohmann::json ib = Find(json["pci_devices"], "address", "0000:84:00.0");
  ASSERT_FALSE(ib.is_null());
  EXPECT_EQ(ib["class"], "InfiniBand");
  EXPECT_EQ(ib["numa_nodes"], nlohmann::json({2}));
  EXPECT_EQ(ib["os_devices"], nlohmann::json::parse(R"([{"name": "ib2", "type": "network"},
                                                        {"name": "mlx5_2", "type": "openfabrics"}])"));
  EXPECT_EQ(json["distances"]["matrix"][0], nlohmann::json({10, 11, 21, 21}));
}

TEST(RenderTopologyJson, HasLinkMatricesWithEndpointsAndRows) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  const nlohmann::json json = Json(*topology);
  ASSERT_EQ(json["link_matrices"].size(), 1u);
  const nlohmann::json& matrix = json["link_matrices"][0];
  EXPECT_EQ(matrix["name"], "NVLinkBandwidth");
  EXPECT_EQ(matrix["unit"], "MB/s");
  ASSERT_EQ(matrix["endpoints"].size(), 16u);
  EXPECT_EQ(matrix["endpoints"][0],
            nlohmann::json({{"label", "0000:13:00.0"}, {"pci_address", "0000:13:00.0"}}));
  ASSERT_EQ(matrix["bandwidth"].size(), 16u);
  EXPECT_EQ(matrix["bandwidth"][0],
            nlohmann::json({0, 25000, 25000, 50000, 50000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(matrix["bandwidth"][15][14], 50000);
}

TEST(RenderTopologyJson, PackageEndpointHasItsNumberAndNoAddress) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("nvswitch-links.xml"));
  ASSERT_NE(topology, nullptr);
  const nlohmann::json endpoint = Json(*topology)["link_matrices"][0]["endpoints"][4];
  EXPECT_EQ(endpoint, nlohmann::json({{"label", "package:0"}, {"package", 0}}));
}

}  // namespace
}  // namespace kdp
