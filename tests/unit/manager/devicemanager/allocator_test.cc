#include "manager/src/devicemanager/allocator.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/device_registry.h"
#include "tests/unit/manager/devicemanager/resource_devices_test_util.h"

namespace kdp::manager {
namespace {

using devicemanager_testutil::Dev;
using devicemanager_testutil::kResource;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

ResourceDevices MakeDevices(const std::vector<Dev>& devs) {
  ResourceDevices out;
  out.name = kResource;
  out.connected = true;
  for (const Dev& d : devs)
    out.devices[d.id] = DeviceInfo{.healthy = d.healthy, .numa_nodes = d.numa};
  return out;
}

AllocationRequest MakeRequest(int64_t required, const std::vector<Dev>& devs) {
  AllocationRequest request;
  request.pod_uid = "pod-uid";
  request.container = "ctr";
  request.resource = kResource;
  request.required = required;
  request.devices = MakeDevices(devs);
  return request;
}

// Records every GetPreferredAllocation call and answers with a fixed list.
struct PreferredRecorder {
  struct Call {
    std::vector<std::string> available;
    std::vector<std::string> must_include;
    int size = 0;
  };
  std::vector<Call> calls = {};
  std::vector<std::string> answer;

  PreferredAllocationFn Fn() {
    return [this](const std::vector<std::string>& available,
                  const std::vector<std::string>& must_include,
                  int size) -> absl::StatusOr<std::vector<std::string>> {
      calls.push_back({available, must_include, size});
      return answer;
    };
  }
};

std::set<std::string> AsSet(const std::vector<std::string>& ids) {
  return std::set<std::string>(ids.begin(), ids.end());
}

// What DevicesToAllocate picks for `request` when the plugin cannot be asked.
absl::StatusOr<std::vector<std::string>> Pick(const AllocationRequest& request) {
  return DevicesToAllocate(request, nullptr);
}

// A GetPreferredAllocation that always fails with `error`.
PreferredAllocationFn FailWith(absl::Status error) {
  return [error](const std::vector<std::string>&, const std::vector<std::string>&,
                 int) -> absl::StatusOr<std::vector<std::string>> { return error; };
}

// Matches an OK absl::StatusOr whose value matches `inner`.
MATCHER_P(IsOkAndHolds, inner, "is OK and its value matches") {
  if (!arg.ok()) {
    *result_listener << "whose status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(inner, *arg, result_listener);
}

constexpr char kUnregistered[] = "cannot allocate unregistered device domain1.com/resource1";
constexpr char kNoHealthy[] =
    "no healthy devices present; cannot allocate unhealthy devices domain1.com/resource1";
constexpr char kPreviousUnhealthy[] =
    "previously allocated devices are no longer healthy; cannot allocate unhealthy devices "
    "domain1.com/resource1";

// --- Errors, in the order of the kubelet's devicesToAllocate ---

TEST(DevicesToAllocate, ChangedRequestFailsWithKubeletText) {
  AllocationRequest request = MakeRequest(3, {{"dev1"}, {"dev2"}, {"dev3"}});
  request.existing = std::set<std::string>{"dev1", "dev2"};
  EXPECT_EQ(Pick(request).status(),
            absl::FailedPreconditionError(
                "pod \"pod-uid\" container \"ctr\" changed request for resource "
                "\"domain1.com/resource1\" from 2 to 3"));
}

TEST(DevicesToAllocate, ChangedRequestIsCheckedBeforeRegistration) {
  AllocationRequest request = MakeRequest(1, {});
  request.devices = std::nullopt;
  request.existing = std::set<std::string>{"dev1", "dev2"};
  EXPECT_EQ(Pick(request).status(),
            absl::FailedPreconditionError(
                "pod \"pod-uid\" container \"ctr\" changed request for resource "
                "\"domain1.com/resource1\" from 2 to 1"));
}

TEST(DevicesToAllocate, UnregisteredResourceFails) {
  AllocationRequest request = MakeRequest(1, {});
  request.devices = std::nullopt;
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kUnregistered));
}

TEST(DevicesToAllocate, NoHealthyDevicesFails) {
  AllocationRequest request = MakeRequest(1, {{"dev1", false}, {"dev2", false}});
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kNoHealthy));
}

