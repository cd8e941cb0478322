#include "kdp/topology.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/src/topology/pci_locality.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/topology_files.h"

namespace kdp {

// Readable gMock failures (ADL finds it in the type's namespace).
void PrintTo(const OsDevice& device, std::ostream* out) {
  *out << device.name << " (" << OsDeviceTypeName(device.type) << ")";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using ::kdp::testing::EightGpuFile;
using ::kdp::testing::LoadTopology;
using ::kdp::testing::TopologyFile;

PciAddress Address(const std::string& text) {
  absl::StatusOr<PciAddress> address = PciAddress::Parse(text);
  EXPECT_TRUE(address.ok()) << address.status();
  return address.value_or(PciAddress{});
}

OsDevice Gpu(const std::string& name) { return {.name = name, .type = OsDeviceType::kGpu}; }
OsDevice Net(const std::string& name) { return {.name = name, .type = OsDeviceType::kNetwork}; }
OsDevice Ofed(const std::string& name) {
  return {.name = name, .type = OsDeviceType::kOpenFabrics};
}
OsDevice Coproc(const std::string& name) {
  return {.name = name, .type = OsDeviceType::kCoprocessor};
}

std::vector<std::string> AddressStrings(const std::vector<PciDevice>& devices) {
  std::vector<std::string> out;
  for (const PciDevice& device : devices) out.push_back(device.address.ToString());
  return out;
}

// Sets (or, with nullopt, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Returns from * 100 + to, so a test sees which node numbers were asked.
class FakeDistances : public NumaDistanceSource {
 public:
  int Distance(int from, int to) const override { return from * 100 + to; }
};

// --- PciAddress ------------------------------------------------------------------------------

TEST(PciAddress, ParseAndToStringRoundTrip) {
  for (const char* text : {"0000:3b:00.0", "0000:00:1f.7", "0035:01:00.0", "ffff:ff:1f.7",
                           "10000:01:00.0", "ffffffff:00:00.1"}) {
    absl::StatusOr<PciAddress> address = PciAddress::Parse(text);
    ASSERT_TRUE(address.ok()) << text << ": " << address.status();
    EXPECT_EQ(address->ToString(), text);
  }
}

TEST(PciAddress, ParsesFields) {
  absl::StatusOr<PciAddress> address = PciAddress::Parse("0035:3B:1c.5");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(address->domain, 0x35u);
  EXPECT_EQ(address->bus, 0x3b);
  EXPECT_EQ(address->device, 0x1c);
  EXPECT_EQ(address->function, 5);
  EXPECT_EQ(address->ToString(), "0035:3b:1c.5");
}

TEST(PciAddress, ShortFormHasDomainZero) {
  absl::StatusOr<PciAddress> address = PciAddress::Parse("3b:00.1");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, (PciAddress{.domain = 0, .bus = 0x3b, .device = 0, .function = 1}));
  EXPECT_EQ(address->ToString(), "0000:3b:00.1");
}

TEST(PciAddress, RejectsMalformedTextNamingIt) {
  for (const char* text :
       {"", "3b", "0000:3b:00", "0000:3b:00.", "0000:3b:20.0", "0000:3b:00.8", "0000:3b:00.10",
        " 0000:3b:00.0", "0000:3b:00.0 ", "g000:3b:00.0", "0000:100:00.0", "0000::00.0",
        "123456789:00:00.0", "0000:00:00:00.0", "0000:3b:0x.0", ":3b:00.0"}) {
    absl::StatusOr<PciAddress> address = PciAddress::Parse(text);
    ASSERT_FALSE(address.ok()) << "accepted \"" << text << "\"";
    EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(address.status().message(), HasSubstr("\"" + std::string(text) + "\""));
  }
}

TEST(PciAddress, OrdersByDomainBusDeviceFunction) {
  EXPECT_LT(Address("0000:ff:1f.7"), Address("0001:00:00.0"));
  EXPECT_LT(Address("0000:3b:1f.7"), Address("0000:3c:00.0"));
  EXPECT_LT(Address("0000:3b:00.7"), Address("0000:3b:01.0"));
  EXPECT_LT(Address("0000:3b:00.0"), Address("0000:3b:00.1"));
  EXPECT_EQ(Address("0000:3b:00.0"), Address("3b:00.0"));
  EXPECT_NE(Address("0000:3b:00.0"), Address("0000:3b:00.1"));
}

// --- The bundled 8-GPU fixture ---------------------------------------------------------------

TEST(Topology, EightGpuFixtureHasEightGpusFourPerNode) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const std::vector<PciDevice> gpus = topology->PciDevicesWithClass({0x0302});
  EXPECT_THAT(AddressStrings(gpus),
              ElementsAre("0000:1b:00.0", "0000:1c:00.0", "0000:3d:00.0", "0000:3e:00.0",
                          "0000:9b:00.0", "0000:9c:00.0", "0000:bd:00.0", "0000:be:00.0"));
  int on_node0 = 0;
  int on_node1 = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const PciDevice& gpu = gpus[i];
    EXPECT_EQ(gpu.vendor_id, 0x10de);
    EXPECT_EQ(gpu.device_id, 0x2330);
    EXPECT_EQ(gpu.class_id, 0x0302);
    if (gpu.numa_nodes == std::vector<int>{0}) ++on_node0;
    if (gpu.numa_nodes == std::vector<int>{1}) ++on_node1;
    EXPECT_THAT(gpu.os_devices, ElementsAre(Gpu("card" + std::to_string(i + 1)),
                                            Gpu("renderD" + std::to_string(128 + i))));
  }
  EXPECT_EQ(on_node0, 4);
  EXPECT_EQ(on_node1, 4);
}

