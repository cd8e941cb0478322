#include "kdp/device_plugin.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// A plugin whose Discover() answer the test sets; exposes DefaultAllocate().
class FakePlugin final : public DevicePlugin {
 public:
  FakePlugin() : DevicePlugin("example.com/gpu") {}

  absl::StatusOr<std::vector<Device>> Discover() override {
    absl::MutexLock lock(&mu_);
    ++discover_calls_;
    return next_;
  }

  void SetDiscovery(absl::StatusOr<std::vector<Device>> next) {
    absl::MutexLock lock(&mu_);
    next_ = std::move(next);
  }

  int discover_calls() const {
    absl::MutexLock lock(&mu_);
    return discover_calls_;
  }

  using DevicePlugin::DefaultAllocate;
  using DevicePlugin::InInventoryOrder;

 private:
  mutable absl::Mutex mu_;
  absl::StatusOr<std::vector<Device>> next_ ABSL_GUARDED_BY(mu_) = std::vector<Device>{};
  int discover_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

std::vector<std::string> Ids(const std::vector<Device>& devices) {
  std::vector<std::string> ids;
  for (const Device& device : devices) ids.push_back(device.id);
  return ids;
}

DeviceSpec Spec(const std::string& path, const std::string& permissions = "rw") {
  DeviceSpec spec;
  spec.container_path = path;
  spec.host_path = path;
  spec.permissions = permissions;
  return spec;
}

Mount MountOf(const std::string& container_path, const std::string& host_path,
              bool read_only = false) {
  Mount mount;
  mount.container_path = container_path;
  mount.host_path = host_path;
  mount.read_only = read_only;
  return mount;
}

Device Dev(const std::string& id) {
  Device device;
  device.id = id;
  return device;
}

std::vector<Device> GpuInventory() {
  Device gpu0 = Dev("gpu0");
  gpu0.specs = {Spec("/dev/gpu0"), Spec("/dev/gpuctl", "r")};
  gpu0.mounts = {MountOf("/usr/lib/gpu", "/opt/gpu/lib", /*read_only=*/true)};
  gpu0.envs = {{"GPU_VISIBLE", "0"}, {"GPU_DRIVER", "v1"}};
  gpu0.cdi_devices = {"example.com/gpu=gpu0", "example.com/gpu=ctl"};
  Device gpu1 = Dev("gpu1");
  gpu1.specs = {Spec("/dev/gpu1"), Spec("/dev/gpuctl", "r")};
  gpu1.mounts = {MountOf("/usr/lib/gpu", "/opt/gpu/lib", /*read_only=*/true),
                 MountOf("/data", "/srv/gpu1")};
  gpu1.envs = {{"GPU_VISIBLE", "1"}, {"GPU_EXTRA", "yes"}};
  gpu1.cdi_devices = {"example.com/gpu=gpu1", "example.com/gpu=ctl"};
  return {gpu0, gpu1, Dev("bare")};
}

TEST(DevicePlugin, HealthNameUsesTheWireStrings) {
  EXPECT_STREQ(HealthName(Health::kHealthy), "Healthy");
  EXPECT_STREQ(HealthName(Health::kUnhealthy), "Unhealthy");
}

TEST(DevicePlugin, DevicesIsEmptyBeforeAnyDiscovery) {
  FakePlugin plugin;
  EXPECT_THAT(plugin.Devices(), IsEmpty());
  EXPECT_EQ(plugin.resource_name(), "example.com/gpu");
}

TEST(DevicePlugin, DefaultAllocateMergesRuntimeFieldsWithoutDuplicates) {
  FakePlugin plugin;
  plugin.SetDiscovery(GpuInventory());
  ASSERT_TRUE(plugin.Publish().ok());

  absl::StatusOr<ContainerAllocation> allocation =
      plugin.DefaultAllocate({.device_ids = {"gpu0", "gpu1"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_THAT(allocation->devices,
              ElementsAre(Spec("/dev/gpu0"), Spec("/dev/gpuctl", "r"), Spec("/dev/gpu1")));
  EXPECT_THAT(allocation->mounts,
              ElementsAre(MountOf("/usr/lib/gpu", "/opt/gpu/lib", /*read_only=*/true),
                          MountOf("/data", "/srv/gpu1")));
  EXPECT_THAT(allocation->cdi_devices,
              ElementsAre("example.com/gpu=gpu0", "example.com/gpu=ctl", "example.com/gpu=gpu1"));
  EXPECT_THAT(allocation->annotations, IsEmpty());
}

TEST(DevicePlugin, DefaultAllocateKeepsTheFirstValueOfAnEnv) {
  FakePlugin plugin;
  plugin.SetDiscovery(GpuInventory());
  ASSERT_TRUE(plugin.Publish().ok());

  absl::StatusOr<ContainerAllocation> forward =
      plugin.DefaultAllocate({.device_ids = {"gpu0", "gpu1"}});
  ASSERT_TRUE(forward.ok()) << forward.status();
  EXPECT_THAT(forward->envs, ElementsAre(Pair("GPU_DRIVER", "v1"), Pair("GPU_EXTRA", "yes"),
                                         Pair("GPU_VISIBLE", "0")));

  absl::StatusOr<ContainerAllocation> backward =
      plugin.DefaultAllocate({.device_ids = {"gpu1", "gpu0"}});
  ASSERT_TRUE(backward.ok()) << backward.status();
  EXPECT_THAT(backward->envs, ElementsAre(Pair("GPU_DRIVER", "v1"), Pair("GPU_EXTRA", "yes"),
                                          Pair("GPU_VISIBLE", "1")));
  // Request order also decides the order of the merged lists.
  EXPECT_THAT(backward->cdi_devices,
              ElementsAre("example.com/gpu=gpu1", "example.com/gpu=ctl", "example.com/gpu=gpu0"));
}

TEST(DevicePlugin, DefaultAllocateOfADeviceWithoutRuntimeFieldsIsEmpty) {
  FakePlugin plugin;
  plugin.SetDiscovery(GpuInventory());
  ASSERT_TRUE(plugin.Publish().ok());
  absl::StatusOr<ContainerAllocation> allocation = plugin.DefaultAllocate({.device_ids = {"bare"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(*allocation, ContainerAllocation{});
}

TEST(DevicePlugin, DefaultAllocateOfAnUnknownIdIsNotFound) {
  FakePlugin plugin;
  plugin.SetDiscovery(GpuInventory());
  ASSERT_TRUE(plugin.Publish().ok());
  absl::StatusOr<ContainerAllocation> allocation =
      plugin.DefaultAllocate({.device_ids = {"gpu0", "gpu9"}});
  EXPECT_EQ(allocation.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(allocation.status().message(), HasSubstr("gpu9"));
}

TEST(DevicePlugin, AllocateDefaultsToDefaultAllocate) {
  FakePlugin plugin;
  plugin.SetDiscovery(GpuInventory());
  ASSERT_TRUE(plugin.Publish().ok());
  AllocateRequest request{.device_ids = {"gpu1"}};
  absl::StatusOr<ContainerAllocation> allocated = plugin.Allocate(request);
  absl::StatusOr<ContainerAllocation> merged = plugin.DefaultAllocate(request);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*allocated, *merged);
  EXPECT_EQ(plugin.Allocate({.device_ids = {"nope"}}).status().code(), absl::StatusCode::kNotFound);
}

TEST(DevicePlugin, RefreshRunsDiscoverAgain) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());
  EXPECT_THAT(Ids(plugin.Devices()), ElementsAre("a"));

  plugin.SetDiscovery(std::vector<Device>{Dev("b"), Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());
  EXPECT_THAT(Ids(plugin.Devices()), ElementsAre("b", "a"));
  EXPECT_EQ(plugin.discover_calls(), 2);
}

TEST(DevicePlugin, RefreshKeepsTheOldInventoryWhenDiscoverFails) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());

  plugin.SetDiscovery(absl::UnavailableError("driver gone"));
  absl::Status status = plugin.Publish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("driver gone"));
  EXPECT_THAT(Ids(plugin.Devices()), ElementsAre("a"));
}

TEST(DevicePlugin, RefreshRejectsDuplicateIdsAndKeepsTheOldInventory) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());

  plugin.SetDiscovery(std::vector<Device>{Dev("b"), Dev("b")});
  EXPECT_EQ(plugin.Publish().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Ids(plugin.Devices()), ElementsAre("a"));
}

TEST(DevicePlugin, DevicesReflectsHealthOverrides) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a"), Dev("b"), Dev("c")});
  ASSERT_TRUE(plugin.Publish().ok());

