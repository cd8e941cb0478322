// DraManager: the kubelet's pkg/kubelet/cm/dra/manager_test.go scenarios (its 1.31 list and the
// 1.34+ items without extended resources, health or share-id gates) with the kubelet's error texts,
// plus batching, the #131957/#135919/#116411 fixes, restart from the checkpoint and the reconcile
// loop. Drivers and the API server are fakes.
#include "manager/src/dra/manager.h"

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/dra/claim_test_objects.h"

namespace kdp::manager::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kPodName[] = "test-pod";
constexpr char kPodClaim[] = "test-pod-claim";

// ---- Fakes
// ----------------------------------------------------------------------------------------

class FakeClaims : public ClaimGetter {
 public:
  void Put(resourceapi::ResourceClaim claim) {
    absl::MutexLock lock(&mu_);
    claims_[claim.metadata.namespace_ + "/" + claim.metadata.name] = std::move(claim);
  }
  absl::StatusOr<resourceapi::ResourceClaim> Get(const std::string& namespace_,
                                                 const std::string& name) override {
    absl::MutexLock lock(&mu_);
    auto it = claims_.find(namespace_ + "/" + name);
    if (it == claims_.end()) {
      return absl::NotFoundError("resourceclaims.resource.k8s.io \"" + name + "\" not found");
    }
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, resourceapi::ResourceClaim> claims_ ABSL_GUARDED_BY(mu_);
};

// A driver: by default every claim succeeds with one device whose CDI ID names the claim.
class FakePlugin : public DraPlugin {
 public:
  using PrepareFn = std::function<absl::StatusOr<drapb::NodePrepareResourcesResponse>(
      const drapb::NodePrepareResourcesRequest&)>;
  using UnprepareFn = std::function<absl::StatusOr<drapb::NodeUnprepareResourcesResponse>(
      const drapb::NodeUnprepareResourcesRequest&)>;

  explicit FakePlugin(std::string name) : name_(std::move(name)) {}
  const std::string& driver_name() const override { return name_; }

  absl::StatusOr<drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const drapb::NodePrepareResourcesRequest& request) override {
    PrepareFn fn;
    {
      absl::MutexLock lock(&mu_);
      ++prepare_calls_;
      prepare_requests_.push_back(request);
      fn = prepare_;
    }
    if (fn) return fn(request);
    drapb::NodePrepareResourcesResponse response;
    for (const drapb::Claim& claim : request.claims()) {
      drapb::Device* device = (*response.mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name("worker-1");
      device->set_device_name("dev-" + claim.name());
      device->add_cdi_device_ids(name_ + "/test=" + claim.name());
    }
    return response;
  }

  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const drapb::NodeUnprepareResourcesRequest& request) override {
    UnprepareFn fn;
    {
      absl::MutexLock lock(&mu_);
      ++unprepare_calls_;
      unprepare_requests_.push_back(request);
      fn = unprepare_;
    }
    if (fn) return fn(request);
    drapb::NodeUnprepareResourcesResponse response;
    for (const drapb::Claim& claim : request.claims()) (*response.mutable_claims())[claim.uid()];
    return response;
  }

  void OnPrepare(PrepareFn fn) {
    absl::MutexLock lock(&mu_);
    prepare_ = std::move(fn);
  }
  void OnUnprepare(UnprepareFn fn) {
    absl::MutexLock lock(&mu_);
    unprepare_ = std::move(fn);
  }
  int prepare_calls() {
    absl::MutexLock lock(&mu_);
    return prepare_calls_;
  }
  int unprepare_calls() {
    absl::MutexLock lock(&mu_);
    return unprepare_calls_;
  }
  std::vector<drapb::NodePrepareResourcesRequest> prepare_requests() {
    absl::MutexLock lock(&mu_);
    return prepare_requests_;
  }
  std::vector<drapb::NodeUnprepareResourcesRequest> unprepare_requests() {
    absl::MutexLock lock(&mu_);
    return unprepare_requests_;
  }

 private:
  const std::string name_;
  absl::Mutex mu_;
  PrepareFn prepare_ ABSL_GUARDED_BY(mu_);
  UnprepareFn unprepare_ ABSL_GUARDED_BY(mu_);
  int prepare_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int unprepare_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<drapb::NodePrepareResourcesRequest> prepare_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<drapb::NodeUnprepareResourcesRequest> unprepare_requests_ ABSL_GUARDED_BY(mu_);
};