TEST(Topology, EightGpuFixtureHasOneNicPerNode) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const std::vector<PciDevice> nics = topology->PciDevicesWithClass({0x0200});
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[0].address.ToString(), "0000:1d:00.0");
  EXPECT_EQ(nics[0].vendor_id, 0x15b3);
  EXPECT_THAT(nics[0].numa_nodes, ElementsAre(0));
  EXPECT_THAT(nics[0].os_devices, ElementsAre(Net("eth0")));
  EXPECT_EQ(nics[1].address.ToString(), "0000:9d:00.0");
  EXPECT_THAT(nics[1].numa_nodes, ElementsAre(1));
  EXPECT_THAT(nics[1].os_devices, ElementsAre(Net("eth1")));
}

TEST(Topology, EightGpuFixtureListsDevicesNotBridgesInAddressOrder) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const std::vector<PciDevice>& devices = topology->pci_devices();
  EXPECT_EQ(devices.size(), 10u);  // 8 GPUs + 2 NICs; the 28 bridges are not devices.
  for (size_t i = 1; i < devices.size(); ++i) {
    EXPECT_LT(devices[i - 1].address, devices[i].address);
  }
  EXPECT_EQ(topology->PciDevicesWithClass({0x0302, 0x0200}).size(), 10u);
  EXPECT_THAT(topology->PciDevicesWithClass({0x0300, 0x0207}), IsEmpty());
}

TEST(Topology, EightGpuFixtureNodesHaveCpusAndMemory) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const std::vector<NumaNode>& nodes = topology->numa_nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].os_index, 0);
  EXPECT_THAT(nodes[0].cpus, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23));
  EXPECT_EQ(nodes[0].memory_bytes, 512ull << 30);
  EXPECT_EQ(nodes[1].os_index, 1);
  EXPECT_THAT(nodes[1].cpus,
              ElementsAre(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31));
  EXPECT_EQ(nodes[1].memory_bytes, 512ull << 30);
  ASSERT_NE(topology->FindNumaNode(1), nullptr);
  EXPECT_EQ(topology->FindNumaNode(1)->os_index, 1);
  EXPECT_EQ(topology->FindNumaNode(2), nullptr);
}

TEST(Topology, EightGpuFixtureDistancesComeFromNumaLatency) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  EXPECT_EQ(topology->NumaDistance(0, 0), 10);
  EXPECT_EQ(topology->NumaDistance(0, 1), 21);
  EXPECT_EQ(topology->NumaDistance(1, 0), 21);
  EXPECT_EQ(topology->NumaDistance(1, 1), 10);
  EXPECT_EQ(topology->NumaDistance(0, 2), 0);
  EXPECT_EQ(topology->NumaDistance(-1, 0), 0);
}

TEST(Topology, FindPciDeviceByAddress) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  const PciDevice* gpu = topology->FindPciDevice(Address("0000:9c:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->os_devices, ElementsAre(Gpu("card6"), Gpu("renderD133")));
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(1));
  EXPECT_EQ(topology->FindPciDevice(Address("0000:9c:00.1")), nullptr);
  // A bridge is not a device.
  EXPECT_EQ(topology->FindPciDevice(Address("0000:18:01.0")), nullptr);
}

TEST(Topology, XmlBufferGivesTheSameSnapshotAsTheFile) {
  std::ifstream in(EightGpuFile());
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<Topology>> from_buffer = Topology::FromXmlBuffer(text.str());
  ASSERT_TRUE(from_buffer.ok()) << from_buffer.status();
  std::unique_ptr<Topology> from_file = LoadTopology(EightGpuFile());
  ASSERT_NE(from_file, nullptr);
  EXPECT_EQ((*from_buffer)->numa_nodes(), from_file->numa_nodes());
  EXPECT_EQ((*from_buffer)->pci_devices(), from_file->pci_devices());
  EXPECT_EQ((*from_buffer)->NumaDistance(0, 1), 21);
  EXPECT_EQ((*from_buffer)->Locality(Address("0000:1b:00.0"), Address("0000:1c:00.0")),
            PciLocality::kSameSwitch);
}

// --- Locality traps --------------------------------------------------------------------------

TEST(Topology, SparseNumaNumbersAreOsIndexesNotLogicalIndexes) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sparse-numa.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->numa_nodes().size(), 2u);
  EXPECT_EQ(topology->numa_nodes()[0].os_index, 0);
  EXPECT_EQ(topology->numa_nodes()[1].os_index, 8);
  EXPECT_THAT(topology->numa_nodes()[1].cpus, ElementsAre(8, 9, 10, 11));
  // hwloc's logical index of node 8 is 1: code reporting logical indexes would say {1}.
  const PciDevice* gpu = topology->FindPciDevice(Address("0035:01:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(8));
  const PciDevice* nic = topology->FindPciDevice(Address("0030:01:00.0"));
  ASSERT_NE(nic, nullptr);
  EXPECT_THAT(nic->numa_nodes, ElementsAre(0));
  EXPECT_EQ(topology->NumaDistance(0, 8), 40);
  EXPECT_EQ(topology->NumaDistance(8, 8), 10);
  EXPECT_EQ(topology->NumaDistance(0, 1), 0);
  EXPECT_EQ(topology->NumaDistance(1, 1), 0);
  EXPECT_EQ(topology->FindNumaNode(1), nullptr);
}

TEST(Topology, DeviceAtMachineRootOfTwoNodeMachineHasNoNodes) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("unknown-locality.xml"));
  ASSERT_NE(topology, nullptr);
  const PciDevice* nic = topology->FindPciDevice(Address("0000:01:00.0"));
  ASSERT_NE(nic, nullptr);
  EXPECT_THAT(nic->numa_nodes, IsEmpty());  // Not {0, 1}.
  EXPECT_THAT(nic->os_devices, ElementsAre(Net("eth0")));
  const PciDevice* gpu = topology->FindPciDevice(Address("0000:99:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(1));
  // No NUMALatency matrix in the file: distances are unknown.
  EXPECT_EQ(topology->NumaDistance(0, 0), 0);
  EXPECT_EQ(topology->NumaDistance(0, 1), 0);
}

TEST(Topology, DeviceNarrowerThanANodeGetsTheCoveringNode) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("unknown-locality.xml"));
  ASSERT_NE(topology, nullptr);
  // Attached to an L3 cache holding half of node 0's CPUs.
  const PciDevice* nvme = topology->FindPciDevice(Address("0000:21:00.0"));
  ASSERT_NE(nvme, nullptr);
  EXPECT_EQ(nvme->class_id, 0x0108);
  EXPECT_THAT(nvme->numa_nodes, ElementsAre(0));
  EXPECT_THAT(nvme->os_devices,
              ElementsAre(OsDevice{.name = "nvme0n1", .type = OsDeviceType::kBlock}));
}

