// PodClaimController: the resourceclaim controller's, the scheduler's DynamicResources plugin's
// and the kubelet DRA manager's parts of a pod's ResourceClaims (pkg/kubelet/cm/dra, KEP-4381),
// over a real ObjectStore (slices, classes, claims and templates created as v1 JSON, as the REST
// API stores them) and a real DraManager whose driver is a fake that reads the claim's allocation
// from the store, as a real driver GETs it, and answers one device with a CDI ID per result.
#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::resourceclaim {
namespace {

using ::kdp::testing::TempDir;
using resourceapi::Kind;
using resourceapi::ResourceClaim;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::SizeIs;
using Json = nlohmann::json;

constexpr char kNode[] = "node-a";
using ::kdp::testing::kGpuDriver;
constexpr char kClass[] = "gpu.example.com";
// The characters the store appends to a generateName.
constexpr char kSuffix[] = "[bcdfghjklmnpqrstvwxz2456789]{5}";

// A DRA driver: prepares each claim it is sent by reading the claim's allocation from the store
// (its results for this driver), one device per result, CDI ID "<driver>/gpu=<device>".
class FakeDriver final : public dra::DraPlugin {
 public:
  FakeDriver(std::string name, resourceapi::ObjectStore* store)
      : name_(std::move(name)), store_(store) {}
  const std::string& driver_name() const override { return name_; }

  absl::StatusOr<dra::drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const dra::drapb::NodePrepareResourcesRequest& request) override {
    {
      absl::MutexLock lock(&mu_);
      ++prepare_calls_;
    }
    dra::drapb::NodePrepareResourcesResponse response;
    for (const dra::drapb::Claim& claim : request.claims()) {
      auto& result = (*response.mutable_claims())[claim.uid()];
      absl::StatusOr<ResourceClaim> stored = store_->GetClaim(claim.namespace_(), claim.name());
      if (!stored.ok() || !stored->status.allocation.has_value()) {
        result.set_error(absl::StrCat("claim ", claim.name(), " not allocated"));
        continue;
      }
      for (const resourceapi::DeviceRequestAllocationResult& r :
           stored->status.allocation->results) {
        if (r.driver != name_) continue;
        dra::drapb::Device* device = result.add_devices();
        device->set_pool_name(r.pool);
        device->set_device_name(r.device);
        device->add_request_names(r.request);
        device->add_cdi_device_ids(absl::StrCat(name_, "/gpu=", r.device));
      }
    }
    return response;
  }

  absl::StatusOr<dra::drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const dra::drapb::NodeUnprepareResourcesRequest& request) override {
    dra::drapb::NodeUnprepareResourcesResponse response;
    absl::MutexLock lock(&mu_);
    for (const dra::drapb::Claim& claim : request.claims()) {
      unprepared_.push_back(claim.name());
      (*response.mutable_claims())[claim.uid()];
    }
    return response;
  }

  int prepare_calls() const {
    absl::MutexLock lock(&mu_);
    return prepare_calls_;
  }
  std::vector<std::string> unprepared() const {
    absl::MutexLock lock(&mu_);
    return unprepared_;
  }

 private:
  const std::string name_;
  resourceapi::ObjectStore* const store_;
  mutable absl::Mutex mu_;
  int prepare_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> unprepared_ ABSL_GUARDED_BY(mu_);
};

class FakeDrivers final : public dra::DraPlugins {
 public:
  explicit FakeDrivers(resourceapi::ObjectStore* store)
      : driver_(std::make_shared<FakeDriver>(kGpuDriver, store)) {}
  absl::StatusOr<std::shared_ptr<dra::DraPlugin>> Get(const std::string& driver) override {
    if (driver != kGpuDriver) {
      return absl::FailedPreconditionError(
          absl::StrCat("DRA driver ", driver, " is not registered"));
    }
    return std::shared_ptr<dra::DraPlugin>(driver_);
  }
  FakeDriver& driver() { return *driver_; }

 private:
  const std::shared_ptr<FakeDriver> driver_;
};

// ---- v1 objects ----

