// The DRA driver shown in docs/dra.md ("Writing a DRA driver"), compiled with the project's
// warnings and exercised, so the guide's example keeps building and does what the guide says.
// The class is verbatim from the guide; only main() is left out.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/cdi.h"
#include "kdp/dra_driver.h"
#include "tests/testing/temp_dir.h"

namespace {

// --- docs/dra.md example, verbatim except for main() ------------------------------------------
constexpr char kDriver[] = "accel.example.com";
constexpr char kCdiKind[] = "accel.example.com/accel";  // CDI "<vendor>/<class>"

class AccelDriver : public kdp::DraDriver {
 public:
  explicit AccelDriver(std::string cdi_root) : DraDriver(kDriver), cdi_root_(std::move(cdi_root)) {}

  // The node's devices: published as one ResourceSlice pool named after the node.
  absl::StatusOr<std::vector<kdp::DraDevice>> Discover() override {
    std::vector<kdp::DraDevice> devices;
    for (int64_t i = 0; i < 4; ++i) {
      devices.push_back({.name = absl::StrCat("accel", i),
                         .attributes = {{"index", i},
                                        {"model", std::string("accel-x")},
                                        {"firmware", kdp::VersionValue{.semver = "2.1.0"}}},
                         .capacity = {{"memory", "32Gi"}}});
    }
    return devices;
  }

  // One result per claim UID. Idempotent: a repeated call re-writes the CDI spec.
  std::map<std::string, kdp::PrepareResult> Prepare(
      const std::vector<kdp::Claim>& claims) override {
    absl::MutexLock lock(&mu_);
    std::map<std::string, kdp::PrepareResult> results;
    for (const kdp::Claim& claim : claims) results[claim.ref.uid] = PrepareClaim(claim);
    return results;
  }

  std::map<std::string, absl::Status> Unprepare(const std::vector<kdp::ClaimRef>& claims) override {
    absl::MutexLock lock(&mu_);
    std::map<std::string, absl::Status> results;
    for (const kdp::ClaimRef& claim : claims) {
      absl::Status removed = kdp::cdi::RemoveSpec(cdi_root_, SpecName(claim.uid));
      if (removed.ok()) {
        std::erase_if(in_use_, [&](const auto& entry) { return entry.second == claim.uid; });
      }
      results[claim.uid] = removed;  // an error keeps the claim recorded; the kubelet retries
    }
    return results;
  }

 private:
  static std::string SpecName(const std::string& claim_uid) {
    return kdp::cdi::TransientSpecName("accel.example.com", "accel", claim_uid);
  }

  kdp::PrepareResult PrepareClaim(const kdp::Claim& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    kdp::cdi::Spec spec{.kind = kCdiKind};
    std::vector<kdp::PreparedDevice> prepared;
    for (const kdp::AllocatedDevice& result : claim.results) {
      // The scheduler should never hand out a device twice; check anyway.
      auto holder = in_use_.find(result.device);
      if (holder != in_use_.end() && holder->second != claim.ref.uid && !result.admin_access) {
        return {.status = absl::FailedPreconditionError(absl::StrCat(
                    result.device, " is already prepared for ResourceClaim ", holder->second))};
      }
      const std::string cdi_name = absl::StrCat(claim.ref.uid, "-", result.device);
      spec.devices.push_back(
          {.name = cdi_name,
           .container_edits = {.env = {"ACCEL_VISIBLE=" + result.device},
                               .device_nodes = {{.path = "/dev/" + result.device}}}});
      prepared.push_back({.requests = {result.request},
                          .pool = result.pool,
                          .device = result.device,
                          .cdi_device_ids = {kdp::cdi::QualifiedName(kCdiKind, cdi_name)}});
    }
    if (spec.devices.empty()) return {};  // nothing of ours in this claim
    spec.cdi_version = kdp::cdi::MinimumRequiredVersion(spec);
    // Before answering: the runtime reads the spec when the container is created.
    if (absl::Status written = kdp::cdi::WriteSpec(cdi_root_, SpecName(claim.ref.uid), spec);
        !written.ok()) {
      return {.status = written};
    }
    for (const kdp::AllocatedDevice& result : claim.results) in_use_[result.device] = claim.ref.uid;
    return {.devices = std::move(prepared)};
  }

  const std::string cdi_root_;
  absl::Mutex mu_;
  std::map<std::string, std::string> in_use_ ABSL_GUARDED_BY(mu_);  // device -> claim UID
};
// --- end of the example ------------------------------------------------------------------------

kdp::Claim ClaimOf(const std::string& uid, const std::vector<std::string>& devices) {
  kdp::Claim claim{.ref = {.namespace_ = "default", .name = "c", .uid = uid}};
  for (const std::string& device : devices) {
    claim.results.push_back(
        {.request = "accel", .driver = kDriver, .pool = "node", .device = device});
  }
  return claim;
}

TEST(DraDocExample, PublishesFourDevicesWithTheirAttributes) {
  AccelDriver driver("/nonexistent");
  absl::StatusOr<std::vector<kdp::DraDevice>> devices = driver.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 4u);
  EXPECT_EQ((*devices)[3].name, "accel3");
  EXPECT_EQ(std::get<int64_t>((*devices)[3].attributes.at("index")), 3);
  EXPECT_EQ((*devices)[0].capacity.at("memory"), "32Gi");
}

TEST(DraDocExample, PrepareWritesAValidSpecAndUnprepareRemovesIt) {
  kdp::testing::TempDir dir;
  AccelDriver driver(dir.path());
  std::map<std::string, kdp::PrepareResult> results = driver.Prepare({ClaimOf("u1", {"accel0"})});
  ASSERT_TRUE(results["u1"].status.ok()) << results["u1"].status;
  ASSERT_EQ(results["u1"].devices.size(), 1u);
  EXPECT_EQ(results["u1"].devices[0].cdi_device_ids,
            std::vector<std::string>{"accel.example.com/accel=u1-accel0"});
  const std::string path = dir.Path("accel.example.com-accel_u1.json");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<kdp::cdi::Spec> spec = kdp::cdi::ParseJson(text.str(), path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(kdp::cdi::Validate(*spec).ok());

  // The same device for another claim is refused: the guide's last line of defence.
  EXPECT_EQ(driver.Prepare({ClaimOf("u2", {"accel0"})})["u2"].status.code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(driver.Unprepare({{.namespace_ = "default", .name = "c", .uid = "u1"}})["u1"].ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(driver.Prepare({ClaimOf("u2", {"accel0"})})["u2"].status.ok());
}

}  // namespace