TEST(DevicesToAllocate, RegisteredButEmptyResourceHasNoHealthyDevices) {
  EXPECT_EQ(Pick(MakeRequest(1, {})).status(), absl::FailedPreconditionError(kNoHealthy));
}

TEST(DevicesToAllocate, PreviouslyAllocatedUnhealthyFails) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2", false}, {"dev3"}});
  request.existing = std::set<std::string>{"dev1", "dev2"};
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kPreviousUnhealthy));
}

TEST(DevicesToAllocate, PreviouslyAllocatedDeviceThatVanishedFails) {
  AllocationRequest request = MakeRequest(1, {{"dev2"}});
  request.existing = std::set<std::string>{"dev1"};
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kPreviousUnhealthy));
}

// kubernetes #109595: a restarted container with all its devices still needs the resource to be
// registered and healthy; needed == 0 is only checked after c–e.
TEST(DevicesToAllocate, NothingNeededStillRequiresRegisteredResource) {
  AllocationRequest request = MakeRequest(1, {});
  request.devices = std::nullopt;
  request.existing = std::set<std::string>{"dev1"};
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kUnregistered));
}

TEST(DevicesToAllocate, NothingNeededStillRequiresHealthyDevices) {
  AllocationRequest request = MakeRequest(1, {{"dev1", false}});
  request.existing = std::set<std::string>{"dev1"};
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kNoHealthy));
}

TEST(DevicesToAllocate, NothingNeededStillRequiresHealthyPreviousDevices) {
  AllocationRequest request = MakeRequest(1, {{"dev1", false}, {"dev2"}});
  request.existing = std::set<std::string>{"dev1"};
  EXPECT_EQ(Pick(request).status(), absl::FailedPreconditionError(kPreviousUnhealthy));
}

TEST(DevicesToAllocate, RestartWithHealthyDevicesIsNothingToDo) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2"}, {"dev3"}});
  request.existing = std::set<std::string>{"dev1", "dev2"};
  request.in_use = {"dev1", "dev2"};
  PreferredRecorder recorder;
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()), IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(recorder.calls, IsEmpty());
}

TEST(DevicesToAllocate, ZeroRequiredWithHealthyDevicesIsNothingToDo) {
  EXPECT_THAT(Pick(MakeRequest(0, {{"dev1"}})), IsOkAndHolds(IsEmpty()));
}

// --- Picking (g–l) ---

TEST(DevicesToAllocate, TakesReusableDevicesFirst) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2"}, {"dev3"}, {"dev4"}});
  request.reusable = {"dev4", "dev3"};
  request.in_use = {"dev3", "dev4"};
  PreferredRecorder recorder{.answer = {"dev1", "dev2"}};
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()), IsOkAndHolds(ElementsAre("dev3", "dev4")));
  EXPECT_THAT(recorder.calls, IsEmpty());  // Satisfied before the plugin is asked.
}

TEST(DevicesToAllocate, ReusableThenFreeDevices) {
  AllocationRequest request = MakeRequest(3, {{"dev1"}, {"dev2"}, {"dev3"}, {"dev4"}});
  request.reusable = {"dev4"};
  request.in_use = {"dev1", "dev4"};
  EXPECT_THAT(Pick(request), IsOkAndHolds(ElementsAre("dev4", "dev2", "dev3")));
}

TEST(DevicesToAllocate, UnavailableReportsRemainingNeed) {
  AllocationRequest request = MakeRequest(3, {{"dev1"}, {"dev2"}, {"dev3"}});
  request.reusable = {"dev1"};
  request.in_use = {"dev1", "dev2"};
  // Requested is what is still needed after the reusable device, as in the kubelet.
  EXPECT_EQ(Pick(request).status(),
            absl::ResourceExhaustedError("requested number of devices unavailable for "
                                         "domain1.com/resource1. Requested: 2, Available: 1"));
}