TEST(Topology, CpuLessNumaNodeHasNoCpusAndIsNotLocalToPackageDevices) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("cpuless-numa.xml"));
  ASSERT_NE(topology, nullptr);
  const std::vector<NumaNode>& nodes = topology->numa_nodes();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_THAT(nodes[0].cpus, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(nodes[1].cpus, ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(nodes[2].os_index, 2);
  EXPECT_THAT(nodes[2].cpus, IsEmpty());  // hwloc gives it the whole machine's cpuset.
  EXPECT_EQ(nodes[2].memory_bytes, 128ull << 30);
  // Package 1's nodeset holds node 2 as well; the device is local to node 1 only.
  const PciDevice* gpu = topology->FindPciDevice(Address("0000:99:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(1));
  EXPECT_EQ(topology->NumaDistance(1, 2), 24);
  EXPECT_EQ(topology->NumaDistance(2, 2), 10);
}

TEST(Topology, DeviceAtRootOfSingleNodeMachineHasThatNode) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("single-numa.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->numa_nodes().size(), 1u);
  EXPECT_EQ(topology->numa_nodes()[0].os_index, 3);
  EXPECT_THAT(topology->numa_nodes()[0].cpus, ElementsAre(0, 1, 2, 3));
  const std::vector<PciDevice> gpus = topology->PciDevicesWithClass({0x0300});
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_THAT(gpus[0].numa_nodes, ElementsAre(3));
  EXPECT_THAT(gpus[0].os_devices, ElementsAre(Gpu("card0"), Gpu("renderD128")));
}

// --- Names -----------------------------------------------------------------------------------

TEST(OsDeviceTypeName, NamesEveryType) {
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kBlock), "block");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kGpu), "gpu");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kNetwork), "network");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kOpenFabrics), "openfabrics");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kDma), "dma");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kCoprocessor), "coprocessor");
  EXPECT_STREQ(OsDeviceTypeName(OsDeviceType::kOther), "other");
}

TEST(PciLocalityName, NamesEveryLocalityTightestFirst) {
  EXPECT_STREQ(PciLocalityName(PciLocality::kSameSwitch), "same-switch");
  EXPECT_STREQ(PciLocalityName(PciLocality::kSameHostBridge), "same-host-bridge");
  EXPECT_STREQ(PciLocalityName(PciLocality::kSamePackage), "same-package");
  EXPECT_STREQ(PciLocalityName(PciLocality::kCrossPackage), "cross-package");
  EXPECT_STREQ(PciLocalityName(PciLocality::kUnknown), "unknown");
  EXPECT_LT(PciLocality::kSameSwitch, PciLocality::kSameHostBridge);
  EXPECT_LT(PciLocality::kSameHostBridge, PciLocality::kSamePackage);
  EXPECT_LT(PciLocality::kSamePackage, PciLocality::kCrossPackage);
  EXPECT_LT(PciLocality::kCrossPackage, PciLocality::kUnknown);
}

// --- PCI locality ----------------------------------------------------------------------------

TEST(Topology, EightGpuFixtureLocalityFollowsTheSwitches) {
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  // 1b and 1c hang from two ports of the switch 19:00.0; so does the NIC 1d.
  EXPECT_EQ(topology->Locality(Address("0000:1b:00.0"), Address("0000:1c:00.0")),
            PciLocality::kSameSwitch);
  EXPECT_EQ(topology->Locality(Address("0000:1c:00.0"), Address("0000:1d:00.0")),
            PciLocality::kSameSwitch);
  // Host bridges 18 and 3a are both in package 0.
  EXPECT_EQ(topology->Locality(Address("0000:1b:00.0"), Address("0000:3d:00.0")),
            PciLocality::kSamePackage);
  EXPECT_EQ(topology->Locality(Address("0000:1b:00.0"), Address("0000:9b:00.0")),
            PciLocality::kCrossPackage);
  EXPECT_EQ(topology->Locality(Address("0000:be:00.0"), Address("0000:9d:00.0")),
            PciLocality::kSamePackage);
  EXPECT_THAT(topology->link_matrices(), IsEmpty());
  EXPECT_EQ(topology->LinkBandwidth(Address("0000:1b:00.0"), Address("0000:1c:00.0")), 0u);
}

TEST(Topology, LocalityIsSymmetric) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  for (const PciDevice& a : topology->pci_devices()) {
    for (const PciDevice& b : topology->pci_devices()) {
      EXPECT_EQ(topology->Locality(a.address, b.address), topology->Locality(b.address, a.address))
          << a.address.ToString() << " " << b.address.ToString();
    }
  }
}