  EXPECT_TRUE(plugin.SetHealth("b", Health::kUnhealthy).ok());
  std::vector<Device> devices = plugin.Devices();
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].health, Health::kHealthy);
  EXPECT_EQ(devices[1].health, Health::kUnhealthy);
  EXPECT_EQ(devices[2].health, Health::kHealthy);

  const std::vector<std::string> ids = {"a", "c"};
  EXPECT_TRUE(plugin.SetHealth(ids, Health::kUnhealthy).ok());
  EXPECT_TRUE(plugin.SetHealth("b", Health::kHealthy).ok());
  devices = plugin.Devices();
  EXPECT_EQ(devices[0].health, Health::kUnhealthy);
  EXPECT_EQ(devices[1].health, Health::kHealthy);
  EXPECT_EQ(devices[2].health, Health::kUnhealthy);
}

TEST(DevicePlugin, HealthOverridesSurviveRefreshAndApplyToNewDevices) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());
  EXPECT_TRUE(plugin.SetHealth("a", Health::kUnhealthy).ok());
  EXPECT_TRUE(plugin.SetHealth("new", Health::kUnhealthy).ok());

  plugin.SetDiscovery(std::vector<Device>{Dev("a"), Dev("new")});
  ASSERT_TRUE(plugin.Publish().ok());
  std::vector<Device> devices = plugin.Devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].health, Health::kUnhealthy);
  EXPECT_EQ(devices[1].health, Health::kUnhealthy);
}

