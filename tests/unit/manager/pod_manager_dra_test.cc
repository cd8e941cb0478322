// PodManager's DRA side through the PodResourceClaims interface (pod_manager.h): the scheduler's
// Reserve before any device is allocated, the kubelet's PrepareResources after the containers'
// devices and before they start, each container's CDI devices, and the undoing on rejection and
// deletion (kubelet SyncTerminatingPod: NodeUnprepareResources must succeed before the pod goes).
// The claims side is a recording fake; the device manager is real, with a stub device plugin.
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admission/errors.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/state/state_store.h"
#include "tests/testing/example_names.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

using ::kdp::testing::kGpuResource;

// Records every call ("Reserve <pod>", "Prepare <pod>", "CdiDevices <pod>/<container>", ...),
// what the device manager held for the pod at Reserve and Prepare, and fails a method on demand.
class FakeClaims final : public PodResourceClaims {
 public:
  explicit FakeClaims(const DeviceManager* devices) : devices_(devices) {}

  absl::Status Reserve(Pod* pod) override {
    const bool held = HoldsDevices(*pod);
    absl::MutexLock lock(&mu_);
    calls_.push_back("Reserve " + pod->name);
    held_at_reserve_ = held;
    if (!reserve_error_.ok()) return reserve_error_;
    for (const PodResourceClaim& claim : pod->resource_claims) {
      if (claim.resource_claim_template_name.empty()) continue;
      pod->resource_claim_statuses[claim.name] = absl::StrCat(pod->name, "-", claim.name, "-x7k2q");
    }
    return absl::OkStatus();
  }
  void Release(const Pod& pod) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("Release " + pod.name);
  }
  absl::Status Prepare(const Pod& pod) override {
    const bool held = HoldsDevices(pod);
    absl::MutexLock lock(&mu_);
    calls_.push_back("Prepare " + pod.name);
    held_at_prepare_ = held;
    statuses_at_prepare_ = pod.resource_claim_statuses;
    return prepare_error_;
  }
  absl::Status Unprepare(const Pod& pod) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("Unprepare " + pod.name);
    return unprepare_error_;
  }
  // "vendor.com/gpu=<claim name>" per claim of the container, the claim name resolved as the
  // kubelet does (generated names from the pod's status).
  absl::StatusOr<std::vector<std::string>> CdiDevices(const Pod& pod,
                                                      const Container& container) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("CdiDevices ", pod.name, "/", container.name));
    std::vector<std::string> ids;
    for (const ContainerClaim& used : container.claims) {
      for (const PodResourceClaim& claim : pod.resource_claims) {
        if (claim.name != used.name) continue;
        std::string name = claim.resource_claim_name;
        if (auto it = pod.resource_claim_statuses.find(claim.name);
            it != pod.resource_claim_statuses.end()) {
          name = it->second;
        }
        ids.push_back("vendor.com/gpu=" + name);
      }
    }
    return ids;
  }

  void FailReserve(absl::Status status) {
    absl::MutexLock lock(&mu_);
    reserve_error_ = std::move(status);
  }
  void FailPrepare(absl::Status status) {
    absl::MutexLock lock(&mu_);
    prepare_error_ = std::move(status);
  }
  void FailUnprepare(absl::Status status) {
    absl::MutexLock lock(&mu_);
    unprepare_error_ = std::move(status);
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  void ClearCalls() {
    absl::MutexLock lock(&mu_);
    calls_.clear();
  }
  bool held_at_reserve() const {
    absl::MutexLock lock(&mu_);
    return held_at_reserve_;
  }
  bool held_at_prepare() const {
    absl::MutexLock lock(&mu_);
    return held_at_prepare_;
  }
  std::map<std::string, std::string> statuses_at_prepare() const {
    absl::MutexLock lock(&mu_);
    return statuses_at_prepare_;
  }

 private:
  bool HoldsDevices(const Pod& pod) const {
    for (const Container* container : ContainersInAdmissionOrder(pod)) {
      if (!devices_->ContainerEntries(pod.uid, container->name).empty()) return true;
    }
    return false;
  }

  const DeviceManager* const devices_;
  mutable absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  absl::Status reserve_error_ ABSL_GUARDED_BY(mu_);
  absl::Status prepare_error_ ABSL_GUARDED_BY(mu_);
  absl::Status unprepare_error_ ABSL_GUARDED_BY(mu_);
  bool held_at_reserve_ ABSL_GUARDED_BY(mu_) = false;
  bool held_at_prepare_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::string> statuses_at_prepare_ ABSL_GUARDED_BY(mu_);
};