TEST(Topology, DeviceWithItselfIsSameSwitchBelowABridge) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  EXPECT_EQ(topology->Locality(Address("0000:01:00.0"), Address("0000:01:00.0")),
            PciLocality::kSameSwitch);
}

TEST(Topology, LocalityOfUnknownOrMissingDevicesIsUnknown) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("unknown-locality.xml"));
  ASSERT_NE(topology, nullptr);
  const PciAddress nic_at_root = Address("0000:01:00.0");
  const PciAddress gpu = Address("0000:99:00.0");
  const PciAddress nvme = Address("0000:21:00.0");
  EXPECT_EQ(topology->Locality(nic_at_root, gpu), PciLocality::kUnknown);
  EXPECT_EQ(topology->Locality(gpu, nic_at_root), PciLocality::kUnknown);
  EXPECT_EQ(topology->Locality(nic_at_root, nic_at_root), PciLocality::kUnknown);
  EXPECT_EQ(topology->Locality(gpu, Address("0000:99:00.1")), PciLocality::kUnknown);
  EXPECT_EQ(topology->Locality(Address("0000:98:01.0"), gpu), PciLocality::kUnknown);  // Bridge.
  EXPECT_EQ(topology->Locality(nvme, gpu), PciLocality::kCrossPackage);
  EXPECT_EQ(topology->Locality(gpu, gpu), PciLocality::kSameSwitch);
}

// --- 4 NUMA nodes with NICs ------------------------------------------------------------------

TEST(Topology, QuadNumaFixtureNodesCpusAndDistances) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  const std::vector<NumaNode>& nodes = topology->numa_nodes();
  ASSERT_EQ(nodes.size(), 4u);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(nodes[n].os_index, n);
    EXPECT_THAT(nodes[n].cpus, ElementsAre(4 * n, 4 * n + 1, 4 * n + 2, 4 * n + 3));
    EXPECT_EQ(nodes[n].memory_bytes, 128ull << 30);
  }
  EXPECT_EQ(topology->NumaDistance(0, 0), 10);
  EXPECT_EQ(topology->NumaDistance(0, 1), 11);
  EXPECT_EQ(topology->NumaDistance(3, 2), 11);
  EXPECT_EQ(topology->NumaDistance(1, 2), 21);
  EXPECT_EQ(topology->NumaDistance(3, 0), 21);
  EXPECT_EQ(topology->NumaDistance(0, 4), 0);
}

TEST(Topology, QuadNumaFixtureHasTwoTypedNicsPerNode) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  const std::vector<PciDevice> ethernet = topology->PciDevicesWithClass({0x0200});
  EXPECT_THAT(AddressStrings(ethernet), ElementsAre("0000:01:00.0", "0000:01:00.1", "0000:21:00.0",
                                                    "0000:83:00.0", "0000:a1:00.0"));
  const std::vector<PciDevice> infiniband = topology->PciDevicesWithClass({0x0207});
  EXPECT_THAT(AddressStrings(infiniband),
              ElementsAre("0000:02:00.0", "0000:31:00.0", "0000:84:00.0", "0000:a2:00.0"));
  const std::vector<std::pair<std::string, int>> expected_nodes = {
      {"0000:01:00.0", 0}, {"0000:01:00.1", 0}, {"0000:02:00.0", 0},
      {"0000:21:00.0", 1}, {"0000:31:00.0", 1}, {"0000:83:00.0", 2},
      {"0000:84:00.0", 2}, {"0000:a1:00.0", 3}, {"0000:a2:00.0", 3}};
  ASSERT_EQ(topology->pci_devices().size(), expected_nodes.size());
  for (const auto& [address, node] : expected_nodes) {
    const PciDevice* device = topology->FindPciDevice(Address(address));
    ASSERT_NE(device, nullptr) << address;
    EXPECT_THAT(device->numa_nodes, ElementsAre(node)) << address;
  }
  EXPECT_THAT(topology->FindPciDevice(Address("0000:01:00.1"))->os_devices,
              ElementsAre(Net("eth1")));
  EXPECT_THAT(topology->FindPciDevice(Address("0000:83:00.0"))->os_devices,
              ElementsAre(Net("eth3")));
  for (int n = 0; n < 4; ++n) {
    EXPECT_THAT(infiniband[n].os_devices,
                ElementsAre(Net("ib" + std::to_string(n)), Ofed("mlx5_" + std::to_string(n))));
    EXPECT_EQ(infiniband[n].vendor_id, 0x15b3);
    EXPECT_EQ(infiniband[n].device_id, 0x101b);
  }
}

TEST(Topology, QuadNumaFixtureLocalityAtEveryLevel) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("quad-numa-nics.xml"));
  ASSERT_NE(topology, nullptr);
  auto locality = [&](const char* a, const char* b) {
    return topology->Locality(Address(a), Address(b));
  };
  // Two functions of one NIC below one root port.
  EXPECT_EQ(locality("0000:01:00.0", "0000:01:00.1"), PciLocality::kSameSwitch);
  // Two root ports of one host bridge.
  EXPECT_EQ(locality("0000:01:00.0", "0000:02:00.0"), PciLocality::kSameHostBridge);
  EXPECT_EQ(locality("0000:a1:00.0", "0000:a2:00.0"), PciLocality::kSameHostBridge);
  // Two host bridges of one die, then two dies of one package.
  EXPECT_EQ(locality("0000:21:00.0", "0000:31:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:02:00.0", "0000:31:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:84:00.0", "0000:a1:00.0"), PciLocality::kSamePackage);
  // Two downstream ports of the switch 81:00.0.
  EXPECT_EQ(locality("0000:83:00.0", "0000:84:00.0"), PciLocality::kSameSwitch);
  EXPECT_EQ(locality("0000:01:00.0", "0000:83:00.0"), PciLocality::kCrossPackage);
  EXPECT_EQ(locality("0000:31:00.0", "0000:a2:00.0"), PciLocality::kCrossPackage);
}

