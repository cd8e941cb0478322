// kdp::CdiDraDriver (kdp/cdi_dra_driver.h) without a runner: one spec per claim with the vendor's
// edits, the in-use check across and within Prepare calls, admin access, NOT_FOUND for a device
// Discover() lacks, the vendor's error, Unprepare. With a runner, the in-use set comes from the
// checkpoint: tests/unit/examples/dra_driver_test.cc.
#include "kdp/cdi_dra_driver.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

class TwoCards final : public CdiDraDriver {
 public:
  explicit TwoCards(std::string root)
      : CdiDraDriver("card.example.com", "example.com/card", root) {}
  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    return std::vector<DraDevice>{{.name = "card0"}, {.name = "card1"}};
  }
  absl::StatusOr<cdi::ContainerEdits> DeviceEdits(const Claim& claim, const AllocatedDevice& device,
                                                  size_t index) override {
    if (claim.ref.uid == "bad") return absl::InvalidArgumentError("no such config");
    return cdi::ContainerEdits{.env = {"CARD_" + std::to_string(index) + "=" + device.device}};
  }
};

Claim ClaimOf(const std::string& uid, std::vector<std::string> devices, bool admin = false) {
  Claim claim{.ref = {.namespace_ = "ns", .name = "c-" + uid, .uid = uid}};
  for (const std::string& device : devices) {
    claim.results.push_back({.request = "r",
                             .driver = "card.example.com",
                             .pool = "node",
                             .device = device,
                             .admin_access = admin,
                             .share_id = ""});
  }
  return claim;
}

TEST(CdiDraDriver, WritesOneSpecPerClaimWithTheVendorsEdits) {
  kdp::testing::TempDir dir;
  TwoCards driver(dir.Path("cdi"));
  std::map<std::string, PrepareResult> results = driver.Prepare({ClaimOf("u1", {"card1"})});
  ASSERT_TRUE(results["u1"].status.ok()) << results["u1"].status;
  ASSERT_EQ(results["u1"].devices.size(), 1u);
  EXPECT_THAT(results["u1"].devices[0].cdi_device_ids, ElementsAre("example.com/card=u1-card1"));
  EXPECT_EQ(driver.SpecName("u1"), "example.com-card_u1");
  EXPECT_TRUE(std::filesystem::exists(dir.Path("cdi/example.com-card_u1.json")));
  EXPECT_THAT(driver.InUse(), ElementsAre(Pair("card1", "u1")));
  EXPECT_TRUE(driver.Unprepare({{.namespace_ = "ns", .name = "c-u1", .uid = "u1"}})["u1"].ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Path("cdi/example.com-card_u1.json")));
  EXPECT_THAT(driver.InUse(), IsEmpty());
}

TEST(CdiDraDriver, RefusesADeviceAnotherClaimHoldsUnlessAdmin) {
  kdp::testing::TempDir dir;
  TwoCards driver(dir.Path("cdi"));
  // Within one call too: u2 comes after u1 took card0.
  std::map<std::string, PrepareResult> results =
      driver.Prepare({ClaimOf("u1", {"card0"}), ClaimOf("u2", {"card0"})});
  EXPECT_TRUE(results["u1"].status.ok());
  EXPECT_EQ(results["u2"].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(results["u2"].status.message(),
              HasSubstr("card0 is already prepared for ResourceClaim u1"));
  EXPECT_TRUE(driver.Prepare({ClaimOf("u1", {"card0"})})["u1"].status.ok());  // Repeated: OK.
  EXPECT_TRUE(driver.Prepare({ClaimOf("u3", {"card0"}, /*admin=*/true)})["u3"].status.ok());
}

TEST(CdiDraDriver, UnknownDevicesAndVendorErrorsFailTheClaim) {
  kdp::testing::TempDir dir;
  TwoCards driver(dir.Path("cdi"));
  PrepareResult unknown = driver.Prepare({ClaimOf("u1", {"card7"})})["u1"];
  EXPECT_EQ(unknown.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status.message(),
              HasSubstr("device card7 is not a card.example.com device of this node"));
  EXPECT_EQ(driver.Prepare({ClaimOf("bad", {"card0"})})["bad"].status.code(),
            absl::StatusCode::kInvalidArgument);
  PrepareResult empty = driver.Prepare({ClaimOf("u2", {})})["u2"];
  EXPECT_TRUE(empty.status.ok());
  EXPECT_THAT(empty.devices, IsEmpty());
  EXPECT_THAT(driver.InUse(), IsEmpty());
}

}  // namespace
}  // namespace kdp