Container MakeContainer(const std::string& name, int64_t gpus,
                        std::vector<ContainerClaim> claims = {}) {
  Container container{.name = name,
                      .kind = ContainerKind::kApp,
                      .extended_resources = {},
                      .other_limits = {},
                      .claims = std::move(claims)};
  if (gpus > 0) container.extended_resources[kGpuResource] = gpus;
  return container;
}

// A pod with container "main" (one GPU, using claim "gpu" from template "one-gpu") and container
// "helper" (no devices, no claims).
Pod PodWithClaim(const std::string& name) {
  Pod pod;
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.containers = {MakeContainer("main", 1, {{"gpu", ""}}), MakeContainer("helper", 0)};
  pod.resource_claims = {
      {.name = "gpu", .resource_claim_name = "", .resource_claim_template_name = "one-gpu"}};
  return pod;
}

Pod PodWithoutClaims(const std::string& name, int64_t gpus) {
  Pod pod;
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.containers = {MakeContainer("main", gpus)};
  return pod;
}

class PodManagerDraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string plugins_dir = dir_.Path("device-plugins");
    ASSERT_TRUE(MakeDirectories(plugins_dir).ok());
    devices_ = std::make_unique<DeviceManager>(DeviceManagerOptions{.plugins_dir = plugins_dir});
    claims_ = std::make_unique<FakeClaims>(devices_.get());
    pods_ = std::make_unique<PodManager>(devices_.get(), nullptr, nullptr, claims_.get());
    devices_->SetActivePodsSource(pods_.get());
    pods_->Restore({});
    ASSERT_TRUE(devices_->Start().ok());
    plugin_ = std::make_unique<StubPlugin>(plugins_dir + "/gpu.sock");
    plugin_->SetDevices({MakeDevice("g0"), MakeDevice("g1")});
    ASSERT_TRUE(plugin_->Start().ok());
    ASSERT_TRUE(
        StubPlugin::Register(plugins_dir + "/kubelet.sock", "v1beta1", "gpu.sock", kGpuResource)
            .ok());
    ASSERT_TRUE(WaitUntil([&] {
      for (const ResourceDevices& resource : devices_->Resources()) {
        if (resource.name == kGpuResource) return resource.connected && resource.allocatable() == 2;
      }
      return false;
    }));
  }
  void TearDown() override {
    if (plugin_ != nullptr) plugin_->Stop();
    if (devices_ != nullptr) devices_->Stop();
  }

  // The GPUs the pod's containers hold.
  std::set<std::string> HeldGpus(const Pod& pod) const {
    std::set<std::string> out;
    for (const Container* container : ContainersInAdmissionOrder(pod)) {
      for (const PodDevicesEntry& entry : devices_->ContainerEntries(pod.uid, container->name)) {
        for (const std::string& id : DeviceIds(entry.devices)) out.insert(id);
      }
    }
    return out;
  }
  // Both GPUs are free: a pod asking for two is admitted (and deleted again).
  void ExpectAllGpusFree() {
    absl::StatusOr<AdmitResult> probe = pods_->Admit(PodWithoutClaims("probe", 2));
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_TRUE(probe->admitted) << probe->reason << ": " << probe->message;
    if (probe->admitted) {
      EXPECT_TRUE(pods_->Delete("default", "probe").ok());
    }
  }

  TempDir dir_;
  std::unique_ptr<DeviceManager> devices_;
  std::unique_ptr<FakeClaims> claims_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<StubPlugin> plugin_;
};