Json DeviceClassJson(const std::string& name) {
  return {
      {"metadata", {{"name", name}}},
      {"spec",
       {{"selectors",
         {{{"cel", {{"expression", absl::StrCat("device.driver == \"", kGpuDriver, "\"")}}}}}}}}};
}

Json SliceJson(const std::vector<std::string>& devices) {
  Json list = Json::array();
  for (const std::string& device : devices) list.push_back({{"name", device}});
  return {{"metadata", {{"name", absl::StrCat(kNode, "-gpus")}}},
          {"spec",
           {{"driver", kGpuDriver},
            {"nodeName", kNode},
            {"pool", {{"name", kNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", list}}}};
}

// A claim spec with one request "gpu" for `count` devices of `device_class`.
Json ClaimSpec(int count, const std::string& device_class = kClass) {
  return {{"devices",
           {{"requests",
             {{{"name", "gpu"},
               {"exactly", {{"deviceClassName", device_class}, {"count", count}}}}}}}}};
}

Json ClaimJson(const std::string& name, Json spec, const std::string& ns = "default") {
  return {{"metadata", {{"name", name}, {"namespace", ns}}}, {"spec", std::move(spec)}};
}

Json TemplateJson(const std::string& name, Json spec) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"metadata",
             {{"labels", {{"team", "ml"}}}, {"annotations", {{"example.com/note", "from-tmpl"}}}}},
            {"spec", std::move(spec)}}}};
}

PodResourceClaim FromTemplate(const std::string& name, const std::string& claim_template) {
  return {.name = name, .resource_claim_name = "", .resource_claim_template_name = claim_template};
}
PodResourceClaim Named(const std::string& name, const std::string& claim) {
  return {.name = name, .resource_claim_name = claim, .resource_claim_template_name = ""};
}

// A pod whose one container "main" uses every claim of the pod.
Pod MakePod(const std::string& name, const std::string& uid, std::vector<PodResourceClaim> claims) {
  Pod pod;
  pod.name = name;
  pod.uid = uid;
  Container main{.name = "main",
                 .kind = ContainerKind::kApp,
                 .extended_resources = {},
                 .other_limits = {},
                 .claims = {}};
  for (const PodResourceClaim& claim : claims) main.claims.push_back({claim.name, ""});
  pod.containers.push_back(std::move(main));
  pod.resource_claims = std::move(claims);
  return pod;
}

resourceapi::ConsumerReference PodConsumer(const Pod& pod) {
  return {.api_group = "", .resource = "pods", .name = pod.name, .uid = pod.uid};
}

std::vector<std::string> AllocatedDevices(const ResourceClaim& claim) {
  std::vector<std::string> out;
  if (!claim.status.allocation.has_value()) return out;
  for (const auto& result : claim.status.allocation->results) {
    out.push_back(
        absl::StrCat(result.request, ":", result.driver, "/", result.pool, "/", result.device));
  }
  return out;
}

class PodClaimControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<dra::DraManager>> dra = dra::DraManager::Create(
        {.state_dir = dir_.path(), .claims = &getter_, .plugins = &drivers_});
    ASSERT_TRUE(dra.ok()) << dra.status();
    dra_ = *std::move(dra);
    controller_ = std::make_unique<PodClaimController>(&store_, dra_.get());
    Create(Kind::kDeviceClass, DeviceClassJson(kClass));
    Create(Kind::kResourceSlice, SliceJson({"gpu-0", "gpu-1"}));
  }

  Json Create(Kind kind, Json object) {
    absl::StatusOr<Json> created = store_.Create(kind, std::move(object));
    EXPECT_TRUE(created.ok()) << created.status();
    return created.value_or(Json());
  }
  ResourceClaim Claim(const std::string& name) {
    absl::StatusOr<ResourceClaim> claim = store_.GetClaim("default", name);
    EXPECT_TRUE(claim.ok()) << claim.status();
    return claim.value_or(ResourceClaim{});
  }
  std::vector<ResourceClaim> Claims(const std::string& ns = "default") {
    absl::StatusOr<std::vector<ResourceClaim>> claims = store_.ListClaims(ns);
    EXPECT_TRUE(claims.ok()) << claims.status();
    return claims.value_or(std::vector<ResourceClaim>{});
  }

  TempDir dir_;
  resourceapi::ObjectStore store_{{.node_name = kNode}};
  StoreClaimGetter getter_{&store_};
  FakeDrivers drivers_{&store_};
  std::unique_ptr<dra::DraManager> dra_;
  std::unique_ptr<PodClaimController> controller_;
};