class FakePlugins : public DraPlugins {
 public:
  std::shared_ptr<FakePlugin> Register(const std::string& driver) {
    auto plugin = std::make_shared<FakePlugin>(driver);
    absl::MutexLock lock(&mu_);
    plugins_[driver] = plugin;
    return plugin;
  }
  absl::StatusOr<std::shared_ptr<DraPlugin>> Get(const std::string& driver) override {
    absl::MutexLock lock(&mu_);
    auto it = plugins_.find(driver);
    if (it == plugins_.end()) {
      return absl::FailedPreconditionError("DRA driver " + driver + " is not registered");
    }
    return std::shared_ptr<DraPlugin>(it->second);
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<FakePlugin>> plugins_ ABSL_GUARDED_BY(mu_);
};

// ---- Objects
// --------------------------------------------------------------------------------------

resourceapi::OwnerReference PodOwner(const std::string& uid) {
  resourceapi::OwnerReference ref;
  ref.api_version = "v1";
  ref.kind = "Pod";
  ref.name = "test-pod";
  ref.uid = uid;
  ref.controller = true;
  return ref;
}

resourceapi::ResourceClaim Claim(const std::string& name, const std::string& uid,
                                 const std::vector<std::string>& drivers,
                                 const std::string& reserved_for = kPodUid) {
  resourceapi::ResourceClaim claim;
  claim.metadata.name = name;
  claim.metadata.namespace_ = kNamespace;
  claim.metadata.uid = uid;
  claim.status.allocation = resourceapi::AllocationResult{};
  for (const std::string& driver : drivers) {
    claim.status.allocation->results.push_back(Result(driver, "worker-1", "dev"));
  }
  if (!reserved_for.empty()) {
    claim.status.reserved_for.push_back(Consumer(kPodName, reserved_for));
  }
  return claim;
}

Pod TestPod(const std::string& uid = kPodUid,
            const std::vector<std::pair<std::string, std::string>>& claims = {
                {kPodClaim, kClaimName}}) {
  Pod pod;
  pod.namespace_ = kNamespace;
  pod.name = kPodName;
  pod.uid = uid;
  Container container;
  container.name = "test-container";
  for (const auto& [pod_claim, claim_name] : claims) {
    pod.resource_claims.push_back(PodClaim(pod_claim, claim_name));
    container.claims.push_back(UsesClaim(pod_claim));
  }
  pod.containers.push_back(container);
  return pod;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class DraManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = plugins_.Register(kDriver);
    manager_ = NewManager();
    ASSERT_NE(manager_, nullptr);
  }

  std::unique_ptr<DraManager> NewManager() {
    absl::StatusOr<std::unique_ptr<DraManager>> manager =
        DraManager::Create({.state_dir = dir_.path(), .claims = &claims_, .plugins = &plugins_});
    EXPECT_TRUE(manager.ok()) << manager.status();
    return manager.ok() ? *std::move(manager) : nullptr;
  }

  // The stored claim states, read from the checkpoint file.
  std::vector<state::ClaimInfoState> Stored() {
    absl::StatusOr<std::vector<state::ClaimInfoState>> stored =
        DecodeCheckpoint(ReadAll(manager_->checkpoint_path()));
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? *stored : std::vector<state::ClaimInfoState>{};
  }

  std::optional<ClaimInfo> Cached(const std::string& name = kClaimName) {
    for (const ClaimInfo& info : manager_->Claims()) {
      if (info.claim_name() == name) return info;
    }
    return std::nullopt;
  }

  // Prepares the standard pod with the standard claim.
  void PrepareStandard() {
    claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
    ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  }

  testing::TempDir dir_;
  FakeClaims claims_;
  FakePlugins plugins_;
  std::shared_ptr<FakePlugin> plugin_;
  std::unique_ptr<DraManager> manager_;
};

// ---- NewManagerImpl
// -------------------------------------------------------------------------------

TEST(NewDraManager, InvalidDirectoryPath) {
  FakeClaims claims;
  FakePlugins plugins;
  absl::StatusOr<std::unique_ptr<DraManager>> manager =
      DraManager::Create({.state_dir = "", .claims = &claims, .plugins = &plugins});
  EXPECT_EQ(manager.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NewDraManager, MissingDependencies) {
  testing::TempDir dir;
  EXPECT_EQ(DraManager::Create({.state_dir = dir.path()}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DraManagerTest, ValidDirectoryPathCreatesAnEmptyCheckpoint) {
  EXPECT_EQ(manager_->checkpoint_path(), dir_.Path("dra_manager_state"));
  EXPECT_THAT(Stored(), IsEmpty());
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

TEST(NewDraManager, ACorruptedCheckpointRefusesToStart) {
  testing::TempDir dir;
  std::ofstream(dir.Path("dra_manager_state")) << R"({"Data":"{}","Checksum":0})";
  FakeClaims claims;
  FakePlugins plugins;
  absl::StatusOr<std::unique_ptr<DraManager>> manager =
      DraManager::Create({.state_dir = dir.path(), .claims = &claims, .plugins = &plugins});
  EXPECT_EQ(manager.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(manager.status().message(),
              HasSubstr("failed to get checkpoint dra_manager_state: checkpoint is corrupted"));
}

// ---- GetResources
// ---------------------------------------------------------------------------------

TEST_F(DraManagerTest, GetResourcesClaimInfoWithDevices) {
  PrepareStandard();
  absl::StatusOr<std::vector<std::string>> ids =
      manager_->GetResources(TestPod(), TestPod().containers[0]);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre("test-driver/test=test-claim"));
}

TEST_F(DraManagerTest, GetResourcesNilClaimInfo) {
  absl::StatusOr<std::vector<std::string>> ids =
      manager_->GetResources(TestPod(), TestPod().containers[0]);
  EXPECT_FALSE(ids.ok());
  EXPECT_THAT(ids.status().message(),
              HasSubstr("unable to get claim info for ResourceClaim test-claim"));
}

TEST_F(DraManagerTest, GetResourcesFiltersByTheContainersRequest) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest& request) {
    drapb::NodePrepareResourcesResponse response;
    auto& result = (*response.mutable_claims())[request.claims(0).uid()];
    for (const char* request_name : {"gpu", "nic"}) {
      drapb::Device* device = result.add_devices();
      device->set_pool_name("p");
      device->set_device_name(request_name);
      device->add_request_names(request_name);
      device->add_cdi_device_ids(std::string("vendor.com/class=") + request_name);
    }
    return response;
  });
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  Pod pod = TestPod();
  Container nic_only = pod.containers[0];
  nic_only.claims[0].request = "nic";
  EXPECT_THAT(*manager_->GetResources(pod, nic_only), ElementsAre("vendor.com/class=nic"));
  EXPECT_THAT(*manager_->GetResources(pod, pod.containers[0]),
              ElementsAre("vendor.com/class=gpu", "vendor.com/class=nic"));
  Container none;  // a container without claims gets nothing
  EXPECT_THAT(*manager_->GetResources(pod, none), IsEmpty());
}

// ---- PrepareResources
// -----------------------------------------------------------------------------

TEST_F(DraManagerTest, APodWithoutClaimsNeedsNothing) {
  Pod pod = TestPod(kPodUid, {});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_THAT(*manager_->GetResources(pod, pod.containers[0]), IsEmpty());
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 0);
  EXPECT_EQ(plugin_->unprepare_calls(), 0);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

TEST_F(DraManagerTest, PrepareClaimDoesNotExist) {
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(),
              HasSubstr("prepare dynamic resources: fetch ResourceClaim test-claim: "));
  EXPECT_EQ(plugin_->prepare_calls(), 0);
}

