// DraManager under concurrency (run under TSan by the "concurrency" label): the kubelet's
// TestParallelPrepareUnprepareResources (30 goroutines preparing and unpreparing distinct pods
// and claims at once, in pkg/kubelet/cm/dra/manager_test.go), and pods sharing one claim prepared
// and unprepared concurrently: the driver is asked to unprepare it exactly once, by the last user.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/dra/manager.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/dra/claim_test_objects.h"

namespace kdp::manager::dra {
namespace {

class MapClaims : public ClaimGetter {
 public:
  void Put(resourceapi::ResourceClaim claim) {
    absl::MutexLock lock(&mu_);
    claims_[claim.metadata.name] = std::move(claim);
  }
  absl::StatusOr<resourceapi::ResourceClaim> Get(const std::string& namespace_,
                                                 const std::string& name) override {
    absl::MutexLock lock(&mu_);
    auto it = claims_.find(name);
    if (it == claims_.end() || it->second.metadata.namespace_ != namespace_) {
      return absl::NotFoundError(name + " not found");
    }
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, resourceapi::ResourceClaim> claims_ ABSL_GUARDED_BY(mu_);
};

// Answers every claim with one device; counts calls and claims per call kind.
class CountingPlugin : public DraPlugin, public DraPlugins {
 public:
  const std::string& driver_name() const override { return name_; }
  absl::StatusOr<drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const drapb::NodePrepareResourcesRequest& request) override {
    prepare_calls.fetch_add(1);
    drapb::NodePrepareResourcesResponse response;
    for (const drapb::Claim& claim : request.claims()) {
      drapb::Device* device = (*response.mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name("pool");
      device->set_device_name(claim.name());
      device->add_cdi_device_ids("vendor.com/class=" + claim.name());
    }
    return response;
  }
  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const drapb::NodeUnprepareResourcesRequest& request) override {
    unprepare_calls.fetch_add(1);
    unprepared_claims.fetch_add(request.claims_size());
    drapb::NodeUnprepareResourcesResponse response;
    for (const drapb::Claim& claim : request.claims()) (*response.mutable_claims())[claim.uid()];
    return response;
  }
  absl::StatusOr<std::shared_ptr<DraPlugin>> Get(const std::string& driver) override {
    if (driver != name_)
      return absl::FailedPreconditionError("DRA driver " + driver + " is not registered");
    return std::shared_ptr<DraPlugin>(std::shared_ptr<DraPlugin>{}, this);  // non-owning alias
  }

  std::atomic<int> prepare_calls{0};
  std::atomic<int> unprepare_calls{0};
  std::atomic<int> unprepared_claims{0};

 private:
  const std::string name_ = kDriver;
};

resourceapi::ResourceClaim Claim(const std::string& name, const std::vector<std::string>& pods) {
  resourceapi::ResourceClaim claim;
  claim.metadata.name = name;
  claim.metadata.namespace_ = kNamespace;
  claim.metadata.uid = name + "-uid";
  claim.status.allocation = resourceapi::AllocationResult{};
  claim.status.allocation->results.push_back(Result(kDriver, "pool", name));
  for (const std::string& pod : pods) claim.status.reserved_for.push_back(Consumer(pod, pod));
  return claim;
}

Pod PodUsing(const std::string& uid, const std::string& claim) {
  Pod pod;
  pod.namespace_ = kNamespace;
  pod.name = uid;
  pod.uid = uid;
  pod.resource_claims.push_back(PodClaim("c", claim));
  Container container;
  container.name = "ctr";
  container.claims.push_back(UsesClaim("c"));
  pod.containers.push_back(container);
  return pod;
}

TEST(DraManagerStress, ParallelPrepareUnprepareResources) {
  testing::TempDir dir;
  MapClaims claims;
  CountingPlugin plugin;
  absl::StatusOr<std::unique_ptr<DraManager>> manager =
      DraManager::Create({.state_dir = dir.path(), .claims = &claims, .plugins = &plugin});
  ASSERT_TRUE(manager.ok()) << manager.status();
  constexpr int kPods = 30;
  for (int i = 0; i < kPods; ++i) {
    claims.Put(Claim("claim-" + std::to_string(i), {"pod-" + std::to_string(i)}));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      const Pod pod = PodUsing("pod-" + std::to_string(i), "claim-" + std::to_string(i));
      EXPECT_TRUE((*manager)->PrepareResources(pod).ok());
      absl::StatusOr<std::vector<std::string>> ids =
          (*manager)->GetResources(pod, pod.containers[0]);
      EXPECT_TRUE(ids.ok()) << ids.status();
      if (ids.ok()) {
        EXPECT_EQ(*ids, std::vector<std::string>{"vendor.com/class=claim-" + std::to_string(i)});
      }
      EXPECT_TRUE((*manager)->PodMightNeedToUnprepareResources(pod.uid));
      EXPECT_TRUE((*manager)->UnprepareResources(pod).ok());
      EXPECT_FALSE((*manager)->PodMightNeedToUnprepareResources(pod.uid));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(plugin.prepare_calls.load(), kPods);
  EXPECT_EQ(plugin.unprepare_calls.load(), kPods);
  EXPECT_TRUE((*manager)->Claims().empty());
  // The last checkpoint written is the empty state.
  absl::StatusOr<std::unique_ptr<DraManager>> restarted =
      DraManager::Create({.state_dir = dir.path(), .claims = &claims, .plugins = &plugin});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_TRUE((*restarted)->Claims().empty());
}

TEST(DraManagerStress, PodsSharingAClaimUnprepareItOnceWhenTheLastGoes) {
  testing::TempDir dir;
  MapClaims claims;
  CountingPlugin plugin;
  absl::StatusOr<std::unique_ptr<DraManager>> manager =
      DraManager::Create({.state_dir = dir.path(), .claims = &claims, .plugins = &plugin});
  ASSERT_TRUE(manager.ok()) << manager.status();
  constexpr int kPods = 12;
  std::vector<std::string> pods;
  for (int i = 0; i < kPods; ++i) pods.push_back("pod-" + std::to_string(i));
  claims.Put(Claim("shared", pods));
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    for (const std::string& uid : pods) {
      threads.emplace_back(
          [&, uid] { EXPECT_TRUE((*manager)->PrepareResources(PodUsing(uid, "shared")).ok()); });
    }
    for (std::thread& thread : threads) thread.join();
    threads.clear();
    ASSERT_EQ((*manager)->Claims().size(), 1u);
    EXPECT_EQ((*manager)->Claims()[0].state().pod_uids.size(), static_cast<size_t>(kPods));
    for (const std::string& uid : pods) {
      threads.emplace_back(
          [&, uid] { EXPECT_TRUE((*manager)->UnprepareResources(PodUsing(uid, "shared")).ok()); });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_TRUE((*manager)->Claims().empty());
    EXPECT_EQ(plugin.unprepare_calls.load(), round + 1);
  }
  // Several pods may each find the claim unprepared and call the driver (as in the kubelet);
  // at least one call per round happened.
  EXPECT_GE(plugin.prepare_calls.load(), 3);
}

}  // namespace
}  // namespace kdp::manager::dra
