#include "examples/gpu-plugin/gpu_plugin.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "kdp/health_file.h"
#include "kdp/topology.h"
#include "tests/testing/temp_dir.h"

namespace kdp::example {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::string EightGpuFile() {
  return std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  ASSERT_TRUE(file.good()) << path;
}

// A GpuPlugin on the 8-GPU fixture whose inventory has been published (as the runner does).
std::unique_ptr<GpuPlugin> DiscoveredPlugin(GpuPluginOptions options = {}) {
  options.gpus.topology_xml = EightGpuFile();
  auto plugin = std::make_unique<GpuPlugin>(std::move(options));
  EXPECT_TRUE(plugin->Publish().ok());
  return plugin;
}

std::vector<std::string> Ids(const std::vector<Device>& devices) {
  std::vector<std::string> ids;
  for (const Device& device : devices) ids.push_back(device.id);
  return ids;
}

std::vector<std::string> UnhealthyIds(const std::vector<Device>& devices) {
  std::vector<std::string> ids;
  for (const Device& device : devices) {
    if (device.health == Health::kUnhealthy) ids.push_back(device.id);
  }
  return ids;
}

std::vector<std::string> AllIds(const GpuPlugin& plugin) { return Ids(plugin.Devices()); }

// --- Discovery ----------------------------------------------------------------------------------

TEST(GpuPlugin, DiscoverReportsEveryGpuWithNumaNodesDevNodesAndCdiName) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  std::vector<Device> devices = plugin->Devices();
  EXPECT_THAT(Ids(devices),
              ElementsAre("gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"));
  int on_node[2] = {0, 0};
  for (const Device& device : devices) {
    ASSERT_EQ(device.numa_nodes.size(), 1u) << device.id;
    ++on_node[device.numa_nodes[0]];
    EXPECT_EQ(device.health, Health::kHealthy);
  }
  EXPECT_EQ(on_node[0], 4);
  EXPECT_EQ(on_node[1], 4);
  EXPECT_THAT(devices[2].specs,
              ElementsAre(DeviceSpec{"/dev/dri/card3", "/dev/dri/card3", "rw"},
                          DeviceSpec{"/dev/dri/renderD130", "/dev/dri/renderD130", "rw"}));
  EXPECT_THAT(devices[2].cdi_devices, ElementsAre("example.com/gpu=gpu2"));
}

TEST(GpuPlugin, DiscoverFailsWhenTopologyCannotBeLoaded) {
  GpuPlugin plugin({.gpus = {.topology_xml = "/nonexistent/topology.xml"}});
  EXPECT_EQ(plugin.Discover().status().code(), absl::StatusCode::kNotFound);
}

TEST(GpuPlugin, VendorFilterThatMatchesNothingAdvertisesNoDevice) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.gpus = {.vendor_id = 0x1002}});
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(plugin->Devices(), IsEmpty());
}

// --- Replicas and health ------------------------------------------------------------------------

TEST(GpuPlugin, ReplicasAdvertiseEachGpuNTimesWithItsNumaNode) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 3});
  ASSERT_NE(plugin, nullptr);
  std::vector<Device> devices = plugin->Devices();
  ASSERT_EQ(devices.size(), 24u);
  EXPECT_THAT(Ids(devices), ::testing::IsSupersetOf({"gpu0::0", "gpu0::1", "gpu0::2", "gpu7::2"}));
  EXPECT_EQ(devices[0].id, "gpu0::0");
  EXPECT_EQ(devices[3].id, "gpu1::0");
  for (const Device& device : devices) {
    const int gpu = device.id[3] - '0';
    EXPECT_THAT(device.numa_nodes, ElementsAre(gpu < 4 ? 0 : 1)) << device.id;
    EXPECT_THAT(device.cdi_devices, ElementsAre("example.com/gpu=gpu" + std::to_string(gpu)));
  }
}

// The health file names GPUs; kdp::RunPlugins() applies it through HealthFileWatcher::Watch(),
// and a GPU's ID covers its replicas (DevicePlugin::SetHealth()).
TEST(GpuPlugin, UnhealthyGpuMarksAllItsReplicasAndRecovers) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 2});
  ASSERT_NE(plugin, nullptr);
  // Polled by hand below: the thread's interval is longer than the test.
  absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watcher =
      HealthFileWatcher::Watch(path, *plugin, absl::Hours(1));
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  WriteText(path, "gpu2\ngpu6\n");
  ASSERT_TRUE((*watcher)->Poll().ok());
  EXPECT_THAT(UnhealthyIds(plugin->Devices()),
              ElementsAre("gpu2::0", "gpu2::1", "gpu6::0", "gpu6::1"));
  WriteText(path, "gpu6\ngpu7::1\n");
  ASSERT_TRUE((*watcher)->Poll().ok());
  EXPECT_THAT(UnhealthyIds(plugin->Devices()),
              ElementsAre("gpu6::0", "gpu6::1", "gpu7::0", "gpu7::1"));
  WriteText(path, "");
  ASSERT_TRUE((*watcher)->Poll().ok());
  EXPECT_THAT(UnhealthyIds(plugin->Devices()), IsEmpty());
}

