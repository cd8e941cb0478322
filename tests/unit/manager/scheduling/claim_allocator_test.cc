#include "manager/src/controlplane/scheduling/claim_allocator.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "tests/unit/manager/scheduling/allocator_test_util.h"

namespace kdp::manager::scheduling {
namespace {

using namespace testutil;  // NOLINT(build/namespaces): the builders are this test's vocabulary
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ClaimAllocator, ExactCountTakesFirstDevicesInOrder) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(4))});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-0", "gpus:gpu-1"));
  EXPECT_EQ(r->results[0].driver, kGpu);
  EXPECT_EQ(r->results[0].pool, kNode);
  EXPECT_FALSE(r->results[0].admin_access.has_value());
  EXPECT_TRUE(r->config.empty());
  ASSERT_TRUE(r->node_selector.has_value());
  EXPECT_EQ(r->node_selector->dump(),
            R"({"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In",)"
            R"("values":["node-a"]}]}]})");
}

TEST(ClaimAllocator, OrdersPoolsAndSlicesDeterministically) {
  // Slices arrive in reverse name order; the pool "b" sorts after pool "a".
  AllocatorInputs in =
      Inputs({Slice("s2", kGpu, "b", Gpus(2, 4)), Slice("s1-second", kGpu, "a", Gpus(2, 2), 1, 2),
              Slice("s1-first", kGpu, "a", Gpus(2, 0), 1, 2)});
  const ResourceClaim claim = Claim({Request("gpus", Exactly(kGpu, 5))});
  absl::StatusOr<AllocationResult> first = AllocateClaim(claim, in);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(Picked(*first),
              ElementsAre("gpus:gpu-0", "gpus:gpu-1", "gpus:gpu-2", "gpus:gpu-3", "gpus:gpu-4"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*AllocateClaim(claim, in), *first);
}

TEST(ClaimAllocator, CountLargerThanAvailableIsUnschedulable) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(2))});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 3))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(r.status().message()),
            "cannot allocate all claims: claim default/gpu-claim, request gpus: 3 devices of "
            "class gpu.example.com requested, 2 match and are free");
}

TEST(ClaimAllocator, SkipsDevicesAllocatedToOtherClaims) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(4))});
  in.allocated = {{kGpu, kNode, "gpu-0"}, {kGpu, kNode, "gpu-2"}};
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-1", "gpus:gpu-3"));

  r = AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 3))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("request gpus: 3 devices of class gpu.example.com requested, 2 match and "
                        "are free (4 match, 2 allocated to other claims)"));
}

TEST(ClaimAllocator, AdminAccessMayUseAllocatedDevices) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(2))});
  in.allocated = {{kGpu, kNode, "gpu-0"}, {kGpu, kNode, "gpu-1"}};
  resourceapi::ExactDeviceRequest admin = Exactly(kGpu, 2);
  admin.admin_access = true;
  absl::StatusOr<AllocationResult> r = AllocateClaim(Claim({Request("monitor", admin)}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("monitor:gpu-0", "monitor:gpu-1"));
  EXPECT_EQ(r->results[0].admin_access, std::optional<bool>(true));
  // Admin results do not make devices busy for other claims.
  EXPECT_TRUE(AllocatedDevices(*r).empty());

  // Never the same device twice within the claim, even with admin access.
  admin.count = 3;
  r = AllocateClaim(Claim({Request("monitor", admin)}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("requested with admin access, 2 match"));
  r = AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 1))}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ClaimAllocator, AllocatedDevicesListsNonAdminResults) {
  AllocationResult a;
  a.results.resize(2);
  for (int i = 0; i < 2; ++i) {
    a.results[i].request = "r";
    a.results[i].driver = kGpu;
    a.results[i].pool = "p";
    a.results[i].device = "gpu-" + std::to_string(i);
  }
  a.results[1].admin_access = true;
  EXPECT_EQ(AllocatedDevices(a), (std::set<DeviceId>{{kGpu, "p", "gpu-0"}}));
}