// ---- Reserve ----

TEST_F(PodClaimControllerTest, ReserveCreatesAnOwnedClaimFromTheTemplateAndAllocatesIt) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Pod pod = MakePod("trainer", "uid-trainer", {FromTemplate("gpu", "one-gpu")});

  absl::Status reserved = controller_->Reserve(&pod);
  ASSERT_TRUE(reserved.ok()) << reserved;

  ASSERT_EQ(pod.resource_claim_statuses.count("gpu"), 1u);
  const std::string name = pod.resource_claim_statuses.at("gpu");
  EXPECT_THAT(name, MatchesRegex(absl::StrCat("trainer-gpu-", kSuffix)));
  EXPECT_EQ(ClaimNameFor(pod, pod.resource_claims[0]), name);
  ASSERT_THAT(Claims(), SizeIs(1));
  ResourceClaim claim = Claim(name);
  EXPECT_EQ(claim.metadata.generate_name, "trainer-gpu-");
  EXPECT_THAT(claim.metadata.owner_references,
              ElementsAre(resourceapi::OwnerReference{.api_version = "v1",
                                                      .kind = "Pod",
                                                      .name = "trainer",
                                                      .uid = "uid-trainer",
                                                      .controller = true,
                                                      .block_owner_deletion = true}));
  EXPECT_EQ(claim.metadata.annotations,
            (std::map<std::string, std::string>{
                {"example.com/note", "from-tmpl"},
                {std::string(resourceapi::kPodClaimNameAnnotation), "gpu"}}));
  EXPECT_EQ(claim.metadata.labels, (std::map<std::string, std::string>{{"team", "ml"}}));
  ASSERT_THAT(claim.spec.devices.requests, SizeIs(1));
  ASSERT_TRUE(claim.spec.devices.requests[0].exactly.has_value());
  EXPECT_EQ(claim.spec.devices.requests[0].exactly->device_class_name, kClass);
  EXPECT_THAT(AllocatedDevices(claim), ElementsAre("gpu:gpu.example.com/node-a/gpu-0"));
  EXPECT_THAT(claim.status.reserved_for, ElementsAre(PodConsumer(pod)));
}

TEST_F(PodClaimControllerTest, RepeatedReserveReusesTheGeneratedClaim) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Pod pod = MakePod("trainer", "uid-trainer", {FromTemplate("gpu", "one-gpu")});
  ASSERT_TRUE(controller_->Reserve(&pod).ok());
  const std::string name = pod.resource_claim_statuses.at("gpu");

  absl::Status again = controller_->Reserve(&pod);
  ASSERT_TRUE(again.ok()) << again;

  EXPECT_EQ(pod.resource_claim_statuses.at("gpu"), name);
  ASSERT_THAT(Claims(), SizeIs(1));
  ResourceClaim claim = Claim(name);
  EXPECT_THAT(claim.status.reserved_for, ElementsAre(PodConsumer(pod)));
  EXPECT_THAT(AllocatedDevices(claim), ElementsAre("gpu:gpu.example.com/node-a/gpu-0"));
}

