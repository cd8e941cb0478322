#include "manager/src/devicemanager/pod_devices.h"

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

constexpr char kRes1[] = "domain1.com/resource1";
constexpr char kRes2[] = "domain2.com/resource2";

v1beta1::ContainerAllocateResponse ResponseWithEnv(const std::string& name,
                                                   const std::string& value) {
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())[name] = value;
  return response;
}

TEST(PodDevices, ReservedDevicesCountAsAllocated) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1", "dev2"}}});
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1", "dev2"));
  EXPECT_THAT(pod_devices.Allocated(kRes2), IsEmpty());
  EXPECT_TRUE(pod_devices.HasPod("pod1"));
  std::optional<std::set<std::string>> held = pod_devices.ContainerDevices("pod1", "ctr", kRes1);
  ASSERT_TRUE(held.has_value());
  EXPECT_THAT(*held, ElementsAre("dev1", "dev2"));
}

TEST(PodDevices, ReservedEntriesAreNotListedUntilCommitted) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  EXPECT_THAT(pod_devices.ContainerEntries("pod1", "ctr"), IsEmpty());
  EXPECT_THAT(pod_devices.Entries(), IsEmpty());

  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "1")));
  std::vector<PodDevicesEntry> entries = pod_devices.ContainerEntries("pod1", "ctr");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].pod_uid, "pod1");
  EXPECT_EQ(entries[0].container_name, "ctr");
  EXPECT_EQ(entries[0].resource_name, kRes1);
  EXPECT_THAT(entries[0].devices, ElementsAre(Pair(0, ElementsAre("dev1"))));
  EXPECT_EQ(entries[0].response.envs().at("A"), "1");
  EXPECT_EQ(pod_devices.Entries().size(), 1u);
}

TEST(PodDevices, RollbackFreesReservedDevices) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  pod_devices.Rollback("pod1", "ctr", kRes1);
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
  EXPECT_FALSE(pod_devices.ContainerDevices("pod1", "ctr", kRes1).has_value());
  EXPECT_FALSE(pod_devices.HasPod("pod1"));
  EXPECT_THAT(pod_devices.Resources(), IsEmpty());
}

TEST(PodDevices, RollbackKeepsCommittedEntries) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "1")));
  pod_devices.Rollback("pod1", "ctr", kRes1);
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  EXPECT_EQ(pod_devices.ContainerEntries("pod1", "ctr").size(), 1u);
}

TEST(PodDevices, RollbackOnlyTouchesItsOwnReservation) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  pod_devices.Reserve("pod2", "ctr", kRes1, {{0, {"dev2"}}});
  pod_devices.Reserve("pod1", "ctr", kRes2, {{0, {"nic1"}}});
  pod_devices.Rollback("pod2", "ctr", kRes1);
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  EXPECT_THAT(pod_devices.Allocated(kRes2), ElementsAre("nic1"));
}

TEST(PodDevices, CommitWithoutReservationIsNoop) {
  PodDevices pod_devices;
  EXPECT_FALSE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "1")));
  EXPECT_THAT(pod_devices.Entries(), IsEmpty());
  EXPECT_FALSE(pod_devices.HasPod("pod1"));
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
}

TEST(PodDevices, ReserveReplacesEarlierEntry) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  pod_devices.Reserve("pod1", "ctr", kRes1, {{1, {"dev3"}}});
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev3"));
}

TEST(PodDevices, DeletePodRemovesOnlyThatPod) {
  PodDevices pod_devices;
  for (const char* pod : {"pod1", "pod10", "pod0"}) {
    pod_devices.Reserve(pod, "a", kRes1, {{0, {std::string(pod) + "-dev"}}});
    EXPECT_TRUE(pod_devices.Commit(pod, "a", kRes1, {}));
    pod_devices.Reserve(pod, "b", kRes2, {{0, {std::string(pod) + "-nic"}}});
  }
  pod_devices.DeletePod("pod1");
  EXPECT_FALSE(pod_devices.HasPod("pod1"));
  EXPECT_TRUE(pod_devices.HasPod("pod10"));
  EXPECT_TRUE(pod_devices.HasPod("pod0"));
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("pod0-dev", "pod10-dev"));
  EXPECT_THAT(pod_devices.Allocated(kRes2), ElementsAre("pod0-nic", "pod10-nic"));
  pod_devices.DeletePod("unknown");  // Not an error.
  EXPECT_EQ(pod_devices.Entries().size(), 2u);
}