TEST_F(DraManagerTest, PrepareUnknownDriverTouchesNothing) {
  claims_.Put(Claim(kClaimName, kClaimUid, {"unknown driver"}));
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: DRA driver unknown driver is not registered");
  // #131957: nothing was cached, so the pod can go without any NodeUnprepareResources.
  EXPECT_THAT(manager_->Claims(), IsEmpty());
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_THAT(Stored(), IsEmpty());
}

TEST_F(DraManagerTest, PrepareValidationFailureOfALaterClaimCachesNoneOfThem) {
  claims_.Put(Claim("claim-a", "uid-a", {kDriver}));
  claims_.Put(Claim("claim-b", "uid-b", {"unknown driver"}));
  Pod pod = TestPod(kPodUid, {{"a", "claim-a"}, {"b", "claim-b"}});
  EXPECT_FALSE(manager_->PrepareResources(pod).ok());
  EXPECT_THAT(manager_->Claims(), IsEmpty());
  EXPECT_EQ(plugin_->prepare_calls(), 0);
}

TEST_F(DraManagerTest, PrepareDriverReturnsNilValue) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest& request) {
    drapb::NodePrepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()];  // no devices, no error
    return response;
  });
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 1);
  ASSERT_TRUE(Cached().has_value());
  EXPECT_TRUE(Cached()->IsPrepared());
  EXPECT_THAT(Cached()->state().driver_state.at(kDriver).devices, IsEmpty());
}

TEST_F(DraManagerTest, PrepareDriverReturnsEmptyResult) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest&) {
    return drapb::NodePrepareResourcesResponse();
  });
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims");
  EXPECT_EQ(plugin_->prepare_calls(), 1);
  // The pod reference stays (checkpointed before the call), so unprepare will clean up.
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_FALSE(Cached()->IsPrepared());
}

TEST_F(DraManagerTest, PreparePodIsNotAllowedToUseResourceClaim) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}, /*reserved_for=*/"another-pod"));
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: pod test-pod (test-pod-uid) is not allowed to use "
            "ResourceClaim test-claim (test-claim-uid)");
  EXPECT_EQ(plugin_->prepare_calls(), 0);
}

TEST_F(DraManagerTest, PrepareNoContainerUsesTheClaim) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  Pod pod = TestPod();
  pod.containers[0].claims.clear();
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 1);
}

TEST_F(DraManagerTest, PrepareResourceAlreadyPrepared) {
  PrepareStandard();
  ASSERT_EQ(plugin_->prepare_calls(), 1);
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 1);
}

TEST_F(DraManagerTest, PrepareShouldTimeout) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest&) {
    return absl::StatusOr<drapb::NodePrepareResourcesResponse>(
        absl::DeadlineExceededError("context deadline exceeded"));
  });
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: NodePrepareResources: rpc error: code = DeadlineExceeded "
            "desc = context deadline exceeded");
  EXPECT_EQ(plugin_->prepare_calls(), 1);
}

TEST_F(DraManagerTest, PrepareClaimNotInCacheStoresTheState) {
  PrepareStandard();
  EXPECT_EQ(plugin_->prepare_calls(), 1);
  ASSERT_TRUE(Cached().has_value());
  EXPECT_TRUE(Cached()->IsPrepared());
  state::ClaimInfoState want = {
      .claim_uid = kClaimUid,
      .claim_name = kClaimName,
      .namespace_ = kNamespace,
      .pod_uids = {kPodUid},
      .driver_state = {{kDriver,
                        {.devices = {{.pool_name = "worker-1",
                                      .device_name = "dev-test-claim",
                                      .cdi_device_ids = {"test-driver/test=test-claim"}}}}}}};
  EXPECT_EQ(Cached()->state(), want);
  EXPECT_EQ(Stored(), std::vector<state::ClaimInfoState>{want});
  EXPECT_EQ(manager_->ClaimsInUse(), (std::map<std::string, int64_t>{{"<any>", 1}, {kDriver, 1}}));
}

TEST_F(DraManagerTest, PrepareSendsTheClaimIdentity) {
  PrepareStandard();
  ASSERT_EQ(plugin_->prepare_requests().size(), 1u);
  const drapb::NodePrepareResourcesRequest request = plugin_->prepare_requests()[0];
  ASSERT_EQ(request.claims_size(), 1);
  EXPECT_EQ(request.claims(0).namespace_(), kNamespace);
  EXPECT_EQ(request.claims(0).uid(), kClaimUid);
  EXPECT_EQ(request.claims(0).name(), kClaimName);
}

