// The claim allocator on the device model of Kubernetes 1.35: partitionable devices (shared
// counters), consumable capacity (allowMultipleAllocations, shareID), device taints and
// tolerations, pools over several slices, and node selection by nodeSelector, allNodes and
// perDeviceNodeSelection. Cases named after upstream's allocator test table
// (k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting, TestAllocator) are
// ported from it with the same slices, requests and expected results.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/claim_allocator.h"
#include "tests/unit/manager/scheduling/allocator_test_util.h"

namespace kdp::manager::scheduling {
namespace {

using namespace testutil;  // NOLINT(build/namespaces): the builders are this test's vocabulary
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kPool[] = "pool-1";
constexpr char kSet[] = "gpu-0-counters";

resourceapi::Device Partition(std::string name, std::map<std::string, std::string> counters,
                              std::string set = kSet) {
  resourceapi::Device d;
  d.name = std::move(name);
  resourceapi::DeviceCounterConsumption c;
  c.counter_set = std::move(set);
  for (auto& [k, v] : counters) c.counters[k] = {v};
  d.consumes_counters.push_back(std::move(c));
  return d;
}

resourceapi::ResourceSlice CounterSlice(std::string name, std::string pool,
                                        std::map<std::string, std::string> counters,
                                        int64_t slice_count = 2, std::string set = kSet) {
  resourceapi::ResourceSlice s = Slice(std::move(name), kGpu, std::move(pool), {}, 1, slice_count);
  resourceapi::CounterSet cs;
  cs.name = std::move(set);
  for (auto& [k, v] : counters) cs.counters[k] = {v};
  s.spec.shared_counters.push_back(std::move(cs));
  return s;
}

AllocatorInputs PartitionInputs(std::vector<resourceapi::Device> devices,
                                std::map<std::string, std::string> counters) {
  return Inputs({Slice("slice-1", kGpu, kPool, std::move(devices), 1, 2),
                 CounterSlice("slice-2", kPool, std::move(counters))});
}

// ---- Partitionable devices (KEP-4815) ----

TEST(PartitionableDevices, SingleDevice) {  // partitionable-devices-single-device
  AllocatorInputs in =
      PartitionInputs({Partition("device-1", {{"memory", "4Gi"}})}, {{"memory", "8Gi"}});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:device-1"));
  ASSERT_TRUE(r->node_selector.has_value());
}

TEST(PartitionableDevices, MultipleDevicesSkipWhatTheCountersCannotHold) {
  // partitionable-devices-multiple-devices: 4Gi + 6Gi > 8Gi, so the second request skips
  // device-2 for device-3.
  AllocatorInputs in = PartitionInputs(
      {Partition("device-1", {{"memory", "4Gi"}}), Partition("device-2", {{"memory", "6Gi"}}),
       Partition("device-3", {{"memory", "4Gi"}})},
      {{"memory", "8Gi"}});
  auto r =
      AllocateClaim(Claim({Request("req-0", Exactly(kGpu)), Request("req-1", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:device-1", "req-1:device-3"));
}

TEST(PartitionableDevices, MultipleCountersAllMustFit) {  // partitionable-devices-multiple-counters
  auto two = [](std::string name, std::string m1, std::string c1, std::string c2, std::string m2) {
    resourceapi::Device d = Partition(std::move(name), {{"memory", m1}, {"cpus", c1}});
    resourceapi::DeviceCounterConsumption second;
    second.counter_set = "set-2";
    second.counters = {{"cpus", {c2}}, {"memory", {m2}}};
    d.consumes_counters.push_back(std::move(second));
    return d;
  };
  resourceapi::ResourceSlice counters =
      CounterSlice("slice-2", kPool, {{"cpus", "8"}, {"memory", "18Gi"}});
  resourceapi::CounterSet set2;
  set2.name = "set-2";
  set2.counters = {{"cpus", {"12"}}, {"memory", {"18Gi"}}};
  counters.spec.shared_counters.push_back(set2);
  AllocatorInputs in = Inputs(
      {Slice("slice-1", kGpu, kPool,
             {two("device-1", "4Gi", "6", "4", "2Gi"), two("device-2", "6Gi", "4", "6", "6Gi"),
              two("device-3", "4Gi", "4", "4", "4Gi")},
             1, 2),
       counters});
  // Upstream expects device-2 and device-3: device-1 takes 6 of set 1's 8 cpus, and then
  // neither other device fits; the search backtracks.
  auto r =
      AllocateClaim(Claim({Request("req-0", Exactly(kGpu)), Request("req-1", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:device-2", "req-1:device-3"));
}

TEST(PartitionableDevices, MultiplePoolsKeepTheirOwnCounters) {
  // partitionable-devices-multiple-pools: pool-1's counters are spent by allocated devices.
  std::vector<resourceapi::Device> devices = {
      Partition("device-1", {{"cpus", "6"}, {"memory", "4Gi"}}),
      Partition("device-2", {{"cpus", "4"}, {"memory", "6Gi"}}),
      Partition("device-3", {{"cpus", "4"}, {"memory", "4Gi"}})};
  std::vector<resourceapi::Device> devices2 = {
      Partition("device-1", {{"cpus", "6"}, {"memory", "4Gi"}}),
      Partition("device-2", {{"cpus", "1"}, {"memory", "7Gi"}}),
      Partition("device-3", {{"cpus", "1"}, {"memory", "7Gi"}})};
  AllocatorInputs in =
      Inputs({Slice("slice-1", kGpu, "pool-1", devices, 1, 2),
              CounterSlice("slice-2", "pool-1", {{"cpus", "8"}, {"memory", "18Gi"}}),
              Slice("slice-3", kGpu, "pool-2", devices2, 1, 2),
              CounterSlice("slice-4", "pool-2", {{"cpus", "8"}, {"memory", "18Gi"}})});
  in.allocated = {
      {kGpu, "pool-1", "device-2"}, {kGpu, "pool-1", "device-3"}, {kGpu, "pool-2", "device-1"}};
  auto r =
      AllocateClaim(Claim({Request("req-0", Exactly(kGpu)), Request("req-1", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:device-2", "req-1:device-3"));
  EXPECT_EQ(r->results[0].pool, "pool-2");
  EXPECT_EQ(r->results[1].pool, "pool-2");
}

TEST(PartitionableDevices, UnusedCountersInTheSetAreIgnored) {
  // partitionable-devices-unused-counters-in-counter-set: 5Gi + 4Gi > 8Gi; 4Gi + 4Gi fits.
  AllocatorInputs in = PartitionInputs(
      {Partition("device-1", {{"memory", "5Gi"}}), Partition("device-2", {{"memory", "4Gi"}}),
       Partition("device-3", {{"memory", "4Gi"}})},
      {{"memory", "8Gi"}, {"unused", "1Gi"}});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:device-2", "req-0:device-3"));
}

TEST(PartitionableDevices, NoCapacityAvailable) {  // partitionable-devices-no-capacity-available
  AllocatorInputs in = PartitionInputs(
      {Partition("device-1", {{"memory", "4Gi"}}), Partition("device-2", {{"memory", "16Gi"}})},
      {{"memory", "18Gi"}});
  in.allocated = {{kGpu, kPool, "device-2"}};
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("1 without enough capacity or shared counters left"));
}

TEST(PartitionableDevices, WholeDeviceAndItsPartitionsNeverTogether) {
  // The MIG-like layout the example driver publishes: the whole GPU consumes every counter, a
  // partition a part of them.
  auto profiled = [](resourceapi::Device d, std::string profile) {
    d.attributes["profile"] = Str(std::move(profile));
    return d;
  };
  std::vector<resourceapi::Device> devices = {
      profiled(Partition("gpu-0", {{"memory", "40Gi"}, {"slices", "7"}}), "whole"),
      profiled(Partition("gpu-0-3g-20gb-0", {{"memory", "20Gi"}, {"slices", "3"}}), "3g.20gb"),
      profiled(Partition("gpu-0-3g-20gb-1", {{"memory", "20Gi"}, {"slices", "3"}}), "3g.20gb")};
  auto inputs = [&](std::set<DeviceId> allocated) {
    AllocatorInputs in = PartitionInputs(devices, {{"memory", "40Gi"}, {"slices", "7"}});
    in.allocated = std::move(allocated);
    in.classes["whole"] =
        Class("whole", {"device.attributes[\"gpu.example.com\"].profile == \"whole\""});
    in.classes["part"] =
        Class("part", {"device.attributes[\"gpu.example.com\"].profile != \"whole\""});
    return in;
  };
  // Two partitions fit together ...
  auto parts = AllocateClaim(Claim({Request("req-0", Exactly("part", 2))}), inputs({}));
  ASSERT_TRUE(parts.ok()) << parts.status();
  // ... and then the whole GPU does not, nor does the whole GPU beside one partition.
  auto whole = AllocateClaim(Claim({Request("req-0", Exactly("whole"))}),
                             inputs({{kGpu, kPool, "gpu-0-3g-20gb-0"}}));
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kResourceExhausted) << whole.status();
  auto part =
      AllocateClaim(Claim({Request("req-0", Exactly("part"))}), inputs({{kGpu, kPool, "gpu-0"}}));
  EXPECT_EQ(part.status().code(), absl::StatusCode::kResourceExhausted) << part.status();
}

TEST(PartitionableDevices, PoolWithUndefinedCounterSetIsInvalid) {
  AllocatorInputs in =
      PartitionInputs({Partition("device-1", {{"memory", "4Gi"}}, "other")}, {{"memory", "8Gi"}});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("counter set other, which the pool does not define"));
}

TEST(PartitionableDevices, CountersInAnIncompletePoolAreNotUsed) {
  // The counter slice has not arrived yet: resourceSliceCount 2, one slice present.
  AllocatorInputs in =
      Inputs({Slice("slice-1", kGpu, kPool, {Partition("device-1", {{"memory", "4Gi"}})}, 1, 2)});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

// ---- Consumable capacity (KEP-5075) ----

resourceapi::Device Shareable(std::string name, std::string memory = "40Gi",
                              std::optional<resourceapi::CapacityRequestPolicy> policy = {}) {
  resourceapi::Device d = Dev(std::move(name), {}, std::move(memory));
  d.allow_multiple_allocations = true;
  d.capacity["memory"].request_policy = std::move(policy);
  return d;
}

resourceapi::ExactDeviceRequest WithMemory(std::string amount, int64_t count = 1) {
  resourceapi::ExactDeviceRequest r = Exactly(kGpu, count);
  r.capacity_requests["memory"] = std::move(amount);
  return r;
}

AllocatorInputs SharedInputs(std::vector<resourceapi::Device> devices) {
  AllocatorInputs in = Inputs({Slice("slice-1", kGpu, kPool, std::move(devices))});
  auto n = std::make_shared<int>(0);
  in.new_share_id = [n] { return "share-" + std::to_string((*n)++); };
  return in;
}

TEST(ConsumableCapacity, TwoRequestsShareOneDeviceEachWithItsShareId) {
  AllocatorInputs in = SharedInputs({Shareable("gpu-0")});
  auto r = AllocateClaim(
      Claim({Request("req-0", WithMemory("10Gi")), Request("req-1", WithMemory("20Gi"))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-0", "req-1:gpu-0"));
  EXPECT_EQ(r->results[0].share_id, "share-0");
  EXPECT_EQ(r->results[1].share_id, "share-1");
  EXPECT_THAT(r->results[0].consumed_capacity, ElementsAre(Pair("memory", "10Gi")));
  EXPECT_THAT(r->results[1].consumed_capacity, ElementsAre(Pair("memory", "20Gi")));
  // A shared device is not "allocated" to a claim exclusively.
  EXPECT_THAT(AllocatedDevices(*r), IsEmpty());
}

TEST(ConsumableCapacity, OtherClaimsSharesCountAgainstTheCapacity) {
  AllocatorInputs in = SharedInputs({Shareable("gpu-0"), Shareable("gpu-1")});
  AllocationResult other;
  other.results.push_back({.request = "r",
                           .driver = kGpu,
                           .pool = kPool,
                           .device = "gpu-0",
                           .share_id = "x",
                           .consumed_capacity = {{"memory", "30Gi"}}});
  AddAllocation(other, &in);
  EXPECT_EQ(in.shared.at({kGpu, kPool, "gpu-0"}).at("memory"), *Quantity::Parse("30Gi"));
  auto r = AllocateClaim(Claim({Request("req-0", WithMemory("20Gi"))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-1"));  // gpu-0 has 10Gi left
  auto small = AllocateClaim(Claim({Request("req-0", WithMemory("10Gi"))}), in);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(Picked(*small), ElementsAre("req-0:gpu-0"));
}

TEST(ConsumableCapacity, WithoutRequestTheDefaultOrTheWholeCapacityIsConsumed) {
  resourceapi::CapacityRequestPolicy policy;
  policy.default_value = "8Gi";
  AllocatorInputs in = SharedInputs({Shareable("gpu-0", "40Gi", policy), Shareable("gpu-1")});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->results[0].consumed_capacity, ElementsAre(Pair("memory", "8Gi")));
  EXPECT_THAT(r->results[1].consumed_capacity, ElementsAre(Pair("memory", "40Gi")));
}

TEST(ConsumableCapacity, RangeRoundsUpToTheStepAndRefusesAboveMax) {
  resourceapi::CapacityRequestPolicy policy;
  policy.default_value = "1Gi";
  policy.valid_range = resourceapi::CapacityRequestPolicyRange{"1Gi", "16Gi", "2Gi"};
  AllocatorInputs in = SharedInputs({Shareable("gpu-0", "40Gi", policy)});
  auto r = AllocateClaim(Claim({Request("req-0", WithMemory("4Gi"))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->results[0].consumed_capacity, ElementsAre(Pair("memory", "5Gi")));  // 1 + 2*2
  auto too_big = AllocateClaim(Claim({Request("req-0", WithMemory("20Gi"))}), in);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ConsumableCapacity, ValidValuesRoundUpToTheNextOne) {
  resourceapi::CapacityRequestPolicy policy;
  policy.default_value = "10Gi";
  policy.valid_values = {"10Gi", "20Gi", "40Gi"};
  AllocatorInputs in = SharedInputs({Shareable("gpu-0", "40Gi", policy)});
  auto r = AllocateClaim(Claim({Request("req-0", WithMemory("11Gi"))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->results[0].consumed_capacity, ElementsAre(Pair("memory", "20Gi")));
}

TEST(ConsumableCapacity, TheSumNeverExceedsTheCapacity) {
  AllocatorInputs in = SharedInputs({Shareable("gpu-0")});
  auto r = AllocateClaim(
      Claim({Request("req-0", WithMemory("30Gi")), Request("req-1", WithMemory("20Gi"))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

TEST(ConsumableCapacity, RequestForACapacityTheDeviceLacksDoesNotMatch) {
  AllocatorInputs in = SharedInputs({Shareable("gpu-0")});
  resourceapi::ExactDeviceRequest req = Exactly(kGpu);
  req.capacity_requests["bandwidth"] = "1G";
  auto r = AllocateClaim(Claim({Request("req-0", req)}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

TEST(ConsumableCapacity, DistinctAttributeKeepsRequestsOnDifferentDevices) {
  resourceapi::Device a = Shareable("gpu-0");
  a.attributes["index"] = Int(0);
  resourceapi::Device b = Shareable("gpu-1");
  b.attributes["index"] = Int(1);
  AllocatorInputs in = SharedInputs({a, b});
  ResourceClaim claim =
      Claim({Request("req-0", WithMemory("10Gi")), Request("req-1", WithMemory("10Gi"))});
  resourceapi::DeviceConstraint distinct;
  distinct.distinct_attribute = std::string(kGpu) + "/index";
  claim.spec.devices.constraints.push_back(distinct);
  auto r = AllocateClaim(claim, in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-0", "req-1:gpu-1"));
}

TEST(ConsumableCapacity, ExclusiveDeviceMustHoldTheRequestedCapacity) {
  AllocatorInputs in = SharedInputs({Dev("gpu-0", {}, "16Gi"), Dev("gpu-1", {}, "80Gi")});
  auto r = AllocateClaim(Claim({Request("req-0", WithMemory("40Gi"))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-1"));
  EXPECT_FALSE(r->results[0].share_id.has_value());
  EXPECT_THAT(r->results[0].consumed_capacity, IsEmpty());
}

// ---- Device taints (KEP-5055) ----

resourceapi::Device Tainted(std::string name, std::string key, std::string value,
                            std::string effect) {
  resourceapi::Device d = Dev(std::move(name));
  d.taints.push_back(
      {.key = std::move(key), .value = std::move(value), .effect = std::move(effect)});
  return d;
}

resourceapi::DeviceToleration Toleration(std::string key, std::string op, std::string value = "",
                                         std::string effect = "") {
  return {.key = std::move(key),
          .operator_ = std::move(op),
          .value = std::move(value),
          .effect = std::move(effect)};
}

TEST(DeviceTaints, TaintedTwoDevices) {  // tainted-two-devices
  AllocatorInputs in = Inputs({Slice("slice-1", kGpu, kPool,
                                     {Tainted("gpu-0", "example.com/taint", "x", "NoSchedule"),
                                      Tainted("gpu-1", "example.com/taint", "x", "NoExecute")})});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("2 tainted without a matching toleration"));
}

TEST(DeviceTaints, TaintedDeviceIsSkippedForAnUntaintedOne) {
  AllocatorInputs in = Inputs({Slice(
      "slice-1", kGpu, kPool, {Tainted("gpu-0", "maintenance", "", "NoSchedule"), Dev("gpu-1")})});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-1"));
}

TEST(DeviceTaints, ToleratedDeviceTaintsAreAllocatedAndTheTolerationRecorded) {
  AllocatorInputs in = Inputs(
      {Slice("slice-1", kGpu, kPool, {Tainted("gpu-0", "example.com/taint", "x", "NoSchedule")})});
  for (const resourceapi::DeviceToleration& t :
       {Toleration("example.com/taint", "Equal", "x"), Toleration("example.com/taint", "Exists"),
        Toleration("", "Exists"), Toleration("example.com/taint", "Exists", "", "NoSchedule")}) {
    resourceapi::ExactDeviceRequest req = Exactly(kGpu);
    req.tolerations = {t};
    auto r = AllocateClaim(Claim({Request("req-0", req)}), in);
    ASSERT_TRUE(r.ok()) << r.status() << " with toleration " << t.key << " " << t.operator_;
    EXPECT_THAT(r->results[0].tolerations, ElementsAre(t));
  }
  for (const resourceapi::DeviceToleration& t :
       {Toleration("example.com/taint", "Equal", "y"), Toleration("other", "Exists"),
        Toleration("example.com/taint", "Exists", "", "NoExecute")}) {
    resourceapi::ExactDeviceRequest req = Exactly(kGpu);
    req.tolerations = {t};
    auto r = AllocateClaim(Claim({Request("req-0", req)}), in);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
        << "toleration " << t.key << " " << t.operator_ << " " << t.value << " " << t.effect;
  }
}

TEST(DeviceTaints, EffectNoneDoesNotKeepDevicesAway) {
  AllocatorInputs in =
      Inputs({Slice("slice-1", kGpu, kPool, {Tainted("gpu-0", "info", "", "None")})});
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
}

TEST(DeviceTaints, AllModeLeavesUntoleratedDevicesOut) {
  AllocatorInputs in = Inputs({Slice(
      "slice-1", kGpu, kPool, {Tainted("gpu-0", "maintenance", "", "NoSchedule"), Dev("gpu-1")})});
  auto r = AllocateClaim(Claim({AllOf("req-0", kGpu)}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-1"));
}

// ---- Node selection and pools over several slices ----

resourceapi::ResourceSlice SelectorSlice(std::string name, nlohmann::json selector,
                                         std::vector<resourceapi::Device> devices) {
  resourceapi::ResourceSlice s =
      Slice(std::move(name), kGpu, "fabric", std::move(devices), 1, 1, "");
  s.spec.node_selector = std::move(selector);
  return s;
}

nlohmann::json LabelSelector(std::string key, std::string op, std::vector<std::string> values) {
  nlohmann::json r = {{"key", key}, {"operator", op}};
  if (!values.empty()) r["values"] = values;
  return {{"nodeSelectorTerms", {{{"matchExpressions", {r}}}}}};
}

TEST(NodeSelection, NodeSelectorSlicesCountWhenTheNodeLabelsMatch) {
  AllocatorInputs in =
      Inputs({SelectorSlice("s", LabelSelector("rack", "In", {"r1", "r2"}), {Dev("nic-0")})});
  in.node_labels = {{"rack", "r2"}};
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->node_selector.has_value());
  EXPECT_EQ((*r->node_selector)["nodeSelectorTerms"][0]["matchExpressions"][0]["key"], "rack");
  in.node_labels = {{"rack", "r3"}};
  EXPECT_EQ(AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(NodeSelection, SelectorOperators) {
  struct Case {
    nlohmann::json selector;
    bool matches;
  };
  std::vector<Case> cases = {
      {LabelSelector("rack", "NotIn", {"r9"}), true},
      {LabelSelector("missing", "NotIn", {"r9"}), true},
      {LabelSelector("rack", "Exists", {}), true},
      {LabelSelector("rack", "DoesNotExist", {}), false},
      {LabelSelector("gpus", "Gt", {"3"}), true},
      {LabelSelector("gpus", "Lt", {"3"}), false},
      {LabelSelector("gpus", "Gt", {"x"}), false},
      {{{"nodeSelectorTerms",
         {{{"matchFields",
            {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {kNode}}}}}}}}},
       true},
      {{{"nodeSelectorTerms", {nlohmann::json::object()}}}, false},  // an empty term: nothing
  };
  for (const Case& c : cases) {
    AllocatorInputs in = Inputs({SelectorSlice("s", c.selector, {Dev("nic-0")})});
    in.node_labels = {{"rack", "r1"}, {"gpus", "8"}};
    EXPECT_EQ(AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in).ok(), c.matches)
        << c.selector.dump();
  }
}

TEST(NodeSelection, AllNodesSlicesLeaveTheResultWithoutNodeSelector) {
  resourceapi::ResourceSlice s = Slice("s", kGpu, "fabric", {Dev("nic-0")}, 1, 1, "");
  s.spec.all_nodes = true;
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), Inputs({s}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->node_selector.has_value());
}

TEST(NodeSelection, PerDeviceNodeSelectionPicksTheDevicesOfThisNode) {
  resourceapi::ResourceSlice s = Slice("s", kGpu, "fabric", {}, 1, 1, "");
  s.spec.per_device_node_selection = true;
  resourceapi::Device other = Dev("dev-other");
  other.node_name = "node-b";
  resourceapi::Device mine = Dev("dev-mine");
  mine.node_name = kNode;
  resourceapi::Device everywhere = Dev("dev-all");
  everywhere.all_nodes = true;
  s.spec.devices = {other, mine, everywhere};
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu, 2))}), Inputs({s}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:dev-mine", "req-0:dev-all"));
  EXPECT_EQ((*r->node_selector)["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], kNode);
}

TEST(MultiSlicePools, APoolIsUsedOnlyWhenCompleteAndCurrent) {
  // Generation 2 replaces generation 1; until both of its slices are there, nothing is used.
  AllocatorInputs in = Inputs(
      {Slice("old", kGpu, kPool, Gpus(2), 1, 1), Slice("new-a", kGpu, kPool, Gpus(1, 10), 2, 2)});
  EXPECT_EQ(AllocateClaim(Claim({Request("req-0", Exactly(kGpu))}), in).status().code(),
            absl::StatusCode::kResourceExhausted);
  in.slices.push_back(Slice("new-b", kGpu, kPool, Gpus(1, 11), 2, 2));
  auto r = AllocateClaim(Claim({Request("req-0", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("req-0:gpu-10", "req-0:gpu-11"));
}

}  // namespace
}  // namespace kdp::manager::scheduling
