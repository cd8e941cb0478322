#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sdk/src/dra/claim_json.h"
#include "tests/testing/example_names.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::kdp::testing::kGpuDriver;

const ClaimRef kRef{.namespace_ = "default", .name = "claim-1", .uid = "uid-1"};

json AllocatedClaim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "default", "name": "claim-1", "uid": "uid-1"},
    "status": {"allocation": {"devices": {
      "results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
        {"request": "nic", "driver": "net.example.com", "pool": "node-1", "device": "eth0"},
        {"request": "gpu2/big", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1",
         "adminAccess": true, "shareID": "share-7"}
      ],
      "config": [
        {"source": "FromClaim", "requests": ["gpu"],
         "opaque": {"driver": "gpu.example.com", "parameters": {"kind": "GpuConfig", "b": 2}}},
        {"source": "FromClass",
         "opaque": {"driver": "gpu.example.com", "parameters": {"kind": "ClassConfig"}}},
        {"source": "FromClass",
         "opaque": {"driver": "net.example.com", "parameters": {"mtu": 9000}}}
      ]}}}
  })");
}

TEST(DecodeClaim, KeepsOnlyThisDriversResultsAndConfigsClassFirst) {
  absl::StatusOr<Claim> claim = DecodeClaim(AllocatedClaim(), kRef, kGpuDriver);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->ref, kRef);
  EXPECT_THAT(claim->results, ElementsAre(AllocatedDevice{.request = "gpu",
                                                          .driver = kGpuDriver,
                                                          .pool = "node-1",
                                                          .device = "gpu-0",
                                                          .admin_access = false,
                                                          .share_id = ""},
                                          AllocatedDevice{.request = "gpu2/big",
                                                          .driver = kGpuDriver,
                                                          .pool = "node-1",
                                                          .device = "gpu-1",
                                                          .admin_access = true,
                                                          .share_id = "share-7"}));
  ASSERT_EQ(claim->configs.size(), 2u);
  EXPECT_EQ(claim->configs[0].source, "FromClass");
  EXPECT_TRUE(claim->configs[0].requests.empty());
  EXPECT_EQ(json::parse(claim->configs[0].parameters_json), json({{"kind", "ClassConfig"}}));
  EXPECT_EQ(claim->configs[1].source, "FromClaim");
  EXPECT_THAT(claim->configs[1].requests, ElementsAre("gpu"));
  EXPECT_EQ(json::parse(claim->configs[1].parameters_json),
            json({{"kind", "GpuConfig"}, {"b", 2}}));
}

TEST(DecodeClaim, OtherDriverSeesOnlyItsOwn) {
  absl::StatusOr<Claim> claim = DecodeClaim(AllocatedClaim(), kRef, "net.example.com");
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_EQ(claim->results.size(), 1u);
  EXPECT_EQ(claim->results[0].device, "eth0");
  ASSERT_EQ(claim->configs.size(), 1u);
  EXPECT_EQ(json::parse(claim->configs[0].parameters_json), json({{"mtu", 9000}}));
}

TEST(DecodeClaim, NotAllocatedIsTheGoHelpersError) {
  json claim = AllocatedClaim();
  claim["status"].erase("allocation");
  absl::StatusOr<Claim> decoded = DecodeClaim(claim, kRef, kGpuDriver);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(decoded.status().message(), "claim default/claim-1 not allocated");
  claim.erase("status");
  EXPECT_EQ(DecodeClaim(claim, kRef, kGpuDriver).status().message(),
            "claim default/claim-1 not allocated");
}

TEST(DecodeClaim, ReplacedClaimIsTheGoHelpersError) {
  ClaimRef other = kRef;
  other.uid = "uid-old";
  absl::StatusOr<Claim> decoded = DecodeClaim(AllocatedClaim(), other, kGpuDriver);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(decoded.status().message(), "claim default/claim-1 got replaced");
}

