// StorePersister: the snapshot plus journal the local resource API keeps on disk. A "crash" is
// simulated by copying the files while the persister still holds them: what a killed process
// leaves.
#include "manager/src/controlplane/resourceapi/persistence.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/state/journal/journal.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using Json = nlohmann::json;

Json Claim(const std::string& name) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}}}}}}}};
}

Json Class(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

ObjectStore MakeStore(size_t event_log_capacity = 100) {
  return ObjectStore(StoreOptions{.node_name = "node-1", .event_log_capacity = event_log_capacity});
}

// The records of the journal at `path` (nothing may hold it).
std::vector<JournalRecord> Records(const std::string& path) {
  JournalContents contents;
  absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(path, "", &contents);
  EXPECT_TRUE(journal.ok()) << journal.status();
  return contents.records;
}

class StorePersisterTest : public ::testing::Test {
 protected:
  std::string Snapshot() const { return dir_.Path("resources.json"); }
  std::string JournalFile() const { return dir_.Path("resources.journal"); }
  std::string CrashCopy(const std::string& name) const { return crash_.Path(name); }

  // What a process killed now leaves on disk, copied to crash_.
  void Crash() {
    for (const char* name : {"resources.json", "resources.journal"}) {
      std::filesystem::copy_file(dir_.Path(name), crash_.Path(name),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }

  // A fresh store loaded from the crash copy.
  std::unique_ptr<ObjectStore> LoadCrashCopy() {
    auto store = std::make_unique<ObjectStore>(StoreOptions{.node_name = "node-1"});
    absl::Status loaded = StorePersister::Load(crash_.Path("resources.json"), store.get());
    EXPECT_TRUE(loaded.ok()) << loaded;
    return store;
  }

  testing::TempDir dir_;
  testing::TempDir crash_;
};

TEST_F(StorePersisterTest, JournalIsBesideTheSnapshot) {
  EXPECT_EQ(StorePersister::JournalPath("/r/kdp/resources.json"), "/r/kdp/resources.journal");
  EXPECT_EQ(StorePersister::JournalPath("/r/state"), "/r/state.journal");
}

TEST_F(StorePersisterTest, WritesAfterTheFirstAppendToTheJournalAndLoadReplaysThem) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(store.Create(Kind::kDeviceClass, Class("gpu.example.com")).ok());
  ASSERT_TRUE(persister.Flush().ok());  // the process's first write: the snapshot
  const std::string snapshot = *kdp::ReadFile(Snapshot());

  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("b")).ok());
  ASSERT_TRUE(persister.Flush().ok());
  ASSERT_TRUE(store.Delete(Kind::kResourceClaim, "default", "a").ok());
  ASSERT_TRUE(persister.Flush().ok());
  ASSERT_TRUE(persister.Flush().ok());  // nothing changed: no record
  EXPECT_EQ(*kdp::ReadFile(Snapshot()), snapshot) << "the snapshot is not rewritten";
  Crash();

  std::vector<JournalRecord> records = Records(CrashCopy("resources.journal"));
  ASSERT_THAT(records, SizeIs(2));
  EXPECT_THAT(records[0].payload, HasSubstr("\"name\":\"b\""));
  EXPECT_THAT(records[1].payload, HasSubstr("\"deleted\":[{\"kind\":\"ResourceClaim\""));

  std::unique_ptr<ObjectStore> loaded = LoadCrashCopy();
  EXPECT_EQ(loaded->ResourceVersion(), store.ResourceVersion());
  EXPECT_TRUE(loaded->Get(Kind::kDeviceClass, "", "gpu.example.com").ok());
  EXPECT_TRUE(absl::IsNotFound(loaded->Get(Kind::kResourceClaim, "default", "a").status()));
  absl::StatusOr<Json> b = loaded->Get(Kind::kResourceClaim, "default", "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, *store.Get(Kind::kResourceClaim, "default", "b"));
}

TEST_F(StorePersisterTest, AModifiedObjectIsRecordedInItsLastState) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(persister.Flush().ok());
  Json claim = *store.Get(Kind::kResourceClaim, "default", "a");
  claim["metadata"]["labels"] = {{"team", "ml"}};
  ASSERT_TRUE(store.Update(Kind::kResourceClaim, claim).ok());
  claim = *store.Get(Kind::kResourceClaim, "default", "a");
  claim["metadata"]["labels"] = {{"team", "infra"}};
  ASSERT_TRUE(store.Update(Kind::kResourceClaim, claim).ok());
  ASSERT_TRUE(persister.Flush().ok());
  Crash();
  ASSERT_THAT(Records(CrashCopy("resources.journal")), SizeIs(1));
  std::unique_ptr<ObjectStore> loaded = LoadCrashCopy();
  EXPECT_EQ((*loaded->Get(Kind::kResourceClaim, "default", "a"))["metadata"]["labels"]["team"],
            "infra");
}