TEST(ClaimAllocator, AllModeTakesEveryMatchingDevice) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(4))});
  const std::string below3 = "device.attributes[\"gpu.example.com\"].index < 3";
  absl::StatusOr<AllocationResult> r = AllocateClaim(Claim({AllOf("gpus", kGpu, {below3})}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-0", "gpus:gpu-1", "gpus:gpu-2"));

  // At least one device.
  r = AllocateClaim(
      Claim({AllOf("gpus", kGpu, {"device.attributes[\"gpu.example.com\"].index > 9"})}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(
      std::string(r.status().message()),
      HasSubstr("request gpus: all devices of class gpu.example.com requested, none match"));

  // Every matching device must be free.
  in.allocated = {{kGpu, kNode, "gpu-1"}};
  r = AllocateClaim(Claim({AllOf("gpus", kGpu, {below3})}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("all 3 matching devices of class gpu.example.com requested, 1 is "
                        "allocated to other claims"));
}

TEST(ClaimAllocator, AllModeWaitsForIncompletePools) {
  AllocatorInputs in = Inputs({Slice("node-a-gpus", kGpu, kNode, Gpus(4)),
                               Slice("nics-1", kNic, "nics", {Dev("nic-0")}, 1, 2)});
  absl::StatusOr<AllocationResult> r = AllocateClaim(Claim({AllOf("gpus", kGpu)}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("request gpus: asks for all devices, but resource pool "
                        "nic.example.com/nics is currently being updated"));
}

TEST(ClaimAllocator, ClassAndRequestSelectorsMustBothMatch) {
  AllocatorInputs in = Inputs(
      {Slice("gpus", kGpu, kNode,
             {Dev("small-0", {}, "16Gi"), Dev("big-0", {}, "80Gi"), Dev("big-1", {}, "80Gi")}),
       Slice("nics", kNic, kNode, {Dev("nic-0", {}, "80Gi")})});
  in.classes["big-gpu"] = Class("big-gpu", {"device.driver == \"gpu.example.com\"",
                                            "device.capacity[device.driver].memory.compareTo("
                                            "quantity(\"40Gi\")) >= 0"});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly("big-gpu", 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:big-0", "gpus:big-1"));

  r = AllocateClaim(Claim({Request("gpus", Exactly("big-gpu", 1, {"device.driver == \"x\""}))}),
                    in);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("1 device of class big-gpu requested, 0 match and are free"));
}

TEST(ClaimAllocator, FirstAvailableFallsBackInOrder) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(2))});
  DeviceRequest gpu = FirstAvailable(
      "gpu", {{"four", Exactly(kGpu, 4)}, {"two", Exactly(kGpu, 2)}, {"one", Exactly(kGpu, 1)}});
  absl::StatusOr<AllocationResult> r = AllocateClaim(Claim({gpu}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpu/two:gpu-0", "gpu/two:gpu-1"));

  gpu.first_available[1].request.count = 3;
  gpu.first_available[2].request.count = 5;
  r = AllocateClaim(Claim({gpu}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()),
            "cannot allocate all claims: claim default/gpu-claim, request gpu: no sub-request can "
            "be satisfied: gpu/four: 4 devices of class gpu.example.com requested, 2 match and "
            "are free; gpu/two: 3 devices of class gpu.example.com requested, 2 match and are "
            "free; gpu/one: 5 devices of class gpu.example.com requested, 2 match and are free");
}

TEST(ClaimAllocator, FirstAvailableBacktracksWhenALaterRequestNeedsTheDevices) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(3))});
  DeviceRequest flexible =
      FirstAvailable("flexible", {{"two", Exactly(kGpu, 2)}, {"one", Exactly(kGpu, 1)}});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({flexible, Request("fixed", Exactly(kGpu, 2))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("flexible/one:gpu-0", "fixed:gpu-1", "fixed:gpu-2"));
}

ResourceClaim NumaClaim(int64_t gpus, int64_t nics) {
  ResourceClaim claim =
      Claim({Request("gpus", Exactly(kGpu, gpus)), Request("nics", Exactly(kNic, nics))});
  claim.spec.devices.constraints = {MatchAttribute(kNuma, {"gpus", "nics"})};
  return claim;
}

TEST(ClaimAllocator, MatchAttributeBacktracksToASatisfyingSet) {
  // GPUs on NUMA 0 come first, but the only NIC is on NUMA 1.
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(4, 0, 2)),
                               Slice("nics", kNic, kNode, {Dev("nic-0", {{kNuma, Int(1)}})})});
  absl::StatusOr<AllocationResult> r = AllocateClaim(NumaClaim(2, 1), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-2", "gpus:gpu-3", "nics:nic-0"));
}

