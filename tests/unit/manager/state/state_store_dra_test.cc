// StateStore keeping the DRA manager's claims: records come back after a crash (synced or not,
// as long as the process wrote them), a compaction writes dra_manager_state in the kubelet's
// format and the journal then replays only what follows it, a dra_manager_state put there by
// someone else wins over the journal's records, a corrupt one stops the start (as it stops the
// kubelet), and a journal of an earlier kdp (no "dra" in its header) takes the file as it is.
// The journalled ClaimInfoCache records only what changed.
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "manager/src/dra/claim_info.h"
#include "manager/src/state/journal/journal.h"
#include "manager/src/state/state_store.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace kdp::manager {
namespace {

namespace fs = std::filesystem;
using dra::state::ClaimInfoState;
using ::kdp::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Paths {
  explicit Paths(const TempDir& dir)
      : checkpoint(dir.Path("device-plugins/kubelet_internal_checkpoint")),
        pods(dir.Path("kdp/pods.json")),
        journal(dir.Path("kdp/journal")),
        dra(dir.Path("dra_manager_state")) {
    std::error_code ignored;
    fs::create_directories(dir.Path("device-plugins"), ignored);
    fs::create_directories(dir.Path("kdp"), ignored);
  }
  StateStoreOptions Options() const {
    return {.checkpoint_path = checkpoint,
            .pods_path = pods,
            .journal_path = journal,
            .dra_checkpoint_path = dra,
            .compaction_delay = absl::Hours(1)};
  }
  std::string checkpoint, pods, journal, dra;
};

ClaimInfoState Claim(const std::string& name, const std::string& pod,
                     std::vector<std::string> cdi_ids = {}) {
  ClaimInfoState claim{.claim_uid = "uid-" + name, .claim_name = name, .namespace_ = "default"};
  claim.pod_uids.insert(pod);
  dra::state::DriverState& driver = claim.driver_state["gpu.example.com"];
  if (!cdi_ids.empty()) {
    driver.devices.push_back(
        {.pool_name = "node", .device_name = "gpu-0", .cdi_device_ids = std::move(cdi_ids)});
  }
  return claim;
}

std::unique_ptr<StateStore> Open(const Paths& paths, RestoredState* restored) {
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(paths.Options(), restored);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// What a crash of the process leaves: the files as they are (the store is never closed).
std::vector<ClaimInfoState> RestoredAfterCrash(const Paths& paths,
                                               std::unique_ptr<StateStore> running) {
  const TempDir copy;
  const Paths copied(copy);
  for (const auto& [from, to] :
       {std::pair{paths.journal, copied.journal}, std::pair{paths.dra, copied.dra}}) {
    std::error_code ignored;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ignored);
  }
  running.reset();  // after the copy: the destructor's Close would compact
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(copied, &restored);
  return restored.dra_claims;
}

TEST(StateStoreDra, RecordsComeBackAfterACrashSyncedOrNot) {
  const TempDir dir;
  const Paths paths(dir);
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(paths, &restored);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->keeps_dra_state());
  EXPECT_THAT(restored.dra_claims, IsEmpty());
  ASSERT_TRUE(store->RecordDraClaims({Claim("a", "p1"), Claim("b", "p2")}, {}, true).ok());
  // The record after NodePrepareResources: written, not synced; a process crash keeps it.
  ASSERT_TRUE(
      store
          ->RecordDraClaims({Claim("a", "p1", {"k8s.gpu.example.com/gpu=a"})}, {"default/b"}, false)
          .ok());
  EXPECT_THAT(RestoredAfterCrash(paths, std::move(store)),
              ElementsAre(Claim("a", "p1", {"k8s.gpu.example.com/gpu=a"})));
}

TEST(StateStoreDra, CompactionWritesTheKubeletsFileAndLaterRecordsReplayOverIt) {
  const TempDir dir;
  const Paths paths(dir);
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(paths, &restored);
  ASSERT_NE(store, nullptr);
  std::vector<ClaimInfoState> live = {Claim("a", "p1", {"k8s.gpu.example.com/gpu=a"})};
  store->StartCompaction([&live] { return StateSnapshot{.dra_claims = live}; });
  ASSERT_TRUE(store->RecordDraClaims(live, {}, true).ok());
  ASSERT_TRUE(store->Compact().ok());
  // Byte for byte what a kubelet writes for that state, and what its decoder reads.
  EXPECT_EQ(*ReadFile(paths.dra), dra::EncodeCheckpoint(live));
  EXPECT_THAT(*dra::DecodeCheckpoint(*ReadFile(paths.dra)), ElementsAre(live[0]));

  // A record after the compaction (the claim gone) replays over the file after a crash.
  ASSERT_TRUE(store->RecordDraClaims({}, {"default/a"}, false).ok());
  EXPECT_THAT(RestoredAfterCrash(paths, std::move(store)), IsEmpty());
}