TEST(DevicePlugin, SetHealthRefusesUnknownAndNonUtf8AndSetsNothing) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a"), Dev("b")});
  ASSERT_TRUE(plugin.Publish().ok());
  const std::vector<std::string> both = {"a", "b"};
  absl::Status unknown = plugin.SetHealth(both, Health::kUnknown);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("Healthy and Unhealthy only"));
  EXPECT_EQ(plugin.SetHealth("a", Health::kUnhealthy, "bad \xc3 byte").code(),
            absl::StatusCode::kInvalidArgument);
  for (const Device& device : plugin.Devices()) EXPECT_EQ(device.health, Health::kHealthy);
}

TEST(DevicePlugin, DiscoverWithUnknownHealthIsRefusedAndKeepsTheInventory) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{Dev("a")});
  ASSERT_TRUE(plugin.Publish().ok());
  plugin.SetDiscovery(std::vector<Device>{{.id = "b", .health = Health::kUnknown}});
  absl::Status refused = plugin.Publish();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("\"b\""));
  ASSERT_EQ(plugin.Devices().size(), 1u);
  EXPECT_EQ(plugin.Devices()[0].id, "a");
}

TEST(DevicePlugin, SetUnhealthyDevicesStatesTheWholeSetAndClearsWhatWasSetBefore) {
  FakePlugin plugin;
  plugin.SetDiscovery(
      std::vector<Device>{Dev("a"), Dev("b"), {.id = "c", .health = Health::kUnhealthy}});
  ASSERT_TRUE(plugin.Publish().ok());
  ASSERT_TRUE(plugin.SetHealth("c", Health::kHealthy).ok());
  ASSERT_TRUE(plugin.SetUnhealthyDevices({"a", "later"}, "listed").ok());
  std::vector<Device> devices = plugin.Devices();
  EXPECT_EQ(devices[0].health, Health::kUnhealthy);
  EXPECT_EQ(devices[1].health, Health::kHealthy);
  // c's own SetHealth() was cleared: Discover()'s health holds again.
  EXPECT_EQ(devices[2].health, Health::kUnhealthy);
  // "later" is remembered until Discover() lists it.
  plugin.SetDiscovery(std::vector<Device>{Dev("a"), Dev("later")});
  ASSERT_TRUE(plugin.Publish().ok());
  devices = plugin.Devices();
  EXPECT_EQ(devices[1].health, Health::kUnhealthy);
  ASSERT_TRUE(plugin.SetUnhealthyDevices({}).ok());
  for (const Device& device : plugin.Devices()) EXPECT_EQ(device.health, Health::kHealthy);
}

TEST(ReplicaIds, NamesReplicasAsNvidiaDoes) {
  EXPECT_THAT(ReplicaIds("gpu3", 1), ElementsAre("gpu3"));
  EXPECT_THAT(ReplicaIds("gpu3", 3), ElementsAre("gpu3::0", "gpu3::1", "gpu3::2"));
  EXPECT_THAT(ReplicaIds("gpu3", 0), IsEmpty());
  EXPECT_EQ(PhysicalId("gpu3::2"), "gpu3");
  EXPECT_EQ(PhysicalId("gpu3"), "gpu3");
  const std::vector<std::string> ids = {"gpu1::0", "gpu1::1", "gpu0::1", "gpu2", "gpu0::0"};
  EXPECT_THAT(PhysicalIds(ids), ElementsAre("gpu1", "gpu0", "gpu2"));
}

TEST(DevicePlugin, APhysicalIdsHealthCoversItsReplicasUnlessOneHasItsOwn) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{
      {.id = "gpu0::0"}, {.id = "gpu0::1"}, {.id = "gpu1::0"}, {.id = "gpu1::1"}});
  // Before discovery: remembered.
  EXPECT_TRUE(plugin.SetHealth("gpu0", Health::kUnhealthy).ok());
  ASSERT_TRUE(plugin.Publish().ok());
  std::vector<Device> devices = plugin.Devices();
  EXPECT_EQ(devices[0].health, Health::kUnhealthy);
  EXPECT_EQ(devices[1].health, Health::kUnhealthy);
  EXPECT_EQ(devices[2].health, Health::kHealthy);
  // The replica's own health wins.
  EXPECT_TRUE(plugin.SetHealth("gpu0::1", Health::kHealthy).ok());
  devices = plugin.Devices();
  EXPECT_EQ(devices[0].health, Health::kUnhealthy);
  EXPECT_EQ(devices[1].health, Health::kHealthy);
}

TEST(DevicePlugin, InInventoryOrderSortsTheRequestAndPutsUnknownIdsLast) {
  FakePlugin plugin;
  plugin.SetDiscovery(std::vector<Device>{{.id = "a"}, {.id = "b"}, {.id = "c"}});
  ASSERT_TRUE(plugin.Publish().ok());
  EXPECT_THAT(plugin.InInventoryOrder({{"z", "c", "a", "c", "y"}}).device_ids,
              ElementsAre("a", "c", "y", "z"));
}

}  // namespace
}  // namespace kdp