TEST_F(PodClaimControllerTest, SharedClaimIsAllocatedOnceAndReservedForBothPods) {
  Create(Kind::kResourceClaim, ClaimJson("shared", ClaimSpec(1)));
  Pod first = MakePod("first", "uid-first", {Named("gpu", "shared")});
  Pod second = MakePod("second", "uid-second", {Named("gpu", "shared")});

  ASSERT_TRUE(controller_->Reserve(&first).ok());
  const ResourceClaim after_first = Claim("shared");
  absl::Status reserved = controller_->Reserve(&second);
  ASSERT_TRUE(reserved.ok()) << reserved;

  ResourceClaim claim = Claim("shared");
  EXPECT_THAT(AllocatedDevices(claim), ElementsAre("gpu:gpu.example.com/node-a/gpu-0"));
  EXPECT_EQ(claim.status.allocation, after_first.status.allocation);
  EXPECT_THAT(claim.status.reserved_for, ElementsAre(PodConsumer(first), PodConsumer(second)));
  // A named claim is not generated: nothing recorded for it, no claim created.
  EXPECT_THAT(second.resource_claim_statuses, IsEmpty());
  EXPECT_THAT(Claims(), SizeIs(1));
  // The shared claim holds one device, not two: the other GPU is still free.
  Create(Kind::kResourceClaim, ClaimJson("other", ClaimSpec(1)));
  Pod third = MakePod("third", "uid-third", {Named("gpu", "other")});
  ASSERT_TRUE(controller_->Reserve(&third).ok());
  EXPECT_THAT(AllocatedDevices(Claim("other")), ElementsAre("gpu:gpu.example.com/node-a/gpu-1"));
}

TEST_F(PodClaimControllerTest, DevicesOfOtherClaimsAreNeverReused) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Pod first = MakePod("first", "uid-first", {FromTemplate("gpu", "one-gpu")});
  Pod second = MakePod("second", "uid-second", {FromTemplate("gpu", "one-gpu")});
  Pod third = MakePod("third", "uid-third", {FromTemplate("gpu", "one-gpu")});

  ASSERT_TRUE(controller_->Reserve(&first).ok());
  ASSERT_TRUE(controller_->Reserve(&second).ok());
  absl::Status exhausted = controller_->Reserve(&third);

  EXPECT_THAT(AllocatedDevices(Claim(first.resource_claim_statuses.at("gpu"))),
              ElementsAre("gpu:gpu.example.com/node-a/gpu-0"));
  EXPECT_THAT(AllocatedDevices(Claim(second.resource_claim_statuses.at("gpu"))),
              ElementsAre("gpu:gpu.example.com/node-a/gpu-1"));
  EXPECT_EQ(exhausted.code(), absl::StatusCode::kResourceExhausted) << exhausted;
  EXPECT_THAT(std::string(exhausted.message()), HasSubstr("pod claim \"gpu\""));
  EXPECT_THAT(std::string(exhausted.message()), HasSubstr("cannot allocate all claims"));
  // The claim generated for the third pod went again.
  std::vector<ResourceClaim> claims = Claims();
  ASSERT_THAT(claims, SizeIs(2));
  for (const ResourceClaim& claim : claims) {
    EXPECT_FALSE(absl::StartsWith(claim.metadata.name, "third-")) << claim.metadata.name;
  }
}

TEST_F(PodClaimControllerTest, UnsatisfiableClaimLeavesNothingReservedOrCreated) {
  Create(Kind::kResourceClaim, ClaimJson("shared", ClaimSpec(1)));
  Create(Kind::kResourceClaimTemplate, TemplateJson("three-gpus", ClaimSpec(3)));
  Pod pod = MakePod("trainer", "uid-trainer",
                    {Named("gpu", "shared"), FromTemplate("big", "three-gpus")});
  const int64_t claims_before = static_cast<int64_t>(Claims().size());

  absl::Status reserved = controller_->Reserve(&pod);

  EXPECT_EQ(reserved.code(), absl::StatusCode::kResourceExhausted) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("pod claim \"big\""));
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("(ResourceClaim default/trainer-big-"));
  // The first claim was allocated and reserved for the pod, then released: reserved by nobody,
  // it is deallocated again.
  ResourceClaim shared = Claim("shared");
  EXPECT_THAT(shared.status.reserved_for, IsEmpty());
  EXPECT_FALSE(shared.status.allocation.has_value());
  EXPECT_EQ(static_cast<int64_t>(Claims().size()), claims_before);
  // Both GPUs are free: a claim for two succeeds.
  Create(Kind::kResourceClaim, ClaimJson("pair", ClaimSpec(2)));
  Pod other = MakePod("other", "uid-other", {Named("gpu", "pair")});
  absl::Status pair = controller_->Reserve(&other);
  EXPECT_TRUE(pair.ok()) << pair;
}