// --- 8 NUMA nodes (SNC4) ---------------------------------------------------------------------

TEST(Topology, EightNumaFixtureNodesCpusAndDistances) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("eight-numa-snc.xml"));
  ASSERT_NE(topology, nullptr);
  const std::vector<NumaNode>& nodes = topology->numa_nodes();
  ASSERT_EQ(nodes.size(), 8u);
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(nodes[n].os_index, n);
    EXPECT_THAT(nodes[n].cpus, ElementsAre(2 * n, 2 * n + 1, 16 + 2 * n, 17 + 2 * n));
    EXPECT_EQ(nodes[n].memory_bytes, 64ull << 30);
  }
  for (int from = 0; from < 8; ++from) {
    for (int to = 0; to < 8; ++to) {
      const int expected = from == to ? 10 : (from / 4 == to / 4 ? 12 : 21);
      EXPECT_EQ(topology->NumaDistance(from, to), expected) << from << "->" << to;
    }
  }
}

TEST(Topology, EightNumaFixtureDevicesAreOnTheirNodes) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("eight-numa-snc.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->pci_devices().size(), 5u);
  const PciDevice* gpu = topology->FindPciDevice(Address("0000:17:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(1));
  EXPECT_THAT(gpu->os_devices, ElementsAre(Gpu("card0"), Gpu("renderD128")));
  // Attached to the package, not to one of its clusters: local to all four of its nodes.
  const PciDevice* nvme = topology->FindPciDevice(Address("0000:01:00.0"));
  ASSERT_NE(nvme, nullptr);
  EXPECT_THAT(nvme->numa_nodes, ElementsAre(0, 1, 2, 3));
  for (const char* address : {"0000:b1:00.0", "0000:b1:00.1"}) {
    const PciDevice* nic = topology->FindPciDevice(Address(address));
    ASSERT_NE(nic, nullptr);
    EXPECT_THAT(nic->numa_nodes, ElementsAre(6));
  }
  EXPECT_THAT(topology->FindPciDevice(Address("0000:b1:00.1"))->os_devices,
              ElementsAre(Net("eth1"), Ofed("mlx5_1")));
  const std::vector<PciDevice> accelerators = topology->PciDevicesWithClass({0x1200});
  ASSERT_EQ(accelerators.size(), 1u);
  EXPECT_THAT(accelerators[0].numa_nodes, ElementsAre(7));
  EXPECT_THAT(accelerators[0].os_devices, IsEmpty());
}

TEST(Topology, EightNumaFixtureLocality) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("eight-numa-snc.xml"));
  ASSERT_NE(topology, nullptr);
  auto locality = [&](const char* a, const char* b) {
    return topology->Locality(Address(a), Address(b));
  };
  // Different nodes (1 and 0-3) of one package.
  EXPECT_EQ(locality("0000:17:00.0", "0000:01:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:b1:00.0", "0000:d1:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:b1:00.0", "0000:b1:00.1"), PciLocality::kSameSwitch);
  EXPECT_EQ(locality("0000:17:00.0", "0000:b1:00.0"), PciLocality::kCrossPackage);
  EXPECT_EQ(locality("0000:01:00.0", "0000:d1:00.0"), PciLocality::kCrossPackage);
}

// --- 16 GPUs with an NVLink matrix -----------------------------------------------------------

std::vector<std::string> SixteenGpuAddresses() {
  return {"0000:13:00.0", "0000:14:00.0", "0000:17:00.0", "0000:18:00.0",
          "0000:33:00.0", "0000:34:00.0", "0000:37:00.0", "0000:38:00.0",
          "0000:93:00.0", "0000:94:00.0", "0000:97:00.0", "0000:98:00.0",
          "0000:b3:00.0", "0000:b4:00.0", "0000:b7:00.0", "0000:b8:00.0"};
}

TEST(Topology, SixteenGpuFixtureHasEightGpusPerNodeWithTypedOsDevices) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->numa_nodes().size(), 2u);
  EXPECT_THAT(topology->numa_nodes()[0].cpus, ElementsAre(0, 1, 2, 3, 8, 9, 10, 11));
  EXPECT_THAT(topology->numa_nodes()[1].cpus, ElementsAre(4, 5, 6, 7, 12, 13, 14, 15));
  const std::vector<PciDevice> gpus = topology->PciDevicesWithClass({0x0302});
  ASSERT_EQ(AddressStrings(gpus), SixteenGpuAddresses());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const std::string n = std::to_string(i);
    EXPECT_THAT(gpus[i].numa_nodes, ElementsAre(i < 8 ? 0 : 1)) << n;
    EXPECT_THAT(gpus[i].os_devices, ElementsAre(Gpu("card" + std::to_string(i + 1)),
                                                Gpu("renderD" + std::to_string(128 + i)),
                                                Gpu("nvml" + n), Coproc("cuda" + n)));
  }
  const std::vector<PciDevice> nics = topology->PciDevicesWithClass({0x0207});
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_THAT(nics[0].numa_nodes, ElementsAre(0));
  EXPECT_THAT(nics[1].numa_nodes, ElementsAre(1));
  EXPECT_THAT(nics[1].os_devices, ElementsAre(Net("ib1"), Ofed("mlx5_1")));
}