TEST_F(DraManagerTest, PrepareClaimUidsMismatch) {
  PrepareStandard();
  // The claim was deleted and re-created under the same name while the old one is cached.
  claims_.Put(Claim(kClaimName, "new-claim-uid", {kDriver}, "second-pod"));
  absl::Status status = manager_->PrepareResources(TestPod("second-pod"));
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: locked cache operation: old ResourceClaim with same name "
            "test-claim and different UID test-claim-uid still exists (previous pod "
            "force-deleted?!)");
  EXPECT_EQ(plugin_->prepare_calls(), 1);
}

TEST_F(DraManagerTest, PrepareStoresTheShareId) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest& request) {
    drapb::NodePrepareResourcesResponse response;
    drapb::Device* device = (*response.mutable_claims())[request.claims(0).uid()].add_devices();
    device->set_pool_name("p");
    device->set_device_name("d");
    device->set_share_id("share-uid");
    return response;
  });
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  ASSERT_EQ(Stored().size(), 1u);
  EXPECT_EQ(Stored()[0].driver_state.at(kDriver).devices[0].share_id, "share-uid");
}

TEST_F(DraManagerTest, PreparePerClaimErrorAndUnknownUid) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest& request) {
    drapb::NodePrepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()].set_error("no such GPU");
    return response;
  });
  EXPECT_EQ(manager_->PrepareResources(TestPod()).message(),
            "prepare dynamic resources: NodePrepareResources failed for ResourceClaim "
            "test-claim: no such GPU");
  plugin_->OnPrepare([](const drapb::NodePrepareResourcesRequest&) {
    drapb::NodePrepareResourcesResponse response;
    (*response.mutable_claims())["not-a-requested-uid"];
    return response;
  });
  EXPECT_EQ(manager_->PrepareResources(TestPod()).message(),
            "prepare dynamic resources: NodePrepareResources returned result for unknown claim "
            "UID not-a-requested-uid");
  EXPECT_FALSE(Cached()->IsPrepared());
}

TEST_F(DraManagerTest, PrepareCheckpointsThePodReferenceBeforeTheCall) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  bool referenced_on_disk = false;
  const std::string path = manager_->checkpoint_path();
  plugin_->OnPrepare([&](const drapb::NodePrepareResourcesRequest& request) {
    absl::StatusOr<std::vector<state::ClaimInfoState>> stored = DecodeCheckpoint(ReadAll(path));
    referenced_on_disk = stored.ok() && stored->size() == 1 && (*stored)[0].pod_uids.count(kPodUid);
    drapb::NodePrepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()];
    return response;
  });
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  EXPECT_TRUE(referenced_on_disk);  // #116411
}

TEST_F(DraManagerTest, PrepareBatchesClaimsPerDriverAndCallsEachDriverOnce) {
  std::shared_ptr<FakePlugin> other = plugins_.Register("other-driver");
  claims_.Put(Claim("claim-a", "uid-a", {kDriver}));
  claims_.Put(Claim("claim-b", "uid-b", {kDriver, "other-driver"}));  // devices of 2 drivers
  claims_.Put(Claim("claim-c", "uid-c", {kDriver}));
  Pod pod = TestPod(kPodUid, {{"a", "claim-a"}, {"b", "claim-b"}, {"c", "claim-c"}});
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  ASSERT_EQ(plugin_->prepare_calls(), 1);
  EXPECT_EQ(plugin_->prepare_requests()[0].claims_size(), 3);
  ASSERT_EQ(other->prepare_calls(), 1);
  ASSERT_EQ(other->prepare_requests()[0].claims_size(), 1);
  EXPECT_EQ(other->prepare_requests()[0].claims(0).name(), "claim-b");
  // Container b gets the devices of both drivers.
  Container b;
  b.claims.push_back(UsesClaim("b"));
  EXPECT_THAT(*manager_->GetResources(pod, b),
              ElementsAre("other-driver/test=claim-b", "test-driver/test=claim-b"));
}

TEST_F(DraManagerTest, PrepareFirstDriverErrorAbortsTheRest) {
  std::shared_ptr<FakePlugin> a_driver = plugins_.Register("a-driver");
  a_driver->OnPrepare([](const drapb::NodePrepareResourcesRequest&) {
    return absl::StatusOr<drapb::NodePrepareResourcesResponse>(
        absl::UnavailableError("connection refused"));
  });
  claims_.Put(Claim(kClaimName, kClaimUid, {"a-driver", kDriver}));
  absl::Status status = manager_->PrepareResources(TestPod());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(a_driver->prepare_calls(), 1);
  EXPECT_EQ(plugin_->prepare_calls(), 0);
}

// #135901/#135919: a claim already prepared by another pod must not stop the pod's other claims.
TEST_F(DraManagerTest, PrepareAnAlreadyPreparedClaimDoesNotSkipTheOthers) {
  claims_.Put(Claim("shared", "uid-shared", {kDriver}, "pod-1"));
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-1", {{"s", "shared"}})).ok());
  resourceapi::ResourceClaim shared = Claim("shared", "uid-shared", {kDriver}, "pod-1");
  shared.status.reserved_for.push_back(Consumer(kPodName, "pod-2"));
  claims_.Put(shared);
  claims_.Put(Claim("own", "uid-own", {kDriver}, "pod-2"));
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-2", {{"s", "shared"}, {"o", "own"}})).ok());
  ASSERT_EQ(plugin_->prepare_calls(), 2);
  ASSERT_EQ(plugin_->prepare_requests()[1].claims_size(), 1);
  EXPECT_EQ(plugin_->prepare_requests()[1].claims(0).name(), "own");
  EXPECT_TRUE(Cached("own")->IsPrepared());
  EXPECT_EQ(Cached("shared")->state().pod_uids, (std::set<std::string>{"pod-1", "pod-2"}));
}