TEST(DecodeClaim, AllocatedWithoutDevicesHasNoResults) {
  json claim = AllocatedClaim();
  claim["status"]["allocation"] = json::object({{"nodeSelector", json::object()}});
  absl::StatusOr<Claim> decoded = DecodeClaim(claim, kRef, kGpuDriver);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->results.empty());
  EXPECT_TRUE(decoded->configs.empty());
}

TEST(DecodeClaim, MalformedFieldsAreNamed) {
  json claim = AllocatedClaim();
  claim["status"]["allocation"]["devices"]["results"][0]["pool"] = 5;
  absl::StatusOr<Claim> decoded = DecodeClaim(claim, kRef, kGpuDriver);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(decoded.status().message(),
              HasSubstr("status.allocation.devices.results[0].pool must be a string"));

  claim = AllocatedClaim();
  claim["status"]["allocation"]["devices"]["config"][0]["source"] = "FromElsewhere";
  EXPECT_THAT(DecodeClaim(claim, kRef, kGpuDriver).status().message(),
              HasSubstr("config[0].source must be"));

  claim = AllocatedClaim();
  claim["status"]["allocation"]["devices"]["results"] = "x";
  EXPECT_EQ(DecodeClaim(claim, kRef, kGpuDriver).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeClaim(json::array(), kRef, kGpuDriver).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DecodeClaim, OpaqueConfigWithoutParametersIsAnEmptyObject) {
  json claim = AllocatedClaim();
  claim["status"]["allocation"]["devices"]["config"] =
      json::parse(R"([{"source": "FromClaim", "opaque": {"driver": "gpu.example.com"}}])");
  absl::StatusOr<Claim> decoded = DecodeClaim(claim, kRef, kGpuDriver);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->configs.size(), 1u);
  EXPECT_EQ(decoded->configs[0].parameters_json, "{}");
}

TEST(BaseRequestName, StripsTheSubrequest) {
  EXPECT_EQ(BaseRequestName("gpu"), "gpu");
  EXPECT_EQ(BaseRequestName("gpu/big"), "gpu");
  EXPECT_EQ(BaseRequestName(""), "");
}

}  // namespace
}  // namespace kdp::internal

namespace kdp::internal {
namespace {

// Consumable capacity (1.34+): each share of a device has its shareID and consumedCapacity.
TEST(DecodeClaim, SharesWithConsumedCapacity) {
  json claim = nlohmann::json::parse(R"({
    "metadata": {"uid": "uid-1"},
    "status": {"allocation": {"devices": {"results": [
      {"request": "mem", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu0",
       "shareID": "6c1b7e2e-0000-4000-8000-000000000001",
       "consumedCapacity": {"memory": "4Gi", "gpu.example.com/cores": 2}},
      {"request": "whole", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu1"}
    ]}}}})");
  absl::StatusOr<Claim> decoded = DecodeClaim(claim, kRef, kGpuDriver);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->results.size(), 2u);
  EXPECT_EQ(decoded->results[0].share_id, "6c1b7e2e-0000-4000-8000-000000000001");
  EXPECT_EQ(
      decoded->results[0].consumed_capacity,
      (std::map<std::string, std::string>{{"gpu.example.com/cores", "2"}, {"memory", "4Gi"}}));
  EXPECT_TRUE(decoded->results[1].share_id.empty());
  EXPECT_TRUE(decoded->results[1].consumed_capacity.empty());

  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {{"memory", true}};
  EXPECT_THAT(DecodeClaim(claim, kRef, kGpuDriver).status().message(),
              HasSubstr("status.allocation.devices.results[0].consumedCapacity[\"memory\"] must "
                        "be a quantity"));
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = "4Gi";
  EXPECT_THAT(DecodeClaim(claim, kRef, kGpuDriver).status().message(),
              HasSubstr("consumedCapacity must be a map of quantities"));
}

}  // namespace
}  // namespace kdp::internal
