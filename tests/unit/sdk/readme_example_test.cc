// The plugin shown in README.md, compiled with the project's warnings and exercised, so the
// README's example keeps building and does what the README says.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"

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
  ASSERT_TRUE(plugin.Refresh().ok());
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
