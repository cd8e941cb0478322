// kdp::FindGpus, kdp::GpuDiscovery and kdp::ParsePciId (kdp/gpus.h) on the bundled 8-GPU
// topology.
#include "kdp/gpus.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/topology_files.h"

namespace kdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using ::kdp::testing::EightGpuFile;
using ::kdp::testing::EightGpuTopology;

std::string ReadText(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(FindGpus, FindsEightGpusFourPerNumaNodeInPciOrder) {
  std::unique_ptr<Topology> topology = EightGpuTopology();
  ASSERT_NE(topology, nullptr);
  std::vector<Gpu> gpus = FindGpus(*topology, std::nullopt);
  ASSERT_EQ(gpus.size(), 8u);
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].id, "gpu" + std::to_string(i));
    EXPECT_THAT(gpus[i].numa_nodes, ElementsAre(i < 4 ? 0 : 1)) << gpus[i].id;
    if (i > 0) {
      EXPECT_LT(gpus[i - 1].address, gpus[i].address);
    }
  }
  EXPECT_EQ(gpus[0].address.ToString(), "0000:1b:00.0");
  EXPECT_THAT(gpus[0].dev_nodes, ElementsAre("/dev/dri/card1", "/dev/dri/renderD128"));
  EXPECT_EQ(gpus[7].address.ToString(), "0000:be:00.0");
  EXPECT_THAT(gpus[7].dev_nodes, ElementsAre("/dev/dri/card8", "/dev/dri/renderD135"));
}

TEST(FindGpus, TakesVgaClassAndFiltersByVendor) {
  // Turn the first GPU into an AMD VGA controller (class 0x0300, vendor 0x1002).
  const std::string xml = ReadText(EightGpuFile());
  const std::string nvidia_3d = "pci_type=\"0302 [10de:2330]";
  ASSERT_THAT(xml, HasSubstr(nvidia_3d));
  std::string mixed = xml;
  mixed.replace(mixed.find(nvidia_3d), nvidia_3d.size(), "pci_type=\"0300 [1002:740f]");
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromXmlBuffer(mixed);
  ASSERT_TRUE(topology.ok()) << topology.status();

  EXPECT_EQ(FindGpus(**topology, std::nullopt).size(), 8u);
  std::vector<Gpu> amd = FindGpus(**topology, 0x1002);
  ASSERT_EQ(amd.size(), 1u);
  EXPECT_EQ(amd[0].id, "gpu0");
  EXPECT_EQ(amd[0].address.ToString(), "0000:1b:00.0");
  std::vector<Gpu> nvidia = FindGpus(**topology, 0x10de);
  ASSERT_EQ(nvidia.size(), 7u);
  // IDs are renumbered among the GPUs kept.
  EXPECT_EQ(nvidia[0].id, "gpu0");
  EXPECT_EQ(nvidia[0].address.ToString(), "0000:1c:00.0");
  EXPECT_THAT(FindGpus(**topology, 0x8086), IsEmpty());
}

TEST(ParsePciId, AcceptsHexWithOrWithoutPrefix) {
  EXPECT_EQ(ParsePciId("10de").value_or(0), 0x10de);
  EXPECT_EQ(ParsePciId("0x10DE").value_or(0), 0x10de);
  EXPECT_EQ(ParsePciId("0X1002").value_or(0), 0x1002);
  EXPECT_EQ(ParsePciId("1").value_or(0), 0x1);
}

TEST(ParsePciId, RejectsAnythingElse) {
  for (const char* text : {"", "0x", "10dex", "12345", "-1", "+1", " 10de", "0x0x1", "g"}) {
    absl::StatusOr<uint16_t> id = ParsePciId(text);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << text << "\"";
  }
}

TEST(GpuDiscovery, FindLoadsTheTopologyAndFiltersByVendor) {
  EXPECT_EQ(GpuDiscovery{.topology_xml = EightGpuFile()}.Find()->size(), 8u);
  const GpuDiscovery amd{.topology_xml = EightGpuFile(), .vendor_id = 0x1002};
  EXPECT_THAT(*amd.Find(), IsEmpty());
  absl::StatusOr<std::vector<Gpu>> missing =
      GpuDiscovery{.topology_xml = "/nonexistent/topology.xml"}.Find();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/topology.xml"));
}

}  // namespace
}  // namespace kdp