TEST(DevicesToAllocate, UnavailableWhenAllInUse) {
  // TestPodContainerDeviceAllocation's second pod.
  AllocationRequest request = MakeRequest(1, {{"dev1"}, {"dev2"}});
  request.in_use = {"dev1", "dev2"};
  EXPECT_EQ(Pick(request).status(),
            absl::ResourceExhaustedError("requested number of devices unavailable for "
                                         "domain1.com/resource1. Requested: 1, Available: 0"));
}

TEST(DevicesToAllocate, UnhealthyDevicesAreNotAvailable) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2", false}, {"dev3", false}});
  EXPECT_EQ(Pick(request).status(),
            absl::ResourceExhaustedError("requested number of devices unavailable for "
                                         "domain1.com/resource1. Requested: 2, Available: 1"));
}

TEST(DevicesToAllocate, FillsInNaturalOrderWithoutPlugin) {
  AllocationRequest request =
      MakeRequest(3, {{"gpu10"}, {"gpu2"}, {"gpu1"}, {"gpu11"}, {"gpu3", false}});
  request.in_use = {"gpu1"};
  EXPECT_THAT(Pick(request), IsOkAndHolds(ElementsAre("gpu2", "gpu10", "gpu11")));
}

TEST(DevicesToAllocate, FillOrderIsDeterministic) {
  AllocationRequest request = MakeRequest(2, {{"b9"}, {"a10"}, {"a9"}, {"b10"}});
  absl::StatusOr<std::vector<std::string>> first = Pick(request);
  absl::StatusOr<std::vector<std::string>> second = Pick(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(*first, ElementsAre("a9", "a10"));
  EXPECT_EQ(*first, *second);
}

TEST(DevicesToAllocate, HonoursPreferredAnswer) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2"}, {"dev3"}, {"dev4"}});
  PreferredRecorder recorder{.answer = {"dev4", "dev2"}};
  absl::StatusOr<std::vector<std::string>> result = DevicesToAllocate(request, recorder.Fn());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(AsSet(*result), ::testing::UnorderedElementsAre("dev2", "dev4"));
  ASSERT_EQ(recorder.calls.size(), 1u);
}

TEST(DevicesToAllocate, IgnoresBogusAndInUsePreferredIds) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2"}, {"dev3"}, {"dev4"}});
  request.in_use = {"dev1"};
  // "bogus" was never offered, dev1 is held by another container: both are ignored.
  PreferredRecorder recorder{.answer = {"bogus", "dev1", "dev3"}};
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()), IsOkAndHolds(ElementsAre("dev3", "dev2")));
}

TEST(DevicesToAllocate, TooLargePreferredAnswerIsTruncated) {
  AllocationRequest request = MakeRequest(1, {{"dev1"}, {"dev2"}, {"dev3"}});
  PreferredRecorder recorder{.answer = {"dev3", "dev2", "dev1"}};
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()), IsOkAndHolds(ElementsAre("dev3")));
}

TEST(DevicesToAllocate, PreferredAnswerWithDuplicatesCountsOnce) {
  AllocationRequest request = MakeRequest(2, {{"dev1"}, {"dev2"}, {"dev3"}});
  PreferredRecorder recorder{.answer = {"dev3", "dev3"}};
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()), IsOkAndHolds(ElementsAre("dev3", "dev1")));
}

TEST(DevicesToAllocate, PreferredErrorIsReturned) {
  AllocationRequest request = MakeRequest(1, {{"dev1"}, {"dev2"}});
  EXPECT_EQ(
      DevicesToAllocate(request, FailWith(absl::UnavailableError("plugin went away"))).status(),
      absl::UnavailableError("plugin went away"));
}