TEST(Topology, SixteenGpuFixtureLocality) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  auto locality = [&](const char* a, const char* b) {
    return topology->Locality(Address(a), Address(b));
  };
  EXPECT_EQ(locality("0000:13:00.0", "0000:14:00.0"), PciLocality::kSameSwitch);
  EXPECT_EQ(locality("0000:b7:00.0", "0000:b8:00.0"), PciLocality::kSameSwitch);
  EXPECT_EQ(locality("0000:13:00.0", "0000:17:00.0"), PciLocality::kSameHostBridge);
  EXPECT_EQ(locality("0000:18:00.0", "0000:19:00.0"), PciLocality::kSameHostBridge);  // The NIC.
  EXPECT_EQ(locality("0000:13:00.0", "0000:33:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:19:00.0", "0000:38:00.0"), PciLocality::kSamePackage);
  EXPECT_EQ(locality("0000:13:00.0", "0000:93:00.0"), PciLocality::kCrossPackage);
  EXPECT_EQ(locality("0000:99:00.0", "0000:38:00.0"), PciLocality::kCrossPackage);
}

TEST(Topology, SixteenGpuFixtureLinkMatrixIsBetweenGpus) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  // NUMALatency is a distance matrix too, but not a link matrix.
  ASSERT_EQ(topology->link_matrices().size(), 1u);
  const LinkMatrix& matrix = topology->link_matrices()[0];
  EXPECT_EQ(matrix.name, "NVLinkBandwidth");
  const std::vector<std::string> gpus = SixteenGpuAddresses();
  ASSERT_EQ(matrix.endpoints.size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(matrix.endpoints[i].pci_address, Address(gpus[i]));  // nvml<i> -> its GPU.
    EXPECT_EQ(matrix.endpoints[i].label, gpus[i]);
    EXPECT_EQ(matrix.endpoints[i].package, std::nullopt);
  }
  ASSERT_EQ(matrix.bandwidth.size(), 256u);
  EXPECT_EQ(matrix.bandwidth[0 * 16 + 3], 50000u);
  EXPECT_EQ(matrix.bandwidth[0 * 16 + 1], 25000u);
  EXPECT_EQ(matrix.bandwidth[0 * 16 + 5], 0u);
  EXPECT_EQ(matrix.bandwidth[9 * 16 + 13], 50000u);
  EXPECT_EQ(matrix.bandwidth[7 * 16 + 8], 0u);
}

