#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "examples/dra-driver/gpu_dra_driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/cdi.h"
#include "tests/testing/temp_dir.h"

namespace kdp::example {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const std::string kTopology =
    std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";

std::unique_ptr<GpuDraDriver> MakeDriver(const std::string& cdi_root) {
  absl::StatusOr<std::unique_ptr<GpuDraDriver>> driver = GpuDraDriver::Create(
      {.topology_xml = kTopology, .cdi_root = cdi_root, .node_name = "node-a"});
  EXPECT_TRUE(driver.ok()) << driver.status();
  return driver.ok() ? *std::move(driver) : nullptr;
}

Claim ClaimFor(const std::string& uid, std::vector<std::string> gpus,
               std::vector<OpaqueConfig> configs = {}) {
  Claim claim{.ref = {.namespace_ = "default", .name = "c-" + uid, .uid = uid},
              .results = {},
              .configs = std::move(configs)};
  for (const std::string& gpu : gpus) {
    claim.results.push_back({.request = "gpus",
                             .driver = kGpuDriverName,
                             .pool = "node-a",
                             .device = gpu,
                             .admin_access = false,
                             .share_id = ""});
  }
  return claim;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string SpecPath(const std::string& root, const std::string& uid) {
  return root + "/gpu.example.com-gpu_" + uid + ".json";
}

TEST(GpuDraDriver, PublishesEveryGpuWithAttributesAndCapacity) {
  kdp::testing::TempDir dir;
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(dir.path() + "/cdi");
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::vector<DraDevice>> devices = driver->Devices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_THAT(*devices, SizeIs(8));
  const DraDevice& first = (*devices)[0];
  EXPECT_EQ(first.name, "gpu0");
  EXPECT_EQ(std::get<int64_t>(first.attributes.at("index")), 0);
  EXPECT_EQ(std::get<int64_t>(first.attributes.at("numaNode")), 0);
  EXPECT_EQ(std::get<int64_t>((*devices)[7].attributes.at("numaNode")), 1);
  EXPECT_EQ(std::get<VersionValue>(first.attributes.at("driverVersion")).semver, "1.0.0");
  EXPECT_THAT(std::get<std::string>(first.attributes.at("uuid")), ::testing::StartsWith("GPU-"));
  EXPECT_EQ(first.capacity.at("memory"), "16Gi");
  // UUIDs are distinct per GPU and stable across driver instances.
  EXPECT_NE(std::get<std::string>(first.attributes.at("uuid")),
            std::get<std::string>((*devices)[1].attributes.at("uuid")));
  std::unique_ptr<GpuDraDriver> again = MakeDriver(dir.path() + "/cdi");
  EXPECT_EQ(again->Devices()->at(0).attributes, first.attributes);
}

TEST(GpuDraDriver, PrepareWritesAValidCdiSpecPerClaim) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(root);
  std::map<std::string, PrepareResult> results =
      driver->Prepare({ClaimFor("uid-1", {"gpu0", "gpu1"})});
  ASSERT_TRUE(results["uid-1"].status.ok()) << results["uid-1"].status;
  ASSERT_THAT(results["uid-1"].devices, SizeIs(2));
  EXPECT_THAT(results["uid-1"].devices[0].cdi_device_ids,
              ElementsAre("gpu.example.com/gpu=uid-1-gpu0"));
  EXPECT_THAT(results["uid-1"].devices[1].requests, ElementsAre("gpus"));
  EXPECT_EQ(results["uid-1"].devices[1].pool, "node-a");

  absl::StatusOr<kdp::cdi::Spec> spec =
      kdp::cdi::ParseJson(ReadFile(SpecPath(root, "uid-1")), "spec");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(kdp::cdi::Validate(*spec).ok()) << kdp::cdi::Validate(*spec);
  EXPECT_EQ(spec->kind, "gpu.example.com/gpu");
  ASSERT_THAT(spec->devices, SizeIs(2));
  EXPECT_EQ(spec->devices[0].name, "uid-1-gpu0");
  EXPECT_THAT(spec->devices[0].container_edits.env, ::testing::Contains("GPU_DEVICE_0=gpu0"));
  EXPECT_FALSE(spec->devices[0].container_edits.device_nodes.empty());
  EXPECT_THAT(driver->InUse(),
              ElementsAre(::testing::Pair("gpu0", "uid-1"), ::testing::Pair("gpu1", "uid-1")));
}

TEST(GpuDraDriver, RefusesAGpuPreparedForAnotherClaim) {
  kdp::testing::TempDir dir;
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(dir.path() + "/cdi");
  ASSERT_TRUE(driver->Prepare({ClaimFor("uid-1", {"gpu0"})})["uid-1"].status.ok());
  PrepareResult second = driver->Prepare({ClaimFor("uid-2", {"gpu0"})})["uid-2"];
  EXPECT_EQ(second.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status.message()),
              HasSubstr("gpu0 is already prepared for ResourceClaim uid-1"));
  EXPECT_FALSE(std::filesystem::exists(SpecPath(dir.path() + "/cdi", "uid-2")));
}