TEST(DevicesToAllocate, PreferredErrorIsReturnedOnAlignedPath) {
  AllocationRequest request = MakeRequest(1, {{"dev1", true, {0}}, {"dev2", true, {0}}});
  request.numa_affinity = std::set<int64_t>{0};
  absl::StatusOr<std::vector<std::string>> result =
      DevicesToAllocate(request, FailWith(absl::DeadlineExceededError("slow plugin")));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
}

// --- Topology (TestTopologyAlignedAllocation, topology_hints_test.go) ---

TEST(DevicesToAllocate, PrefersAlignedDevices) {
  AllocationRequest request = MakeRequest(2, {{"dev1", true, {0}},
                                              {"dev2", true, {0}},
                                              {"dev3", true, {1}},
                                              {"dev4", true, {1}},
                                              {"dev5", true, {1}}});
  request.numa_affinity = std::set<int64_t>{1};
  EXPECT_THAT(Pick(request), IsOkAndHolds(ElementsAre("dev3", "dev4")));
}

TEST(DevicesToAllocate, TakesAllAlignedThenUnalignedThenNoTopology) {
  AllocationRequest request = MakeRequest(4, {{"dev0"},
                                              {"dev1", true, {0}},
                                              {"dev2", true, {0}},
                                              {"dev3", true, {1}},
                                              {"dev4", true, {1}}});
  request.numa_affinity = std::set<int64_t>{0};
  request.in_use = {"dev4"};
  EXPECT_THAT(Pick(request), IsOkAndHolds(ElementsAre("dev1", "dev2", "dev3", "dev0")));
}

// Two devices on node 0 and one on node 1, with affinity for node 0.
AllocationRequest AlignedRequest(int64_t required) {
  AllocationRequest request =
      MakeRequest(required, {{"dev1", true, {0}}, {"dev2", true, {0}}, {"dev3", true, {1}}});
  request.numa_affinity = std::set<int64_t>{0};
  return request;
}

TEST(DevicesToAllocate, AlignedPreferredAnswerAccepted) {
  PreferredRecorder recorder{.answer = {"dev2"}};
  EXPECT_THAT(DevicesToAllocate(AlignedRequest(1), recorder.Fn()),
              IsOkAndHolds(ElementsAre("dev2")));
}

TEST(DevicesToAllocate, UnalignedPreferredIdsIgnoredWhenAlignedSuffice) {
  PreferredRecorder recorder{.answer = {"dev3"}};
  EXPECT_THAT(DevicesToAllocate(AlignedRequest(1), recorder.Fn()),
              IsOkAndHolds(ElementsAre("dev1")));
  ASSERT_EQ(recorder.calls.size(), 1u);
  EXPECT_THAT(recorder.calls[0].available, ElementsAre("dev1", "dev2"));  // Only aligned offered.
}

TEST(DevicesToAllocate, ExactlyAlignedCountSkipsAlignedPluginCall) {
  // needed == |aligned| is not "strictly less": all aligned devices are taken and the plugin is
  // not consulted since nothing remains.
  PreferredRecorder recorder{.answer = {"dev3"}};
  EXPECT_THAT(DevicesToAllocate(AlignedRequest(2), recorder.Fn()),
              IsOkAndHolds(ElementsAre("dev1", "dev2")));
  EXPECT_THAT(recorder.calls, IsEmpty());
}

TEST(DevicesToAllocate, MultiSocketAffinityPreferredAccepted) {
  AllocationRequest request = MakeRequest(4, {{"dev0", true, {0}},
                                              {"dev1", true, {1}},
                                              {"dev2", true, {1}},
                                              {"dev3", true, {2}},
                                              {"dev4", true, {3}},
                                              {"dev5", true, {3}},
                                              {"dev6", true, {3}}});
  request.numa_affinity = std::set<int64_t>{1, 3};
  PreferredRecorder recorder{.answer = {"dev2", "dev1", "dev6", "dev5"}};
  EXPECT_THAT(DevicesToAllocate(request, recorder.Fn()),
              IsOkAndHolds(ElementsAre("dev2", "dev1", "dev6", "dev5")));
}