TEST_F(PodManagerDraTest, PodWithClaimsIsReservedThenAllocatedThenPreparedWithCdiDevices) {
  absl::StatusOr<AdmitResult> result = pods_->Admit(PodWithClaim("trainer"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->admitted) << result->reason << ": " << result->message;

  EXPECT_THAT(claims_->calls(),
              ElementsAre("Reserve trainer", "Prepare trainer", "CdiDevices trainer/main"));
  // Reserve ran before any device was allocated, Prepare after.
  EXPECT_FALSE(claims_->held_at_reserve());
  EXPECT_TRUE(claims_->held_at_prepare());
  const std::map<std::string, std::string> generated = {{"gpu", "trainer-gpu-x7k2q"}};
  EXPECT_EQ(claims_->statuses_at_prepare(), generated);

  ASSERT_EQ(result->pod.containers.size(), 2u);
  EXPECT_EQ(result->pod.containers[0].spec.name, "main");
  EXPECT_THAT(result->pod.containers[0].options.cdi_devices,
              ElementsAre("vendor.com/gpu=trainer-gpu-x7k2q"));
  EXPECT_THAT(result->pod.containers[0].devices.at(kGpuResource), SizeIs(1));
  EXPECT_THAT(result->pod.containers[1].options.cdi_devices, IsEmpty());
  // The generated claim names are kept with the admitted pod (and what is persisted).
  EXPECT_EQ(result->pod.pod.resource_claim_statuses, generated);
  std::optional<AdmittedPod> listed = pods_->Get("default", "trainer");
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->pod.resource_claim_statuses, generated);
  EXPECT_THAT(listed->containers[0].options.cdi_devices,
              ElementsAre("vendor.com/gpu=trainer-gpu-x7k2q"));
  ASSERT_EQ(pods_->Pods().size(), 1u);
  EXPECT_EQ(pods_->Pods()[0].resource_claim_statuses, generated);
}

TEST_F(PodManagerDraTest, ReserveErrorRejectsAsFailedSchedulingWithoutPrepare) {
  claims_->FailReserve(absl::ResourceExhaustedError(
      "pod claim \"gpu\" (ResourceClaim default/trainer-gpu-x7k2q): cannot allocate all claims"));

  absl::StatusOr<AdmitResult> result = pods_->Admit(PodWithClaim("trainer"));

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->admitted);
  EXPECT_EQ(result->reason, errors::kFailedScheduling);
  EXPECT_EQ(result->reason, "FailedScheduling");
  EXPECT_EQ(result->message,
            "0/1 nodes are available: pod claim \"gpu\" (ResourceClaim "
            "default/trainer-gpu-x7k2q): cannot allocate all claims");
  EXPECT_THAT(claims_->calls(), Not(Contains("Prepare trainer")));
  EXPECT_THAT(claims_->calls(), Not(Contains("Unprepare trainer")));
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
  ExpectAllGpusFree();
}

TEST_F(PodManagerDraTest, PrepareErrorRejectsUnpreparesReleasesAndFreesDevices) {
  claims_->FailPrepare(absl::UnavailableError(
      "prepare dynamic resources: NodePrepareResources: driver gpu.example.com is down"));

  absl::StatusOr<AdmitResult> result = pods_->Admit(PodWithClaim("trainer"));

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->admitted);
  EXPECT_EQ(result->reason, errors::kFailedPrepareDynamicResources);
  EXPECT_EQ(result->reason, "FailedPrepareDynamicResources");
  EXPECT_EQ(result->message,
            "Failed to prepare dynamic resources: prepare dynamic resources: "
            "NodePrepareResources: driver gpu.example.com is down");
  EXPECT_THAT(claims_->calls(), ElementsAre("Reserve trainer", "Prepare trainer",
                                            "Unprepare trainer", "Release trainer"));
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
  EXPECT_THAT(pods_->ActivePodUids(), Not(Contains("uid-trainer")));
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
  ExpectAllGpusFree();
}

TEST_F(PodManagerDraTest, DeleteUnpreparesThenReleasesAndFreesDevices) {
  ASSERT_TRUE(pods_->Admit(PodWithClaim("trainer")).ok());
  ASSERT_THAT(HeldGpus(PodWithClaim("trainer")), SizeIs(1));
  claims_->ClearCalls();

  absl::StatusOr<std::string> deleted = pods_->Delete("default", "trainer");

  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, "uid-trainer");
  EXPECT_THAT(claims_->calls(), ElementsAre("Unprepare trainer", "Release trainer"));
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
  ExpectAllGpusFree();
}