TEST_F(PodClaimControllerTest, MissingTemplateIsNotFound) {
  Pod pod = MakePod("trainer", "uid-trainer", {FromTemplate("gpu", "no-such-template")});
  absl::Status reserved = controller_->Reserve(&pod);
  EXPECT_EQ(reserved.code(), absl::StatusCode::kNotFound) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("pod claim \"gpu\""));
  EXPECT_THAT(std::string(reserved.message()),
              HasSubstr("ResourceClaimTemplate default/no-such-template not found"));
  EXPECT_THAT(Claims(), IsEmpty());
}

TEST_F(PodClaimControllerTest, MissingClaimIsNotFound) {
  Pod pod = MakePod("trainer", "uid-trainer", {Named("gpu", "no-such-claim")});
  absl::Status reserved = controller_->Reserve(&pod);
  EXPECT_EQ(reserved.code(), absl::StatusCode::kNotFound) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("pod claim \"gpu\""));
  EXPECT_THAT(std::string(reserved.message()),
              HasSubstr("ResourceClaim default/no-such-claim not found"));
}

TEST_F(PodClaimControllerTest, MissingDeviceClassIsNotFoundAndTheGeneratedClaimGoes) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("odd", ClaimSpec(1, "no-such-class")));
  Pod pod = MakePod("trainer", "uid-trainer", {FromTemplate("gpu", "odd")});
  absl::Status reserved = controller_->Reserve(&pod);
  EXPECT_EQ(reserved.code(), absl::StatusCode::kNotFound) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("pod claim \"gpu\""));
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("no-such-class"));
  EXPECT_THAT(Claims(), IsEmpty());
}

TEST_F(PodClaimControllerTest, ClaimGeneratedForAnotherPodIsRefusedAndLeftAlone) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Pod owner = MakePod("owner", "uid-owner", {FromTemplate("gpu", "one-gpu")});
  ASSERT_TRUE(controller_->Reserve(&owner).ok());
  const std::string name = owner.resource_claim_statuses.at("gpu");
  const ResourceClaim before = Claim(name);
  // A pod whose status names the owner's claim (a stale or forged resourceClaimStatuses).
  Pod intruder = MakePod("intruder", "uid-intruder", {FromTemplate("gpu", "one-gpu")});
  intruder.resource_claim_statuses["gpu"] = name;

  absl::Status reserved = controller_->Reserve(&intruder);

  EXPECT_EQ(reserved.code(), absl::StatusCode::kFailedPrecondition) << reserved;
  EXPECT_THAT(
      std::string(reserved.message()),
      HasSubstr(absl::StrCat("ResourceClaim ", name, " was not created for pod default/intruder")));
  // The owner's claim is neither deleted nor changed by the rollback.
  EXPECT_EQ(Claim(name), before);
}

TEST_F(PodClaimControllerTest, ClaimBeingDeletedIsRefused) {
  Json claim = ClaimJson("leaving", ClaimSpec(1));
  claim["metadata"]["finalizers"] = {"example.com/hold"};
  Create(Kind::kResourceClaim, claim);
  ASSERT_TRUE(store_.Delete(Kind::kResourceClaim, "default", "leaving").ok());
  Pod pod = MakePod("trainer", "uid-trainer", {Named("gpu", "leaving")});

  absl::Status reserved = controller_->Reserve(&pod);

  EXPECT_EQ(reserved.code(), absl::StatusCode::kFailedPrecondition) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("is being deleted"));
  EXPECT_THAT(Claim("leaving").status.reserved_for, IsEmpty());
}