// --- GetPreferredAllocation parameters (TestGetPreferredAllocationParameters) ---

struct ParamCase {
  std::string description;
  int64_t required;
  std::vector<Dev> devices;
  std::set<std::string> in_use;
  std::set<std::string> reusable;
  std::optional<std::set<int64_t>> numa_affinity;
  std::vector<std::string> expected_available;
  std::vector<std::string> expected_must_include;
};

std::vector<Dev> OneSocket() {
  std::vector<Dev> out;
  for (int i = 0; i < 8; ++i) out.push_back({"Dev" + std::to_string(i), true, {0}});
  return out;
}
std::vector<Dev> TwoSockets() {
  std::vector<Dev> out;
  for (int i = 0; i < 8; ++i) out.push_back({"Dev" + std::to_string(i), true, {i < 4 ? 0 : 1}});
  return out;
}

TEST(DevicesToAllocate, PassesKubeletPreferredAllocationParameters) {
  const std::set<int64_t> socket0 = {0};
  const std::vector<Dev> four = {
      {"Dev0", true, {0}}, {"Dev1", true, {0}}, {"Dev2", true, {0}}, {"Dev3", true, {0}}};
  const std::vector<ParamCase> cases = {
      // Single socket: the affinity and the no-affinity path ask the same question.
      {"req 1, nothing allocated, no affinity",
       1,
       four,
       {},
       {},
       std::nullopt,
       {"Dev0", "Dev1", "Dev2", "Dev3"},
       {}},
      {"req 1, nothing allocated, socket 0",
       1,
       four,
       {},
       {},
       socket0,
       {"Dev0", "Dev1", "Dev2", "Dev3"},
       {}},
      {"req 4, 2 allocated, 2 reusable, no affinity",
       4,
       OneSocket(),
       {"Dev0", "Dev5"},
       {"Dev0", "Dev5"},
       std::nullopt,
       {"Dev0", "Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6", "Dev7"},
       {"Dev0", "Dev5"}},
      {"req 4, 2 allocated, 2 reusable, socket 0",
       4,
       OneSocket(),
       {"Dev0", "Dev5"},
       {"Dev0", "Dev5"},
       socket0,
       {"Dev0", "Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6", "Dev7"},
       {"Dev0", "Dev5"}},
      {"req 4, 4 allocated, 2 reusable, no affinity",
       4,
       OneSocket(),
       {"Dev0", "Dev5", "Dev4", "Dev1"},
       {"Dev0", "Dev5"},
       std::nullopt,
       {"Dev0", "Dev2", "Dev3", "Dev5", "Dev6", "Dev7"},
       {"Dev0", "Dev5"}},
      {"req 4, 4 allocated, 2 reusable, socket 0",
       4,
       OneSocket(),
       {"Dev0", "Dev5", "Dev4", "Dev1"},
       {"Dev0", "Dev5"},
       socket0,
       {"Dev0", "Dev2", "Dev3", "Dev5", "Dev6", "Dev7"},
       {"Dev0", "Dev5"}},
      // Two sockets, affinity {0}: the aligned devices are taken first and become must-include.
      {"req 6, 2 allocated, 2 reusable, socket 0",
       6,
       TwoSockets(),
       {"Dev1", "Dev6"},
       {"Dev1", "Dev6"},
       socket0,
       {"Dev0", "Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6", "Dev7"},
       {"Dev0", "Dev1", "Dev2", "Dev3", "Dev6"}},
      {"req 6, 4 allocated, 2 reusable, socket 0",
       6,
       TwoSockets(),
       {"Dev0", "Dev1", "Dev6", "Dev7"},
       {"Dev1", "Dev6"},
       socket0,
       {"Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6"},
       {"Dev1", "Dev2", "Dev3", "Dev6"}},
      // Two sockets, no affinity: only the reusable devices are must-include.
      {"req 6, 2 allocated, 2 reusable, no affinity",
       6,
       TwoSockets(),
       {"Dev1", "Dev6"},
       {"Dev1", "Dev6"},
       std::nullopt,
       {"Dev0", "Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6", "Dev7"},
       {"Dev1", "Dev6"}},
      {"req 6, 4 allocated, 2 reusable, no affinity",
       6,
       TwoSockets(),
       {"Dev0", "Dev1", "Dev6", "Dev7"},
       {"Dev1", "Dev6"},
       std::nullopt,
       {"Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6"},
       {"Dev1", "Dev6"}},
  };
  for (const ParamCase& c : cases) {
    SCOPED_TRACE(c.description);
    AllocationRequest request = MakeRequest(c.required, c.devices);
    request.in_use = c.in_use;
    request.reusable = c.reusable;
    request.numa_affinity = c.numa_affinity;
    PreferredRecorder recorder;
    absl::StatusOr<std::vector<std::string>> result = DevicesToAllocate(request, recorder.Fn());
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(recorder.calls.size(), 1u);
    EXPECT_THAT(recorder.calls[0].available, ElementsAreArray(c.expected_available));
    EXPECT_THAT(recorder.calls[0].must_include, UnorderedElementsAreArray(c.expected_must_include));
    EXPECT_EQ(recorder.calls[0].size, c.required);  // The total, not what remains.
    EXPECT_EQ(static_cast<int64_t>(result->size()), c.required);
    EXPECT_EQ(AsSet(*result).size(), result->size());  // No device twice.
    for (const std::string& id : *result) {
      EXPECT_TRUE(c.reusable.contains(id) || !c.in_use.contains(id)) << id;
    }
  }
}

