// ClaimInfo and ClaimInfoCache: every case of the kubelet's pkg/kubelet/cm/dra/claiminfo_test.go
// (1.33), plus restore-from-checkpoint and checkpoint ordering under concurrent writers.
#include "manager/src/dra/claim_info.h"

#include <fstream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/dra/claim_test_objects.h"

namespace kdp::manager::dra {

// Reaches the cache's mutex to check what WithLock/WithRLock hold.
class ClaimInfoCacheTestPeer {
 public:
  explicit ClaimInfoCacheTestPeer(const ClaimInfoCache& cache) : cache_(cache) {}
  // Whether a writer could take the lock now (releases it again).
  bool CanLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!cache_.mu_.TryLock()) return false;
    cache_.mu_.Unlock();
    return true;
  }
  // Whether a reader could take the lock now (releases it again).
  bool CanReaderLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!cache_.mu_.ReaderTryLock()) return false;
    cache_.mu_.ReaderUnlock();
    return true;
  }

 private:
  const ClaimInfoCache& cache_;
};

namespace {

using ::testing::HasSubstr;

resourceapi::ResourceClaim AllocatedClaim(std::vector<std::string> drivers) {
  resourceapi::ResourceClaim claim;
  claim.metadata.name = kClaimName;
  claim.metadata.namespace_ = kNamespace;
  claim.metadata.uid = kClaimUid;
  claim.status.allocation = resourceapi::AllocationResult{};
  for (size_t i = 0; i < drivers.size(); ++i) {
    resourceapi::DeviceRequestAllocationResult result;
    result.request = "test-request";
    result.driver = drivers[i];
    result.pool = "test-pool";
    result.device = "test-device-" + std::to_string(i);
    claim.status.allocation->results.push_back(result);
  }
  return claim;
}

state::ClaimInfoState TestState(std::set<std::string> pods = {}) {
  return {.claim_uid = kClaimUid,
          .claim_name = kClaimName,
          .namespace_ = kNamespace,
          .pod_uids = std::move(pods),
          .driver_state = {{kDriver,
                            {.devices = {{.pool_name = "test-pool",
                                          .device_name = "test-device",
                                          .request_names = {"test-request"},
                                          .cdi_device_ids = {"example.com/example=cdi"}}}}}}};
}

ClaimInfo TestInfo(std::set<std::string> pods = {}, bool prepared = false) {
  ClaimInfo info = ClaimInfo::FromState(TestState(std::move(pods)));
  if (prepared) info.SetPrepared();
  return info;
}

// ---- ClaimInfo ----------------------------------------------------------------------------------

TEST(NewClaimInfoFromClaim, SuccessfullyCreatedObject) {
  absl::StatusOr<ClaimInfo> info =
      ClaimInfo::FromClaim(AllocatedClaim({kDriver, "other-driver", kDriver}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->claim_uid(), kClaimUid);
  EXPECT_EQ(info->claim_name(), kClaimName);
  EXPECT_EQ(info->namespace_(), kNamespace);
  EXPECT_TRUE(info->state().pod_uids.empty());
  EXPECT_FALSE(info->IsPrepared());
  // One empty entry per distinct driver.
  std::map<std::string, state::DriverState> want = {{kDriver, {}}, {"other-driver", {}}};
  EXPECT_EQ(info->state().driver_state, want);
}

TEST(NewClaimInfoFromClaim, SuccessfullyCreatedObjectWithEmptyAllocation) {
  absl::StatusOr<ClaimInfo> info = ClaimInfo::FromClaim(AllocatedClaim({}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->state().driver_state.empty());
}

TEST(NewClaimInfoFromClaim, NotAllocatedIsAnError) {
  resourceapi::ResourceClaim claim = AllocatedClaim({kDriver});
  claim.status.allocation.reset();
  absl::StatusOr<ClaimInfo> info = ClaimInfo::FromClaim(claim);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(info.status().message(), "not allocated");
}

TEST(NewClaimInfoFromState, SuccessfullyCreatedObjectIsACopyAndNotPrepared) {
  state::ClaimInfoState state = TestState({kPodUid});
  ClaimInfo info = ClaimInfo::FromState(state);
  EXPECT_EQ(info.state(), state);
  EXPECT_FALSE(info.IsPrepared());
  state.pod_uids.insert("another");  // a deep copy: the info does not change
  EXPECT_FALSE(info.HasPodReference("another"));
}

TEST(ClaimInfoAddDevice, AddNewDeviceAndOtherNewDevice) {
  ClaimInfo info;
  state::Device first = {.pool_name = "p", .device_name = "d1", .cdi_device_ids = {"x=1"}};
  state::Device second = {.pool_name = "p", .device_name = "d2", .request_names = {"r"}};
  info.AddDevice(kDriver, first);
  EXPECT_EQ(info.state().driver_state.at(kDriver).devices, std::vector<state::Device>{first});
  info.AddDevice(kDriver, second);
  EXPECT_EQ(info.state().driver_state.at(kDriver).devices,
            (std::vector<state::Device>{first, second}));
}

TEST(ClaimInfoSetDevices, ReplacesOnlyThatDriversDevices) {
  ClaimInfo info = TestInfo();
  info.AddDevice("other", {.pool_name = "p", .device_name = "o"});
  info.SetDevices(kDriver, {{.pool_name = "p", .device_name = "new"}});
  EXPECT_EQ(info.state().driver_state.at(kDriver).devices.size(), 1u);
  EXPECT_EQ(info.state().driver_state.at(kDriver).devices[0].device_name, "new");
  EXPECT_EQ(info.state().driver_state.at("other").devices[0].device_name, "o");
}

TEST(ClaimInfoAddPodReference, EmptyFirstAndSecond) {
  ClaimInfo info;  // empty PodUIDs list
  info.AddPodReference(kPodUid);
  EXPECT_EQ(info.state().pod_uids.size(), 1u);
  info.AddPodReference(kPodUid);  // first pod reference again: idempotent
  EXPECT_EQ(info.state().pod_uids.size(), 1u);
  info.AddPodReference("second-pod");
  EXPECT_EQ(info.state().pod_uids.size(), 2u);
}

TEST(ClaimInfoHasPodReference, Cases) {
  EXPECT_FALSE(TestInfo({"other-pod"}).HasPodReference(kPodUid));  // doesn't reference pod
  EXPECT_TRUE(TestInfo({kPodUid}).HasPodReference(kPodUid));       // references pod
  EXPECT_FALSE(ClaimInfo().HasPodReference(kPodUid));              // empty claim info
}

TEST(ClaimInfoDeletePodReference, Cases) {
  ClaimInfo other = TestInfo({"other-pod"});
  other.DeletePodReference(kPodUid);
  EXPECT_EQ(other.state().pod_uids, std::set<std::string>{"other-pod"});
  ClaimInfo referencing = TestInfo({kPodUid, "other-pod"});
  referencing.DeletePodReference(kPodUid);
  EXPECT_EQ(referencing.state().pod_uids, std::set<std::string>{"other-pod"});
  ClaimInfo empty;
  empty.DeletePodReference(kPodUid);
  EXPECT_TRUE(empty.state().pod_uids.empty());
}

TEST(ClaimInfoSetPrepared, Cases) {
  ClaimInfo unprepared = TestInfo();
  unprepared.SetPrepared();
  EXPECT_TRUE(unprepared.IsPrepared());
  ClaimInfo prepared = TestInfo({}, /*prepared=*/true);
  prepared.SetPrepared();
  EXPECT_TRUE(prepared.IsPrepared());
  ClaimInfo empty;
  empty.SetPrepared();
  EXPECT_TRUE(empty.IsPrepared());
}

TEST(ClaimInfoIsPrepared, Cases) {
  EXPECT_FALSE(TestInfo().IsPrepared());
  EXPECT_TRUE(TestInfo({}, /*prepared=*/true).IsPrepared());
  EXPECT_FALSE(ClaimInfo().IsPrepared());
}

TEST(ClaimInfoCdiDeviceIds, FiltersByRequest) {
  ClaimInfo info;
  info.AddDevice("b-driver", {.device_name = "all", .cdi_device_ids = {"b=all"}});
  info.AddDevice("a-driver",
                 {.device_name = "r1", .request_names = {"r1"}, .cdi_device_ids = {"a=1"}});
  info.AddDevice("a-driver",
                 {.device_name = "r2", .request_names = {"r2", "r3"}, .cdi_device_ids = {"a=2"}});
  EXPECT_EQ(info.CdiDeviceIds(""), (std::vector<std::string>{"a=1", "a=2", "b=all"}));
  EXPECT_EQ(info.CdiDeviceIds("r1"), (std::vector<std::string>{"a=1", "b=all"}));
  EXPECT_EQ(info.CdiDeviceIds("r3"), (std::vector<std::string>{"a=2", "b=all"}));
  EXPECT_EQ(info.CdiDeviceIds("other"), (std::vector<std::string>{"b=all"}));
}

// ---- ClaimInfoCache -----------------------------------------------------------------------------

std::unique_ptr<ClaimInfoCache> NewCache(const testing::TempDir& dir) {
  absl::StatusOr<std::unique_ptr<ClaimInfoCache>> cache = ClaimInfoCache::Create(dir.path());
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? *std::move(cache) : nullptr;
}

TEST(NewClaimInfoCache, SuccessfullyCreatedCache) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->checkpoint_path(), dir.Path("dra_manager_state"));
}

TEST(NewClaimInfoCache, EmptyParameters) {
  EXPECT_EQ(ClaimInfoCache::Create("", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NewClaimInfoCache, EmptyCheckpointName) {
  testing::TempDir dir;
  EXPECT_EQ(ClaimInfoCache::Create(dir.path(), "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NewClaimInfoCache, IncorrectCheckpointName) {
  testing::TempDir dir;
  EXPECT_EQ(ClaimInfoCache::Create(dir.Path("subdir"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NewClaimInfoCache, RestoresClaimsUnpreparedFromTheCheckpoint) {
  testing::TempDir dir;
  {
    std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
    ASSERT_TRUE(cache
                    ->WithLock([](ClaimInfoCache::Contents& c) {
                      c.Add(TestInfo({kPodUid}, /*prepared=*/true));
                      return absl::OkStatus();
                    })
                    .ok());
    ASSERT_TRUE(cache->SyncToCheckpoint().ok());
  }
  std::unique_ptr<ClaimInfoCache> restored = NewCache(dir);
  ASSERT_NE(restored, nullptr);
  ASSERT_TRUE(restored
                  ->WithRLock([](const ClaimInfoCache::Contents& c) {
                    const ClaimInfo* info = c.Get(kClaimName, kNamespace);
                    EXPECT_NE(info, nullptr);
                    if (info != nullptr) {
                      EXPECT_EQ(info->state(), TestState({kPodUid}));
                      EXPECT_FALSE(info->IsPrepared());
                    }
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(NewClaimInfoCache, ACorruptedCheckpointIsAnError) {
  testing::TempDir dir;
  std::ofstream(dir.Path("dra_manager_state")) << R"({"Data":"{}","Checksum":1})";
  absl::StatusOr<std::unique_ptr<ClaimInfoCache>> cache = ClaimInfoCache::Create(dir.path());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(cache.status().message(), HasSubstr("checkpoint is corrupted"));
}

TEST(ClaimInfoCacheWithLock, CacheIsLockedInsideAFunction) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ClaimInfoCacheTestPeer peer(*cache);
  EXPECT_TRUE(peer.CanLock());
  ASSERT_TRUE(cache
                  ->WithLock([&](ClaimInfoCache::Contents&) {
                    EXPECT_FALSE(peer.CanLock());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheWithLock, CacheIsRLockedInsideAFunction) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ClaimInfoCacheTestPeer peer(*cache);
  ASSERT_TRUE(cache
                  ->WithLock([&](ClaimInfoCache::Contents&) {
                    EXPECT_FALSE(peer.CanReaderLock());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheWithLock, SuccessfullyCalledFunctionAndErroringFunction) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  bool called = false;
  EXPECT_TRUE(cache
                  ->WithLock([&](ClaimInfoCache::Contents&) {
                    called = true;
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_TRUE(called);
  absl::Status error = cache->WithLock(
      [](ClaimInfoCache::Contents&) { return absl::InternalError("erroring function"); });
  EXPECT_EQ(error, absl::InternalError("erroring function"));
}

TEST(ClaimInfoCacheWithRLock, RLockedCacheAllowsAnotherRLock) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ClaimInfoCacheTestPeer peer(*cache);
  ASSERT_TRUE(cache
                  ->WithRLock([&](const ClaimInfoCache::Contents&) {
                    EXPECT_TRUE(peer.CanReaderLock());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheWithRLock, CacheIsLockedInsideAFunction) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ClaimInfoCacheTestPeer peer(*cache);
  ASSERT_TRUE(cache
                  ->WithRLock([&](const ClaimInfoCache::Contents&) {
                    EXPECT_FALSE(peer.CanLock());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheWithRLock, SuccessfullyCalledFunctionAndErroringFunction) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  bool called = false;
  EXPECT_TRUE(cache
                  ->WithRLock([&](const ClaimInfoCache::Contents&) {
                    called = true;
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_TRUE(called);
  EXPECT_EQ(cache->WithRLock([](const ClaimInfoCache::Contents&) {
    return absl::InternalError("erroring function");
  }),
            absl::InternalError("erroring function"));
}

std::map<std::string, int64_t> InUse(ClaimInfoCache& cache) {
  std::map<std::string, int64_t> in_use;
  EXPECT_TRUE(cache
                  .WithRLock([&](const ClaimInfoCache::Contents& c) {
                    in_use = c.ClaimsInUse();
                    return absl::OkStatus();
                  })
                  .ok());
  return in_use;
}

TEST(ClaimInfoCacheAdd, AddedPreparedAndMorePreparedClaimInfo) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  // claimInfo successfully added: unprepared, so nothing in use.
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo());
                    EXPECT_TRUE(c.Contains(kClaimName, kNamespace));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(InUse(*cache), (std::map<std::string, int64_t>{{"<any>", 0}}));
  // prepared claimInfo (replaces the entry with the same key).
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo({}, /*prepared=*/true));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(InUse(*cache), (std::map<std::string, int64_t>{{"<any>", 1}, {kDriver, 1}}));
  // add more prepared claimInfo.
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    state::ClaimInfoState other = TestState();
                    other.claim_name = "other-claim";
                    other.driver_state = {{"other-driver", {}}};
                    ClaimInfo info = ClaimInfo::FromState(other);
                    info.SetPrepared();
                    c.Add(info);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(InUse(*cache),
            (std::map<std::string, int64_t>{{"<any>", 2}, {kDriver, 1}, {"other-driver", 1}}));
}

TEST(ClaimInfoCacheContains, HitMissAndEmpty) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    EXPECT_FALSE(c.Contains("", ""));  // empty cache and empty claim info
                    c.Add(TestInfo());
                    EXPECT_TRUE(c.Contains(kClaimName, kNamespace));          // hit
                    EXPECT_FALSE(c.Contains(kClaimName, "other-namespace"));  // miss
                    EXPECT_FALSE(c.Contains("other-claim", kNamespace));      // miss
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheGet, HitAndMiss) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo({kPodUid}));
                    const ClaimInfo* hit = c.Get(kClaimName, kNamespace);
                    EXPECT_NE(hit, nullptr);
                    if (hit != nullptr) {
                      EXPECT_EQ(*hit, TestInfo({kPodUid}));
                    }
                    EXPECT_EQ(c.Get("other-claim", kNamespace), nullptr);
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ClaimInfoCacheDelete, ItemInCacheAndNotInCache) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo({}, /*prepared=*/true));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(InUse(*cache)["<any>"], 1);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Delete(kClaimName, kNamespace);  // item in cache
                    EXPECT_FALSE(c.Contains(kClaimName, kNamespace));
                    c.Delete(kClaimName, kNamespace);  // item not in cache
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(InUse(*cache), (std::map<std::string, int64_t>{{"<any>", 0}}));
}

TEST(ClaimInfoCacheHasPodReference, ReferencedAndNot) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo({kPodUid}));
                    EXPECT_TRUE(c.HasPodReference(kPodUid));
                    EXPECT_FALSE(c.HasPodReference("other-pod"));
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(SyncToCheckpoint, SuccessfullyCheckpointedCache) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  ASSERT_TRUE(cache
                  ->WithLock([](ClaimInfoCache::Contents& c) {
                    c.Add(TestInfo({kPodUid}));
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(cache->SyncToCheckpoint().ok());
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer = Checkpointer::Create(dir.path());
  ASSERT_TRUE(checkpointer.ok());
  absl::StatusOr<std::vector<state::ClaimInfoState>> stored = (*checkpointer)->GetOrCreate();
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, std::vector<state::ClaimInfoState>{TestState({kPodUid})});
}

TEST(SyncToCheckpoint, ConcurrentWritersLeaveTheNewestContent) {
  testing::TempDir dir;
  std::unique_ptr<ClaimInfoCache> cache = NewCache(dir);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(cache
                        ->WithLock([&](ClaimInfoCache::Contents& c) {
                          state::ClaimInfoState s = TestState({"pod-" + std::to_string(t)});
                          s.claim_name = "claim-" + std::to_string(t) + "-" + std::to_string(i);
                          c.Add(ClaimInfo::FromState(s));
                          return absl::OkStatus();
                        })
                        .ok());
        EXPECT_TRUE(cache->SyncToCheckpoint().ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer = Checkpointer::Create(dir.path());
  ASSERT_TRUE(checkpointer.ok());
  absl::StatusOr<std::vector<state::ClaimInfoState>> stored = (*checkpointer)->GetOrCreate();
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->size(), static_cast<size_t>(kThreads * 5));
}

}  // namespace
}  // namespace kdp::manager::dra
