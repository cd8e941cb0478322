#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/unix_socket.h"
#include "examples/dra-driver/gpu_dra_driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/cdi.h"
#include "kdp/dra_runner.h"
#include "sdk/src/dra/checkpoint.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"

namespace kdp::example {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const std::string kTopology =
    std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";

std::unique_ptr<CdiDraDriver> MakeDriver(const std::string& cdi_root) {
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver = NewGpuDraDriver(
      {.gpus = {.topology_xml = kTopology}, .cdi_root = cdi_root, .node_name = "node-a"});
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
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(dir.path() + "/cdi");
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::vector<DraDevice>> devices = driver->Discover();
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
  std::unique_ptr<CdiDraDriver> again = MakeDriver(dir.path() + "/cdi");
  EXPECT_EQ(again->Discover()->at(0).attributes, first.attributes);
}

TEST(GpuDraDriver, PrepareWritesAValidCdiSpecPerClaim) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(root);
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
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(dir.path() + "/cdi");
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
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(root);
  ASSERT_TRUE(driver->Prepare({ClaimFor("uid-1", {"gpu2"})})["uid-1"].status.ok());
  std::filesystem::remove(SpecPath(root, "uid-1"));  // a reboot emptied /var/run/cdi
  PrepareResult again = driver->Prepare({ClaimFor("uid-1", {"gpu2"})})["uid-1"];
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_TRUE(std::filesystem::exists(SpecPath(root, "uid-1")));
}

TEST(GpuDraDriver, UnprepareRemovesTheSpecAndFreesTheGpus) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(root);
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

// The in-use check comes from the SDK's checkpoint (DraDriver::PreparedClaims()), so a restarted
// driver keeps it: a runner started over a checkpoint that records gpu3 for uid-1 refuses uid-2.
TEST(GpuDraDriver, ARestartedDriverReadsWhichGpusAreInUseFromTheSdkCheckpoint) {
  kdp::testing::TempDir dir;
  const std::string plugin_dir = dir.Path("plugins/gpu.example.com");
  ASSERT_TRUE(MakeDirectories(plugin_dir).ok());
  internal::PreparedClaims recorded;
  recorded["uid-1"] = {.ref = {.namespace_ = "default", .name = "c-uid-1", .uid = "uid-1"},
                       .completed = true,
                       .devices = {{.requests = {"gpus"},
                                    .pool = "node-a",
                                    .device = "gpu3",
                                    .cdi_device_ids = {"gpu.example.com/gpu=uid-1-gpu3"},
                                    .share_id = ""}}};
  ASSERT_TRUE(internal::DraCheckpoint(plugin_dir + "/prepared-claims.json", kGpuDriverName)
                  .Store(recorded)
                  .ok());
  absl::StatusOr<std::unique_ptr<DraRunner>> runner = internal::CreateDraRunnerWithClient(
      {.kubelet_root = dir.path(), .node_name = "node-a", .publish_resource_slices = false},
      MakeDriver(dir.path() + "/cdi"), std::make_shared<kdp::testing::FakeKubeClient>());
  ASSERT_TRUE(runner.ok()) << runner.status();
  auto& restarted = static_cast<CdiDraDriver&>((*runner)->driver());
  EXPECT_THAT(restarted.PreparedClaims(), IsEmpty());  // Read at Start().
  ASSERT_TRUE((*runner)->Start().ok());
  EXPECT_THAT(restarted.InUse(), ElementsAre(::testing::Pair("gpu3", "uid-1")));
  PrepareResult refused = restarted.Prepare({ClaimFor("uid-2", {"gpu3"})})["uid-2"];
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(restarted.Prepare({ClaimFor("uid-1", {"gpu3"})})["uid-1"].status.ok());
  (*runner)->Stop();
}

TEST(GpuDraDriver, RefusesADeviceThatIsNotAGpuOfThisNode) {
  kdp::testing::TempDir dir;
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(dir.path() + "/cdi");
  PrepareResult result = driver->Prepare({ClaimFor("uid-1", {"gpu9"})})["uid-1"];
  EXPECT_EQ(result.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(result.status.message()),
              HasSubstr("device gpu9 is not a gpu.example.com device of this node"));
}

TEST(GpuDraDriver, AppliesTheLastConfigAndRejectsForeignOnes) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<CdiDraDriver> driver = MakeDriver(root);
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

TEST(SharingStrategy, NamesWhatIsWrong) {
  EXPECT_EQ(*ConfigString(R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig"})",
                          kSharingStrategy),
            "Exclusive");
  EXPECT_THAT(
      std::string(ConfigString(R"({"apiVersion":"other/v1","kind":"GpuConfig"})", kSharingStrategy)
                      .status()
                      .message()),
      HasSubstr("apiVersion and kind must be gpu.example.com/v1alpha1 and GpuConfig"));
  EXPECT_FALSE(ConfigString("[1]", kSharingStrategy).ok());
  EXPECT_FALSE(
      ConfigString(
          R"({"apiVersion":"gpu.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":3}})",
          kSharingStrategy)
          .ok());
}

std::unique_ptr<CdiDraDriver> MakeDriverWithLayout(const std::string& cdi_root,
                                                   const std::string& layout) {
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver =
      NewGpuDraDriver({.gpus = {.topology_xml = kTopology},
                       .cdi_root = cdi_root,
                       .node_name = "node-a",
                       .layout = layout});
  EXPECT_TRUE(driver.ok()) << driver.status();
  return driver.ok() ? *std::move(driver) : nullptr;
}