TEST_F(PodClaimControllerTest, ClaimReservedForTheMaximumOfConsumersIsExhausted) {
  Create(Kind::kResourceClaim, ClaimJson("popular", ClaimSpec(1)));
  Pod first = MakePod("pod-0", "uid-0", {Named("gpu", "popular")});
  ASSERT_TRUE(controller_->Reserve(&first).ok());
  ResourceClaim claim = Claim("popular");
  for (int i = 1; i < 256; ++i) {
    claim.status.reserved_for.push_back({.api_group = "",
                                         .resource = "pods",
                                         .name = absl::StrCat("pod-", i),
                                         .uid = absl::StrCat("uid-", i)});
  }
  ASSERT_TRUE(store_.UpdateClaimStatus(claim).ok());
  Pod late = MakePod("late", "uid-late", {Named("gpu", "popular")});

  absl::Status reserved = controller_->Reserve(&late);

  EXPECT_EQ(reserved.code(), absl::StatusCode::kResourceExhausted) << reserved;
  EXPECT_THAT(std::string(reserved.message()), HasSubstr("maximum of 256 consumers"));
  EXPECT_THAT(Claim("popular").status.reserved_for, SizeIs(256));
  // A pod already in the list is still fine.
  EXPECT_TRUE(controller_->Reserve(&first).ok());
}

// Another writer (a driver or kubectl through the REST API) changes the generated claim between
// the controller's read and its status write: the write conflicts (resourceVersion) and is
// retried on the claim as stored then. Which of the two writes first is up to the threads; the
// claim list is made long so that the allocation is slow and the writer usually wins, and the
// test repeats until the conflict was seen once.
TEST_F(PodClaimControllerTest, ConflictingStatusWriteIsRetried) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  for (int i = 0; i < 300; ++i) {
    Create(Kind::kResourceClaim, ClaimJson(absl::StrCat("noise-", i), ClaimSpec(1), "noise"));
  }
  bool conflict_seen = false;
  for (int round = 0; round < 10 && !conflict_seen; ++round) {
    Pod pod = MakePod(absl::StrCat("racer-", round), absl::StrCat("uid-racer-", round),
                      {FromTemplate("gpu", "one-gpu")});
    const std::string prefix = absl::StrCat(pod.name, "-gpu-");
    const int64_t start = store_.ResourceVersion();
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      int64_t seen = start;
      while (!stop.load()) {
        if (!store_.WaitForEvents(seen, absl::Milliseconds(20))) continue;
        absl::StatusOr<std::vector<resourceapi::WatchEvent>> events = store_.EventsSince(seen);
        if (!events.ok()) return;
        for (const resourceapi::WatchEvent& event : *events) {
          seen = event.resource_version;
          if (event.kind != Kind::kResourceClaim ||
              event.type != resourceapi::WatchEvent::Type::kAdded ||
              !absl::StartsWith(event.object["metadata"].value("name", ""), prefix)) {
            continue;
          }
          Json object = event.object;
          object["metadata"]["labels"]["example.com/touched"] = "yes";
          object["metadata"].erase("resourceVersion");  // unconditional, as kubectl label
          absl::StatusOr<Json> updated = store_.Update(Kind::kResourceClaim, object);
          EXPECT_TRUE(updated.ok()) << updated.status();
          return;
        }
      }
    });
    absl::Status reserved = controller_->Reserve(&pod);
    stop = true;
    writer.join();
    ASSERT_TRUE(reserved.ok()) << "round " << round << ": " << reserved;

    ResourceClaim claim = Claim(pod.resource_claim_statuses.at("gpu"));
    EXPECT_EQ(claim.metadata.labels.at("example.com/touched"), "yes");
    EXPECT_THAT(claim.status.reserved_for, ElementsAre(PodConsumer(pod)));
    EXPECT_THAT(AllocatedDevices(claim), SizeIs(1));
    // The first change after the claim's creation was the writer's: the controller's status
    // write came after it, so it conflicted and was retried.
    absl::StatusOr<std::vector<resourceapi::WatchEvent>> events = store_.EventsSince(start);
    ASSERT_TRUE(events.ok()) << events.status();
    for (const resourceapi::WatchEvent& event : *events) {
      if (event.kind != Kind::kResourceClaim ||
          event.type != resourceapi::WatchEvent::Type::kModified ||
          event.object["metadata"].value("name", "") != claim.metadata.name) {
        continue;
      }
      conflict_seen =
          !event.object.contains("status") || !event.object["status"].contains("reservedFor");
      break;
    }
    // Leave the GPUs free for the next round.
    controller_->Release(pod);
  }
  EXPECT_TRUE(conflict_seen) << "the writer never changed the claim before the status write";
}