TEST_F(PodManagerDraTest, ReleaseOnDeleteSeesTheGeneratedClaimNames) {
  // The pod handed to Release must be the admitted one, with resourceClaimStatuses: without
  // them the generated claim could not be found and deleted.
  class NameCheckingClaims final : public PodResourceClaims {
   public:
    absl::Status Reserve(Pod* pod) override {
      pod->resource_claim_statuses["gpu"] = "trainer-gpu-abcde";
      return absl::OkStatus();
    }
    void Release(const Pod& pod) override {
      absl::MutexLock lock(&mu_);
      released_.push_back(pod.resource_claim_statuses);
    }
    absl::Status Prepare(const Pod&) override { return absl::OkStatus(); }
    absl::Status Unprepare(const Pod& pod) override {
      absl::MutexLock lock(&mu_);
      unprepared_.push_back(pod.resource_claim_statuses);
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<std::string>> CdiDevices(const Pod&, const Container&) override {
      return std::vector<std::string>{};
    }
    std::vector<std::map<std::string, std::string>> released() const {
      absl::MutexLock lock(&mu_);
      return released_;
    }
    std::vector<std::map<std::string, std::string>> unprepared() const {
      absl::MutexLock lock(&mu_);
      return unprepared_;
    }

   private:
    mutable absl::Mutex mu_;
    std::vector<std::map<std::string, std::string>> released_ ABSL_GUARDED_BY(mu_);
    std::vector<std::map<std::string, std::string>> unprepared_ ABSL_GUARDED_BY(mu_);
  } claims;
  // A second PodManager over the same device manager, whose garbage collection still asks the
  // fixture's: this pod holds no devices.
  PodManager pods(devices_.get(), nullptr, nullptr, &claims);
  Pod pod = PodWithClaim("trainer");
  pod.containers[0].extended_resources.clear();
  ASSERT_TRUE(pods.Admit(pod).ok());
  ASSERT_TRUE(pods.Delete("default", "trainer").ok());
  const std::map<std::string, std::string> generated = {{"gpu", "trainer-gpu-abcde"}};
  EXPECT_THAT(claims.unprepared(), ElementsAre(generated));
  EXPECT_THAT(claims.released(), ElementsAre(generated));
}

TEST_F(PodManagerDraTest, UnprepareErrorOnDeleteKeepsThePodUntilARetrySucceeds) {
  ASSERT_TRUE(pods_->Admit(PodWithClaim("trainer")).ok());
  claims_->ClearCalls();
  claims_->FailUnprepare(absl::UnavailableError(
      "unprepare dynamic resources: NodeUnprepareResources: driver gpu.example.com is down"));

  absl::StatusOr<std::string> deleted = pods_->Delete("default", "trainer");

  EXPECT_EQ(deleted.status().code(), absl::StatusCode::kUnavailable) << deleted.status();
  EXPECT_THAT(std::string(deleted.status().message()),
              HasSubstr("unprepare dynamic resources: NodeUnprepareResources"));
  EXPECT_THAT(claims_->calls(), ElementsAre("Unprepare trainer"));
  ASSERT_TRUE(pods_->Get("default", "trainer").has_value());
  EXPECT_THAT(pods_->ActivePodUids(), Contains("uid-trainer"));
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), SizeIs(1));

  claims_->FailUnprepare(absl::OkStatus());
  absl::StatusOr<std::string> retried = pods_->Delete("default", "trainer");
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_THAT(claims_->calls(),
              ElementsAre("Unprepare trainer", "Unprepare trainer", "Release trainer"));
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
}