TEST(PodDevices, ContainerEntriesAreOrderedByResourceAndScopedToContainer) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes2, {{0, {"nic1"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes2, {}));
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, {}));
  pod_devices.Reserve("pod1", "ctr2", kRes1, {{0, {"dev2"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr2", kRes1, {}));
  pod_devices.Reserve("pod1", "ct", kRes1, {{0, {"dev3"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ct", kRes1, {}));

  std::vector<PodDevicesEntry> entries = pod_devices.ContainerEntries("pod1", "ctr");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].resource_name, kRes1);
  EXPECT_EQ(entries[1].resource_name, kRes2);
  EXPECT_THAT(pod_devices.ContainerEntries("pod1", "nope"), IsEmpty());
  EXPECT_THAT(pod_devices.ContainerEntries("pod2", "ctr"), IsEmpty());
}

TEST(PodDevices, EntriesAreOrderedByPodContainerResource) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod2", "a", kRes1, {{0, {"d1"}}});
  pod_devices.Reserve("pod1", "b", kRes2, {{0, {"d2"}}});
  pod_devices.Reserve("pod1", "b", kRes1, {{0, {"d3"}}});
  pod_devices.Reserve("pod1", "a", kRes2, {{0, {"d4"}}});
  for (const auto& [pod, ctr, res] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"pod2", "a", kRes1},
                                                                      {"pod1", "b", kRes2},
                                                                      {"pod1", "b", kRes1},
                                                                      {"pod1", "a", kRes2}}) {
    EXPECT_TRUE(pod_devices.Commit(pod, ctr, res, {}));
  }
  std::vector<std::string> order;
  for (const PodDevicesEntry& e : pod_devices.Entries()) {
    order.push_back(e.pod_uid + "/" + e.container_name + "/" + e.resource_name);
  }
  EXPECT_THAT(order, ElementsAre(std::string("pod1/a/") + kRes2, std::string("pod1/b/") + kRes1,
                                 std::string("pod1/b/") + kRes2, std::string("pod2/a/") + kRes1));
}

TEST(PodDevices, ResourcesListsResourcesWithAllocations) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes2, {{0, {"nic1"}}});
  pod_devices.Reserve("pod2", "ctr", kRes1, {{0, {"dev1"}}});
  EXPECT_THAT(pod_devices.Resources(), ElementsAre(kRes1, kRes2));
}

// TestGetContainerDevices (upstream): a device recorded under NUMA 0 and 1 is reported under
// both, and counts once.
TEST(PodDevices, TestGetContainerDevices) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}, {1, {"dev1"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, {}));
  std::vector<PodDevicesEntry> entries = pod_devices.ContainerEntries("pod1", "ctr");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_THAT(entries[0].devices,
              ElementsAre(Pair(0, ElementsAre("dev1")), Pair(1, ElementsAre("dev1"))));
  EXPECT_THAT(DeviceIds(entries[0].devices), ElementsAre("dev1"));
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  EXPECT_THAT(*pod_devices.ContainerDevices("pod1", "ctr", kRes1), ElementsAre("dev1"));
}

TEST(PodDevices, DevicesWithoutTopologyLiveUnderMinusOne) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{-1, {"dev1", "dev2"}}, {0, {"dev3"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, {}));
  std::vector<PodDevicesEntry> entries = pod_devices.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_THAT(entries[0].devices,
              ElementsAre(Pair(-1, ElementsAre("dev1", "dev2")), Pair(0, ElementsAre("dev3"))));
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1", "dev2", "dev3"));
}

TEST(PodDevices, DeviceIdsCollectsEveryIdOnceInOrder) {
  EXPECT_THAT(DeviceIds({}), IsEmpty());
  EXPECT_THAT(DeviceIds({{-1, {"b"}}, {0, {"c", "a"}}, {1, {"a"}}}), ElementsAre("a", "b", "c"));
}