// ---- Release ----

TEST_F(PodClaimControllerTest, ReleaseDeletesGeneratedClaimsAndDeallocatesUnreservedOnes) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Create(Kind::kResourceClaim, ClaimJson("shared", ClaimSpec(1)));
  Pod pod = MakePod("trainer", "uid-trainer",
                    {FromTemplate("gpu", "one-gpu"), Named("shared", "shared")});
  ASSERT_TRUE(controller_->Reserve(&pod).ok());
  const std::string generated = pod.resource_claim_statuses.at("gpu");
  ASSERT_TRUE(Claim("shared").status.allocation.has_value());

  controller_->Release(pod);

  EXPECT_TRUE(absl::IsNotFound(store_.GetClaim("default", generated).status()));
  ResourceClaim shared = Claim("shared");
  EXPECT_THAT(shared.status.reserved_for, IsEmpty());
  EXPECT_FALSE(shared.status.allocation.has_value());
  // Idempotent: a second release finds nothing to do.
  controller_->Release(pod);
  EXPECT_THAT(Claims(), SizeIs(1));
}

TEST_F(PodClaimControllerTest, ReleaseKeepsAClaimStillReservedByAnotherPod) {
  Create(Kind::kResourceClaim, ClaimJson("shared", ClaimSpec(1)));
  Pod first = MakePod("first", "uid-first", {Named("gpu", "shared")});
  Pod second = MakePod("second", "uid-second", {Named("gpu", "shared")});
  ASSERT_TRUE(controller_->Reserve(&first).ok());
  ASSERT_TRUE(controller_->Reserve(&second).ok());
  const ResourceClaim before = Claim("shared");

  controller_->Release(first);

  ResourceClaim claim = Claim("shared");
  EXPECT_THAT(claim.status.reserved_for, ElementsAre(PodConsumer(second)));
  EXPECT_EQ(claim.status.allocation, before.status.allocation);
  controller_->Release(second);
  EXPECT_FALSE(Claim("shared").status.allocation.has_value());
}

// ---- Prepare, CDI devices, Describe ----

TEST_F(PodClaimControllerTest, PrepareGivesCdiDevicesAndDescribeShowsThem) {
  Create(Kind::kResourceClaimTemplate, TemplateJson("one-gpu", ClaimSpec(1)));
  Pod pod = MakePod("trainer", "uid-trainer", {FromTemplate("gpu", "one-gpu")});
  ASSERT_TRUE(controller_->Reserve(&pod).ok());
  const std::string name = pod.resource_claim_statuses.at("gpu");

  std::vector<PodClaimView> before = controller_->Describe(pod);
  ASSERT_THAT(before, SizeIs(1));
  EXPECT_EQ(before[0].pod_claim_name, "gpu");
  EXPECT_EQ(before[0].claim_name, name);
  EXPECT_THAT(before[0].devices, IsEmpty());

  absl::Status prepared = controller_->Prepare(pod);
  ASSERT_TRUE(prepared.ok()) << prepared;
  EXPECT_EQ(drivers_.driver().prepare_calls(), 1);

  absl::StatusOr<std::vector<std::string>> cdi = controller_->CdiDevices(pod, pod.containers[0]);
  ASSERT_TRUE(cdi.ok()) << cdi.status();
  EXPECT_THAT(*cdi, ElementsAre("gpu.example.com/gpu=gpu-0"));
  std::vector<PodClaimView> after = controller_->Describe(pod);
  ASSERT_THAT(after, SizeIs(1));
  EXPECT_EQ(after[0].claim_name, name);
  EXPECT_EQ(after[0].claim_uid, Claim(name).metadata.uid);
  ASSERT_THAT(after[0].devices, SizeIs(1));
  EXPECT_EQ(after[0].devices[0].first, kGpuDriver);
  EXPECT_EQ(after[0].devices[0].second.pool_name, kNode);
  EXPECT_EQ(after[0].devices[0].second.device_name, "gpu-0");
  EXPECT_THAT(after[0].devices[0].second.cdi_device_ids, ElementsAre("gpu.example.com/gpu=gpu-0"));

  absl::Status unprepared = controller_->Unprepare(pod);
  ASSERT_TRUE(unprepared.ok()) << unprepared;
  EXPECT_THAT(drivers_.driver().unprepared(), ElementsAre(name));
  EXPECT_THAT(controller_->Describe(pod)[0].devices, IsEmpty());
}