TEST(StateStoreDra, ADraCheckpointPutThereBySomeoneElseWinsOverTheJournal) {
  const TempDir dir;
  const Paths paths(dir);
  {
    RestoredState restored;
    std::unique_ptr<StateStore> store = Open(paths, &restored);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->RecordDraClaims({Claim("ours", "p1")}, {}, true).ok());
  }  // never compacted (no StartCompaction): the record is only in the journal
  const ClaimInfoState theirs = Claim("theirs", "p9", {"k8s.gpu.example.com/gpu=9"});
  ASSERT_TRUE(WriteFileDurably(paths.dra, dra::EncodeCheckpoint({theirs})).ok());
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(paths, &restored);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(restored.dra_claims, ElementsAre(theirs));
  bool stale_copy = false;
  for (const auto& entry : fs::directory_iterator(dir.Path("kdp"))) {
    stale_copy |= entry.path().filename().string().rfind("journal.stale-", 0) == 0;
  }
  EXPECT_TRUE(stale_copy) << "the records not replayed are kept aside";
}

TEST(StateStoreDra, ACorruptDraCheckpointStopsTheStartAsItStopsTheKubelet) {
  const TempDir dir;
  const Paths paths(dir);
  std::string bytes = dra::EncodeCheckpoint({Claim("a", "p1")});
  bytes[bytes.find("p1")] = 'q';  // the checksum no longer matches
  ASSERT_TRUE(WriteFileDurably(paths.dra, bytes).ok());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(paths.Options(), &restored);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("failed to get checkpoint dra_manager_state"));
  EXPECT_THAT(store.status().message(), HasSubstr(paths.dra));
}

TEST(StateStoreDra, AnEarlierKdpsJournalAndDraCheckpointAreTakenAsTheyAre) {
  const TempDir dir;
  const Paths paths(dir);
  // kdp before the DRA state moved into the store: a journal header without "dra", and the DRA
  // manager's own dra_manager_state.
  JournalContents contents;
  ASSERT_TRUE(Journal::Open(paths.journal, R"({"kdp_state_journal":1,"checkpoint":"","pods":""})",
                            &contents)
                  .ok());
  const ClaimInfoState claim = Claim("a", "p1", {"k8s.gpu.example.com/gpu=a"});
  ASSERT_TRUE(WriteFileDurably(paths.dra, dra::EncodeCheckpoint({claim})).ok());
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(paths, &restored);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(restored.dra_claims, ElementsAre(claim));
  // And from now on the journal follows that file.
  ASSERT_TRUE(store->RecordDraClaims({}, {"default/a"}, true).ok());
  EXPECT_THAT(RestoredAfterCrash(paths, std::move(store)), IsEmpty());
}

TEST(StateStoreDra, WithoutADraPathTheStoreRefusesDraRecords) {
  const TempDir dir;
  const Paths paths(dir);
  StateStoreOptions options = paths.Options();
  options.dra_checkpoint_path.clear();
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->keeps_dra_state());
  EXPECT_EQ((*store)->RecordDraClaims({Claim("a", "p1")}, {}, true).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(paths.dra));
}

// The journalled cache: each sync records what changed since the last one.
TEST(StateStoreDra, AJournalledClaimCacheRecordsItsChangesAndComesBackUnprepared) {
  const TempDir dir;
  const Paths paths(dir);
  RestoredState restored;
  std::unique_ptr<StateStore> store = Open(paths, &restored);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::unique_ptr<dra::ClaimInfoCache>> cache =
      dra::ClaimInfoCache::CreateJournaled(store.get(), {Claim("kept", "p0")});
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ((*cache)->checkpoint_path(), paths.dra);
  ASSERT_TRUE((*cache)
                  ->WithLock([](dra::ClaimInfoCache::Contents& contents) {
                    contents.Add(dra::ClaimInfo::FromState(Claim("new", "p1")));
                    contents.Delete("kept", "default");
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE((*cache)->SyncToCheckpoint().ok());
  ASSERT_TRUE((*cache)
                  ->WithLock([](dra::ClaimInfoCache::Contents& contents) {
                    contents.Get("new", "default")->SetPrepared();
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE((*cache)->SyncToCheckpoint(dra::ClaimInfoCache::Durability::kByNextRecord).ok());
  const uint64_t records = [&] {
    JournalContents contents;
    const TempDir copy;
    fs::copy_file(paths.journal, copy.Path("journal"));
    EXPECT_TRUE(Journal::Open(copy.Path("journal"), "", &contents).ok());
    return contents.records.size();
  }();
  EXPECT_EQ(records, 1u) << "the prepared flag is not persistent: nothing to record";
  EXPECT_THAT(RestoredAfterCrash(paths, std::move(store)), ElementsAre(Claim("new", "p1")));
  EXPECT_FALSE(dra::ClaimInfoCache::CreateJournaled(nullptr, {}).ok());
}

}  // namespace
}  // namespace kdp::manager