TEST(GpuPlugin, HealthSetBeforeDiscoveryAppliesOnceDiscovered) {
  GpuPlugin plugin({.gpus = {.topology_xml = EightGpuFile()}, .replicas = 2});
  EXPECT_TRUE(plugin.SetHealth("gpu1", Health::kUnhealthy).ok());
  ASSERT_TRUE(plugin.Publish().ok());
  EXPECT_THAT(UnhealthyIds(plugin.Devices()), ElementsAre("gpu1::0", "gpu1::1"));
}

// --- Allocate -----------------------------------------------------------------------------------

TEST(GpuPlugin, AllocateGivesDrmNodesVisibleDevicesAndCdiNamesInPciOrder) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  absl::StatusOr<ContainerAllocation> allocation = plugin->Allocate({{"gpu5", "gpu1"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  ContainerAllocation expected;
  expected.devices = {{"/dev/dri/card2", "/dev/dri/card2", "rw"},
                      {"/dev/dri/renderD129", "/dev/dri/renderD129", "rw"},
                      {"/dev/dri/card6", "/dev/dri/card6", "rw"},
                      {"/dev/dri/renderD133", "/dev/dri/renderD133", "rw"}};
  expected.envs = {{"KDP_VISIBLE_DEVICES", "gpu1,gpu5"}};
  expected.cdi_devices = {"example.com/gpu=gpu1", "example.com/gpu=gpu5"};
  EXPECT_EQ(*allocation, expected);
}

TEST(GpuPlugin, AllocateMapsReplicasToTheirGpuOnce) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 4});
  ASSERT_NE(plugin, nullptr);
  absl::StatusOr<ContainerAllocation> allocation =
      plugin->Allocate({{"gpu1::2", "gpu0::3", "gpu1::0"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs.at("KDP_VISIBLE_DEVICES"), "gpu0,gpu1");
  EXPECT_THAT(allocation->cdi_devices, ElementsAre("example.com/gpu=gpu0", "example.com/gpu=gpu1"));
  EXPECT_EQ(allocation->devices.size(), 4u);  // card1, renderD128, card2, renderD129.
}

TEST(GpuPlugin, AllocateUsesTheResourceDomainAsCdiVendor) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.resource_name = "acme.io/accel"});
  ASSERT_NE(plugin, nullptr);
  absl::StatusOr<ContainerAllocation> allocation = plugin->Allocate({{"gpu0"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_THAT(allocation->cdi_devices, ElementsAre("acme.io/gpu=gpu0"));
}

TEST(GpuPlugin, AllocateRejectsUnknownDevice) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  absl::StatusOr<ContainerAllocation> allocation = plugin->Allocate({{"gpu0", "gpu9"}});
  EXPECT_EQ(allocation.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(allocation.status().message(), HasSubstr("gpu9"));
}

// --- Preferred allocation -----------------------------------------------------------------------

std::vector<std::string> Prefer(GpuPlugin& plugin, std::vector<std::string> available,
                                std::vector<std::string> must_include, int size) {
  absl::StatusOr<std::vector<std::string>> ids = plugin.PreferredAllocation(
      {.available = std::move(available), .must_include = std::move(must_include), .size = size});
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.value_or(std::vector<std::string>{});
}

TEST(GpuPlugin, PreferredTiesGoToTheLowestNodeInPciOrder) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(Prefer(*plugin, AllIds(*plugin), {}, 2), ElementsAre("gpu0", "gpu1"));
  // Offered order does not matter.
  EXPECT_THAT(Prefer(*plugin, {"gpu7", "gpu3", "gpu6", "gpu2"}, {}, 2),
              ElementsAre("gpu2", "gpu3"));
}

TEST(GpuPlugin, PreferredFillsTheFragmentedNodeAndKeepsTheWholerOneFree) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  // Both nodes hold two; taking node 0's last two leaves node 1's three together for a later
  // request of three (best fit, the link-best-fit policy's tie-break on what is left).
  EXPECT_THAT(Prefer(*plugin, {"gpu0", "gpu1", "gpu4", "gpu5", "gpu6"}, {}, 2),
              ElementsAre("gpu0", "gpu1"));
  // numa-packed makes the same best-fit choice.
  std::unique_ptr<GpuPlugin> packed =
      DiscoveredPlugin({.allocation_policy = AllocationPolicy::kNumaPacked});
  ASSERT_NE(packed, nullptr);
  EXPECT_THAT(Prefer(*packed, {"gpu0", "gpu1", "gpu4", "gpu5", "gpu6"}, {}, 2),
              ElementsAre("gpu0", "gpu1"));
}