// --- FilterByAffinity (TestFilterByAffinity, manager_test.go) ---

ResourceDevices FilterDevices() {
  return MakeDevices(
      {{"dev1", true, {1}}, {"dev2", true, {1, 2}}, {"dev3", true, {2}}, {"dev4", true, {2}}});
}

// A split as {aligned, unaligned, no_affinity}, each in DeviceSet order.
using Groups = std::vector<std::vector<std::string>>;

Groups Split(const ResourceDevices& devices, const DeviceSet& available,
             const std::optional<std::set<int64_t>>& numa_affinity) {
  AffinitySplit split = FilterByAffinity(devices, available, numa_affinity);
  return {{split.aligned.begin(), split.aligned.end()},
          {split.unaligned.begin(), split.unaligned.end()},
          {split.no_affinity.begin(), split.no_affinity.end()}};
}

TEST(FilterByAffinity, SplitsTwoDevicesByHint) {
  EXPECT_EQ(Split(FilterDevices(), {"dev1", "dev2"}, std::set<int64_t>{2}),
            (Groups{{"dev2"}, {"dev1"}, {}}));
}

TEST(FilterByAffinity, SplitsFourDevicesByHint) {
  EXPECT_EQ(Split(FilterDevices(), {"dev1", "dev2", "dev3", "dev4"}, std::set<int64_t>{2}),
            (Groups{{"dev2", "dev3", "dev4"}, {"dev1"}, {}}));
}

TEST(FilterByAffinity, DeviceOnHintedAndOtherNodeIsAligned) {
  EXPECT_EQ(Split(FilterDevices(), {"dev2", "dev3"}, std::set<int64_t>{1}),
            (Groups{{"dev2"}, {"dev3"}, {}}));
}

TEST(FilterByAffinity, NoAffinityReturnsEverythingAsNoAffinity) {
  EXPECT_EQ(Split(FilterDevices(), {"dev1", "dev3"}, std::nullopt),
            (Groups{{}, {}, {"dev1", "dev3"}}));
}

