// The plugins shown in README.md and docs/writing-a-device-plugin.md, compiled with the
// project's warnings and exercised, so the documentation's examples keep building and do what
// the documentation says.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"
#include "kdp/topology.h"

namespace {

// --- README example, verbatim except for main() -------------------------------------------------
class MyAccelerators : public kdp::DevicePlugin {
 public:
  MyAccelerators() : DevicePlugin("example.com/accel") {}

  // The full inventory; the SDK streams it to the kubelet and diffs nothing: every change is a
  // new full snapshot, as the kubelet expects.
  absl::StatusOr<std::vector<kdp::Device>> Discover() override {
    std::vector<kdp::Device> devices;
    for (int i = 0; i < 4; ++i) {
      devices.push_back({.id = "accel" + std::to_string(i),
                         .numa_nodes = {i / 2},
                         .specs = {{.container_path = "/dev/accel" + std::to_string(i),
                                    .host_path = "/dev/accel" + std::to_string(i)}}});
    }
    return devices;
  }
  // Allocate() defaults to handing out each device's specs, mounts, envs and CDI names.
};
// -------------------------------------------------------------------------------------------------

// --- docs/writing-a-device-plugin.md, sections 1 and 2 ------------------------------------------
class MyNics : public kdp::DevicePlugin {
 public:
  MyNics() : DevicePlugin("example.com/nic") {}

  absl::StatusOr<std::vector<kdp::Device>> Discover() override {
    absl::StatusOr<std::unique_ptr<kdp::Topology>> topology = kdp::Topology::FromHost();
    if (!topology.ok()) return topology.status();
    std::vector<kdp::Device> devices;
    for (const kdp::PciDevice& pci : (*topology)->PciDevicesWithClass({0x0200})) {
      if (pci.vendor_id != 0x15b3) continue;
      devices.push_back({.id = pci.address.ToString(),
                         .numa_nodes = pci.numa_nodes,  // empty when the kernel does not know
                         .cdi_devices = {"example.com/nic=" + pci.address.ToString()}});
    }
    return devices;
  }

  absl::StatusOr<kdp::ContainerAllocation> Allocate(const kdp::AllocateRequest& request) override {
    absl::StatusOr<kdp::ContainerAllocation> allocation = DefaultAllocate(request);
    if (!allocation.ok()) return allocation;
    allocation->envs["MY_VISIBLE_DEVICES"] = absl::StrJoin(request.device_ids, ",");
    return allocation;
  }
};
// -------------------------------------------------------------------------------------------------

TEST(WritingAPluginExample, DiscoversFromTheHostAndListsTheDevicesInAnEnv) {
  MyNics plugin;
  absl::StatusOr<std::vector<kdp::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_TRUE(plugin.Publish().ok());
  if (devices->empty()) {
    // No Mellanox NIC on this host: an unknown ID is refused, as the guide says.
    EXPECT_EQ(plugin.Allocate({.device_ids = {"0000:00:00.0"}}).status().code(),
              absl::StatusCode::kNotFound);
    return;
  }
  absl::StatusOr<kdp::ContainerAllocation> allocation =
      plugin.Allocate({.device_ids = {(*devices)[0].id}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs["MY_VISIBLE_DEVICES"], (*devices)[0].id);
  EXPECT_EQ(allocation->cdi_devices.size(), 1u);
}

TEST(ReadmeExample, DiscoversFourDevicesOnTwoNumaNodes) {
  MyAccelerators plugin;
  absl::StatusOr<std::vector<kdp::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 4u);
  EXPECT_EQ((*devices)[0].numa_nodes, std::vector<int>{0});
  EXPECT_EQ((*devices)[3].numa_nodes, std::vector<int>{1});
}

TEST(ReadmeExample, DefaultAllocateHandsOutTheDeviceNodes) {
  MyAccelerators plugin;
  ASSERT_TRUE(plugin.Publish().ok());
  absl::StatusOr<kdp::ContainerAllocation> allocation =
      plugin.Allocate({.device_ids = {"accel1", "accel2"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  ASSERT_EQ(allocation->devices.size(), 2u);
  EXPECT_EQ(allocation->devices[0].host_path, "/dev/accel1");
  EXPECT_EQ(allocation->devices[1].container_path, "/dev/accel2");
  EXPECT_EQ(allocation->devices[1].permissions, "rw");
}

TEST(ReadmeExample, RunnerAcceptsThePluginAsWritten) {
  std::vector<std::unique_ptr<kdp::DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<MyAccelerators>());
  auto runner = kdp::PluginRunner::Create({.kubelet_root = "/nonexistent"}, std::move(plugins));
  EXPECT_TRUE(runner.ok()) << runner.status();
}

}  // namespace
