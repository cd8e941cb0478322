// PodClaimController across crashes (issue 7, found by tests/fault/crash_rounds_test.cc): the
// claims reserved for a pod are durable (ObjectStore::MakeDurable) before any driver prepares
// them, so a pod recorded as admitted never comes back with claims the store forgot; and
// ReleaseOrphans, run when the pod store is restored, drops what pods that are not in it (deleted,
// or whose admission a crash cut short) still hold. A real ObjectStore and DraManager; the driver
// is a fake that records its calls.
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::resourceclaim {
namespace {

using resourceapi::Kind;
using resourceapi::ResourceClaim;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Json = nlohmann::json;

constexpr char kNode[] = "node-a";
using ::kdp::testing::kGpuDriver;

// Records, in one log shared with the store's durability hook, every NodePrepareResources.
class RecordingDriver final : public dra::DraPlugin, public dra::DraPlugins {
 public:
  explicit RecordingDriver(std::vector<std::string>* log, absl::Mutex* mu) : log_(log), mu_(mu) {}
  const std::string& driver_name() const override { return name_; }
  absl::StatusOr<dra::drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const dra::drapb::NodePrepareResourcesRequest& request) override {
    dra::drapb::NodePrepareResourcesResponse response;
    absl::MutexLock lock(mu_);
    for (const dra::drapb::Claim& claim : request.claims()) {
      log_->push_back("prepare " + claim.name());
      dra::drapb::Device* device = (*response.mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name(kNode);
      device->set_device_name("gpu-0");
      device->add_cdi_device_ids("gpu.example.com/gpu=gpu-0");
    }
    return response;
  }
  absl::StatusOr<dra::drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const dra::drapb::NodeUnprepareResourcesRequest& request) override {
    dra::drapb::NodeUnprepareResourcesResponse response;
    absl::MutexLock lock(mu_);
    for (const dra::drapb::Claim& claim : request.claims()) {
      log_->push_back("unprepare " + claim.name());
      (*response.mutable_claims())[claim.uid()];
    }
    return response;
  }
  absl::StatusOr<std::shared_ptr<dra::DraPlugin>> Get(const std::string& driver) override {
    if (driver != kGpuDriver) return absl::FailedPreconditionError("not registered");
    return std::shared_ptr<dra::DraPlugin>(this, [](dra::DraPlugin*) {});
  }

 private:
  const std::string name_ = kGpuDriver;
  std::vector<std::string>* const log_;
  absl::Mutex* const mu_;
};

Pod MakePod(const std::string& name, const std::string& uid, PodResourceClaim claim) {
  Pod pod;
  pod.name = name;
  pod.uid = uid;
  pod.containers.push_back({.name = "main",
                            .kind = ContainerKind::kApp,
                            .extended_resources = {},
                            .other_limits = {},
                            .claims = {{claim.name, ""}}});
  pod.resource_claims = {std::move(claim)};
  return pod;
}
PodResourceClaim FromTemplate(const std::string& claim_template) {
  return {.name = "gpu", .resource_claim_name = "", .resource_claim_template_name = claim_template};
}
PodResourceClaim Named(const std::string& claim) {
  return {.name = "gpu", .resource_claim_name = claim, .resource_claim_template_name = ""};
}

class PodClaimControllerCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<dra::DraManager>> dra = dra::DraManager::Create(
        {.state_dir = dir_.path(), .claims = &getter_, .plugins = &driver_});
    ASSERT_TRUE(dra.ok()) << dra.status();
    dra_ = *std::move(dra);
    controller_ = std::make_unique<PodClaimController>(&store_, dra_.get());
    Create(Kind::kDeviceClass,
           {{"metadata", {{"name", kGpuDriver}}},
            {"spec",
             {{"selectors",
               {{{"cel",
                  {{"expression", absl::StrCat("device.driver == \"", kGpuDriver, "\"")}}}}}}}}});
    Json devices = Json::array();
    for (const char* name : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"})
      devices.push_back({{"name", name}});
    Create(Kind::kResourceSlice,
           {{"metadata", {{"name", "node-a-gpus"}}},
            {"spec",
             {{"driver", kGpuDriver},
              {"nodeName", kNode},
              {"pool", {{"name", kNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
              {"devices", devices}}}});
    const Json spec = {
        {"devices",
         {{"requests",
           {{{"name", "gpu"}, {"exactly", {{"deviceClassName", kGpuDriver}, {"count", 1}}}}}}}}};
    Create(Kind::kResourceClaimTemplate,
           {{"metadata", {{"name", "one-gpu"}, {"namespace", "default"}}},
            {"spec", {{"spec", spec}}}});
    for (const char* name : {"shared", "lonely", "kept"}) {
      Create(Kind::kResourceClaim,
             {{"metadata", {{"name", name}, {"namespace", "default"}}}, {"spec", spec}});
    }
  }

  void Create(Kind kind, Json object) {
    absl::StatusOr<Json> created = store_.Create(kind, std::move(object));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  ResourceClaim Claim(const std::string& name) {
    absl::StatusOr<ResourceClaim> claim = store_.GetClaim("default", name);
    EXPECT_TRUE(claim.ok()) << claim.status();
    return claim.value_or(ResourceClaim{});
  }
  static std::vector<std::string> ReservedFor(const ResourceClaim& claim) {
    std::vector<std::string> uids;
    for (const auto& ref : claim.status.reserved_for) uids.push_back(ref.uid);
    return uids;
  }
  std::vector<std::string> Log() {
    absl::MutexLock lock(&mu_);
    return log_;
  }

  ::kdp::testing::TempDir dir_;
  resourceapi::ObjectStore store_{{.node_name = kNode}};
  StoreClaimGetter getter_{&store_};
  absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  RecordingDriver driver_{&log_, &mu_};
  std::unique_ptr<dra::DraManager> dra_;
  std::unique_ptr<PodClaimController> controller_;
};

TEST_F(PodClaimControllerCrashTest, PrepareMakesTheReservationDurableBeforeTheDriverIsCalled) {
  store_.SetDurabilityHook([this] {
    // What a crash from here on would find on disk: the claim reserved for the pod.
    absl::StatusOr<ResourceClaim> claim = store_.GetClaim("default", "kept");
    const std::vector<std::string> reserved =
        claim.ok() ? ReservedFor(*claim) : std::vector<std::string>{};
    absl::MutexLock lock(&mu_);
    log_.push_back(absl::StrCat("durable, reserved for ", absl::StrJoin(reserved, ",")));
    return absl::OkStatus();
  });
  Pod pod = MakePod("trainer", "uid-trainer", Named("kept"));
  ASSERT_TRUE(controller_->Reserve(&pod).ok());
  absl::Status prepared = controller_->Prepare(pod);
  ASSERT_TRUE(prepared.ok()) << prepared;
  EXPECT_THAT(Log(), ElementsAre("durable, reserved for uid-trainer", "prepare kept"));
  store_.SetDurabilityHook({});
}

TEST_F(PodClaimControllerCrashTest, AFailedDurableWriteFailsPrepareBeforeTheDriverIsCalled) {
  store_.SetDurabilityHook([] {
    return absl::ResourceExhaustedError("write /root/kdp/resources.json: No space left on device");
  });
  Pod pod = MakePod("trainer", "uid-trainer", Named("kept"));
  ASSERT_TRUE(controller_->Reserve(&pod).ok());
  absl::Status prepared = controller_->Prepare(pod);
  EXPECT_EQ(prepared.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(prepared.message(), HasSubstr("write the pod's ResourceClaims before preparing"));
  EXPECT_THAT(prepared.message(), HasSubstr("No space left on device"));
  EXPECT_THAT(Log(), IsEmpty());
  EXPECT_TRUE(dra_->Claims().empty());
  store_.SetDurabilityHook({});
}

TEST_F(PodClaimControllerCrashTest, ReleaseOrphansDropsWhatPodsThatAreGoneHold) {
  Pod live = MakePod("live", "uid-live", Named("shared"));
  Pod gone = MakePod("gone", "uid-gone", Named("shared"));
  Pod lonely = MakePod("lonely", "uid-lonely", Named("lonely"));
  Pod generated_live = MakePod("gen-live", "uid-gen-live", FromTemplate("one-gpu"));
  Pod generated_gone = MakePod("gen-gone", "uid-gen-gone", FromTemplate("one-gpu"));
  for (Pod* pod : {&live, &gone, &lonely, &generated_live, &generated_gone}) {
    absl::Status reserved = controller_->Reserve(pod);
    ASSERT_TRUE(reserved.ok()) << pod->name << ": " << reserved;
  }
  const std::string live_claim = generated_live.resource_claim_statuses.at("gpu");
  const std::string gone_claim = generated_gone.resource_claim_statuses.at("gpu");

  controller_->ReleaseOrphans({"uid-live", "uid-gen-live"});

  // A shared claim keeps its allocation for the pod that is still there.
  EXPECT_THAT(ReservedFor(Claim("shared")), ElementsAre("uid-live"));
  EXPECT_TRUE(Claim("shared").status.allocation.has_value());
  // A claim reserved by nobody now is deallocated; one never reserved is left alone.
  EXPECT_THAT(ReservedFor(Claim("lonely")), IsEmpty());
  EXPECT_FALSE(Claim("lonely").status.allocation.has_value());
  EXPECT_FALSE(Claim("kept").status.allocation.has_value());
  // A claim generated for a pod that is gone is deleted; the live pod's stays as it was.
  EXPECT_EQ(store_.GetClaim("default", gone_claim).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ReservedFor(Claim(live_claim)), ElementsAre("uid-gen-live"));
  EXPECT_TRUE(Claim(live_claim).status.allocation.has_value());

  // The devices they held can be allocated again: three of the four GPUs are free.
  Pod next = MakePod("next", "uid-next", Named("lonely"));
  EXPECT_TRUE(controller_->Reserve(&next).ok());
  Pod last = MakePod("last", "uid-last", Named("kept"));
  EXPECT_TRUE(controller_->Reserve(&last).ok());
}

// kdp-manager journals the DRA manager's reference to a pod before NodePrepareResources without
// its own fdatasync (DraManagerOptions::sync_reference_before_prepare): a power loss before the
// pod's record can take it, and the durable reservation stands in for it at the restart.
TEST_F(PodClaimControllerCrashTest, ARestartUnpreparesAClaimWhoseReferenceRecordAPowerLossTook) {
  Pod shared_gone = MakePod("gone", "uid-gone", Named("shared"));
  Pod shared_live = MakePod("live", "uid-live", Named("shared"));
  Pod lonely = MakePod("lonely", "uid-lonely", Named("lonely"));
  Pod reserved_only = MakePod("cut", "uid-cut", Named("kept"));
  for (Pod* pod : {&shared_gone, &shared_live, &lonely}) {
    ASSERT_TRUE(controller_->Reserve(pod).ok()) << pod->name;
    absl::Status prepared = controller_->Prepare(*pod);
    ASSERT_TRUE(prepared.ok()) << pod->name << ": " << prepared;
  }
  ASSERT_TRUE(controller_->Reserve(&reserved_only).ok());  // cut before its Prepare

  // The restart: the store kept the reservations; the DRA records of all but the live pod's
  // reference were lost (a fresh state directory holding only that one).
  ::kdp::testing::TempDir restarted_dir;
  absl::StatusOr<std::unique_ptr<dra::DraManager>> restarted = dra::DraManager::Create(
      {.state_dir = restarted_dir.path(), .claims = &getter_, .plugins = &driver_});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_TRUE((*restarted)->AdoptReservation(Claim("shared"), "uid-live").ok());
  PodClaimController controller(&store_, restarted->get());
  {
    absl::MutexLock lock(&mu_);
    log_.clear();
  }
  controller.ReleaseOrphans({"uid-live"});

  std::vector<std::string> referenced;
  for (const dra::ClaimInfo& info : (*restarted)->Claims()) {
    referenced.push_back(
        absl::StrCat(info.claim_name(), ":", absl::StrJoin(info.state().pod_uids, ",")));
  }
  EXPECT_THAT(referenced,
              ElementsAre("kept:uid-cut", "lonely:uid-lonely", "shared:uid-gone,uid-live"));
  // Released only once recorded: the store lets the devices go.
  EXPECT_THAT(ReservedFor(Claim("shared")), ElementsAre("uid-live"));
  EXPECT_FALSE(Claim("lonely").status.allocation.has_value());
  EXPECT_FALSE(Claim("kept").status.allocation.has_value());

  // The reconcile loop asks the driver to unprepare the claims no live pod uses; the shared one
  // only loses the gone pod's reference.
  ASSERT_TRUE((*restarted)->ReconcileOrphans({"uid-live"}).ok());
  EXPECT_THAT(Log(), ElementsAre("unprepare kept", "unprepare lonely"));
  referenced.clear();
  for (const dra::ClaimInfo& info : (*restarted)->Claims()) {
    referenced.push_back(
        absl::StrCat(info.claim_name(), ":", absl::StrJoin(info.state().pod_uids, ",")));
  }
  EXPECT_THAT(referenced, ElementsAre("shared:uid-live"));
}

TEST_F(PodClaimControllerCrashTest, AReservationIsKeptWhenItsReferenceCannotBeRecorded) {
  Pod gone = MakePod("gone", "uid-gone", Named("lonely"));
  ASSERT_TRUE(controller_->Reserve(&gone).ok());
  // The DRA manager's state directory is gone: its checkpoint cannot be written.
  ::kdp::testing::TempDir broken_dir;
  absl::StatusOr<std::unique_ptr<dra::DraManager>> broken = dra::DraManager::Create(
      {.state_dir = broken_dir.path(), .claims = &getter_, .plugins = &driver_});
  ASSERT_TRUE(broken.ok()) << broken.status();
  std::filesystem::remove_all(broken_dir.path());
  PodClaimController controller(&store_, broken->get());
  controller.ReleaseOrphans({});
  EXPECT_THAT(ReservedFor(Claim("lonely")), ElementsAre("uid-gone"));
  EXPECT_TRUE(Claim("lonely").status.allocation.has_value());
}

}  // namespace
}  // namespace kdp::manager::resourceclaim
