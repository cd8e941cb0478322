#include "manager/src/devicemanager/free_devices.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/allocator.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/errors.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "tests/unit/manager/devicemanager/resource_devices_test_util.h"

namespace kdp::manager {
namespace {

using devicemanager_testutil::Dev;
using devicemanager_testutil::kResource;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Tier = FreeDevices::Tier;

std::shared_ptr<const ResourceDevices> ResourceSnapshot(const std::vector<Dev>& devs) {
  auto out = std::make_shared<ResourceDevices>();
  out->name = kResource;
  out->connected = true;
  for (const Dev& d : devs)
    out->devices[d.id] = DeviceInfo{.healthy = d.healthy, .numa_nodes = d.numa};
  out->CountHealthy();
  return out;
}

std::vector<std::string> Tiered(const FreeDevices& free, Tier tier,
                                const std::optional<std::set<int64_t>>& affinity) {
  std::vector<std::string> out;
  free.ForEach(tier, affinity, [&](const std::string& id) {
    out.push_back(id);
    return true;
  });
  return out;
}

std::vector<std::string> AllFree(const FreeDevices& free) {
  std::vector<std::string> out;
  free.ForEachFree([&](const std::string& id) {
    out.push_back(id);
    return true;
  });
  return out;
}

TEST(FreeDevices, ListsHealthyDevicesInNaturalOrder) {
  FreeDevices free(ResourceSnapshot({{"gpu10"}, {"gpu2"}, {"gpu1", false}, {"gpu01"}, {"gpu3"}}));
  EXPECT_THAT(AllFree(free), ElementsAre("gpu01", "gpu2", "gpu3", "gpu10"));
  EXPECT_EQ(free.healthy(), 4);
  EXPECT_EQ(free.size(), 4);
  EXPECT_TRUE(free.IsHealthy("gpu10"));
  EXPECT_FALSE(free.IsHealthy("gpu1"));
  EXPECT_FALSE(free.IsHealthy("gpu4"));
  // Without an affinity every free device is in the last group.
  EXPECT_THAT(Tiered(free, Tier::kNoAffinity, std::nullopt),
              ElementsAre("gpu01", "gpu2", "gpu3", "gpu10"));
  EXPECT_THAT(Tiered(free, Tier::kAligned, std::nullopt), IsEmpty());
}

TEST(FreeDevices, HoldAndReleaseChangeWhatIsFree) {
  FreeDevices free(ResourceSnapshot({{"d1"}, {"d2"}, {"d3"}, {"bad", false}}));
  free.Hold("d1");
  free.Hold("d1");   // repeated: no change
  free.Hold("bad");  // not healthy: ignored
  free.Hold("unknown");
  EXPECT_THAT(AllFree(free), ElementsAre("d2", "d3"));
  EXPECT_FALSE(free.IsFree("d1"));
  EXPECT_TRUE(free.IsFree("d2"));
  free.Release("d1");
  free.Release("bad");
  EXPECT_THAT(AllFree(free), ElementsAre("d1", "d2", "d3"));
  EXPECT_EQ(free.size(), 3);
}

TEST(FreeDevices, StopsWhenTheCallbackSaysSo) {
  FreeDevices free(ResourceSnapshot({{"d1"}, {"d2"}, {"d3"}}));
  std::vector<std::string> seen;
  free.ForEachFree([&](const std::string& id) {
    seen.push_back(id);
    return seen.size() < 2;
  });
  EXPECT_THAT(seen, ElementsAre("d1", "d2"));
}

TEST(FreeDevices, SplitsByNumaAffinity) {
  FreeDevices free(ResourceSnapshot({{"a0", true, {0}},
                                     {"a1", true, {1}},
                                     {"both", true, {0, 1}},
                                     {"b0", true, {0}},
                                     {"c2", true, {2}},
                                     {"none"},
                                     {"sick", false, {1}}}));
  const std::set<int64_t> affinity = {1};
  EXPECT_THAT(Tiered(free, Tier::kAligned, affinity), ElementsAre("a1", "both"));
  // "both" has a node in the affinity: aligned, never unaligned.
  EXPECT_THAT(Tiered(free, Tier::kUnaligned, affinity), ElementsAre("a0", "b0", "c2"));
  EXPECT_THAT(Tiered(free, Tier::kNoAffinity, affinity), ElementsAre("none"));
  // A device on two nodes of the affinity comes once.
  EXPECT_THAT(Tiered(free, Tier::kAligned, std::set<int64_t>{0, 1}),
              ElementsAre("a0", "a1", "b0", "both"));
  free.Hold("both");
  free.Hold("a0");
  EXPECT_THAT(Tiered(free, Tier::kAligned, std::set<int64_t>{0, 1}), ElementsAre("a1", "b0"));
  free.Release("both");
  EXPECT_THAT(Tiered(free, Tier::kAligned, affinity), ElementsAre("a1", "both"));
  EXPECT_THAT(Tiered(free, Tier::kUnaligned, affinity), ElementsAre("b0", "c2"));
}

// --- PodDevices keeps the index current ---

DevicesPerNuma OnNode(int64_t node, std::vector<std::string> ids) {
  return {{node, std::move(ids)}};
}

std::vector<std::string> FreeOf(const PodDevices& pod_devices, const std::string& resource) {
  std::vector<std::string> out;
  pod_devices.WithFreeDevices(resource, [&](const FreeDevices* free) {
    if (free != nullptr) out = AllFree(*free);
  });
  return out;
}

TEST(FreeDevicesInPodDevices, ReservationsCommitsRollbacksAndDeletionsUpdateTheIndex) {
  PodDevices pod_devices;
  pod_devices.SetDevices(kResource, ResourceSnapshot({{"d1"}, {"d2"}, {"d3"}, {"d4"}}));
  pod_devices.Reserve("p1", "c", kResource, OnNode(-1, {"d1"}));
  pod_devices.Reserve("p2", "c", kResource, OnNode(-1, {"d2", "d3"}));
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d4"));
  ASSERT_TRUE(pod_devices.Commit("p1", "c", kResource, {}));
  pod_devices.Rollback("p2", "c", kResource);
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d2", "d3", "d4"));
  // Two entries holding one device (a restored checkpoint may): free only when both are gone.
  pod_devices.Restore({.pod_uid = "p3",
                       .container_name = "c",
                       .resource_name = kResource,
                       .devices = OnNode(-1, {"d1"}),
                       .response = {}});
  pod_devices.DeletePod("p1");
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d2", "d3", "d4"));
  pod_devices.DeletePod("p3");
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d1", "d2", "d3", "d4"));
}

TEST(FreeDevicesInPodDevices, ANewSnapshotKeepsHeldDevicesHeldAndDropsUnhealthyOnes) {
  PodDevices pod_devices;
  pod_devices.Restore({.pod_uid = "p1",
                       .container_name = "c",
                       .resource_name = kResource,
                       .devices = OnNode(-1, {"d2"}),
                       .response = {}});
  // Devices held before the resource's first snapshot are held in it.
  pod_devices.SetDevices(kResource, ResourceSnapshot({{"d1"}, {"d2"}, {"d3"}}));
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d1", "d3"));
  pod_devices.SetDevices(kResource, ResourceSnapshot({{"d1", false}, {"d2"}, {"d3"}, {"d4"}}));
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d3", "d4"));
  // A held device that turned unhealthy is not free when released.
  pod_devices.SetDevices(kResource, ResourceSnapshot({{"d1"}, {"d2", false}, {"d3"}}));
  pod_devices.DeletePod("p1");
  EXPECT_THAT(FreeOf(pod_devices, kResource), ElementsAre("d1", "d3"));
  // Forgotten: the allocator sees an unregistered resource.
  pod_devices.SetDevices(kResource, nullptr);
  bool registered = true;
  pod_devices.WithFreeDevices(kResource,
                              [&](const FreeDevices* free) { registered = free != nullptr; });
  EXPECT_FALSE(registered);
}

// --- The choice is the kubelet's, as before the index ---

// DevicesToAllocate as it was before the index (issue 19), the oracle: copies and filters
// the whole inventory per call.
absl::StatusOr<std::vector<std::string>> Reference(const AllocationRequest& request,
                                                   const PreferredAllocationFn& preferred) {
  int64_t needed = request.required;
  if (request.existing.has_value()) {
    needed -= static_cast<int64_t>(request.existing->size());
    if (needed != 0) {
      return absl::FailedPreconditionError(
          errors::ChangedRequest(request.pod_uid, request.container, request.resource,
                                 static_cast<int64_t>(request.existing->size()), request.required));
    }
  }
  if (!request.devices.has_value()) {
    return absl::FailedPreconditionError(errors::UnregisteredDevice(request.resource));
  }
  std::set<std::string> healthy = request.devices->Healthy();
  if (healthy.empty()) {
    return absl::FailedPreconditionError(errors::NoHealthyDevices(request.resource));
  }
  if (request.existing.has_value() &&
      !std::includes(healthy.begin(), healthy.end(), request.existing->begin(),
                     request.existing->end())) {
    return absl::FailedPreconditionError(errors::PreviouslyAllocatedUnhealthy(request.resource));
  }
  if (needed == 0) return std::vector<std::string>{};
  std::vector<std::string> picked;
  std::set<std::string> picked_set;
  auto take_from = [&](const auto& from) {
    for (const std::string& id : from) {
      if (needed == 0) break;
      if (!picked_set.insert(id).second) continue;
      picked.push_back(id);
      --needed;
    }
    return needed == 0;
  };
  if (take_from(DeviceSet(request.reusable.begin(), request.reusable.end()))) return picked;
  DeviceSet available;
  for (const std::string& id : healthy) {
    if (!request.in_use.contains(id)) available.insert(id);
  }
  if (static_cast<int64_t>(available.size()) < needed) {
    return absl::ResourceExhaustedError(errors::DevicesUnavailable(
        request.resource, needed, static_cast<int64_t>(available.size())));
  }
  AffinitySplit split = FilterByAffinity(*request.devices, available, request.numa_affinity);
  auto ask_plugin = [&](const DeviceSet& offered) -> absl::StatusOr<std::vector<std::string>> {
    if (!preferred) return std::vector<std::string>{};
    DeviceSet offer = offered;
    offer.insert(picked.begin(), picked.end());
    return preferred(std::vector<std::string>(offer.begin(), offer.end()), picked,
                     static_cast<int>(request.required));
  };
  auto offered_only = [](const std::vector<std::string>& ids, const DeviceSet& offered) {
    std::vector<std::string> out;
    for (const std::string& id : ids) {
      if (offered.contains(id)) out.push_back(id);
    }
    return out;
  };
  if (needed < static_cast<int64_t>(split.aligned.size())) {
    absl::StatusOr<std::vector<std::string>> answer = ask_plugin(split.aligned);
    if (!answer.ok()) return answer.status();
    if (take_from(offered_only(*answer, split.aligned))) return picked;
    if (take_from(split.aligned)) return picked;
    return absl::InternalError(errors::AllocatedLess(request.required, request.required - needed));
  }
  if (take_from(split.aligned)) return picked;
  absl::StatusOr<std::vector<std::string>> answer = ask_plugin(available);
  if (!answer.ok()) return answer.status();
  if (take_from(offered_only(*answer, available))) return picked;
  if (take_from(split.unaligned)) return picked;
  if (take_from(split.no_affinity)) return picked;
  return absl::InternalError(errors::AllocatedLess(request.required, request.required - needed));
}

struct PreferredCall {
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  int size = 0;
  bool operator==(const PreferredCall&) const = default;
};

// A plugin whose advice depends on what it is offered (every third device from the end, plus
// one ID never offered), recording each call.
PreferredAllocationFn Advisor(std::vector<PreferredCall>* calls) {
  return [calls](const std::vector<std::string>& available,
                 const std::vector<std::string>& must_include,
                 int size) -> absl::StatusOr<std::vector<std::string>> {
    calls->push_back({available, must_include, size});
    std::vector<std::string> answer = {"never-offered"};
    for (size_t i = available.size(); i >= 3; i -= 3) answer.push_back(available[i - 1]);
    return answer;
  };
}

// Random inventories, holdings, health, reuse pools and affinities: the kept index, updated by
// PodDevices as devices are reserved, released and re-snapshotted, picks exactly what the old
// implementation picks from a fresh copy, with and without GetPreferredAllocation, and offers the
// plugin the same devices.
TEST(FreeDevicesInPodDevices, PicksWhatTheFormerImplementationPicks) {
  std::mt19937 random(19);
  auto coin = [&](int percent) { return static_cast<int>(random() % 100) < percent; };
  for (int round = 0; round < 300; ++round) {
    const int count = 1 + static_cast<int>(random() % 40);
    const bool topology = coin(70);
    std::vector<Dev> devs;
    for (int i = 0; i < count; ++i) {
      Dev dev{.id = absl::StrCat(coin(50) ? "gpu" : "nic", random() % 60), .healthy = coin(85)};
      if (topology && coin(85)) {
        dev.numa.push_back(static_cast<int64_t>(random() % 4));
        if (coin(15)) dev.numa.push_back(static_cast<int64_t>(random() % 4));
      }
      devs.push_back(dev);
    }
    PodDevices pod_devices;
    auto snapshot = ResourceSnapshot(devs);
    pod_devices.SetDevices(kResource, snapshot);
    // Hold some devices, release some again, and re-snapshot sometimes (health changes).
    std::vector<std::string> ids;
    for (const auto& [id, info] : snapshot->devices) ids.push_back(id);
    ids.push_back("gone");  // held but no longer listed
    for (int p = 0; p < 8; ++p) {
      std::vector<std::string> held;
      for (const std::string& id : ids) {
        if (coin(12)) held.push_back(id);
      }
      pod_devices.Reserve(absl::StrCat("pod", p), "c", kResource, OnNode(-1, held));
    }
    if (coin(50)) pod_devices.DeletePod("pod3");
    if (coin(30)) pod_devices.Rollback("pod5", "c", kResource);
    if (coin(40)) {
      for (Dev& dev : devs) dev.healthy = coin(85);
      snapshot = ResourceSnapshot(devs);
      pod_devices.SetDevices(kResource, snapshot);
    }
    AllocationRequest request{.pod_uid = "pod-uid",
                              .container = "ctr",
                              .resource = kResource,
                              .required = 1 + static_cast<int64_t>(random() % 6),
                              .devices = *snapshot,
                              .existing = std::nullopt,
                              .in_use = pod_devices.Allocated(kResource),
                              .reusable = {},
                              .numa_affinity = std::nullopt};
    if (coin(20)) {
      for (const std::string& id : request.in_use) {
        if (coin(30)) request.reusable.insert(id);
      }
    }
    if (coin(60)) {
      request.numa_affinity.emplace();
      for (int64_t node = 0; node < 4; ++node) {
        if (coin(40)) request.numa_affinity->insert(node);
      }
    }
    const PickRequest pick = PickRequestOf(request);
    WithFreeDevices with_free = [&](const std::function<void(const FreeDevices*)>& fn) {
      pod_devices.WithFreeDevices(kResource, fn);
    };
    SCOPED_TRACE(absl::StrCat("round ", round));
    EXPECT_EQ(DevicesToAllocate(pick, with_free, nullptr), Reference(request, nullptr));
    std::vector<PreferredCall> calls, expected_calls;
    EXPECT_EQ(DevicesToAllocate(pick, with_free, Advisor(&calls)),
              Reference(request, Advisor(&expected_calls)));
    EXPECT_EQ(calls, expected_calls);
  }
}

}  // namespace
}  // namespace kdp::manager
