#include "manager/src/devicemanager/device_registry.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kRes[] = "domain1.com/resource1";

struct ReportedDevice {
  std::string id;
  std::string health;
  std::vector<int64_t> numa = {};
};

v1beta1::ListAndWatchResponse Snapshot(const std::vector<ReportedDevice>& devs) {
  v1beta1::ListAndWatchResponse snapshot;
  for (const ReportedDevice& d : devs) {
    v1beta1::Device* device = snapshot.add_devices();
    device->set_id(d.id);
    device->set_health(d.health);
    for (int64_t node : d.numa) device->mutable_topology()->add_nodes()->set_id(node);
  }
  return snapshot;
}

std::vector<std::string> Ids(const ResourceDevices& resource) {
  std::vector<std::string> out;
  for (const auto& [id, info] : resource.devices) out.push_back(id);
  return out;
}

TEST(DeviceRegistry, UnknownResourceIsAbsent) {
  DeviceRegistry registry;
  EXPECT_FALSE(registry.Has(kRes));
  EXPECT_FALSE(registry.Get(kRes).has_value());
  EXPECT_THAT(registry.List(), IsEmpty());
  registry.Disconnected(kRes);  // Not an error, and does not create the resource.
  EXPECT_FALSE(registry.Has(kRes));
}

TEST(DeviceRegistry, ConnectedCreatesEmptyConnectedResource) {
  DeviceRegistry registry;
  registry.Connected(kRes, "/var/lib/kubelet/device-plugins/p.sock");
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->name, kRes);
  EXPECT_TRUE(resource->connected);
  EXPECT_EQ(resource->endpoint, "/var/lib/kubelet/device-plugins/p.sock");
  EXPECT_THAT(resource->devices, IsEmpty());
  EXPECT_EQ(resource->capacity(), 0);
  EXPECT_EQ(resource->allocatable(), 0);
}