// Pods are written again by the manager from its pod store, and their status changes with every
// admission: they (like the Node and Events) never cost a journal record.
TEST_F(StorePersisterTest, PodChangesWriteNoRecordAndAreNotPersisted) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(persister.Flush().ok());  // the snapshot
  Json pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "uid-p"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  ASSERT_TRUE(store.CreateKeepingUid(Kind::kPod, pod).ok());
  pod["status"] = {{"phase", "Running"}};
  ASSERT_TRUE(store.UpdateStatus(Kind::kPod, pod).ok());
  ASSERT_TRUE(persister.Flush().ok());
  Crash();
  EXPECT_THAT(Records(CrashCopy("resources.journal")), IsEmpty());

  // With a claim changed beside it, the record holds the claim only.
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("b")).ok());
  ASSERT_TRUE(store.Delete(Kind::kPod, "default", "p").ok());
  ASSERT_TRUE(persister.Flush().ok());
  Crash();
  std::vector<JournalRecord> records = Records(CrashCopy("resources.journal"));
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_THAT(records[0].payload, HasSubstr("\"name\":\"b\""));
  EXPECT_THAT(records[0].payload, Not(HasSubstr("\"kind\":\"Pod\"")));
  EXPECT_THAT(records[0].payload, Not(HasSubstr("uid-p")));
  std::unique_ptr<ObjectStore> loaded = LoadCrashCopy();
  EXPECT_TRUE(loaded->Get(Kind::kResourceClaim, "default", "b").ok());
  EXPECT_TRUE(absl::IsNotFound(loaded->Get(Kind::kPod, "default", "p").status()));
}

TEST_F(StorePersisterTest, CompactFoldsTheJournalIntoTheSnapshot) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(persister.Flush().ok());
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(persister.Flush().ok());
  ASSERT_TRUE(persister.Compact().ok());
  Crash();
  EXPECT_THAT(Records(CrashCopy("resources.journal")), IsEmpty());
  EXPECT_THAT(*kdp::ReadFile(CrashCopy("resources.json")), HasSubstr("\"name\":\"a\""));
  EXPECT_TRUE(LoadCrashCopy()->Get(Kind::kResourceClaim, "default", "a").ok());
}

// A crash after a compaction wrote the snapshot and before it emptied the journal: the journal's
// records are older than the snapshot and must not bring back what the snapshot no longer has.
TEST_F(StorePersisterTest, RecordsTheSnapshotAlreadyHoldsAreSkipped) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(persister.Flush().ok());
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(persister.Flush().ok());
  Crash();
  const std::string stale_journal = *kdp::ReadFile(CrashCopy("resources.journal"));
  ASSERT_TRUE(store.Delete(Kind::kResourceClaim, "default", "a").ok());
  ASSERT_TRUE(persister.Compact().ok());
  Crash();
  ASSERT_TRUE(kdp::WriteFileDurably(CrashCopy("resources.journal"), stale_journal, 0600).ok());
  ASSERT_THAT(Records(CrashCopy("resources.journal")), SizeIs(1));
  std::unique_ptr<ObjectStore> loaded = LoadCrashCopy();
  EXPECT_TRUE(absl::IsNotFound(loaded->Get(Kind::kResourceClaim, "default", "a").status()));
  EXPECT_EQ(loaded->ResourceVersion(), store.ResourceVersion());
}

// The change log holds 3 events: a persister 5 changes behind writes the whole snapshot.
TEST_F(StorePersisterTest, ALogThatNoLongerReachesBackWritesTheSnapshot) {
  ObjectStore store = MakeStore(/*event_log_capacity=*/3);
  StorePersister persister(Snapshot(), &store);
  ASSERT_TRUE(persister.Flush().ok());
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim(name)).ok());
  }
  ASSERT_TRUE(persister.Flush().ok());
  Crash();
  EXPECT_THAT(Records(CrashCopy("resources.journal")), IsEmpty());
  EXPECT_THAT(*kdp::ReadFile(CrashCopy("resources.json")), HasSubstr("\"name\":\"e\""));
  EXPECT_TRUE(LoadCrashCopy()->Get(Kind::kResourceClaim, "default", "a").ok());
}

TEST_F(StorePersisterTest, StopLeavesEverythingInTheSnapshot) {
  ObjectStore store = MakeStore();
  {
    StorePersister persister(Snapshot(), &store);
    persister.Start();
    ASSERT_TRUE(store.MakeDurable().ok());
    ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
    ASSERT_TRUE(store.MakeDurable().ok());  // the durability hook is Flush()
    persister.Stop();
  }
  EXPECT_THAT(Records(JournalFile()), IsEmpty());
  ObjectStore loaded = MakeStore();
  ASSERT_TRUE(StorePersister::Load(Snapshot(), &loaded).ok());
  EXPECT_TRUE(loaded.Get(Kind::kResourceClaim, "default", "a").ok());
}