// TestResourceDeviceInstanceFilter (upstream) is not ported: kdp has no
// ResourceDeviceInstances.Filter; the podresources server builds its answers from the registry
// and these entries directly.

// Reservation lifecycle (kubernetes PR #137534, not upstream yet): reserve, commit, delete.
TEST(PodDevices, ReservationLifecycleReserveCommitDelete) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  EXPECT_THAT(pod_devices.Entries(), IsEmpty());
  EXPECT_THAT(pod_devices.PodUids(), ElementsAre("pod1"));

  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "1")));
  EXPECT_THAT(pod_devices.Entries(), SizeIs(1));
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  // A second commit updates.
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "2")));
  EXPECT_EQ(pod_devices.Entries()[0].response.envs().at("A"), "2");

  pod_devices.DeletePod("pod1");
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
  EXPECT_THAT(pod_devices.Entries(), IsEmpty());
  EXPECT_THAT(pod_devices.PodUids(), IsEmpty());
}

// A pod deleted while one of its reservations is in flight loses the reservation too; the
// commit that follows finds nothing and records nothing.
TEST(PodDevices, DeletePodDropsReservationsAndALaterCommitIsNoop) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  pod_devices.DeletePod("pod1");
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
  EXPECT_FALSE(pod_devices.Commit("pod1", "ctr", kRes1, ResponseWithEnv("A", "1")));
  EXPECT_THAT(pod_devices.Entries(), IsEmpty());
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
  EXPECT_FALSE(pod_devices.HasPod("pod1"));
}

// Restored entries are committed: listed, allocated, and never rolled back.
TEST(PodDevices, RestoredEntriesAreCommitted) {
  PodDevices pod_devices;
  pod_devices.Restore({.pod_uid = "pod1",
                       .container_name = "ctr",
                       .resource_name = kRes1,
                       .devices = {{-1, {"dev1"}}},
                       .response = ResponseWithEnv("A", "1")});
  pod_devices.Rollback("pod1", "ctr", kRes1);
  ASSERT_THAT(pod_devices.Entries(), SizeIs(1));
  EXPECT_EQ(pod_devices.Entries()[0].response.envs().at("A"), "1");
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
}

// A device held by two entries of one resource (an init container's device reused by an app
// container of the same pod) stays allocated until its last holder goes.
TEST(PodDevices, SharedDeviceStaysAllocatedUntilItsLastHolderGoes) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "init", kRes1, {{0, {"dev1", "dev2"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "init", kRes1, {}));
  pod_devices.Reserve("pod1", "app", kRes1, {{0, {"dev1"}}});
  pod_devices.Rollback("pod1", "app", kRes1);
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1", "dev2"));
  pod_devices.Reserve("pod1", "app", kRes1, {{0, {"dev1"}}});
  EXPECT_TRUE(pod_devices.Commit("pod1", "app", kRes1, {}));
  pod_devices.DeletePod("pod1");
  EXPECT_THAT(pod_devices.Allocated(kRes1), IsEmpty());
}

// The allocated sets are per resource (the fork's resource-scoped getPodAndContainerForDevice;
// kdp has no device-to-pod lookup): one device ID in two resources is two devices.
TEST(PodDevices, SameDeviceIdInTwoResourcesIsTrackedPerResource) {
  PodDevices pod_devices;
  pod_devices.Reserve("pod1", "ctr", kRes1, {{0, {"dev1"}}});
  pod_devices.Reserve("pod2", "ctr", kRes2, {{0, {"dev1"}}});
  pod_devices.Rollback("pod2", "ctr", kRes2);
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
  EXPECT_THAT(pod_devices.Allocated(kRes2), IsEmpty());
  EXPECT_TRUE(pod_devices.Commit("pod1", "ctr", kRes1, {}));
  pod_devices.Reserve("pod2", "ctr", kRes2, {{0, {"dev1"}}});
  pod_devices.DeletePod("pod2");
  EXPECT_THAT(pod_devices.Allocated(kRes1), ElementsAre("dev1"));
}

}  // namespace
}  // namespace kdp::manager