TEST_F(DraManagerTest, PrepareTemplateClaimUsesTheGeneratedNameAndChecksTheOwner) {
  Pod pod = TestPod();
  pod.resource_claims[0] = PodClaim(kPodClaim, "", "tmpl");
  pod.resource_claim_statuses[kPodClaim] = "test-pod-test-pod-claim-x7k2q";
  resourceapi::ResourceClaim claim = Claim("test-pod-test-pod-claim-x7k2q", kClaimUid, {kDriver});
  claims_.Put(claim);  // no owner reference yet
  EXPECT_EQ(manager_->PrepareResources(pod).message(),
            "prepare dynamic resources: ResourceClaim test-namespace/test-pod-test-pod-claim-x7k2q "
            "was not created for pod test-namespace/test-pod (pod is not owner)");
  claim.metadata.owner_references.push_back(PodOwner(kPodUid));
  claims_.Put(claim);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_THAT(*manager_->GetResources(pod, pod.containers[0]),
              ElementsAre("test-driver/test=test-pod-test-pod-claim-x7k2q"));
}

TEST_F(DraManagerTest, PrepareTemplateClaimWithoutAGeneratedClaim) {
  Pod pod = TestPod();
  pod.resource_claims[0] = PodClaim(kPodClaim, "", "tmpl");
  // No status entry yet: resourceclaim.Name's ErrClaimNotFound.
  absl::Status status = manager_->PrepareResources(pod);
  EXPECT_EQ(status.message(),
            "prepare dynamic resources: prepare resource claim: pod \"test-namespace/test-pod\": "
            "ResourceClaim not created yet");
  // A status entry naming no claim: nothing is needed, skipped.
  pod.resource_claim_statuses[kPodClaim] = "";
  EXPECT_TRUE(manager_->PrepareResources(pod).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 0);
  EXPECT_THAT(*manager_->GetResources(pod, pod.containers[0]), IsEmpty());
}

TEST_F(DraManagerTest, PrepareAClaimWithoutAllocation) {
  resourceapi::ResourceClaim claim = Claim(kClaimName, kClaimUid, {kDriver});
  claim.status.allocation.reset();
  claims_.Put(claim);
  EXPECT_EQ(manager_->PrepareResources(TestPod()).message(),
            "prepare dynamic resources: ResourceClaim test-claim: not allocated");
}

// ---- UnprepareResources
// ---------------------------------------------------------------------------

TEST_F(DraManagerTest, UnprepareUnknownDriver) {
  std::shared_ptr<FakePlugin> unknown = plugins_.Register("unknown-driver");
  claims_.Put(Claim(kClaimName, kClaimUid, {"unknown-driver"}));
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  // Restarted while the driver is not registered.
  FakePlugins empty;
  absl::StatusOr<std::unique_ptr<DraManager>> restarted =
      DraManager::Create({.state_dir = dir_.path(), .claims = &claims_, .plugins = &empty});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  absl::Status status = (*restarted)->UnprepareResources(TestPod());
  EXPECT_EQ(status.message(),
            "unprepare dynamic resources: DRA driver unknown-driver is not registered");
  EXPECT_EQ(unknown->unprepare_calls(), 0);
  EXPECT_TRUE((*restarted)->PodMightNeedToUnprepareResources(kPodUid));
}