TEST(GpuDraDriver, RepeatedPrepareRecreatesAVanishedSpec) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(root);
  ASSERT_TRUE(driver->Prepare({ClaimFor("uid-1", {"gpu2"})})["uid-1"].status.ok());
  std::filesystem::remove(SpecPath(root, "uid-1"));  // a reboot emptied /var/run/cdi
  PrepareResult again = driver->Prepare({ClaimFor("uid-1", {"gpu2"})})["uid-1"];
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_TRUE(std::filesystem::exists(SpecPath(root, "uid-1")));
}

TEST(GpuDraDriver, UnprepareRemovesTheSpecAndFreesTheGpus) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(root);
  ASSERT_TRUE(driver->Prepare({ClaimFor("uid-1", {"gpu0"})})["uid-1"].status.ok());
  std::map<std::string, absl::Status> results =
      driver->Unprepare({{.namespace_ = "default", .name = "c", .uid = "uid-1"},
                         {.namespace_ = "default", .name = "gone", .uid = "never-prepared"}});
  EXPECT_TRUE(results["uid-1"].ok()) << results["uid-1"];
  EXPECT_TRUE(results["never-prepared"].ok()) << results["never-prepared"];
  EXPECT_FALSE(std::filesystem::exists(SpecPath(root, "uid-1")));
  EXPECT_THAT(driver->InUse(), IsEmpty());
  EXPECT_TRUE(driver->Prepare({ClaimFor("uid-2", {"gpu0"})})["uid-2"].status.ok());
}

TEST(GpuDraDriver, ARestartedDriverReadsWhichGpusAreInUseFromItsSpecs) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  ASSERT_TRUE(MakeDriver(root)->Prepare({ClaimFor("uid-1", {"gpu3"})})["uid-1"].status.ok());
  std::unique_ptr<GpuDraDriver> restarted = MakeDriver(root);
  EXPECT_THAT(restarted->InUse(), ElementsAre(::testing::Pair("gpu3", "uid-1")));
  EXPECT_FALSE(restarted->Prepare({ClaimFor("uid-2", {"gpu3"})})["uid-2"].status.ok());
}

TEST(GpuDraDriver, AppliesTheLastConfigAndRejectsForeignOnes) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<GpuDraDriver> driver = MakeDriver(root);
  const std::string time_slicing =
      R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}})";
  const std::string exclusive =
      R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"Exclusive"}})";
  ASSERT_TRUE(
      driver
          ->Prepare({ClaimFor(
              "uid-1", {"gpu0"},
              {{.source = "FromClass", .requests = {}, .parameters_json = exclusive},
               {.source = "FromClaim", .requests = {}, .parameters_json = time_slicing}})})["uid-1"]
          .status.ok());
  absl::StatusOr<kdp::cdi::Spec> spec = kdp::cdi::ParseJson(ReadFile(SpecPath(root, "uid-1")), "s");
  ASSERT_TRUE(spec.ok());
  EXPECT_THAT(spec->devices[0].container_edits.env,
              ::testing::Contains("GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing"));

  PrepareResult bad = driver->Prepare({ClaimFor(
      "uid-2", {"gpu1"},
      {{.source = "FromClaim",
        .requests = {},
        .parameters_json =
            R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"MPS"}})"}})})
                          ["uid-2"];
  EXPECT_EQ(bad.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(bad.status.message()),
      HasSubstr("config from FromClaim: GpuConfig: sharing.strategy: Unsupported value: \"MPS\""));
}

TEST(ParseGpuConfig, NamesWhatIsWrong) {
  EXPECT_EQ(*ParseGpuConfig(R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig"})"),
            "Exclusive");
  EXPECT_THAT(
      std::string(
          ParseGpuConfig(R"({"apiVersion":"other/v1","kind":"GpuConfig"})").status().message()),
      HasSubstr("apiVersion and kind must be gpu.example.com/v1alpha1 and GpuConfig"));
  EXPECT_FALSE(ParseGpuConfig("[1]").ok());
  EXPECT_FALSE(
      ParseGpuConfig(
          R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":3}})")
          .ok());
}

}  // namespace
}  // namespace kdp::example