TEST(DeviceRegistry, CapacityCountsAllAllocatableCountsHealthy) {
  // TestUpdateCapacityAllocatable: 2 healthy + 1 unhealthy → capacity 3, allocatable 2.
  DeviceRegistry registry;
  registry.Connected(kRes, "p.sock");
  registry.Update(kRes,
                  Snapshot({{"dev1", "Healthy"}, {"dev2", "Healthy"}, {"dev3", "Unhealthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->capacity(), 3);
  EXPECT_EQ(resource->allocatable(), 2);
  EXPECT_THAT(resource->Healthy(), ElementsAre("dev1", "dev2"));
}

TEST(DeviceRegistry, SnapshotReplacesDeviceListWhole) {
  DeviceRegistry registry;
  registry.Connected(kRes, "p.sock");
  registry.Update(kRes,
                  Snapshot({{"dev1", "Healthy"}, {"dev2", "Healthy"}, {"dev3", "Unhealthy"}}));
  registry.Update(kRes, Snapshot({{"dev2", "Unhealthy"}, {"dev4", "Healthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_THAT(Ids(*resource), ElementsAre("dev2", "dev4"));
  EXPECT_THAT(resource->Healthy(), ElementsAre("dev4"));
  EXPECT_EQ(resource->capacity(), 2);
  EXPECT_EQ(resource->allocatable(), 1);

  registry.Update(kRes, Snapshot({}));
  resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_THAT(resource->devices, IsEmpty());
  EXPECT_EQ(resource->capacity(), 0);
}

TEST(DeviceRegistry, OnlyExactHealthyStringIsHealthy) {
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"a", "Healthy"},
                                  {"b", "healthy"},
                                  {"c", "HEALTHY"},
                                  {"d", "Healthy "},
                                  {"e", ""},
                                  {"f", "Unhealthy"},
                                  {"g", "Unknown"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_THAT(resource->Healthy(), ElementsAre("a"));
  EXPECT_EQ(resource->capacity(), 7);
  EXPECT_EQ(resource->allocatable(), 1);
}

TEST(DeviceRegistry, DuplicateIdsCollapse) {
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"dev1", "Healthy"}, {"dev1", "Healthy"}, {"dev2", "Healthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_THAT(Ids(*resource), ElementsAre("dev1", "dev2"));
  EXPECT_EQ(resource->capacity(), 2);
  EXPECT_EQ(resource->allocatable(), 2);
}

TEST(DeviceRegistry, DuplicateIdIsUnhealthyWhenTheLastEntryIs) {
  // kdp's rule: a duplicate is unhealthy when any entry is; the kubelet would put the ID in both
  // health sets.
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"dev1", "Healthy"}, {"dev1", "Unhealthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->capacity(), 1);
  EXPECT_EQ(resource->allocatable(), 0);
}

TEST(DeviceRegistry, DuplicateIdIsUnhealthyWhenAnyEntryIs) {
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"dev1", "Unhealthy"}, {"dev1", "Healthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->capacity(), 1);
  EXPECT_EQ(resource->allocatable(), 0);
}

TEST(DeviceRegistry, KeepsNumaNodesOfTopology) {
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"dev1", "Healthy", {0, 1}}, {"dev2", "Healthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_THAT(resource->devices.at("dev1").numa_nodes, ElementsAre(0, 1));
  EXPECT_THAT(resource->devices.at("dev2").numa_nodes, IsEmpty());
}

TEST(DeviceRegistry, UpdateBeforeConnectedCreatesDisconnectedResource) {
  DeviceRegistry registry;
  registry.Update(kRes, Snapshot({{"dev1", "Healthy"}}));
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->name, kRes);
  EXPECT_FALSE(resource->connected);
}

TEST(DeviceRegistry, DisconnectedMakesEveryDeviceUnhealthy) {
  DeviceRegistry registry;
  registry.Connected(kRes, "p.sock");
  registry.Update(kRes,
                  Snapshot({{"dev1", "Healthy"}, {"dev2", "Healthy"}, {"dev3", "Unhealthy"}}));
  registry.Disconnected(kRes);
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_FALSE(resource->connected);
  EXPECT_THAT(Ids(*resource), ElementsAre("dev1", "dev2", "dev3"));
  EXPECT_THAT(resource->Healthy(), IsEmpty());
  EXPECT_EQ(resource->capacity(), 3);
  EXPECT_EQ(resource->allocatable(), 0);
  EXPECT_TRUE(registry.Has(kRes));
}

TEST(DeviceRegistry, ReconnectKeepsDevicesUntilNextSnapshot) {
  DeviceRegistry registry;
  registry.Connected(kRes, "old.sock");
  registry.Update(kRes, Snapshot({{"dev1", "Healthy"}, {"dev2", "Healthy"}}));
  registry.Disconnected(kRes);
  registry.Connected(kRes, "new.sock");
  std::optional<ResourceDevices> resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_TRUE(resource->connected);
  EXPECT_EQ(resource->endpoint, "new.sock");
  EXPECT_EQ(resource->capacity(), 2);
  EXPECT_EQ(resource->allocatable(), 0);

  registry.Update(kRes, Snapshot({{"dev1", "Healthy"}, {"dev2", "Healthy"}}));
  resource = registry.Get(kRes);
  ASSERT_TRUE(resource.has_value());
  EXPECT_EQ(resource->allocatable(), 2);
}

TEST(DeviceRegistry, ResourcesAreIndependentAndListedByName) {
  DeviceRegistry registry;
  registry.Connected("domain2.com/b", "b.sock");
  registry.Connected("domain1.com/a", "a.sock");
  registry.Update("domain1.com/a", Snapshot({{"a1", "Healthy"}}));
  registry.Update("domain2.com/b", Snapshot({{"b1", "Healthy"}, {"b2", "Healthy"}}));
  registry.Disconnected("domain2.com/b");
  std::vector<ResourceDevices> all = registry.List();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "domain1.com/a");
  EXPECT_TRUE(all[0].connected);
  EXPECT_EQ(all[0].allocatable(), 1);
  EXPECT_EQ(all[1].name, "domain2.com/b");
  EXPECT_FALSE(all[1].connected);
  EXPECT_EQ(all[1].capacity(), 2);
  EXPECT_EQ(all[1].allocatable(), 0);
}

}  // namespace
}  // namespace kdp::manager