TEST_F(DraManagerTest, UnprepareClaimReferencedByOtherPods) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}, "pod-1"));
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-1")).ok());
  resourceapi::ResourceClaim claim = Claim(kClaimName, kClaimUid, {kDriver}, "pod-1");
  claim.status.reserved_for.push_back(Consumer(kPodName, "pod-2"));
  claims_.Put(claim);
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-2")).ok());
  ASSERT_TRUE(manager_->UnprepareResources(TestPod("pod-1")).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 0);
  EXPECT_EQ(Cached()->state().pod_uids, std::set<std::string>{"pod-2"});
  EXPECT_EQ(Stored()[0].pod_uids, std::set<std::string>{"pod-2"});
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources("pod-1"));
  // The last user goes: now the driver is called and the claim forgotten.
  ASSERT_TRUE(manager_->UnprepareResources(TestPod("pod-2")).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

TEST_F(DraManagerTest, UnprepareShouldTimeout) {
  PrepareStandard();
  plugin_->OnUnprepare([](const drapb::NodeUnprepareResourcesRequest&) {
    return absl::StatusOr<drapb::NodeUnprepareResourcesResponse>(
        absl::DeadlineExceededError("context deadline exceeded"));
  });
  absl::Status status = manager_->UnprepareResources(TestPod());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(),
              HasSubstr("unprepare dynamic resources: NodeUnprepareResources: rpc error: code = "
                        "DeadlineExceeded"));
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

TEST_F(DraManagerTest, UnprepareDriverReturnsEmptyResponse) {
  PrepareStandard();
  plugin_->OnUnprepare([](const drapb::NodeUnprepareResourcesRequest&) {
    return drapb::NodeUnprepareResourcesResponse();
  });
  EXPECT_EQ(manager_->UnprepareResources(TestPod()).message(),
            "unprepare dynamic resources: NodeUnprepareResources skipped 1 ResourceClaims");
  EXPECT_TRUE(Cached().has_value());
}

TEST_F(DraManagerTest, UnprepareAnUnpreparedClaimRestoredAfterRestart) {
  PrepareStandard();
  manager_ = NewManager();  // restart: restored, not prepared
  ASSERT_TRUE(Cached().has_value());
  EXPECT_FALSE(Cached()->IsPrepared());
  ASSERT_TRUE(manager_->UnprepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
  EXPECT_THAT(Stored(), IsEmpty());
}

TEST_F(DraManagerTest, UnprepareAlreadyPreparedResource) {
  PrepareStandard();
  ASSERT_TRUE(manager_->UnprepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  ASSERT_EQ(plugin_->unprepare_requests()[0].claims_size(), 1);
  EXPECT_EQ(plugin_->unprepare_requests()[0].claims(0).uid(), kClaimUid);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
  EXPECT_THAT(Stored(), IsEmpty());
  // Idempotent: a second call has nothing to do.
  ASSERT_TRUE(manager_->UnprepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
}

TEST_F(DraManagerTest, UnprepareWhenDriverReturnsNilValue) {
  PrepareStandard();
  // The default fake answers every claim with an empty (nil) entry.
  ASSERT_TRUE(manager_->UnprepareResources(TestPod()).ok());
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

TEST_F(DraManagerTest, UnpreparePerClaimErrorAndUnknownUid) {
  PrepareStandard();
  plugin_->OnUnprepare([](const drapb::NodeUnprepareResourcesRequest& request) {
    drapb::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())[request.claims(0).uid()].set_error("device busy");
    return response;
  });
  EXPECT_EQ(manager_->UnprepareResources(TestPod()).message(),
            "unprepare dynamic resources: NodeUnprepareResources failed for ResourceClaim "
            "test-claim: device busy");
  plugin_->OnUnprepare([](const drapb::NodeUnprepareResourcesRequest&) {
    drapb::NodeUnprepareResourcesResponse response;
    (*response.mutable_claims())["stranger"];
    return response;
  });
  EXPECT_EQ(manager_->UnprepareResources(TestPod()).message(),
            "unprepare dynamic resources: NodeUnprepareResources returned result for unknown "
            "claim UID stranger");
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

TEST_F(DraManagerTest, UnprepareNeverTouchesAClaimThePodDoesNotReference) {
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}, "pod-1"));
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-1")).ok());
  // pod-2 names the same claim in its spec but never got to use it.
  ASSERT_TRUE(manager_->UnprepareResources(TestPod("pod-2")).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 0);
  EXPECT_EQ(Cached()->state().pod_uids, std::set<std::string>{"pod-1"});
}

TEST_F(DraManagerTest, UnprepareUsesTheCachedClaimsEvenIfTheSpecNoLongerResolves) {
  Pod pod = TestPod();
  pod.resource_claims[0] = PodClaim(kPodClaim, "", "tmpl");
  pod.resource_claim_statuses[kPodClaim] = "generated";
  resourceapi::ResourceClaim claim = Claim("generated", kClaimUid, {kDriver});
  claim.metadata.owner_references.push_back(PodOwner(kPodUid));
  claims_.Put(claim);
  ASSERT_TRUE(manager_->PrepareResources(pod).ok());
  pod.resource_claim_statuses.clear();
  ASSERT_TRUE(manager_->UnprepareResources(pod).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

TEST_F(DraManagerTest, UnprepareResourcesForPodByUidAlone) {
  PrepareStandard();
  ASSERT_TRUE(manager_->UnprepareResourcesForPod(kPodUid).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

// ---- PodMightNeedToUnprepareResources, GetContainerClaimInfos
// -------------------------------------

TEST_F(DraManagerTest, PodMightNeedToUnprepareResources) {
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  PrepareStandard();
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources("other-pod"));
}

TEST_F(DraManagerTest, GetContainerClaimInfosShouldGetClaimInfo) {
  PrepareStandard();
  absl::StatusOr<std::vector<ClaimInfo>> infos =
      manager_->GetContainerClaimInfos(TestPod(), TestPod().containers[0]);
  ASSERT_TRUE(infos.ok()) << infos.status();
  ASSERT_EQ(infos->size(), 1u);
  EXPECT_EQ((*infos)[0].claim_uid(), kClaimUid);
}

TEST_F(DraManagerTest, GetContainerClaimInfosShouldFailWhenClaimInfoNotFound) {
  PrepareStandard();
  Pod pod = TestPod(kPodUid, {{kPodClaim, "another-claim"}});
  absl::StatusOr<std::vector<ClaimInfo>> infos =
      manager_->GetContainerClaimInfos(pod, pod.containers[0]);
  EXPECT_THAT(infos.status().message(),
              HasSubstr("unable to get information for ResourceClaim another-claim"));
}

TEST_F(DraManagerTest, GetContainerClaimInfosShouldFailWhenNoneOfTheSupportedFieldsAreSet) {
  Pod pod = TestPod();
  pod.resource_claims[0].resource_claim_name.clear();
  absl::StatusOr<std::vector<ClaimInfo>> infos =
      manager_->GetContainerClaimInfos(pod, pod.containers[0]);
  EXPECT_EQ(infos.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(infos.status().message(), HasSubstr("none of the supported fields are set"));
}

TEST_F(DraManagerTest, GetContainerClaimInfosShouldFailWhenClaimInfoIsNotCached) {
  absl::StatusOr<std::vector<ClaimInfo>> infos =
      manager_->GetContainerClaimInfos(TestPod(), TestPod().containers[0]);
  EXPECT_THAT(infos.status().message(),
              HasSubstr("unable to get information for ResourceClaim test-claim"));
}

// ---- Restart and reconcile
// ------------------------------------------------------------------------

TEST_F(DraManagerTest, AfterARestartTheDriverIsCalledAgainWithoutDuplicateDevices) {
  PrepareStandard();
  manager_ = NewManager();
  // GetResources answers for the running pod from the checkpoint alone.
  EXPECT_THAT(*manager_->GetResources(TestPod(), TestPod().containers[0]),
              ElementsAre("test-driver/test=test-claim"));
  EXPECT_EQ(manager_->ClaimsInUse(), (std::map<std::string, int64_t>{{"<any>", 0}}));
  // A new sandbox: prepared is not persisted, so the driver is called again (PR #120550).
  ASSERT_TRUE(manager_->PrepareResources(TestPod()).ok());
  EXPECT_EQ(plugin_->prepare_calls(), 2);
  EXPECT_TRUE(Cached()->IsPrepared());
  EXPECT_THAT(*manager_->GetResources(TestPod(), TestPod().containers[0]),
              ElementsAre("test-driver/test=test-claim"));
}

TEST_F(DraManagerTest, ReconcileOrphansUnpreparesInactivePodsOnly) {
  claims_.Put(Claim("claim-1", "uid-1", {kDriver}, "pod-1"));
  claims_.Put(Claim("claim-2", "uid-2", {kDriver}, "pod-2"));
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-1", {{"c", "claim-1"}})).ok());
  ASSERT_TRUE(manager_->PrepareResources(TestPod("pod-2", {{"c", "claim-2"}})).ok());
  manager_ = NewManager();  // pod-2 was deleted while we were down
  ASSERT_TRUE(manager_->ReconcileOrphans({"pod-1"}).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_EQ(plugin_->unprepare_requests()[0].claims(0).name(), "claim-2");
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources("pod-1"));
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources("pod-2"));
  ASSERT_EQ(Stored().size(), 1u);
  EXPECT_EQ(Stored()[0].claim_name, "claim-1");
}

TEST_F(DraManagerTest, ReconcileOrphansReportsAFailureAndRetriesNextTime) {
  PrepareStandard();
  ASSERT_TRUE(manager_->ReconcileOrphans({kPodUid}).ok());  // a run while the pod ran
  plugin_->OnUnprepare([](const drapb::NodeUnprepareResourcesRequest&) {
    return absl::StatusOr<drapb::NodeUnprepareResourcesResponse>(
        absl::UnavailableError("driver restarting"));
  });
  absl::Status status = manager_->ReconcileOrphans({});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("unprepare dynamic resources: NodeUnprepareResources"));
  EXPECT_TRUE(manager_->PodMightNeedToUnprepareResources(kPodUid));
  plugin_->OnUnprepare(nullptr);
  EXPECT_TRUE(manager_->ReconcileOrphans({}).ok());
  EXPECT_FALSE(manager_->PodMightNeedToUnprepareResources(kPodUid));
}

// ---- Locking: claims, not the manager, are serialised
// ------------------------------------------------------------------------------------------

// The active pods the reconcile loop passes are read without any admission lock: a pod whose
// PrepareResources began after they were read (so after the previous run returned) is not
// among them, and its claims must not be taken for orphans. It is unprepared one run later if
// it really is gone.
TEST_F(DraManagerTest, ReconcileOrphansLeavesPodsThatBeganPreparingSinceTheLastRun) {
  ASSERT_TRUE(manager_->ReconcileOrphans({}).ok());
  const std::set<std::string> active_read_before_admission = {};
  PrepareStandard();  // admitted after the loop read the active pods
  ASSERT_TRUE(manager_->ReconcileOrphans(active_read_before_admission).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 0);
  EXPECT_TRUE(Cached()->IsPrepared());
  // Next run: the pod began preparing before the previous run returned, so before this run's
  // active pods were read; not among them, it is gone.
  ASSERT_TRUE(manager_->ReconcileOrphans({}).ok());
  EXPECT_EQ(plugin_->unprepare_calls(), 1);
  EXPECT_THAT(manager_->Claims(), IsEmpty());
}

// A driver hanging in NodeUnprepareResources for one claim holds up neither a prepare nor an
// unprepare of another claim; a prepare of the same claim waits for it (it would otherwise find
// the claim prepared, skip the driver, and run on a claim the driver is unpreparing).
TEST_F(DraManagerTest, HungUnprepareHoldsUpOnlyItsOwnClaims) {
  PrepareStandard();
  absl::Notification in_unprepare, release;
  auto release_once = [&] {
    if (!release.HasBeenNotified()) release.Notify();
  };
  plugin_->OnUnprepare([&](const drapb::NodeUnprepareResourcesRequest& request) {
    drapb::NodeUnprepareResourcesResponse response;
    if (request.claims(0).name() == kClaimName) {
      in_unprepare.Notify();
      release.WaitForNotificationWithTimeout(absl::Seconds(60));
    }
    for (const drapb::Claim& claim : request.claims()) (*response.mutable_claims())[claim.uid()];
    return absl::StatusOr<drapb::NodeUnprepareResourcesResponse>(response);
  });
  std::thread hung([&] { EXPECT_TRUE(manager_->UnprepareResources(TestPod()).ok()); });
  absl::Cleanup join = [&] {
    release_once();
    hung.join();
  };
  ASSERT_TRUE(in_unprepare.WaitForNotificationWithTimeout(absl::Seconds(5)));
  std::vector<PeerCall> calls = manager_->peer_calls().InFlight();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].kind, PeerKind::kDraDriver);
  EXPECT_EQ(calls[0].peer, kDriver);
  EXPECT_EQ(calls[0].method, "NodeUnprepareResources");
  EXPECT_EQ(calls[0].pod, absl::StrCat(kNamespace, "/", kPodName));
  EXPECT_EQ(calls[0].timeout, absl::Seconds(kDefaultCallTimeoutSeconds));

  // Another claim of the same driver: prepared and unprepared while the first call hangs.
  claims_.Put(Claim("other-claim", "other-uid", {kDriver}, "other-pod"));
  const Pod other = TestPod("other-pod", {{"c", "other-claim"}});
  absl::Notification other_done;
  std::thread other_thread([&] {
    EXPECT_TRUE(manager_->PrepareResources(other).ok());
    EXPECT_TRUE(manager_->UnprepareResources(other).ok());
    other_done.Notify();
  });
  EXPECT_TRUE(other_done.WaitForNotificationWithTimeout(absl::Seconds(5)))
      << "a call on another claim waited for the hung one";
  if (!other_done.HasBeenNotified()) release_once();
  other_thread.join();

  // The same claim, for another pod: waits until the unprepare is done, then prepares it anew.
  resourceapi::ResourceClaim shared = Claim(kClaimName, kClaimUid, {kDriver}, "pod-2");
  claims_.Put(shared);
  absl::Notification same_done;
  std::thread same([&] {
    EXPECT_TRUE(manager_->PrepareResources(TestPod("pod-2")).ok());
    same_done.Notify();
  });
  EXPECT_FALSE(same_done.WaitForNotificationWithTimeout(absl::Milliseconds(200)))
      << "a prepare of the claim being unprepared did not wait for it";
  const int prepares_before = plugin_->prepare_calls();
  release_once();
  EXPECT_TRUE(same_done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  same.join();
  EXPECT_EQ(plugin_->prepare_calls(), prepares_before + 1) << "the driver prepared it again";
  EXPECT_EQ(Cached()->state().pod_uids, std::set<std::string>{"pod-2"});
  EXPECT_TRUE(Cached()->IsPrepared());
}

// ---- Device health (allocatedResourcesStatus)
// ----------------------------------------------------------------------------------------

TEST_F(DraManagerTest, HealthOfPreparedDevicesShowsInThePodsStatus) {
  std::vector<std::vector<std::string>> notified;  // written on this thread only
  testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<DraManager>> manager = DraManager::Create(
      {.state_dir = dir.path(),
       .claims = &claims_,
       .plugins = &plugins_,
       .on_pod_health_changed = [&](std::vector<std::string> uids) { notified.push_back(uids); }});
  ASSERT_TRUE(manager.ok()) << manager.status();
  EXPECT_EQ((*manager)->health_state_path(), dir.Path("dra_health_state"));
  claims_.Put(Claim(kClaimName, kClaimUid, {kDriver}));
  ASSERT_TRUE((*manager)->PrepareResources(TestPod()).ok());

  // The fake driver prepared worker-1/dev-test-claim with CDI ID test-driver/test=test-claim.
  HealthStreamHandler* handler = (*manager)->health_stream_handler();
  ASSERT_NE(handler, nullptr);
  handler->HandleHealthUpdate(kDriver, {{.pool_name = "worker-1",
                                         .device_name = "dev-test-claim",
                                         .health = WireHealthStatus::kUnhealthy,
                                         .last_updated_time = 0,
                                         .health_check_timeout_seconds = 0,
                                         .message = "ECC"}});
  EXPECT_THAT(notified, ElementsAre(ElementsAre(kPodUid)));
  AllocatedResourcesStatus status = (*manager)->UpdateAllocatedResourcesStatus(TestPod());
  EXPECT_EQ(
      status,
      (AllocatedResourcesStatus{{"test-container",
                                 {{.name = "claim:test-pod-claim",
                                   .resources = {{.resource_id = "test-driver/test=test-claim",
                                                  .health = "Unhealthy",
                                                  .message = "ECC"}}}}}}));
  ASSERT_EQ((*manager)->HealthSummary().size(), 1u);
  EXPECT_EQ((*manager)->HealthSummary()[0].health, "Unhealthy");
  EXPECT_EQ((*manager)->GetDeviceHealth(kDriver, "worker-1", "dev-test-claim").message, "ECC");
  EXPECT_EQ((*manager)->GetDeviceHealth(kDriver, "worker-1", "other").health,
            DeviceHealthStatus::kUnknown);

  // Unprepared: nothing left to report for the pod.
  ASSERT_TRUE((*manager)->UnprepareResources(TestPod()).ok());
  EXPECT_THAT((*manager)->UpdateAllocatedResourcesStatus(TestPod()), IsEmpty());
}

TEST(NewDraManager, EmptyHealthStateNameIsRefused) {
  testing::TempDir dir;
  FakeClaims claims;
  FakePlugins plugins;
  EXPECT_EQ(DraManager::Create({.state_dir = dir.path(),
                                .claims = &claims,
                                .plugins = &plugins,
                                .health_state_name = ""})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kdp::manager::dra