TEST_F(PodClaimControllerTest, PrepareOfAPodWithoutReservationIsRefusedByTheDraManager) {
  Create(Kind::kResourceClaim, ClaimJson("shared", ClaimSpec(1)));
  Pod pod = MakePod("trainer", "uid-trainer", {Named("gpu", "shared")});
  absl::Status prepared = controller_->Prepare(pod);
  EXPECT_FALSE(prepared.ok());
  EXPECT_THAT(std::string(prepared.message()), HasSubstr("is not allowed to use ResourceClaim"));
  EXPECT_EQ(drivers_.driver().prepare_calls(), 0);
}

// ---- Names ----

TEST(GenerateClaimNamePrefix, ShortNamesArePodDashClaimDash) {
  EXPECT_EQ(GenerateClaimNamePrefix("trainer", "gpu"), "trainer-gpu-");
  // 57 characters with the trailing dash: kept whole.
  const std::string pod(52, 'p');
  EXPECT_EQ(GenerateClaimNamePrefix(pod, "gpu"), pod + "-gpu-");
}

// pkg/controller/resourceclaim handleClaim: generateName = pod + "-" + claim + "-"; longer than
// maxBaseLen (57), both names are cut proportionally to their length (computed on the full
// generateName's length) and joined by "-", without a trailing dash:
//   pod.Name[0:len(pod.Name)*57/len(generateName)] + "-" +
//   podClaim.Name[0:len(podClaim.Name)*57/len(generateName)]
TEST(GenerateClaimNamePrefix, LongNamesAreCutProportionallyAsTheResourceClaimController) {
  // 53 + 1 + 3 + 1 = 58 > 57: pod 53*57/58 = 52, claim 3*57/58 = 2.
  EXPECT_EQ(GenerateClaimNamePrefix(std::string(53, 'p'), "gpu"), std::string(52, 'p') + "-gp");
  // 40 + 1 + 30 + 1 = 72: pod 40*57/72 = 31, claim 30*57/72 = 23.
  EXPECT_EQ(GenerateClaimNamePrefix(std::string(40, 'p'), std::string(30, 'c')),
            std::string(31, 'p') + "-" + std::string(23, 'c'));
  // Every generated name fits a 63-character label with the 5 random characters.
  for (size_t pod = 1; pod <= 63; pod += 7) {
    for (size_t claim = 1; claim <= 63; claim += 9) {
      EXPECT_LE(GenerateClaimNamePrefix(std::string(pod, 'p'), std::string(claim, 'c')).size() + 5,
                63u)
          << pod << " " << claim;
    }
  }
}

TEST(ClaimNameFor, NamedClaimOrGeneratedNameOrEmpty) {
  Pod pod = MakePod("p", "u", {Named("a", "claim-a"), FromTemplate("b", "tmpl")});
  EXPECT_EQ(ClaimNameFor(pod, pod.resource_claims[0]), "claim-a");
  EXPECT_EQ(ClaimNameFor(pod, pod.resource_claims[1]), "");
  pod.resource_claim_statuses["b"] = "p-b-xyz12";
  EXPECT_EQ(ClaimNameFor(pod, pod.resource_claims[1]), "p-b-xyz12");
}

}  // namespace
}  // namespace kdp::manager::resourceclaim
