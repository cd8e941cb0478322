#include "manager/src/controlplane/resourceclaim/device_taint_eviction.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/example_names.h"

namespace kdp::manager::resourceclaim {
namespace {

using resourceapi::DeviceTaint;
using resourceapi::DeviceToleration;

using ::kdp::testing::kGpuDriver;

resourceapi::ResourceSlice Slice(std::vector<DeviceTaint> taints, int64_t generation = 1) {
  resourceapi::ResourceSlice s;
  s.metadata.name = "slice-" + std::to_string(generation);
  s.spec.driver = kGpuDriver;
  s.spec.pool = {.name = "node-a", .generation = generation, .resource_slice_count = 1};
  s.spec.node_name = "node-a";
  resourceapi::Device d;
  d.name = "gpu-0";
  d.taints = std::move(taints);
  s.spec.devices = {d, resourceapi::Device{.name = "gpu-1"}};
  return s;
}

resourceapi::ResourceClaim Claim(std::string device,
                                 std::vector<DeviceToleration> tolerations = {}) {
  resourceapi::ResourceClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "claim-" + device;
  resourceapi::AllocationResult a;
  a.results.push_back({.request = "gpu",
                       .driver = kGpuDriver,
                       .pool = "node-a",
                       .device = std::move(device),
                       .tolerations = std::move(tolerations)});
  c.status.allocation = a;
  c.status.reserved_for.push_back({.name = "pod-1", .uid = "uid-1"});
  return c;
}

DeviceTaint NoExecute(std::optional<std::string> added = std::nullopt) {
  return {.key = "example.com/broken", .value = "true", .effect = "NoExecute", .time_added = added};
}

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(DeviceTaintEviction, UntoleratedNoExecuteEvictsThePodsOfTheClaim) {
  TaintFirstSeen seen;
  EvictionPlan plan = PlanEvictions({Claim("gpu-0")}, {Slice({NoExecute()})}, kNow, &seen);
  ASSERT_EQ(plan.due.size(), 1u);
  EXPECT_EQ(plan.due[0].pod_name, "pod-1");
  EXPECT_EQ(plan.due[0].pod_uid, "uid-1");
  EXPECT_EQ(plan.due[0].device, "gpu.example.com/node-a/gpu-0");
  EXPECT_EQ(plan.due[0].claim, "default/claim-gpu-0");
}

TEST(DeviceTaintEviction, NoScheduleOtherDevicesAndUnreservedClaimsAreLeftAlone) {
  TaintFirstSeen seen;
  DeviceTaint no_schedule = NoExecute();
  no_schedule.effect = "NoSchedule";
  EXPECT_THAT(PlanEvictions({Claim("gpu-0")}, {Slice({no_schedule})}, kNow, &seen).due,
              ::testing::IsEmpty());
  EXPECT_THAT(PlanEvictions({Claim("gpu-1")}, {Slice({NoExecute()})}, kNow, &seen).due,
              ::testing::IsEmpty());
  resourceapi::ResourceClaim unreserved = Claim("gpu-0");
  unreserved.status.reserved_for.clear();
  EXPECT_THAT(PlanEvictions({unreserved}, {Slice({NoExecute()})}, kNow, &seen).due,
              ::testing::IsEmpty());
  // A taint only on an older generation of the pool no longer counts.
  EXPECT_THAT(
      PlanEvictions({Claim("gpu-0")}, {Slice({NoExecute()}, 1), Slice({}, 2)}, kNow, &seen).due,
      ::testing::IsEmpty());
}

TEST(DeviceTaintEviction, TolerationKeepsThePodForeverOrForTolerationSeconds) {
  TaintFirstSeen seen;
  DeviceToleration forever{.key = "example.com/broken", .operator_ = "Exists"};
  EXPECT_THAT(PlanEvictions({Claim("gpu-0", {forever})}, {Slice({NoExecute()})}, kNow, &seen).due,
              ::testing::IsEmpty());

  DeviceToleration minute{.key = "example.com/broken",
                          .operator_ = "Equal",
                          .value = "true",
                          .effect = "NoExecute",
                          .toleration_seconds = 60};
  const std::string added =
      absl::FormatTime(absl::RFC3339_full, kNow - absl::Seconds(30), absl::UTCTimeZone());
  EvictionPlan plan =
      PlanEvictions({Claim("gpu-0", {minute})}, {Slice({NoExecute(added)})}, kNow, &seen);
  EXPECT_THAT(plan.due, ::testing::IsEmpty());
  ASSERT_TRUE(plan.next.has_value());
  EXPECT_EQ(*plan.next, kNow + absl::Seconds(30));
  plan = PlanEvictions({Claim("gpu-0", {minute})}, {Slice({NoExecute(added)})},
                       kNow + absl::Seconds(31), &seen);
  EXPECT_EQ(plan.due.size(), 1u);
}

TEST(DeviceTaintEviction, WithoutTimeAddedTheFirstSightingCounts) {
  TaintFirstSeen seen;
  DeviceToleration minute{.key = "", .operator_ = "Exists", .toleration_seconds = 60};
  EvictionPlan plan =
      PlanEvictions({Claim("gpu-0", {minute})}, {Slice({NoExecute()})}, kNow, &seen);
  EXPECT_EQ(plan.next, kNow + absl::Seconds(60));
  plan = PlanEvictions({Claim("gpu-0", {minute})}, {Slice({NoExecute()})}, kNow + absl::Seconds(61),
                       &seen);
  EXPECT_EQ(plan.due.size(), 1u);
  // Once the taint goes, it is forgotten: coming back starts the clock again.
  PlanEvictions({Claim("gpu-0", {minute})}, {Slice({})}, kNow + absl::Seconds(62), &seen);
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace kdp::manager::resourceclaim