TEST(ClaimAllocator, MatchAttributeFailsWhenNoSetAgrees) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(4, 0, 2)),
                               Slice("nics", kNic, kNode, {Dev("nic-0", {{kNuma, Int(7)}})})});
  absl::StatusOr<AllocationResult> r = AllocateClaim(NumaClaim(2, 1), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(r.status().message()),
            "cannot allocate all claims: claim default/gpu-claim: no combination of free matching "
            "devices satisfies the constraints (matchAttribute numa.kdp.dev/node for requests "
            "gpus, nics)");

  // A device without the attribute never satisfies the constraint; the same value with
  // another type does not match either.
  in = Inputs({Slice("gpus", kGpu, kNode, {Dev("gpu-0"), Dev("gpu-1", {{kNuma, Int(1)}})}),
               Slice("nics", kNic, kNode,
                     {Dev("nic-0", {{kNuma, Str("1")}}), Dev("nic-1", {{kNuma, Int(1)}})})});
  r = AllocateClaim(NumaClaim(1, 1), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-1", "nics:nic-1"));
}

TEST(ClaimAllocator, MatchAttributeUsesTheDriverDomainForBareNames) {
  // "gpu.example.com/model" is found as the bare attribute "model" of a gpu.example.com device.
  AllocatorInputs in =
      Inputs({Slice("gpus", kGpu, kNode,
                    {Dev("gpu-0", {{"model", Str("A")}}), Dev("gpu-1", {{"model", Str("B")}}),
                     Dev("gpu-2", {{"model", Str("A")}})})});
  ResourceClaim claim = Claim({Request("a", Exactly(kGpu, 1)), Request("b", Exactly(kGpu, 1))});
  claim.spec.devices.constraints = {MatchAttribute("gpu.example.com/model")};
  absl::StatusOr<AllocationResult> r = AllocateClaim(claim, in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("a:gpu-0", "b:gpu-2"));

  // Another domain does not see the bare name.
  claim.spec.devices.constraints = {MatchAttribute("other.example.com/model")};
  r = AllocateClaim(claim, in);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("matchAttribute other.example.com/model for all requests"));
}

TEST(ClaimAllocator, IgnoresIncompletePoolsAndOldGenerations) {
  AllocatorInputs in =
      Inputs({Slice("old", kGpu, "gpus", {Dev("gpu-old")}, 1, 1),
              Slice("new", kGpu, "gpus", {Dev("gpu-new")}, 2, 1),
              Slice("half", kGpu, "partial", {Dev("gpu-partial")}, 1, 2),
              Slice("elsewhere", kGpu, "other-node", {Dev("gpu-remote")}, 1, 1, "node-b")});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 1))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-new"));
  r = AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 2))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("2 devices of class gpu.example.com requested, 1 "
                        "matches and is free"));
}

TEST(ClaimAllocator, AllNodesSlicesNeedNoNodeSelector) {
  resourceapi::ResourceSlice shared = Slice("shared", kGpu, "shared", Gpus(1), 1, 1, "");
  shared.spec.all_nodes = true;
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 1))}), Inputs({shared}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("gpus:gpu-0"));
  EXPECT_FALSE(r->node_selector.has_value());
}

TEST(ClaimAllocator, ConfigsComeFromClassesThenClaim) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(3))});
  in.classes[kGpu] = Class(kGpu, {}, {"ClassConfigA", "ClassConfigB"});
  in.classes["other"] = Class("other", {}, {"OtherClassConfig"});
  DeviceRequest c =
      FirstAvailable("c", {{"big", Exactly("other", 5)}, {"small", Exactly("other", 1)}});
  ResourceClaim claim = Claim({Request("a", Exactly(kGpu, 1)), Request("b", Exactly(kGpu, 1)), c});
  claim.spec.devices.config = {
      ClaimConfig({}, "ClaimAll"),
      ClaimConfig({"a", "b"}, "ClaimAB"),
      ClaimConfig({"c/big"}, "ClaimBig"),
      ClaimConfig({"c/small"}, "ClaimSmall"),
  };
  absl::StatusOr<AllocationResult> r = AllocateClaim(claim, in);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> got;
  for (const auto& cfg : r->config) {
    std::string requests;
    for (const std::string& name : cfg.requests) requests += (requests.empty() ? "" : ",") + name;
    got.push_back(cfg.source + ":" + cfg.opaque.parameters["kind"].get<std::string>() + ":" +
                  requests);
  }
  EXPECT_THAT(got, ElementsAre("FromClass:ClassConfigA:a,b", "FromClass:ClassConfigB:a,b",
                               "FromClass:OtherClassConfig:c/small", "FromClaim:ClaimAll:",
                               "FromClaim:ClaimAB:a,b", "FromClaim:ClaimSmall:c/small"));
}