TEST(FilterByAffinity, ResourceWithoutTopologyReturnsEverythingAsNoAffinity) {
  EXPECT_EQ(Split(MakeDevices({{"dev1"}, {"dev2"}}), {"dev1", "dev2"}, std::set<int64_t>{0}),
            (Groups{{}, {}, {"dev1", "dev2"}}));
}

TEST(FilterByAffinity, TopologyOfUnavailableDeviceStillEnablesAlignment) {
  // deviceHasTopologyAlignment looks at every device of the resource, not only available ones.
  ResourceDevices devices = MakeDevices({{"dev1", false, {0}}, {"dev2"}, {"dev3"}});
  EXPECT_EQ(Split(devices, {"dev2", "dev3"}, std::set<int64_t>{0}),
            (Groups{{}, {}, {"dev2", "dev3"}}));
}

TEST(FilterByAffinity, DevicesWithoutTopologyGoToNoAffinity) {
  ResourceDevices devices = MakeDevices({{"dev1", true, {0}}, {"dev2", true, {1}}, {"dev3"}});
  EXPECT_EQ(Split(devices, {"dev1", "dev2", "dev3", "unknown"}, std::set<int64_t>{0}),
            (Groups{{"dev1"}, {"dev2"}, {"dev3", "unknown"}}));
}

TEST(FilterByAffinity, OnlyAvailableDevicesAreReturned) {
  EXPECT_EQ(Split(FilterDevices(), {"dev3"}, std::set<int64_t>{1}), (Groups{{}, {"dev3"}, {}}));
}

// --- NaturalLess ---

TEST(NaturalLess, OrdersEmbeddedNumbersByValue) {
  EXPECT_TRUE(NaturalLess("gpu2", "gpu10"));
  EXPECT_FALSE(NaturalLess("gpu10", "gpu2"));
  EXPECT_TRUE(NaturalLess("gpu9", "gpu10"));
  EXPECT_TRUE(NaturalLess("a2b", "a10a"));
  EXPECT_TRUE(NaturalLess("a10a", "a10b"));
}

TEST(NaturalLess, IsIrreflexive) {
  for (const char* s : {"", "a", "gpu10", "01", "x0y"}) EXPECT_FALSE(NaturalLess(s, s)) << s;
}

TEST(NaturalLess, PrefixComesFirst) {
  EXPECT_TRUE(NaturalLess("", "a"));
  EXPECT_FALSE(NaturalLess("a", ""));
  EXPECT_TRUE(NaturalLess("gpu", "gpu0"));
  EXPECT_TRUE(NaturalLess("gpu1", "gpu1a"));
}

TEST(NaturalLess, LeadingZerosTieBreakByLength) {
  EXPECT_TRUE(NaturalLess("1", "01"));
  EXPECT_FALSE(NaturalLess("01", "1"));
  EXPECT_TRUE(NaturalLess("gpu01", "gpu2"));
  EXPECT_TRUE(NaturalLess("0", "00"));
}

TEST(NaturalLess, HandlesNumbersBeyondInt64) {
  EXPECT_TRUE(NaturalLess("x99999999999999999999999", "x100000000000000000000000"));
  EXPECT_FALSE(NaturalLess("x100000000000000000000000", "x99999999999999999999999"));
}

TEST(NaturalLess, SortsAListLikeAPerson) {
  std::vector<std::string> ids = {"gpu10", "gpu1", "nic0", "gpu2", "gpu", "gpu01", "gpu0"};
  std::sort(ids.begin(), ids.end(), NaturalLess);
  EXPECT_THAT(ids, ElementsAre("gpu", "gpu0", "gpu1", "gpu01", "gpu2", "gpu10", "nic0"));
}

TEST(NaturalLess, DeviceSetKeepsDistinctSpellings) {
  DeviceSet set = {"dev10", "dev1", "dev01", "dev2"};
  EXPECT_THAT(set, ElementsAre("dev1", "dev01", "dev2", "dev10"));
}

}  // namespace
}  // namespace kdp::manager