TEST(Topology, SixteenGpuFixtureLinkBandwidthFollowsTheCubeMesh) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("sixteen-gpu-nvlink.xml"));
  ASSERT_NE(topology, nullptr);
  const std::vector<std::string> gpus = SixteenGpuAddresses();
  // Links of a DGX-1V hybrid cube-mesh, 25000 MB/s each; the same in both 8-GPU groups.
  const int links[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                           {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                           {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                           {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  for (size_t i = 0; i < 16; ++i) {
    for (size_t j = 0; j < 16; ++j) {
      const bool same_group = i / 8 == j / 8;
      const uint64_t expected =
          i != j && same_group ? uint64_t{25000} * static_cast<uint64_t>(links[i % 8][j % 8]) : 0;
      EXPECT_EQ(topology->LinkBandwidth(Address(gpus[i]), Address(gpus[j])), expected)
          << gpus[i] << " " << gpus[j];
    }
  }
  // The NIC is in no matrix.
  EXPECT_EQ(topology->LinkBandwidth(Address("0000:13:00.0"), Address("0000:19:00.0")), 0u);
}

// --- Switch endpoints (hwloc's DGX-2 shape) --------------------------------------------------

TEST(Topology, NvSwitchFixtureMapsEndpointsToPciDevicesAndPackages) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("nvswitch-links.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->link_matrices().size(), 1u);
  const LinkMatrix& matrix = topology->link_matrices()[0];
  EXPECT_EQ(matrix.name, "NVLinkBandwidth");
  ASSERT_EQ(matrix.endpoints.size(), 5u);
  EXPECT_EQ(matrix.endpoints[0], (LinkMatrix::Endpoint{.pci_address = Address("0000:31:00.0"),
                                                       .label = "0000:31:00.0"}));
  EXPECT_EQ(matrix.endpoints[1].pci_address, Address("0000:32:00.0"));
  EXPECT_EQ(matrix.endpoints[2].pci_address, Address("0000:33:00.0"));
  EXPECT_EQ(matrix.endpoints[3].pci_address, Address("0000:34:00.0"));
  EXPECT_EQ(matrix.endpoints[4], (LinkMatrix::Endpoint{.package = 0, .label = "package:0"}));
  EXPECT_THAT(matrix.bandwidth, ElementsAre(0, 25000, 50000, 25000, 40000,  //
                                            20000, 0, 0, 90000, 40000,      //
                                            50000, 0, 0, 50000, 0,          //
                                            25000, 10000, 50000, 0, 0,      //
                                            40000, 40000, 0, 0, 0));
  // KEEP_IMPORTANT keeps both NVSwitches although they have no child.
  EXPECT_NE(topology->FindPciDevice(Address("0000:33:00.0")), nullptr);
  EXPECT_NE(topology->FindPciDevice(Address("0000:34:00.0")), nullptr);
}

TEST(Topology, LinkBandwidthAddsDirectLinksAndTheSwitchFabric) {
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("nvswitch-links.xml"));
  ASSERT_NE(topology, nullptr);
  const PciAddress gpu0 = Address("0000:31:00.0");
  const PciAddress gpu1 = Address("0000:32:00.0");
  const PciAddress switch_0680 = Address("0000:33:00.0");
  const PciAddress switch_0000 = Address("0000:34:00.0");
  // Direct max(25000, 20000) = 25000, plus the fabric of both switches (33:00.0 by its class
  // 0680, 34:00.0 by its NVSwitch subtype): min(gpu0's 50000 + 25000, gpu1's 0 + max(90000,
  // 10000)) = 75000; the 33-34 trunk is in neither sum. 100000 in all. The former per-switch
  // rule gives 25000 + min(50000, 0) + min(25000, 90000) = 50000 (the fixture's former links,
  // gpu1 at 50000 and 10000, gave 85000 under both rules); 34:00.0's smaller direction would
  // give 35000, and the package (40000 each) taken as a switch 140000.
  EXPECT_EQ(topology->LinkBandwidth(gpu0, gpu1), 100000u);
  EXPECT_EQ(topology->LinkBandwidth(gpu1, gpu0), 100000u);
  EXPECT_EQ(topology->LinkBandwidth(gpu0, gpu0), 0u);
  // A GPU to a switch, and a switch to a switch: the direct link only (adding the fabric term
  // would give gpu0-33:00.0 50000 + min(75000, 33:00.0's 50000 trunk) = 100000).
  EXPECT_EQ(topology->LinkBandwidth(gpu0, switch_0680), 50000u);
  EXPECT_EQ(topology->LinkBandwidth(switch_0000, gpu1), 90000u);
  EXPECT_EQ(topology->LinkBandwidth(gpu1, switch_0680), 0u);
  EXPECT_EQ(topology->LinkBandwidth(switch_0680, switch_0000), 50000u);
  // nvml2's GPU is in no matrix; neither is a missing address.
  EXPECT_EQ(topology->LinkBandwidth(gpu0, Address("0000:35:00.0")), 0u);
  EXPECT_EQ(topology->LinkBandwidth(gpu0, Address("0000:99:00.0")), 0u);
  EXPECT_EQ(topology->Locality(gpu0, gpu1), PciLocality::kSameHostBridge);
}

TEST(Topology, NodesOutsideTheProcessCpusetAreKeptWithTheirDevices) {
  // Exported by a process confined to CPUs 0-3 and node 0; hwloc drops the rest by default, and
  // the GPU of node 1 then looked local to node 0.
  std::unique_ptr<Topology> topology = LoadTopology(TopologyFile("disallowed-node.xml"));
  ASSERT_NE(topology, nullptr);
  ASSERT_EQ(topology->numa_nodes().size(), 2u);
  EXPECT_THAT(topology->numa_nodes()[1].cpus, ElementsAre(4, 5, 6, 7));
  const PciDevice* gpu = topology->FindPciDevice(Address("0000:99:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->numa_nodes, ElementsAre(1));
  EXPECT_THAT(topology->FindPciDevice(Address("0000:19:00.0"))->numa_nodes, ElementsAre(0));
  EXPECT_EQ(topology->NumaDistance(0, 1), 21);
  EXPECT_EQ(topology->Locality(Address("0000:19:00.0"), Address("0000:99:00.0")),
            PciLocality::kCrossPackage);
}

// --- Errors ----------------------------------------------------------------------------------

TEST(Topology, MissingFileIsNotFoundNamingThePath) {
  const std::string path = TopologyFile("no-such-topology.xml");
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromXmlFile(path);
  ASSERT_FALSE(topology.ok());
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(topology.status().message(), HasSubstr(path));
}

TEST(Topology, BadXmlFileIsInvalidArgumentNamingThePath) {
  const std::string path = TopologyFile("truncated.xml");
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromXmlFile(path);
  ASSERT_FALSE(topology.ok());
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(topology.status().message(), HasSubstr(path));
}

TEST(Topology, BadXmlBufferIsInvalidArgument) {
  for (const char* text : {"", "not xml at all", "<topology version=\"2.0\"></topology>"}) {
    absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromXmlBuffer(text);
    ASSERT_FALSE(topology.ok()) << "accepted \"" << text << "\"";
    EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

// --- The live host and HWLOC_XMLFILE ---------------------------------------------------------

TEST(Topology, FromHostDescribesThisMachine) {
  ScopedEnv no_xml("HWLOC_XMLFILE", std::nullopt);
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromHost();
  ASSERT_TRUE(topology.ok()) << topology.status();
  const std::vector<NumaNode>& nodes = (*topology)->numa_nodes();
  ASSERT_FALSE(nodes.empty());
  std::set<int> node_numbers;
  std::set<int> cpus;
  size_t cpu_count = 0;
  for (const NumaNode& node : nodes) {
    node_numbers.insert(node.os_index);
    cpus.insert(node.cpus.begin(), node.cpus.end());
    cpu_count += node.cpus.size();
    // Wherever Linux knows the node's distances, the diagonal is local.
    if (std::ifstream("/sys/devices/system/node/node" + std::to_string(node.os_index) +
                      "/distance")) {
      EXPECT_EQ((*topology)->NumaDistance(node.os_index, node.os_index), 10);
    }
  }
  EXPECT_FALSE(cpus.empty());
  EXPECT_EQ(cpu_count, cpus.size()) << "a CPU is in two nodes";
  for (const PciDevice& device : (*topology)->pci_devices()) {
    for (int node : device.numa_nodes) EXPECT_TRUE(node_numbers.count(node)) << node;
    std::optional<int> kernel = internal::SysfsNumaNode(internal::kSysfsPciDevices, device.address);
    if (kernel == -1) {
      // The kernel does not know: no topology, even on a one-node machine.
      EXPECT_THAT(device.numa_nodes, IsEmpty()) << device.address.ToString();
    } else if (nodes.size() == 1) {
      EXPECT_THAT(device.numa_nodes, ElementsAre(nodes[0].os_index)) << device.address.ToString();
    }
  }
}

TEST(Topology, FromHostLetsHwlocPciLocalityOverrideAnUnknownKernelLocality) {
  ScopedEnv no_xml("HWLOC_XMLFILE", std::nullopt);
  // Every bus of domain 0 is local to CPU 0.
  ScopedEnv locality("HWLOC_PCI_LOCALITY", "0000:00-ff 0x1");
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromHost();
  ASSERT_TRUE(topology.ok()) << topology.status();
  if ((*topology)->numa_nodes().size() != 1) GTEST_SKIP() << "checked on one-node hosts only";
  for (const PciDevice& device : (*topology)->pci_devices()) {
    if (device.address.domain != 0) continue;
    EXPECT_THAT(device.numa_nodes, ElementsAre((*topology)->numa_nodes()[0].os_index))
        << device.address.ToString();
  }
}

TEST(SysfsNumaNode, ReadsTheKernelsNodeNumber) {
  kdp::testing::TempDir dir;
  const PciAddress known{.domain = 0, .bus = 0x3b, .device = 0, .function = 0};
  const PciAddress unknown{.domain = 0, .bus = 0x3c, .device = 0, .function = 1};
  const PciAddress garbled{.domain = 0, .bus = 0x3d, .device = 0, .function = 0};
  for (const auto& [address, content] : std::vector<std::pair<PciAddress, std::string>>{
           {known, "1\n"}, {unknown, "-1\n"}, {garbled, "n/a\n"}}) {
    std::string device_dir = dir.Path(address.ToString());
    ASSERT_EQ(::mkdir(device_dir.c_str(), 0755), 0);
    std::ofstream(device_dir + "/numa_node") << content;
  }
  EXPECT_EQ(internal::SysfsNumaNode(dir.path(), known), 1);
  EXPECT_EQ(internal::SysfsNumaNode(dir.path(), unknown), -1);
  EXPECT_EQ(internal::SysfsNumaNode(dir.path(), garbled), std::nullopt);
  EXPECT_EQ(internal::SysfsNumaNode(dir.path(),
                                    PciAddress{.domain = 1, .bus = 0, .device = 0, .function = 0}),
            std::nullopt);
}

TEST(Topology, FromHostHonoursHwlocXmlFileAndPrefersItsNumaLatency) {
  ScopedEnv xml("HWLOC_XMLFILE", EightGpuFile());
  absl::StatusOr<std::unique_ptr<Topology>> topology =
      Topology::FromHost(std::make_unique<FakeDistances>());
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ((*topology)->PciDevicesWithClass({0x0302}).size(), 8u);
  EXPECT_EQ((*topology)->NumaDistance(0, 1), 21);  // Not the fake's 1.
}

TEST(Topology, FromHostAsksTheDistanceSourceByLinuxNodeNumber) {
  // single-numa.xml has no NUMALatency matrix and one node, numbered 3.
  ScopedEnv xml("HWLOC_XMLFILE", TopologyFile("single-numa.xml"));
  absl::StatusOr<std::unique_ptr<Topology>> topology =
      Topology::FromHost(std::make_unique<FakeDistances>());
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ((*topology)->NumaDistance(3, 3), 303);
  EXPECT_EQ((*topology)->NumaDistance(0, 0), 0);
}

TEST(Topology, FromHostDoesNotMixLibnumaIntoAnXmlFile) {
  ScopedEnv xml("HWLOC_XMLFILE", TopologyFile("unknown-locality.xml"));
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromHost();
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ((*topology)->numa_nodes().size(), 2u);
  EXPECT_EQ((*topology)->NumaDistance(0, 0), 0);
}

TEST(Topology, FromXmlFileIgnoresHwlocXmlFile) {
  ScopedEnv xml("HWLOC_XMLFILE", TopologyFile("sparse-numa.xml"));
  std::unique_ptr<Topology> topology = LoadTopology(EightGpuFile());
  ASSERT_NE(topology, nullptr);
  EXPECT_EQ(topology->PciDevicesWithClass({0x0302}).size(), 8u);
  EXPECT_EQ(topology->numa_nodes().size(), 2u);
  EXPECT_EQ(topology->numa_nodes()[1].os_index, 1);
}

TEST(LibnumaDistanceSource, UnknownNodesAreZero) {
  std::unique_ptr<NumaDistanceSource> source = NewLibnumaDistanceSource();
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->Distance(-1, 0), 0);
  EXPECT_EQ(source->Distance(0, 4095), 0);
}

TEST(Topology, LoadReadsTheFileOrTheHost) {
  absl::StatusOr<std::unique_ptr<Topology>> file = Topology::Load(EightGpuFile());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->PciDevicesWithClass({0x0302}).size(), 8u);
  EXPECT_EQ(Topology::Load("/nonexistent.xml").status().code(), absl::StatusCode::kNotFound);
  ScopedEnv xml("HWLOC_XMLFILE", EightGpuFile());
  absl::StatusOr<std::unique_ptr<Topology>> host = Topology::Load("");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ((*host)->PciDevicesWithClass({0x0302}).size(), 8u);
}

// The SDK keeps hwloc from loading plugins it never needs (GL, OpenCL, libxml2), unless the user
// said otherwise: a process that loaded a topology has the variable set (by the SDK, or by the
// user before it, whose value the SDK left alone).
TEST(Topology, LoadingATopologyConfiguresHwlocsPlugins) {
  ASSERT_NE(LoadTopology(EightGpuFile()), nullptr);
  const char* blacklist = std::getenv("HWLOC_PLUGINS_BLACKLIST");
  ASSERT_NE(blacklist, nullptr);
  EXPECT_THAT(std::string(blacklist), HasSubstr("hwloc_opencl"));
}

}  // namespace
}  // namespace kdp