TEST(ClaimAllocator, MissingClassIsNotFound) {
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly("no-such-class"))}), Inputs({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("claim default/gpu-claim, request gpus: could not retrieve device class "
                        "no-such-class"));
}

TEST(ClaimAllocator, SelectorCompileErrorsNameClassOrClaimAndExpression) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(1))});
  in.classes["broken"] = Class("broken", {"device.driver == 1.5"});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly("broken"))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("claim default/gpu-claim, request gpus: class broken: selector #0: "
                        "selector \"device.driver == 1.5\": unsupported double literal at column "
                        "18"));
  r = AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 1, {"device.size() > 0"}))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("claim default/gpu-claim, request gpus: selector #0: selector "
                        "\"device.size() > 0\": found no matching overload for 'size' applied "
                        "to 'kubernetes.DRADevice.()' at column 8"));
}

TEST(ClaimAllocator, CelRuntimeErrorFailsTheAllocation) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(2))});
  absl::StatusOr<AllocationResult> r = AllocateClaim(
      Claim({Request("gpus", Exactly(kGpu, 1,
                                     {"device.attributes[\"gpu.example.com\"].model == "
                                      "\"x\""}))}),
      in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("claim default/gpu-claim, request gpus: selector #0 "
                        "\"device.attributes[\"gpu.example.com\"].model == \"x\"\" on device "
                        "gpu.example.com/node-a/gpu-0: CEL runtime error: no such key: model"));

  // Guarded by the driver check, the same lookup is fine for other drivers' devices.
  in.slices.push_back(Slice("nics", kNic, kNode, {Dev("nic-0")}));
  in.classes["any"] = Class("any");
  r = AllocateClaim(
      Claim({Request("dev", Exactly("any", 3,
                                    {"device.driver != \"gpu.example.com\" || "
                                     "device.attributes[\"gpu.example.com\"].index >= 0"}))}),
      in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Picked(*r), ElementsAre("dev:gpu-0", "dev:gpu-1", "dev:nic-0"));
}

TEST(ClaimAllocator, RejectsMoreResultsThanAClaimHolds) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(40))});
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 33))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("33 devices of class gpu.example.com requested, "
                        "more than the 32 a claim can hold"));
}

TEST(ClaimAllocator, LargeNodeCompletesQuickly) {
  // 64 GPUs, 8 per NUMA node, and a few allocated elsewhere.
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(64, 0, 8))});
  for (int i = 0; i < 64; i += 9) in.allocated.insert({kGpu, kNode, "gpu-" + std::to_string(i)});
  const auto start = std::chrono::steady_clock::now();

  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 16))}), in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results.size(), 16u);

  // 7 free GPUs on each NUMA node but 8 wanted on one: hopeless, and found so quickly.
  ResourceClaim numa = Claim({Request("gpus", Exactly(kGpu, 8))});
  numa.spec.devices.constraints = {MatchAttribute(kNuma)};
  in.allocated.clear();
  for (int i = 0; i < 64; i += 8) in.allocated.insert({kGpu, kNode, "gpu-" + std::to_string(i)});
  r = AllocateClaim(numa, in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);

  // Two requests that each fit but not together (24 + 16 of 56 free ones is fine, 30 + 30
  // exceeds what distinct devices allow).
  ResourceClaim pair = Claim({Request("a", Exactly(kGpu, 16)), Request("b", Exactly(kGpu, 16))});
  in.allocated.clear();
  for (int i = 0; i < 40; ++i) in.allocated.insert({kGpu, kNode, "gpu-" + std::to_string(i)});
  r = AllocateClaim(pair, in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("requests a, b need 32 devices together, only 24 distinct free devices "
                        "match them"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
}

TEST(ClaimAllocator, BoundsTheSearch) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(64, 0, 8))});
  in.max_search_steps = 3;
  absl::StatusOr<AllocationResult> r =
      AllocateClaim(Claim({Request("gpus", Exactly(kGpu, 16))}), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("gave up after trying 3 device choices"));
}

TEST(ClaimAllocator, RejectsMalformedRequests) {
  AllocatorInputs in = Inputs({Slice("gpus", kGpu, kNode, Gpus(1))});
  absl::StatusOr<AllocationResult> r = AllocateClaim(Claim({FirstAvailable("empty", {})}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  resourceapi::ExactDeviceRequest odd = Exactly(kGpu);
  odd.allocation_mode = "Some";
  r = AllocateClaim(Claim({Request("odd", odd)}), in);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("unsupported count mode Some"));
}

}  // namespace
}  // namespace kdp::manager::scheduling