// --layout=partitions: per GPU one counter set, the whole GPU and six MIG-like partitions, all
// consuming from it, so the whole GPU and any partition can never be allocated together.
TEST(GpuDraDriver, PartitionLayoutSharesOneCounterSetPerGpu) {
  kdp::testing::TempDir dir;
  std::unique_ptr<CdiDraDriver> driver = MakeDriverWithLayout(dir.path() + "/cdi", "partitions");
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::vector<DraPool>> pools = driver->DiscoverPools();
  ASSERT_TRUE(pools.ok()) << pools.status();
  ASSERT_THAT(*pools, SizeIs(1));
  const DraPool& pool = (*pools)[0];
  EXPECT_TRUE(pool.name.empty());  // the node's pool
  ASSERT_THAT(pool.shared_counters, SizeIs(8));
  EXPECT_EQ(pool.shared_counters[0],
            (CounterSet{.name = "gpu0", .counters = {{"compute", "4"}, {"memory", "4"}}}));
  ASSERT_THAT(pool.devices, SizeIs(8 * 7));
  std::vector<std::string> names;
  for (size_t i = 0; i < 7; ++i) names.push_back(pool.devices[i].name);
  EXPECT_THAT(names, ElementsAre("gpu0", "gpu0-1g-0", "gpu0-1g-1", "gpu0-1g-2", "gpu0-1g-3",
                                 "gpu0-2g-0", "gpu0-2g-1"));
  // The whole GPU takes all of its counters; a partition its profile's share.
  EXPECT_EQ(pool.devices[0].consumes_counters[0].counters, pool.shared_counters[0].counters);
  EXPECT_EQ(
      pool.devices[5].consumes_counters[0],
      (CounterConsumption{.counter_set = "gpu0", .counters = {{"compute", "2"}, {"memory", "2"}}}));
  EXPECT_EQ(std::get<std::string>(pool.devices[5].attributes.at("profile")), "2g");
  // Published through the SDK's checks; Devices() is the node's pool.
  ASSERT_TRUE(driver->Publish().ok());
  EXPECT_THAT(driver->Devices(), SizeIs(56));

  // A partition prepares on its GPU's device nodes.
  std::map<std::string, PrepareResult> results =
      driver->Prepare({ClaimFor("uid-p", {"gpu1-1g-2"})});
  ASSERT_TRUE(results["uid-p"].status.ok()) << results["uid-p"].status;
  EXPECT_THAT(results["uid-p"].devices[0].cdi_device_ids,
              ElementsAre("gpu.example.com/gpu=uid-p-gpu1-1g-2"));
  absl::StatusOr<kdp::cdi::Spec> spec =
      kdp::cdi::ParseJson(ReadFile(SpecPath(dir.path() + "/cdi", "uid-p")), "spec");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->devices[0].container_edits.env, ::testing::Contains("GPU_DEVICE_0=gpu1-1g-2"));
  EXPECT_FALSE(spec->devices[0].container_edits.device_nodes.empty());
}

// --layout=shareable: two claims share gpu0, each with its share ID (a CDI device of its own) and
// the memory it consumes.
TEST(GpuDraDriver, ShareableGpuPreparesEachShareApart) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path() + "/cdi";
  std::unique_ptr<CdiDraDriver> driver = MakeDriverWithLayout(root, "shareable");
  ASSERT_NE(driver, nullptr);
  const DraDevice gpu = driver->Discover()->at(0);
  EXPECT_TRUE(gpu.allow_multiple_allocations);
  EXPECT_EQ(gpu.request_policies.at("memory").valid_range->step, "1Gi");
  ASSERT_TRUE(driver->Publish().ok());

  Claim first = ClaimFor("uid-1", {"gpu0"});
  first.results[0].share_id = "11111111-1111-4111-8111-111111111111";
  first.results[0].consumed_capacity = {{"memory", "4Gi"}};
  Claim second = ClaimFor("uid-2", {"gpu0"});
  second.results[0].share_id = "22222222-2222-4222-8222-222222222222";
  second.results[0].consumed_capacity = {{"memory", "2Gi"}};
  std::map<std::string, PrepareResult> results = driver->Prepare({first, second});
  ASSERT_TRUE(results["uid-1"].status.ok()) << results["uid-1"].status;
  ASSERT_TRUE(results["uid-2"].status.ok()) << results["uid-2"].status;
  EXPECT_THAT(results["uid-1"].devices[0].cdi_device_ids,
              ElementsAre("gpu.example.com/gpu=uid-1-gpu0-11111111-1111-4111-8111-111111111111"));
  EXPECT_EQ(results["uid-2"].devices[0].share_id, "22222222-2222-4222-8222-222222222222");
  absl::StatusOr<kdp::cdi::Spec> spec =
      kdp::cdi::ParseJson(ReadFile(SpecPath(root, "uid-2")), "spec");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(kdp::cdi::Validate(*spec).ok()) << kdp::cdi::Validate(*spec);
  EXPECT_EQ(spec->devices[0].name, "uid-2-gpu0-22222222-2222-4222-8222-222222222222");
  EXPECT_THAT(spec->devices[0].container_edits.env,
              ::testing::IsSupersetOf({"GPU_DEVICE_0=gpu0",
                                       "GPU_DEVICE_0_SHARE_ID=22222222-2222-4222-8222-222222222222",
                                       "GPU_DEVICE_0_MEMORY=2Gi"}));
  // Shares do not hold the GPU exclusively: the in-use check records none of them.
  EXPECT_THAT(driver->InUse(), IsEmpty());
}

}  // namespace
}  // namespace kdp::example