// The kubelet's pod workers keep terminating a pod until NodeUnprepareResources succeeds: the pod
// shows as terminating, its name cannot be reused, and FinishTerminating (the reconcile loop's
// call) completes the deletion once the driver answers.
TEST_F(PodManagerDraTest, FailedUnprepareLeavesThePodTerminatingUntilFinishTerminating) {
  ASSERT_TRUE(pods_->Admit(PodWithClaim("trainer")).ok());
  ASSERT_TRUE(pods_->Admit(PodWithoutClaims("plain", 1)).ok());
  EXPECT_FALSE(pods_->Get("default", "trainer")->pod.terminating);
  claims_->ClearCalls();
  claims_->FailUnprepare(absl::UnavailableError("driver gpu.example.com is down"));

  absl::StatusOr<std::string> deleted = pods_->Delete("default", "trainer");
  EXPECT_EQ(deleted.status().code(), absl::StatusCode::kUnavailable) << deleted.status();
  EXPECT_THAT(std::string(deleted.status().message()),
              HasSubstr("pod default/trainer is terminating; its deletion is retried: "
                        "driver gpu.example.com is down"));
  std::optional<AdmittedPod> terminating = pods_->Get("default", "trainer");
  ASSERT_TRUE(terminating.has_value());
  EXPECT_TRUE(terminating->pod.terminating);
  EXPECT_FALSE(pods_->Get("default", "plain")->pod.terminating);
  absl::StatusOr<AdmitResult> again = pods_->Admit(PodWithClaim("trainer"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("is terminating"));

  EXPECT_EQ(pods_->FinishTerminating(), 0);  // the driver is still down
  EXPECT_TRUE(pods_->Get("default", "trainer").has_value());
  claims_->FailUnprepare(absl::OkStatus());
  EXPECT_EQ(pods_->FinishTerminating(), 1);
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
  EXPECT_TRUE(pods_->Get("default", "plain").has_value());  // running pods are not touched
  EXPECT_THAT(claims_->calls(), ElementsAre("Unprepare trainer", "Unprepare trainer",
                                            "Unprepare trainer", "Release trainer"));
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
  EXPECT_EQ(pods_->FinishTerminating(), 0);
}

// The terminating record is synced before any driver is asked to unprepare: a manager that
// stops (or crashes) after it brings the pod back terminating, never as a running pod whose
// claims are gone, and the restarted manager completes the deletion.
TEST_F(PodManagerDraTest, TerminatingIsRecordedBeforeUnprepareAndSurvivesARestart) {
  const StateStoreOptions options{.checkpoint_path = dir_.Path("checkpoint"),
                                  .pods_path = dir_.Path("pods.json"),
                                  .journal_path = dir_.Path("journal")};
  Pod pod = PodWithClaim("trainer");
  pod.containers[0].extended_resources.clear();  // claims only: the device manager has no store
  {
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    PodManager pods(devices_.get(), store->get(), nullptr, claims_.get());
    pods.Restore({});
    absl::StatusOr<AdmitResult> admitted = pods.Admit(pod);
    ASSERT_TRUE(admitted.ok() && admitted->admitted) << admitted.status();
    claims_->FailUnprepare(absl::UnavailableError("driver gpu.example.com is down"));
    EXPECT_FALSE(pods.Delete("default", "trainer").ok());
  }  // the store closes without a compaction: what comes back is the journal's

  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ(restored.pods.size(), 1u);
  EXPECT_TRUE(restored.pods[0].terminating);
  PodManager restarted(devices_.get(), store->get(), nullptr, claims_.get());
  claims_->ClearCalls();
  restarted.Restore(restored.pods);
  // Its claims may be unprepared already: no CDI devices are looked up for it.
  EXPECT_THAT(claims_->calls(), IsEmpty());
  ASSERT_TRUE(restarted.Get("default", "trainer").has_value());
  EXPECT_TRUE(restarted.Get("default", "trainer")->pod.terminating);
  claims_->FailUnprepare(absl::OkStatus());
  EXPECT_EQ(restarted.FinishTerminating(), 1);
  EXPECT_THAT(claims_->calls(), ElementsAre("Unprepare trainer", "Release trainer"));
  store->reset();

  RestoredState after;
  store = StateStore::Open(options, &after);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(after.pods, IsEmpty());
}

TEST_F(PodManagerDraTest, PodsWithoutClaimsNeverTouchTheClaimsInterface) {
  absl::StatusOr<AdmitResult> result = pods_->Admit(PodWithoutClaims("plain", 1));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->admitted) << result->message;
  EXPECT_THAT(result->pod.containers[0].options.cdi_devices, IsEmpty());
  ASSERT_TRUE(pods_->Delete("default", "plain").ok());
  // A rejected pod without claims (asks for more GPUs than there are) neither.
  absl::StatusOr<AdmitResult> rejected = pods_->Admit(PodWithoutClaims("greedy", 3));
  ASSERT_TRUE(rejected.ok()) << rejected.status();
  EXPECT_FALSE(rejected->admitted);
  EXPECT_THAT(claims_->calls(), IsEmpty());
}