TEST(GpuPlugin, PreferredSpreadPolicyUsesBothNodes) {
  std::unique_ptr<GpuPlugin> plugin =
      DiscoveredPlugin({.allocation_policy = AllocationPolicy::kSpread});
  ASSERT_NE(plugin, nullptr);
  std::vector<std::string> ids = Prefer(*plugin, AllIds(*plugin), {}, 2);
  ASSERT_EQ(ids.size(), 2u);
  std::set<int> nodes;
  for (const Device& device : plugin->Devices()) {
    if (std::find(ids.begin(), ids.end(), device.id) != ids.end()) {
      nodes.insert(device.numa_nodes.begin(), device.numa_nodes.end());
    }
  }
  EXPECT_EQ(nodes, (std::set<int>{0, 1}));
}

TEST(GpuPlugin, PreferredKeepsMustIncludeAndStaysOnItsNode) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(Prefer(*plugin, AllIds(*plugin), {"gpu5"}, 3), ElementsAre("gpu5", "gpu4", "gpu6"));
  // Node 0 has fewer free devices, but must_include is there and it can hold the request.
  EXPECT_THAT(Prefer(*plugin, {"gpu0", "gpu1", "gpu4", "gpu5", "gpu6", "gpu7"}, {"gpu0"}, 2),
              ElementsAre("gpu0", "gpu1"));
  // Nothing more to choose: must_include alone.
  EXPECT_THAT(Prefer(*plugin, AllIds(*plugin), {"gpu3", "gpu4"}, 2), ElementsAre("gpu3", "gpu4"));
}

TEST(GpuPlugin, PreferredSpillsIntoTheNextNodeWhenNoneCanHoldTheRequest) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  // The fixture pairs GPUs under PCIe switches (gpu0+gpu1, gpu4+gpu5): two switch pairs joined
  // across the nodes score as high as three GPUs of node 0 and one of node 1, and leave gpu2,
  // not a GPU of an intact pair, behind.
  EXPECT_THAT(Prefer(*plugin, {"gpu0", "gpu1", "gpu2", "gpu4", "gpu5"}, {}, 4),
              ElementsAre("gpu0", "gpu1", "gpu4", "gpu5"));
  // numa-packed takes as many as it can from one node first.
  std::unique_ptr<GpuPlugin> packed =
      DiscoveredPlugin({.allocation_policy = AllocationPolicy::kNumaPacked});
  ASSERT_NE(packed, nullptr);
  std::vector<std::string> ids = Prefer(*packed, {"gpu0", "gpu1", "gpu2", "gpu4", "gpu5"}, {}, 4);
  EXPECT_EQ(ids.size(), 4u);
}

TEST(GpuPlugin, PreferredIgnoresUnknownIdsAndNeverInventsDevices) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin();
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(Prefer(*plugin, {"gpu9", "gpu1", "bogus"}, {}, 3), ElementsAre("gpu1"));
}

TEST(GpuPlugin, PreferredReplicasSpreadOverDistinctGpusOfOneNode) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 4});
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(Prefer(*plugin, AllIds(*plugin), {}, 3),
              ElementsAre("gpu0::0", "gpu1::0", "gpu2::0"));
  // Five replicas: five distinct GPUs before any second replica of one (the fifth from node 1).
  EXPECT_THAT(Prefer(*plugin, AllIds(*plugin), {}, 5),
              ElementsAre("gpu0::0", "gpu1::0", "gpu2::0", "gpu3::0", "gpu4::0"));
}

TEST(GpuPlugin, PreferredReplicasGoToTheLeastLoadedGpu) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 2});
  ASSERT_NE(plugin, nullptr);
  // gpu0::0 is in use, so gpu0 has one free replica and gpu1 two.
  EXPECT_THAT(Prefer(*plugin, {"gpu0::1", "gpu1::0", "gpu1::1"}, {}, 1), ElementsAre("gpu1::0"));
  // Two replicas: two distinct GPUs (answered in inventory order).
  EXPECT_THAT(Prefer(*plugin, {"gpu0::1", "gpu1::0", "gpu1::1"}, {}, 2),
              ElementsAre("gpu0::1", "gpu1::0"));
}

TEST(GpuPlugin, PreferredReplicasSpreadAwayFromMustIncludeGpu) {
  std::unique_ptr<GpuPlugin> plugin = DiscoveredPlugin({.replicas = 4});
  ASSERT_NE(plugin, nullptr);
  // gpu0 has more free replicas, but the answer already holds one of its replicas.
  EXPECT_THAT(
      Prefer(*plugin, {"gpu0::0", "gpu0::1", "gpu0::2", "gpu0::3", "gpu1::3"}, {"gpu0::0"}, 2),
      ElementsAre("gpu0::0", "gpu1::3"));
}

}  // namespace
}  // namespace kdp::example