TEST_F(StorePersisterTest, TheBackgroundThreadWritesChangesAndCompactsWhenQuiet) {
  ObjectStore store = MakeStore();
  StorePersister persister(Snapshot(), &store, absl::Milliseconds(10));
  persister.Start();
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] {
    absl::StatusOr<std::string> snapshot = kdp::ReadFile(Snapshot());
    return snapshot.ok() && snapshot->find("\"name\":\"a\"") != std::string::npos;
  }));
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("b")).ok());
  // Written to the journal within the delay, then folded into the snapshot once quiet.
  ASSERT_TRUE(testing::WaitUntil([&] {
    absl::StatusOr<std::string> snapshot = kdp::ReadFile(Snapshot());
    return snapshot.ok() && snapshot->find("\"name\":\"b\"") != std::string::npos;
  }));
  persister.Stop();
  EXPECT_THAT(Records(JournalFile()), IsEmpty());
}

// Writers that flush every change themselves (as DRA admissions do) leave the background thread
// nothing to write and the store never quiet: the journal is still folded into the snapshot once
// it is large.
TEST_F(StorePersisterTest, ALargeJournalIsFoldedWhileChangesKeepComing) {
  ObjectStore store = MakeStore(/*event_log_capacity=*/10000);
  StorePersister persister(Snapshot(), &store, absl::Milliseconds(10));
  ASSERT_TRUE(persister.Flush().ok());  // the snapshot, without claim-0
  persister.Start();
  const std::string padding(4096, 'x');
  bool folded = false;
  for (int i = 0; i < 2000 && !folded; ++i) {
    Json claim = Claim(absl::StrCat("claim-", i));
    claim["metadata"]["annotations"] = {{"example.com/padding", padding}};
    ASSERT_TRUE(store.Create(Kind::kResourceClaim, claim).ok());
    ASSERT_TRUE(persister.Flush().ok());
    folded = kdp::ReadFile(Snapshot())->find("\"claim-0\"") != std::string::npos;
  }
  EXPECT_TRUE(folded) << "2,000 records of 4 KiB and the snapshot still lacks the first";
}

TEST_F(StorePersisterTest, ARecordThatIsNotOneIsDataLossNamingTheJournal) {
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(JournalFile(), R"({"snapshotResourceVersion":"0"})", nullptr);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE((*journal)->Append(R"({"objects":[]})", /*sync=*/true).ok());
  }
  ObjectStore store = MakeStore();
  absl::Status loaded = StorePersister::Load(Snapshot(), &store);
  EXPECT_EQ(loaded.code(), absl::StatusCode::kDataLoss) << loaded;
  EXPECT_THAT(std::string(loaded.message()), HasSubstr(JournalFile() + ": record 1"));
}

TEST_F(StorePersisterTest, AnInvalidObjectInTheJournalIsDataLoss) {
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(JournalFile(), R"({"snapshotResourceVersion":"0"})", nullptr);
    ASSERT_TRUE(journal.ok()) << journal.status();
    Json bad = Claim("a");
    bad["kind"] = "ResourceClaim";
    bad["apiVersion"] = "resource.k8s.io/v1";
    bad["spec"]["devices"]["requests"][0]["name"] = "";
    Json record = {{"resourceVersion", "7"}, {"objects", {bad}}, {"deleted", Json::array()}};
    ASSERT_TRUE((*journal)->Append(record.dump(), /*sync=*/true).ok());
  }
  ObjectStore store = MakeStore();
  absl::Status loaded = StorePersister::Load(Snapshot(), &store);
  EXPECT_EQ(loaded.code(), absl::StatusCode::kDataLoss) << loaded;
  EXPECT_THAT(std::string(loaded.message()), HasSubstr(JournalFile()));
}

// With a journal beside it, a snapshot without its objects is not taken for an empty one (the
// next compaction would have written that over it).
TEST_F(StorePersisterTest, ASnapshotWithoutObjectsIsDataLossAlsoWithAJournal) {
  {
    ObjectStore store = MakeStore();
    StorePersister persister(Snapshot(), &store);
    ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("a")).ok());
    ASSERT_TRUE(persister.Flush().ok());
    ASSERT_TRUE(store.Create(Kind::kResourceClaim, Claim("b")).ok());
    ASSERT_TRUE(persister.Flush().ok());
    Crash();
  }
  ASSERT_TRUE(
      kdp::WriteFileDurably(CrashCopy("resources.json"), R"({"resourceVersion": "1"})", 0600).ok());
  ObjectStore store = MakeStore();
  const absl::Status loaded = StorePersister::Load(CrashCopy("resources.json"), &store);
  EXPECT_EQ(loaded.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.message(), HasSubstr("\"objects\" is not an array"));
  EXPECT_THAT(loaded.message(), HasSubstr(CrashCopy("resources.json")));
}

TEST_F(StorePersisterTest, NoFilesIsAnEmptyStore) {
  ObjectStore store = MakeStore();
  EXPECT_TRUE(StorePersister::Load(Snapshot(), &store).ok());
  EXPECT_FALSE(std::filesystem::exists(JournalFile())) << "Load creates nothing";
}

}  // namespace
}  // namespace kdp::manager::resourceapi