TEST_F(PodManagerDraTest, DeviceRejectionAfterReserveReleasesTheClaims) {
  // Reserve succeeds, then the device manager cannot give three GPUs: the claims are released
  // and never prepared.
  Pod pod = PodWithClaim("greedy");
  pod.containers[0].extended_resources[kGpuResource] = 3;

  absl::StatusOr<AdmitResult> result = pods_->Admit(pod);

  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->admitted);
  EXPECT_NE(result->reason, errors::kFailedScheduling);
  EXPECT_THAT(claims_->calls(), ElementsAre("Reserve greedy", "Release greedy"));
  ExpectAllGpusFree();
}

TEST_F(PodManagerDraTest, PodWithClaimsIsRejectedWhenTheManagerRunsWithoutDra) {
  PodManager pods(devices_.get());  // no PodResourceClaims
  absl::StatusOr<AdmitResult> result = pods.Admit(PodWithClaim("trainer"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->admitted);
  EXPECT_EQ(result->reason, "FailedScheduling");
  EXPECT_THAT(result->message, HasSubstr("resource claims"));
  EXPECT_THAT(result->message, HasSubstr("without DRA"));
  EXPECT_FALSE(pods.Get("default", "trainer").has_value());
  EXPECT_THAT(HeldGpus(PodWithClaim("trainer")), IsEmpty());
  EXPECT_THAT(claims_->calls(), IsEmpty());
}

TEST_F(PodManagerDraTest, RestoredPodsGetTheirCdiDevicesWithoutReserveOrPrepare) {
  FakeClaims claims(devices_.get());
  PodManager restarted(devices_.get(), nullptr, nullptr, &claims);
  Pod pod = PodWithClaim("trainer");
  pod.containers[0].extended_resources.clear();
  pod.resource_claim_statuses["gpu"] = "trainer-gpu-r3st0";

  restarted.Restore({pod});

  EXPECT_THAT(claims.calls(), ElementsAre("CdiDevices trainer/main"));
  std::optional<AdmittedPod> restored = restarted.Get("default", "trainer");
  ASSERT_TRUE(restored.has_value());
  EXPECT_THAT(restored->containers[0].options.cdi_devices,
              ElementsAre("vendor.com/gpu=trainer-gpu-r3st0"));
  EXPECT_EQ(restored->pod.resource_claim_statuses.at("gpu"), "trainer-gpu-r3st0");
}

// The DRA reconcile loop sees every admitted pod, and holds no lock while it runs (it calls
// drivers, which may hang): an admission goes on meanwhile. DraManager::ReconcileOrphans leaves
// the claims of pods that began preparing since its previous run alone (dra/manager_test).
TEST_F(PodManagerDraTest, ReconcileSeesActivePodsAndDoesNotHoldAdmissionsBack) {
  absl::StatusOr<AdmitResult> first = pods_->Admit(PodWithClaim("first"));
  ASSERT_TRUE(first.ok() && first->admitted);
  absl::Notification second_done;
  std::thread second;
  pods_->WithActivePodsSettled([&](const std::set<std::string>& active) {
    EXPECT_THAT(active, ::testing::ElementsAre(first->pod.pod.uid));
    second = std::thread([&] {
      EXPECT_TRUE(pods_->Admit(PodWithClaim("second")).ok());
      second_done.Notify();
    });
    EXPECT_TRUE(second_done.WaitForNotificationWithTimeout(absl::Seconds(5)))
        << "an admission waited for the reconcile loop";
  });
  second.join();
  EXPECT_TRUE(pods_->Get("default", "second").has_value());
}

}  // namespace
}  // namespace kdp::manager
