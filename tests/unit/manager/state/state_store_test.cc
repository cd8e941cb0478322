// StateStore: what was recorded comes back after a clean restart and after a crash at any moment
// (simulated by copying the files as they are at that moment, which is what a process crash leaves,
// or by also cutting the journal back to its last synced byte, which is what a power loss may
// leave), at every crash point inside a compaction (files crafted by hand), with foreign, legacy
// (v1) and corrupt files, under concurrent records and compactions, and through failed
// compactions. A model (std::map) kept beside the store says what must come back.
#include "manager/src/state/state_store.h"

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/pod/pod.h"
#include "manager/src/pod/pod_json.h"
#include "manager/src/state/journal/journal.h"
#include "tests/testing/file_size_limit.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager {
namespace {

namespace fs = std::filesystem;
using ::kdp::testing::ScopedFileSizeLimit;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using EntryKey = std::tuple<std::string, std::string, std::string>;

// The reference's test vectors (as in devicemanager/checkpoint/checkpoint_test.cc): TV-S3, a
// checkpoint as a kubelet 1.20+ writes it (v2), and TV-S4, one as a kubelet <= 1.19 wrote it (v1).
constexpr char kKubeletV2Checkpoint[] =
    R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr",)"
    R"("ResourceName":"example.com/foo","DeviceIDs":{"-1":["f1"],"0":["f2"],"1":["f2"],)"
    R"("10":["f3"]},"AllocResp":"CgoKA0ZPTxIDYmFy"}],"RegisteredDevices":{"example.com/foo":)"
    R"(["f1","f2","f3"]}},"Checksum":2244000545})";
constexpr char kKubeletV1Checkpoint[] =
    R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr",)"
    R"("ResourceName":"example.com/foo","DeviceIDs":["f1","f2"],"AllocResp":"CgoKA0ZPTxIDYmFy"}],)"
    R"("RegisteredDevices":{"example.com/foo":["f1","f2","f3"]}},"Checksum":3036919596})";
// ContainerAllocateResponse{envs: {FOO: bar}}: the AllocResp of both vectors.
const std::string kFooBar("\x0a\x0a\x0a\x03\x46\x4f\x4f\x12\x03\x62\x61\x72", 12);

constexpr char kGpu[] = "example.com/gpu";
constexpr char kNic[] = "example.com/nic";

// ---- Files ----

// kdp's state under one kubelet root, laid out as kdp-manager lays it out.
struct Layout {
  explicit Layout(const std::string& root_dir)
      : root(root_dir),
        checkpoint(absl::StrCat(root_dir, "/device-plugins/kubelet_internal_checkpoint")),
        pods(absl::StrCat(root_dir, "/kdp/pods.json")),
        journal(absl::StrCat(root_dir, "/kdp/journal")) {
    // A test may have put a file in a directory's place (an obstacle); that one is left alone.
    std::error_code ignored;
    fs::create_directories(absl::StrCat(root_dir, "/device-plugins"), ignored);
    fs::create_directories(absl::StrCat(root_dir, "/kdp"), ignored);
  }

  // Compaction only when a test asks for it (Compact, Close), unless `delay` says otherwise.
  StateStoreOptions Options(bool strict = false, absl::Duration delay = absl::Hours(1)) const {
    return {.checkpoint_path = checkpoint,
            .pods_path = pods,
            .journal_path = journal,
            .compaction_delay = delay,
            .strict = strict};
  }

  std::string root;
  std::string checkpoint;
  std::string pods;
  std::string journal;
};

std::string ReadBytes(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  absl::Status written = WriteFileDurably(path, bytes);
  ASSERT_TRUE(written.ok()) << written;
}

// What a crash of the process at this moment leaves on disk: every file as it is now. Every
// acknowledged record has at least been written, so the copy holds it.
// Files may come and go while it copies (a compaction's temporary files, renamed into place):
// one that vanishes was not there for the crash either, and a file renamed over is copied as it
// was before or after, both complete.
Layout CrashCopy(const Layout& from, const TempDir& into) {
  std::error_code error;
  for (fs::recursive_directory_iterator it(from.root, error), end; !error && it != end;
       it.increment(error)) {
    // Lexically: a compaction's temporary file may be gone by now (fs::relative would throw),
    // and then it is simply not in the copy, as it was not on disk at that moment.
    const fs::path target = fs::path(into.path()) / it->path().lexically_relative(from.root);
    std::error_code ignored;
    if (it->is_directory(ignored)) {
      fs::create_directories(target, ignored);
    } else {
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ignored);
    }
  }
  return Layout(into.path());
}

// What a power loss may leave: the copy, with the journal cut back to `journal_size` (its size
// when the last synced record or compaction returned), plus `torn` bytes of what followed.
Layout PowerLossCopy(const Layout& from, const TempDir& into, uintmax_t journal_size,
                     uintmax_t torn = 0) {
  Layout copy = CrashCopy(from, into);
  const uintmax_t size = fs::file_size(copy.journal);
  fs::resize_file(copy.journal, std::min(size, journal_size + torn));
  return copy;
}

// Contents of the files in `dir` whose names start with `prefix`.
std::vector<std::string> FilesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> contents;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (absl::StartsWith(entry.path().filename().string(), prefix)) {
      contents.push_back(ReadBytes(entry.path().string()));
    }
  }
  std::sort(contents.begin(), contents.end());
  return contents;
}

// kdp's content hash (FNV-1a 64 as 16 hex digits, "-", the size), written independently of
// state_store.cc: the journal names the files by it.
std::string ContentHash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return absl::StrCat(hex, "-", bytes.size());
}

// pods.json as a compaction writes it: {"version":1,"checksum":"<hash of the list>","pods":[...]}.
std::string EncodePodsFile(const std::vector<Pod>& pods) {
  nlohmann::json list = nlohmann::json::array();
  for (const Pod& pod : pods) list.push_back(PodToJson(pod));
  const std::string dump = list.dump();
  return absl::StrCat(R"({"version":1,"checksum":")", ContentHash(dump), R"(","pods":)", dump,
                      "}\n");
}

// "" when the file is absent, or whole and valid as a kubelet reads it; else what is wrong.
std::string CheckpointProblem(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (absl::IsNotFound(bytes.status())) return "";
  if (!bytes.ok()) return std::string(bytes.status().message());
  absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(*bytes);
  if (!decoded.ok()) return std::string(decoded.status().message());
  return decoded->checksum_ok() ? "" : absl::StrCat(path, ": checksum mismatch");
}

// "" when pods.json is absent, or whole with a matching checksum and valid pods; else what is
// wrong.
std::string PodsFileProblem(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (absl::IsNotFound(bytes.status())) return "";
  if (!bytes.ok()) return std::string(bytes.status().message());
  nlohmann::json doc = nlohmann::json::parse(*bytes, nullptr, false);
  if (!doc.is_object() || doc.value("version", 0) != 1 || !doc.contains("pods") ||
      !doc["pods"].is_array()) {
    return absl::StrCat(path, ": not a pods file: ", *bytes);
  }
  if (doc.value("checksum", "") != ContentHash(doc["pods"].dump())) {
    return absl::StrCat(path, ": checksum mismatch");
  }
  for (const nlohmann::json& pod : doc["pods"]) {
    if (absl::StatusOr<Pod> parsed = PodFromJson(pod, path, "pods[]"); !parsed.ok()) {
      return std::string(parsed.status().message());
    }
  }
  return "";
}

// The journal's header payload (the first frame after the 11-byte magic and u32 version).
nlohmann::json JournalHeader(const std::string& journal_bytes) {
  constexpr size_t kStart = 15;
  constexpr size_t kFrameHeader = 16;
  if (journal_bytes.size() < kStart + kFrameHeader) return nullptr;
  uint32_t length = 0;
  for (int i = 3; i >= 0; --i)
    length = (length << 8) | static_cast<uint8_t>(journal_bytes[kStart + i]);
  return nlohmann::json::parse(journal_bytes.substr(kStart + kFrameHeader, length), nullptr, false);
}

// The number of frames after the header (the journal's records).
size_t JournalRecordCount(const std::string& journal_bytes) {
  size_t offset = 15;
  size_t frames = 0;
  while (offset + 16 <= journal_bytes.size()) {
    uint32_t length = 0;
    for (int i = 3; i >= 0; --i)
      length = (length << 8) | static_cast<uint8_t>(journal_bytes[offset + i]);
    offset += 16 + length;
    ++frames;
  }
  return frames == 0 ? 0 : frames - 1;
}

std::string HeaderPayload(const std::string& checkpoint_hash, const std::string& pods_hash) {
  return nlohmann::json{
      {"kdp_state_journal", 1}, {"checkpoint", checkpoint_hash}, {"pods", pods_hash}}
      .dump();
}

std::string MarkerPayload(uint64_t upto, const std::string& checkpoint_hash,
                          const std::string& pods_hash) {
  return nlohmann::json{
      {"op", "compaction"}, {"upto", upto}, {"checkpoint", checkpoint_hash}, {"pods", pods_hash}}
      .dump();
}

// ---- The model ----

Pod MakePod(const std::string& uid) {
  Pod pod;
  pod.namespace_ = "ns";
  pod.name = absl::StrCat("name-", uid);
  pod.uid = uid;
  pod.containers.push_back({.name = "ctr",
                            .kind = ContainerKind::kApp,
                            .extended_resources = {{kGpu, 1}},
                            .other_limits = {{"cpu", "500m"}}});
  return pod;
}

checkpoint::Entry MakeEntry(const std::string& uid, const std::string& container,
                            const std::string& resource,
                            std::map<int64_t, std::vector<std::string>> devices) {
  // Binary bytes on purpose: the journal must keep them exactly.
  std::string resp = absl::StrCat(std::string("\x0a\x00\xff", 3), uid, "/", container);
  return {.pod_uid = uid,
          .container_name = container,
          .resource_name = resource,
          .devices = std::move(devices),
          .alloc_resp = resp};
}

// What the store must bring back: allocations by key, resources, pods by UID.
struct Model {
  std::map<EntryKey, checkpoint::Entry> entries;
  std::map<std::string, std::vector<std::string>> resources;
  std::map<std::string, Pod> pods;

  checkpoint::Data Devices() const {
    checkpoint::Data data;
    for (const auto& [key, entry] : entries) data.entries.push_back(entry);
    data.registered_devices = resources;
    return data;
  }
  std::vector<Pod> PodList() const {
    std::vector<Pod> list;
    for (const auto& [uid, pod] : pods) list.push_back(pod);
    return list;
  }
};

// One line per allocation, resource (its name only: only the keys of registered_devices matter)
// and pod, sorted, so that a failed comparison shows what differs.
std::string Describe(const checkpoint::Data& devices, const std::vector<Pod>& pods) {
  std::vector<std::string> lines;
  for (const checkpoint::Entry& entry : devices.entries) {
    std::string ids;
    for (const auto& [numa, list] : entry.devices) {
      absl::StrAppend(&ids, numa, ":", absl::StrJoin(list, ","), " ");
    }
    lines.push_back(absl::StrCat("alloc ", entry.pod_uid, "/", entry.container_name, "/",
                                 entry.resource_name, " ", ids,
                                 "resp=", absl::CHexEscape(entry.alloc_resp)));
  }
  for (const auto& [name, ids] : devices.registered_devices) {
    lines.push_back(absl::StrCat("resource ", name));
  }
  for (const Pod& pod : pods) lines.push_back(absl::StrCat("pod ", PodToJson(pod).dump()));
  std::sort(lines.begin(), lines.end());
  return absl::StrJoin(lines, "\n");
}
std::string Describe(const Model& model) { return Describe(model.Devices(), model.PodList()); }
std::string Describe(const RestoredState& restored) {
  return Describe(restored.devices, restored.pods);
}

// The live objects (the device manager's and the pod manager's state, in one model): each method
// records one change and makes it in the store's apply step; Snapshot() is what a compaction
// writes. Thread-safe.
class Recorder {
 public:
  explicit Recorder(StateStore* store, bool yield_in_apply = false)
      : store_(store), yield_in_apply_(yield_in_apply) {}

  // Starts from what Open() restored.
  void Seed(const RestoredState& restored) {
    absl::MutexLock lock(&mu_);
    model_ = {};
    for (const checkpoint::Entry& entry : restored.devices.entries) {
      model_.entries[{entry.pod_uid, entry.container_name, entry.resource_name}] = entry;
    }
    model_.resources = restored.devices.registered_devices;
    for (const Pod& pod : restored.pods) model_.pods[pod.uid] = pod;
  }

  absl::Status Alloc(const checkpoint::Entry& entry) {
    return store_->RecordAllocation(
        entry, Apply([entry](Model& model) {
          model.entries[{entry.pod_uid, entry.container_name, entry.resource_name}] = entry;
        }));
  }
  absl::Status RemovePodDevices(const std::string& uid) {
    return store_->RecordPodDevicesRemoved(uid, Apply([uid](Model& model) {
                                             std::erase_if(model.entries, [&](const auto& item) {
                                               return std::get<0>(item.first) == uid;
                                             });
                                           }));
  }
  absl::Status Resource(const std::string& name, bool registered,
                        std::vector<std::string> ids = {}) {
    return store_->RecordResource(name, registered, Apply([name, registered, ids](Model& model) {
                                    if (registered) {
                                      model.resources[name] = ids;
                                    } else {
                                      model.resources.erase(name);
                                    }
                                  }));
  }
  absl::Status Admit(const Pod& pod) {
    return store_->RecordPodAdmitted(pod,
                                     Apply([pod](Model& model) { model.pods[pod.uid] = pod; }));
  }
  absl::Status Terminating(const std::string& uid) {
    return store_->RecordPodTerminating(uid, Apply([uid](Model& model) {
                                          if (auto it = model.pods.find(uid);
                                              it != model.pods.end()) {
                                            it->second.terminating = true;
                                          }
                                        }));
  }
  absl::Status Delete(const std::string& uid) {
    return store_->RecordPodDeleted(uid, Apply([uid](Model& model) { model.pods.erase(uid); }));
  }
  // A change that is not journaled (a ListAndWatch update of healthy devices): only a compaction
  // writes it.
  void SetHealthy(const std::string& name, std::vector<std::string> ids) {
    absl::MutexLock lock(&mu_);
    model_.resources[name] = std::move(ids);
  }

  Model model() const {
    absl::MutexLock lock(&mu_);
    return model_;
  }
  StateSnapshot Snapshot() const {
    absl::MutexLock lock(&mu_);
    return {.devices = model_.Devices(), .pods = model_.PodList()};
  }

 private:
  StateStore::ApplyFn Apply(std::function<void(Model&)> change) {
    return [this, change = std::move(change)] {
      // Gives another recording thread the chance to append before this one finishes.
      if (yield_in_apply_) std::this_thread::yield();
      absl::MutexLock lock(&mu_);
      change(model_);
    };
  }

  StateStore* const store_;
  const bool yield_in_apply_;
  mutable absl::Mutex mu_;
  Model model_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<StateStore>> OpenStore(const Layout& layout, RestoredState* restored,
                                                      bool strict = false) {
  return StateStore::Open(layout.Options(strict), restored);
}

// Opens `layout` and returns what it restored; the store is dropped without compacting (no
// StartCompaction), so the files stay as they are (Open may rewrite the journal's header).
absl::StatusOr<RestoredState> Restore(const Layout& layout) {
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  if (!store.ok()) return store.status();
  return restored;
}

// Restores `layout` and expects `expected`; then records a new pod and its allocation on the
// restored store and crashes again: what was appended after that start must survive the next one.
void ExpectRestoresAndKeepsNewRecords(const Layout& layout, const Model& expected) {
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Describe(restored), Describe(expected));
  Recorder live(store->get());
  live.Seed(restored);
  ASSERT_TRUE(live.Alloc(MakeEntry("after-restart", "ctr", kGpu, {{0, {"g7"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("after-restart")).ok());
  TempDir again;
  Layout copy = CrashCopy(layout, again);
  store->reset();
  absl::StatusOr<RestoredState> second = Restore(copy);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Describe(*second), Describe(live.model())) << "after a second crash";
}

// ---- Clean start and restart ----

TEST(StateStore, EmptyStartCreatesTheJournalAndRestoresNothing) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(restored.devices.entries, IsEmpty());
  EXPECT_THAT(restored.devices.registered_devices, IsEmpty());
  EXPECT_THAT(restored.pods, IsEmpty());
  EXPECT_FALSE(restored.foreign_checkpoint);
  const std::string journal = ReadBytes(layout.journal);
  EXPECT_TRUE(absl::StartsWith(journal, "KDPJOURNAL\n")) << absl::CHexEscape(journal);
  EXPECT_EQ(JournalRecordCount(journal), 0u);
  // Nothing else is written before a compaction.
  EXPECT_FALSE(fs::exists(layout.checkpoint));
  EXPECT_FALSE(fs::exists(layout.pods));
  EXPECT_EQ((*store)->compactions(), 0u);
}

TEST(StateStore, CloseWritesBothFilesAndReopenRestoresEverything) {
  TempDir dir;
  Layout layout(dir.path());
  Model expected;
  {
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    Recorder live(store->get());
    (*store)->StartCompaction([&live] { return live.Snapshot(); });
    // The last compaction reads `live`: it runs before `live` goes.
    absl::Cleanup close_store = [&store] {
      if (*store != nullptr) (*store)->Close();
    };
    ASSERT_TRUE(live.Resource(kGpu, true, {"g0", "g1", "g2"}).ok());
    ASSERT_TRUE(live.Resource(kNic, true, {"n0"}).ok());
    ASSERT_TRUE(live.Resource("example.com/old", true, {"o0"}).ok());
    ASSERT_TRUE(live.Alloc(MakeEntry("pod-a", "ctr", kGpu, {{0, {"g0"}}, {1, {"g1"}}})).ok());
    ASSERT_TRUE(live.Alloc(MakeEntry("pod-a", "ctr", kNic, {{-1, {"n0"}}})).ok());
    ASSERT_TRUE(live.Admit(MakePod("pod-a")).ok());
    ASSERT_TRUE(live.Alloc(MakeEntry("pod-b", "ctr", kGpu, {{0, {"g2"}}})).ok());
    ASSERT_TRUE(live.Admit(MakePod("pod-b")).ok());
    ASSERT_TRUE(live.Resource("example.com/old", false).ok());
    (*store)->Close();
    EXPECT_GE((*store)->compactions(), 1u);
    expected = live.model();
  }

  // The checkpoint: byte for byte what a kubelet writes for this state.
  const std::string checkpoint_bytes = ReadBytes(layout.checkpoint);
  EXPECT_EQ(checkpoint_bytes, checkpoint::Encode(expected.Devices()));
  absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(checkpoint_bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->checksum_ok());
  EXPECT_EQ(decoded->format, checkpoint::Format::kV2);
  EXPECT_EQ(decoded->data.entries, expected.Devices().entries);
  std::vector<std::string> resources;
  for (const auto& [name, ids] : decoded->data.registered_devices) resources.push_back(name);
  EXPECT_THAT(resources, ElementsAre(kGpu, kNic));

  // The pod store, with its checksum.
  const std::string pods_bytes = ReadBytes(layout.pods);
  EXPECT_EQ(pods_bytes, EncodePodsFile(expected.PodList()));
  nlohmann::json pods_doc = nlohmann::json::parse(pods_bytes, nullptr, false);
  ASSERT_TRUE(pods_doc.is_object()) << pods_bytes;
  EXPECT_EQ(pods_doc["version"], 1);
  EXPECT_EQ(pods_doc["checksum"], ContentHash(pods_doc["pods"].dump()));
  ASSERT_THAT(pods_doc["pods"], SizeIs(2));
  absl::StatusOr<Pod> first = PodFromJson(pods_doc["pods"][0], "pods.json", "pods[0]");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, MakePod("pod-a"));

  // The journal: a header naming both files, and no records left.
  const std::string journal = ReadBytes(layout.journal);
  EXPECT_EQ(JournalHeader(journal), nlohmann::json::parse(HeaderPayload(
                                        ContentHash(checkpoint_bytes), ContentHash(pods_bytes))));
  EXPECT_EQ(JournalRecordCount(journal), 0u);

  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Describe(restored), Describe(expected));
  // From the checkpoint, the device lists come back too.
  EXPECT_EQ(restored.devices.registered_devices, expected.resources);
  EXPECT_FALSE(restored.foreign_checkpoint);
}

TEST(StateStore, AFileThatIsNotAKdpJournalFailsOpenWithDataLoss) {
  TempDir dir;
  Layout layout(dir.path());
  WriteBytes(layout.journal, "not a journal at all");
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_EQ(ReadBytes(layout.journal), "not a journal at all");

  // A journal, but not one of StateStore's.
  TempDir other_dir;
  Layout other(other_dir.path());
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(other.journal, R"({"something":"else"})", nullptr);
    ASSERT_TRUE(journal.ok()) << journal.status();
  }
  store = OpenStore(other, &restored);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr(other.journal));
}

// ---- Crashes between records and compactions ----

TEST(StateStore, ACrashAfterAnyStepRestoresTheLastAcknowledgedState) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };

  enum class Kind { kUnsynced, kSynced, kCompaction };
  struct Step {
    std::string name;
    Kind kind;
    std::function<absl::Status()> run;
  };
  const std::vector<Step> steps = {
      {"register gpu", Kind::kUnsynced,
       [&] {
         return live.Resource(kGpu, true, {"g0", "g1"});
       }},
      {"alloc p1/ctr", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}}));
       }},
      {"alloc p1/side", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p1", "side", kGpu, {{1, {"g1"}}}));
       }},
      {"admit p1", Kind::kSynced, [&] { return live.Admit(MakePod("p1")); }},
      {"compact", Kind::kCompaction, [&] { return (*store)->Compact(); }},
      {"alloc p2", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p2", "ctr", kGpu, {{-1, {"g3"}}}));
       }},
      {"admit p2", Kind::kSynced, [&] { return live.Admit(MakePod("p2")); }},
      {"p1 terminating", Kind::kSynced, [&] { return live.Terminating("p1"); }},
      {"delete p1", Kind::kSynced, [&] { return live.Delete("p1"); }},
      {"remove p1 devices", Kind::kUnsynced, [&] { return live.RemovePodDevices("p1"); }},
      {"compact", Kind::kCompaction, [&] { return (*store)->Compact(); }},
      {"compact unchanged", Kind::kCompaction, [&] { return (*store)->Compact(); }},
      {"register nic", Kind::kUnsynced, [&] { return live.Resource(kNic, true, {"n0"}); }},
      {"alloc p3", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p3", "ctr", kNic, {{0, {"n0"}}}));
       }},
      {"re-alloc p2", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p2", "ctr", kGpu, {{0, {"g0", "g1"}}}));
       }},
      {"admit p3", Kind::kSynced, [&] { return live.Admit(MakePod("p3")); }},
      {"unregister gpu", Kind::kUnsynced, [&] { return live.Resource(kGpu, false); }},
      // Terminating survives a compaction (pods.json) as well as a replay (the journal).
      {"p2 terminating", Kind::kSynced, [&] { return live.Terminating("p2"); }},
      {"compact with p2 terminating", Kind::kCompaction, [&] { return (*store)->Compact(); }},
      {"delete p2", Kind::kSynced, [&] { return live.Delete("p2"); }},
      {"compact", Kind::kCompaction, [&] { return (*store)->Compact(); }},
      {"remove p2 devices", Kind::kUnsynced, [&] { return live.RemovePodDevices("p2"); }},
      {"alloc p4, never synced", Kind::kUnsynced,
       [&] {
         return live.Alloc(MakeEntry("p4", "ctr", kNic, {{0, {"n1"}}}));
       }},
  };

  Model durable;  // the state as of the last synced record or compaction
  uintmax_t durable_size = fs::file_size(layout.journal);
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    absl::Status status = step.run();
    ASSERT_TRUE(status.ok()) << status;
    const Model acknowledged = live.model();
    EXPECT_EQ(CheckpointProblem(layout.checkpoint), "");
    EXPECT_EQ(PodsFileProblem(layout.pods), "");
    if (step.kind != Kind::kUnsynced) {
      durable = acknowledged;
      durable_size = fs::file_size(layout.journal);
    }
    {
      SCOPED_TRACE("process crash");
      TempDir crash_dir;
      ExpectRestoresAndKeepsNewRecords(CrashCopy(layout, crash_dir), acknowledged);
    }
    {
      SCOPED_TRACE("power loss: unsynced records gone");
      TempDir crash_dir;
      absl::StatusOr<RestoredState> back = Restore(PowerLossCopy(layout, crash_dir, durable_size));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(Describe(*back), Describe(durable));
    }
    if (fs::file_size(layout.journal) > durable_size) {
      SCOPED_TRACE("power loss: an unsynced record torn");
      TempDir crash_dir;
      absl::StatusOr<RestoredState> back =
          Restore(PowerLossCopy(layout, crash_dir, durable_size, /*torn=*/7));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(Describe(*back), Describe(durable));
    }
  }
  EXPECT_EQ((*store)->compactions(), 5u);
}

// ---- Crash points inside a compaction ----

// A compaction appends a marker naming the files it is about to write (by their hashes) and the
// last record its snapshot holds, writes pods.json, then the checkpoint, then rewrites the journal.
// The journal is crafted here as a crash at each point leaves it: the records before the snapshot
// (r6..r8), the records recorded while the compaction ran (r9, r10 before the marker; r11, r12
// after it), with pods.json and the checkpoint written or not.
void ExpectEveryCompactionCrashPointRestores(bool earlier_compaction) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0", "g1", "g2"}).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p1", "side", kGpu, {{1, {"g1"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p1")).ok());
  ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
  if (earlier_compaction) {
    ASSERT_TRUE((*store)->Compact().ok());
  }
  // r6..r8: held by the crashed compaction's snapshot.
  ASSERT_TRUE(live.Alloc(MakeEntry("p2", "ctr", kGpu, {{0, {"g2"}}})).ok());
  ASSERT_TRUE(live.RemovePodDevices("p1").ok());
  ASSERT_TRUE(live.Delete("p1").ok());
  const StateSnapshot snapshot = live.Snapshot();
  // r9..r12: recorded while it ran.
  ASSERT_TRUE(live.Admit(MakePod("p3")).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p3", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Resource(kNic, true, {"n0"}).ok());
  ASSERT_TRUE(live.Delete("p2").ok());
  const Model expected = live.model();

  TempDir base_dir;
  const Layout base = CrashCopy(layout, base_dir);
  JournalContents contents;
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(base.journal, "", &contents);
    ASSERT_TRUE(journal.ok()) << journal.status();
  }
  ASSERT_GE(contents.records.size(), 7u);
  const size_t r6 = contents.records.size() - 7;
  const std::string checkpoint_bytes = checkpoint::Encode(snapshot.devices);
  const std::string pods_bytes = EncodePodsFile(snapshot.pods);
  std::vector<JournalRecord> crafted(contents.records.begin(),
                                     contents.records.begin() + static_cast<long>(r6) + 5);
  uint64_t seq = crafted.back().seq;
  crafted.push_back(
      {.seq = ++seq,
       .payload = MarkerPayload(contents.records[r6 + 2].seq, ContentHash(checkpoint_bytes),
                                ContentHash(pods_bytes))});
  crafted.push_back({.seq = ++seq, .payload = contents.records[r6 + 5].payload});
  crafted.push_back({.seq = ++seq, .payload = contents.records[r6 + 6].payload});

  struct CrashPoint {
    const char* name;
    bool pods_written;
    bool checkpoint_written;
  };
  for (const CrashPoint& point : {CrashPoint{"marker appended, no file written", false, false},
                                  CrashPoint{"pods.json written, checkpoint not", true, false},
                                  CrashPoint{"both written, journal not rewritten", true, true},
                                  CrashPoint{"checkpoint written, pods.json not", false, true}}) {
    SCOPED_TRACE(point.name);
    TempDir crash_dir;
    const Layout crash = CrashCopy(base, crash_dir);
    {
      absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(crash.journal, "", nullptr);
      ASSERT_TRUE(journal.ok()) << journal.status();
      ASSERT_TRUE((*journal)->Rewrite(contents.header, crafted).ok());
    }
    if (point.pods_written) WriteBytes(crash.pods, pods_bytes);
    if (point.checkpoint_written) WriteBytes(crash.checkpoint, checkpoint_bytes);
    ExpectRestoresAndKeepsNewRecords(crash, expected);
  }

  // The crafted files are what a compaction writes.
  ASSERT_TRUE((*store)->Compact().ok());
  EXPECT_EQ(ReadBytes(layout.checkpoint), checkpoint::Encode(expected.Devices()));
  EXPECT_EQ(ReadBytes(layout.pods), EncodePodsFile(expected.PodList()));
}

TEST(StateStore, ACrashInsideTheFirstCompactionRestoresTheLastAcknowledgedState) {
  ExpectEveryCompactionCrashPointRestores(/*earlier_compaction=*/false);
}

TEST(StateStore, ACrashInsideALaterCompactionRestoresTheLastAcknowledgedState) {
  ExpectEveryCompactionCrashPointRestores(/*earlier_compaction=*/true);
}

TEST(StateStore, ReplayingRecordsTheFilesAlreadyHoldGivesTheSameState) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0", "g1"}).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p")).ok());
  ASSERT_TRUE(live.Delete("p").ok());
  ASSERT_TRUE(live.RemovePodDevices("p").ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p", "ctr", kGpu, {{1, {"g1"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p")).ok());
  ASSERT_TRUE(live.Resource(kNic, true, {"n0"}).ok());
  ASSERT_TRUE(live.Resource(kNic, false).ok());
  const Model expected = live.model();
  const std::string checkpoint_bytes = checkpoint::Encode(expected.Devices());
  const std::string pods_bytes = EncodePodsFile(expected.PodList());
  TempDir base_dir;
  const Layout base = CrashCopy(layout, base_dir);
  JournalContents contents;
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(base.journal, "", &contents);
    ASSERT_TRUE(journal.ok()) << journal.status();
  }
  ASSERT_THAT(contents.records, SizeIs(9));

  // Files holding every record, named by a marker that says they hold none (upto 0) or only
  // the first two, or by the journal's header (replay everything).
  for (uint64_t upto : {uint64_t{0}, contents.records[1].seq}) {
    SCOPED_TRACE(absl::StrCat("marker upto ", upto));
    TempDir crash_dir;
    const Layout crash = CrashCopy(base, crash_dir);
    {
      absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(crash.journal, "", nullptr);
      ASSERT_TRUE(journal.ok()) << journal.status();
      ASSERT_TRUE(
          (*journal)
              ->Append(MarkerPayload(upto, ContentHash(checkpoint_bytes), ContentHash(pods_bytes)),
                       /*sync=*/true)
              .ok());
    }
    WriteBytes(crash.pods, pods_bytes);
    WriteBytes(crash.checkpoint, checkpoint_bytes);
    absl::StatusOr<RestoredState> back = Restore(crash);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Describe(*back), Describe(expected));
  }
  {
    SCOPED_TRACE("header names the files");
    TempDir crash_dir;
    const Layout crash = CrashCopy(base, crash_dir);
    {
      absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(crash.journal, "", nullptr);
      ASSERT_TRUE(journal.ok()) << journal.status();
      ASSERT_TRUE(
          (*journal)
              ->Rewrite(HeaderPayload(ContentHash(checkpoint_bytes), ContentHash(pods_bytes)),
                        contents.records)
              .ok());
    }
    WriteBytes(crash.pods, pods_bytes);
    WriteBytes(crash.checkpoint, checkpoint_bytes);
    absl::StatusOr<RestoredState> back = Restore(crash);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Describe(*back), Describe(expected));
    EXPECT_FALSE(back->foreign_checkpoint);
  }
}

// ---- Files from elsewhere ----

TEST(StateStore, ForeignCheckpointWinsOverJournaledDevicesWhichAreSetAside) {
  TempDir dir;
  Layout layout(dir.path());
  Model journaled;
  {
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    Recorder live(store->get());
    ASSERT_TRUE(live.Resource(kGpu, true, {"g0"}).ok());
    ASSERT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
    ASSERT_TRUE(live.Admit(MakePod("p1")).ok());
    ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
    journaled = live.model();
  }  // a crash: no compaction
  const std::string journal_before = ReadBytes(layout.journal);
  // A kubelet's checkpoint copied in beside kdp's journal.
  WriteBytes(layout.checkpoint, kKubeletV2Checkpoint);

  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<checkpoint::Decoded> kubelet = checkpoint::Decode(kKubeletV2Checkpoint);
  ASSERT_TRUE(kubelet.ok());
  EXPECT_EQ(Describe(restored), Describe(kubelet->data, journaled.PodList()));
  EXPECT_EQ(restored.devices.entries, kubelet->data.entries);
  EXPECT_TRUE(restored.foreign_checkpoint);
  // The journal's device records are kept aside, not replayed and not lost.
  EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "journal.stale-"),
              ElementsAre(journal_before));

  // Records appended after this start survive a further crash: the journal now follows the
  // kubelet's checkpoint.
  Recorder live(store->get());
  live.Seed(restored);
  ASSERT_TRUE(live.Alloc(MakeEntry("p2", "ctr", "example.com/foo", {{0, {"f1"}}})).ok());
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0"}).ok());
  ASSERT_TRUE(live.Admit(MakePod("p3")).ok());
  TempDir crash_dir;
  const Layout crash = CrashCopy(layout, crash_dir);
  store->reset();
  ExpectRestoresAndKeepsNewRecords(crash, live.model());
  // Nothing more was set aside by the later starts.
  EXPECT_THAT(FilesStartingWith(crash.root + "/kdp", "journal.stale-"), SizeIs(1));
}

TEST(StateStore, LegacyV1CheckpointInAnEmptyDirectoryComesBackUnderNumaZero) {
  TempDir dir;
  Layout layout(dir.path());
  WriteBytes(layout.checkpoint, kKubeletV1Checkpoint);
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  const checkpoint::Entry v1_entry = {.pod_uid = "pod-uid-1",
                                      .container_name = "ctr",
                                      .resource_name = "example.com/foo",
                                      .devices = {{0, {"f1", "f2"}}},
                                      .alloc_resp = kFooBar};
  EXPECT_THAT(restored.devices.entries, ElementsAre(v1_entry));
  EXPECT_EQ(
      restored.devices.registered_devices,
      (std::map<std::string, std::vector<std::string>>{{"example.com/foo", {"f1", "f2", "f3"}}}));
  EXPECT_THAT(restored.pods, IsEmpty());
  EXPECT_TRUE(restored.foreign_checkpoint);
  EXPECT_TRUE(fs::exists(layout.journal));

  // Records after this start replay over the v1 file after a crash...
  Recorder live(store->get());
  live.Seed(restored);
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };
  ASSERT_TRUE(live.Alloc(MakeEntry("p2", "ctr", "example.com/foo", {{0, {"f3"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
  {
    TempDir crash_dir;
    ExpectRestoresAndKeepsNewRecords(CrashCopy(layout, crash_dir), live.model());
  }
  // ...and the next compaction writes the current (v2) layout, NUMA node 0 kept.
  (*store)->Close();
  absl::StatusOr<checkpoint::Decoded> rewritten = checkpoint::Decode(ReadBytes(layout.checkpoint));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->format, checkpoint::Format::kV2);
  EXPECT_TRUE(rewritten->checksum_ok());
  EXPECT_EQ(Describe(rewritten->data, {}), Describe(live.model().Devices(), {}));
  store->reset();
  absl::StatusOr<RestoredState> back = Restore(layout);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Describe(*back), Describe(live.model()));
}

// A checkpoint from elsewhere is reported so that the caller adopts its pods (records them as
// admitted). Should the process die before those records are synced (a crash, or a start that
// fails on a full disk right after Open), the next start must still report it: else its pods are
// never adopted, and garbage collection frees devices the kubelet's pods are using.
TEST(StateStore, ForeignCheckpointIsStillReportedAfterACrashBeforeAdoption) {
  for (bool journal_existed : {false, true}) {
    SCOPED_TRACE(journal_existed ? "beside a journal" : "without a journal");
    TempDir dir;
    Layout layout(dir.path());
    if (journal_existed) {
      RestoredState restored;
      absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
      ASSERT_TRUE(store.ok()) << store.status();
      ASSERT_TRUE((*store)->RecordAllocation(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}}), {}).ok());
      ASSERT_TRUE((*store)->RecordPodAdmitted(MakePod("p1"), {}).ok());
    }
    WriteBytes(layout.checkpoint, kKubeletV2Checkpoint);
    {
      RestoredState restored;
      absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
      ASSERT_TRUE(store.ok()) << store.status();
      ASSERT_TRUE(restored.foreign_checkpoint);
    }  // dies before adopting anything
    absl::StatusOr<RestoredState> again = Restore(layout);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_THAT(again->devices.entries, SizeIs(1));
    EXPECT_TRUE(again->foreign_checkpoint)
        << "pod-uid-1 holds devices in the kubelet's checkpoint, is in no pod store, and is "
           "not reported for adoption any more";
  }
}

// ---- Unreadable files ----

// Writes both files (a compaction at Close), then journals more after them and drops the store
// without compacting (a crash). Returns what must come back.
Model BuildFilesAndJournal(const Layout& layout) {
  RestoredState restored;
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return {};
    Recorder live(store->get());
    (*store)->StartCompaction([&live] { return live.Snapshot(); });
    // The last compaction reads `live`: it runs before `live` goes.
    absl::Cleanup close_store = [&store] {
      if (*store != nullptr) (*store)->Close();
    };
    EXPECT_TRUE(live.Resource(kGpu, true, {"g0", "g1"}).ok());
    EXPECT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
    EXPECT_TRUE(live.Admit(MakePod("p1")).ok());
    (*store)->Close();
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  Recorder live(store->get());
  live.Seed(restored);
  EXPECT_TRUE(live.Alloc(MakeEntry("p2", "ctr", kGpu, {{0, {"g1"}}})).ok());
  EXPECT_TRUE(live.Admit(MakePod("p2")).ok());
  return live.model();
}

// One byte changed inside a device ID: still JSON, but the checksum no longer matches.
std::string ChangeOneByte(std::string bytes, const std::string& inside) {
  const size_t at = bytes.find(inside);
  EXPECT_NE(at, std::string::npos) << inside;
  if (at != std::string::npos) bytes[at + inside.size() - 1] ^= 0x01;
  return bytes;
}

TEST(StateStore, CorruptCheckpointIsSetAsideAndOnlyDevicesStartEmpty) {
  TempDir base_dir;
  Layout base(base_dir.path());
  const Model model = BuildFilesAndJournal(base);
  ASSERT_THAT(model.pods, SizeIs(2));
  const std::string good = ReadBytes(base.checkpoint);
  const std::string one_byte = ChangeOneByte(good, R"("g0)");
  absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(one_byte);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_FALSE(decoded->checksum_ok());

  for (const std::string& corrupt : {one_byte, std::string("{\"Data\": garbage")}) {
    SCOPED_TRACE(corrupt);
    TempDir dir;
    const Layout layout = CrashCopy(base, dir);
    WriteBytes(layout.checkpoint, corrupt);
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_THAT(restored.devices.entries, IsEmpty());
    EXPECT_THAT(restored.devices.registered_devices, IsEmpty());
    EXPECT_FALSE(restored.foreign_checkpoint);
    Model pods_only;
    pods_only.pods = model.pods;
    EXPECT_EQ(Describe(restored), Describe(pods_only));
    EXPECT_FALSE(fs::exists(layout.checkpoint));
    EXPECT_THAT(
        FilesStartingWith(layout.root + "/device-plugins", "kubelet_internal_checkpoint.corrupt-"),
        ElementsAre(corrupt));
    // The journal's device records (p2's allocation) do not follow any file now: kept aside.
    EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "journal.stale-"), SizeIs(1));
    // Records after this start survive the next crash.
    TempDir crash_dir;
    const Layout crash = CrashCopy(layout, crash_dir);
    store->reset();
    ExpectRestoresAndKeepsNewRecords(crash, pods_only);
  }
}

TEST(StateStore, CorruptPodStoreIsSetAsideAndOnlyPodsStartEmpty) {
  TempDir base_dir;
  Layout base(base_dir.path());
  const Model model = BuildFilesAndJournal(base);
  const std::string good = ReadBytes(base.pods);
  const std::string one_byte = ChangeOneByte(good, R"("name-p1)");

  for (const std::string& corrupt : {one_byte, std::string("{\"pods\": [")}) {
    SCOPED_TRACE(corrupt);
    TempDir dir;
    const Layout layout = CrashCopy(base, dir);
    WriteBytes(layout.pods, corrupt);
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    Model devices_only = model;
    devices_only.pods.clear();
    EXPECT_EQ(Describe(restored), Describe(devices_only));
    EXPECT_FALSE(fs::exists(layout.pods));
    EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "pods.json.corrupt-"),
                ElementsAre(corrupt));
    EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "journal.stale-"), SizeIs(1));
    TempDir crash_dir;
    const Layout crash = CrashCopy(layout, crash_dir);
    store->reset();
    ExpectRestoresAndKeepsNewRecords(crash, devices_only);
  }
}

TEST(StateStore, StrictRefusesAnUnreadableFileAndTouchesNothing) {
  TempDir base_dir;
  Layout base(base_dir.path());
  BuildFilesAndJournal(base);
  struct Case {
    const char* name;
    bool checkpoint;  // else pods.json
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {"checkpoint, one byte", true, ChangeOneByte(ReadBytes(base.checkpoint), R"("g0)")},
      {"checkpoint, garbage", true, "garbage"},
      {"pods.json, one byte", false, ChangeOneByte(ReadBytes(base.pods), R"("name-p1)")},
      {"pods.json, garbage", false, "[]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const Layout layout = CrashCopy(base, dir);
    WriteBytes(c.checkpoint ? layout.checkpoint : layout.pods, c.bytes);
    const std::string checkpoint_before = ReadBytes(layout.checkpoint);
    const std::string pods_before = ReadBytes(layout.pods);
    const std::string journal_before = ReadBytes(layout.journal);
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenStore(layout, &restored, /*strict=*/true);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
    EXPECT_THAT(store.status().message(),
                HasSubstr(c.checkpoint ? layout.checkpoint : layout.pods));
    EXPECT_EQ(ReadBytes(layout.checkpoint), checkpoint_before);
    EXPECT_EQ(ReadBytes(layout.pods), pods_before);
    EXPECT_EQ(ReadBytes(layout.journal), journal_before);
    EXPECT_THAT(FilesStartingWith(layout.root + "/device-plugins", "kubelet_internal_checkpoint."),
                IsEmpty());
    EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "pods.json."), IsEmpty());
    EXPECT_THAT(FilesStartingWith(layout.root + "/kdp", "journal."), IsEmpty());
  }
}

// "<file>.corrupt-<time>" and "journal.stale-<time>" have a one-second resolution. Three starts
// within well under a second put at least two in the same second: each copy must still be kept
// (the journal's own corrupt copies add "-N" for this).
TEST(StateStore, EverySetAsideCopyIsKeptWhenStartsComeWithinOneSecond) {
  TempDir dir;
  Layout layout(dir.path());
  std::vector<std::string> corrupt;
  std::vector<std::string> stale;
  // Starts over `checkpoint_bytes` and journals a device record that the next start sets aside.
  auto start = [&](const std::string& checkpoint_bytes) {
    if (fs::exists(layout.journal)) stale.push_back(ReadBytes(layout.journal));
    WriteBytes(layout.checkpoint, checkpoint_bytes);
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->RecordAllocation(MakeEntry("p", "ctr", kGpu, {{0, {"g0"}}}), {}).ok());
  };
  const absl::Time began = absl::Now();
  for (int i = 0; i < 3; ++i) {
    // A checkpoint nobody can read, then one that is not the journal's.
    corrupt.push_back(absl::StrCat("{unreadable checkpoint ", i));
    start(corrupt.back());
    checkpoint::Data foreign;
    foreign.registered_devices[absl::StrCat("example.com/r", i)] = {"d0"};
    start(checkpoint::Encode(foreign));
  }
  const absl::Duration took = absl::Now() - began;
  std::sort(corrupt.begin(), corrupt.end());
  std::sort(stale.begin(), stale.end());
  ASSERT_THAT(stale, SizeIs(5));
  EXPECT_EQ(
      FilesStartingWith(layout.root + "/device-plugins", "kubelet_internal_checkpoint.corrupt-"),
      corrupt)
      << "6 starts took " << took;
  EXPECT_EQ(FilesStartingWith(layout.root + "/kdp", "journal.stale-"), stale)
      << "6 starts took " << took;
}

TEST(StateStore, AFullDiskFailsTheRecordWithoutApplyingItAndLosesNothingElse) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0", "g1"}).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p1")).ok());
  ASSERT_TRUE((*store)->Compact().ok());
  ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
  const Model before = live.model();
  const uintmax_t journal_size = fs::file_size(layout.journal);
  const uint64_t compactions = (*store)->compactions();
  {
    ScopedFileSizeLimit full(journal_size + 8);
    absl::Status alloc = live.Alloc(MakeEntry("p3", "ctr", kGpu, {{0, {"g1"}}}));
    EXPECT_EQ(alloc.code(), absl::StatusCode::kResourceExhausted) << alloc;
    EXPECT_THAT(alloc.message(), HasSubstr(layout.journal));
    absl::Status admit = live.Admit(MakePod("p3"));
    EXPECT_EQ(admit.code(), absl::StatusCode::kResourceExhausted) << admit;
    EXPECT_FALSE((*store)->Compact().ok());
  }
  // Nothing was applied, and the journal holds no half record.
  EXPECT_EQ(Describe(live.model()), Describe(before));
  EXPECT_EQ(fs::file_size(layout.journal), journal_size);
  EXPECT_EQ((*store)->compactions(), compactions);
  EXPECT_EQ(CheckpointProblem(layout.checkpoint), "");
  EXPECT_EQ(PodsFileProblem(layout.pods), "");
  {
    TempDir crash_dir;
    ExpectRestoresAndKeepsNewRecords(CrashCopy(layout, crash_dir), before);
  }
  // With space back, the store goes on.
  ASSERT_TRUE(live.Alloc(MakeEntry("p3", "ctr", kGpu, {{0, {"g1"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p3")).ok());
  ASSERT_TRUE((*store)->Compact().ok());
  TempDir crash_dir;
  ExpectRestoresAndKeepsNewRecords(CrashCopy(layout, crash_dir), live.model());
}

// ---- Concurrency ----

// Records from several threads while compactions run back to back (on this thread and the
// background one): every compaction succeeds, and every acknowledged record comes back after a
// crash and after a clean restart. A compaction snapshots between two records and rewrites the
// journal with the records that came after; those may have been acknowledged in another order
// than their sequence numbers.
TEST(StateStore, ConcurrentRecordsAndCompactionsLoseNothing) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> opened =
      StateStore::Open(layout.Options(false, absl::Milliseconds(1)), &restored);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<StateStore> store = *std::move(opened);
  Recorder live(store.get(), /*yield_in_apply=*/true);
  store->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (store != nullptr) store->Close();
  };

  constexpr int kThreads = 4;
  constexpr int kPodsPerThread = 30;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> recorders;
  for (int t = 0; t < kThreads; ++t) {
    recorders.emplace_back([&, t] {
      const std::string resource = absl::StrCat("example.com/r", t);
      EXPECT_TRUE(live.Resource(resource, true, {"d0", "d1"}).ok());
      for (int i = 0; i < kPodsPerThread; ++i) {
        const std::string uid = absl::StrCat("t", t, "-p", i);
        EXPECT_TRUE(live.Alloc(MakeEntry(uid, "ctr", resource, {{0, {"d0"}}})).ok());
        EXPECT_TRUE(live.Alloc(MakeEntry(uid, "side", resource, {{-1, {"d1"}}})).ok());
        EXPECT_TRUE(live.Admit(MakePod(uid)).ok());
        if (i % 3 == 0) {
          EXPECT_TRUE(live.Delete(uid).ok());
          EXPECT_TRUE(live.RemovePodDevices(uid).ok());
        }
        if (i % 4 == 1) {
          EXPECT_TRUE(live.Alloc(MakeEntry(uid, "ctr", resource, {{1, {"d1"}}})).ok());
        }
        if (i % 10 == 9) {
          EXPECT_TRUE(live.Resource(resource, i % 20 == 9, {"d0"}).ok());
        }
      }
      EXPECT_TRUE(live.Admit(MakePod(absl::StrCat("t", t, "-last"))).ok());
      running.fetch_sub(1);
    });
  }
  // Each file is whole and valid at every moment a reader (a kubelet, kdpctl) may look.
  std::vector<std::string> invalid_reads;
  std::thread reader([&] {
    while (running.load() > 0) {
      for (const std::string& problem :
           {CheckpointProblem(layout.checkpoint), PodsFileProblem(layout.pods)}) {
        if (!problem.empty()) invalid_reads.push_back(problem);
      }
    }
  });
  std::vector<std::string> failures;
  int compactions = 0;
  while (running.load() > 0) {
    if (absl::Status compacted = store->Compact(); !compacted.ok()) {
      failures.push_back(std::string(compacted.message()));
    }
    ++compactions;
  }
  for (std::thread& thread : recorders) thread.join();
  reader.join();
  EXPECT_THAT(invalid_reads, IsEmpty());
  EXPECT_EQ(failures.size(), 0u) << failures.size() << " of " << compactions
                                 << " compactions failed; the first: "
                                 << (failures.empty() ? "" : failures.front());
  const Model expected = live.model();
  ASSERT_THAT(expected.pods, SizeIs(kThreads * (kPodsPerThread - kPodsPerThread / 3 + 1)));

  {
    SCOPED_TRACE("crash");
    TempDir crash_dir;
    absl::StatusOr<RestoredState> back = Restore(CrashCopy(layout, crash_dir));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Describe(*back), Describe(expected));
  }
  store->Close();
  const uint64_t total = store->compactions();
  EXPECT_GE(total, 1u);
  store.reset();
  {
    SCOPED_TRACE("clean restart");
    absl::StatusOr<RestoredState> back = Restore(layout);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Describe(*back), Describe(expected));
  }
}

// ---- Background compaction ----

TEST(StateStore, BackgroundCompactionWritesChangesWithinTheDelay) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      StateStore::Open(layout.Options(false, absl::Milliseconds(50)), &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0"}).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p1")).ok());
  const Model expected = live.model();
  auto checkpoint_holds = [&layout](const checkpoint::Data& devices) {
    absl::StatusOr<std::string> bytes = ReadFile(layout.checkpoint);
    return bytes.ok() && *bytes == checkpoint::Encode(devices);
  };
  EXPECT_TRUE(WaitUntil([&] { return checkpoint_holds(expected.Devices()); }));
  EXPECT_TRUE(WaitUntil([&] {
    absl::StatusOr<std::string> bytes = ReadFile(layout.pods);
    return bytes.ok() && *bytes == EncodePodsFile(expected.PodList());
  }));
  // (compactions() counts a compaction once its journal rewrite is done, just after the files.)
  EXPECT_TRUE(WaitUntil([&] { return (*store)->compactions() >= 1; }));
  const uint64_t after_first = (*store)->compactions();

  // A change only a compaction writes (healthy devices from ListAndWatch), on request.
  live.SetHealthy(kGpu, {"g0", "g1"});
  (*store)->RequestCompaction();
  EXPECT_TRUE(WaitUntil([&] { return checkpoint_holds(live.model().Devices()); }));
  EXPECT_TRUE(WaitUntil([&] { return (*store)->compactions() > after_first; }));

  // A compaction that fails is retried after the delay; once the obstacle is gone it succeeds.
  fs::rename(layout.root + "/device-plugins", layout.root + "/device-plugins.saved");
  WriteBytes(layout.root + "/device-plugins", "a file where a directory should be");
  ASSERT_TRUE(live.Alloc(MakeEntry("p2", "ctr", kGpu, {{0, {"g1"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
  // A failed compaction leaves its marker in the journal (once there, every compaction before it
  // has been counted).
  EXPECT_TRUE(WaitUntil(
      [&] { return absl::StrContains(ReadBytes(layout.journal), R"("op":"compaction")"); }));
  const uint64_t before_failure = (*store)->compactions();
  fs::remove(layout.root + "/device-plugins");
  fs::rename(layout.root + "/device-plugins.saved", layout.root + "/device-plugins");
  EXPECT_TRUE(WaitUntil([&] { return checkpoint_holds(live.model().Devices()); }));
  EXPECT_TRUE(WaitUntil([&] { return (*store)->compactions() > before_failure; }));
  (*store)->Close();
  store->reset();
  absl::StatusOr<RestoredState> back = Restore(layout);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Describe(*back), Describe(live.model()));
}

// ---- Failed compactions ----

TEST(StateStore, FailedCompactionKeepsTheJournalValidAndRecoversOnceTheObstacleIsGone) {
  TempDir dir;
  Layout layout(dir.path());
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenStore(layout, &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  Recorder live(store->get());
  (*store)->StartCompaction([&live] { return live.Snapshot(); });
  // The last compaction reads `live`: it runs before `live` goes.
  absl::Cleanup close_store = [&store] {
    if (*store != nullptr) (*store)->Close();
  };
  ASSERT_TRUE(live.Resource(kGpu, true, {"g0", "g1", "g2"}).ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p1", "ctr", kGpu, {{0, {"g0"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p1")).ok());
  ASSERT_TRUE((*store)->Compact().ok());
  ASSERT_TRUE(live.Alloc(MakeEntry("p2", "ctr", kGpu, {{0, {"g1"}}})).ok());
  ASSERT_TRUE(live.Admit(MakePod("p2")).ok());
  const std::string plugins_dir = layout.root + "/device-plugins";

  // The checkpoint cannot be written: its directory's name is taken by a regular file (the old
  // checkpoint kept aside, as it would still be on disk).
  {
    const StateSnapshot attempted = live.Snapshot();
    fs::rename(plugins_dir, plugins_dir + ".saved");
    WriteBytes(plugins_dir, "not a directory");
    const uint64_t before = (*store)->compactions();
    absl::Status compacted = (*store)->Compact();
    EXPECT_FALSE(compacted.ok());
    EXPECT_THAT(compacted.message(), HasSubstr(layout.checkpoint));
    EXPECT_EQ((*store)->compactions(), before);
    // The journal still takes records.
    ASSERT_TRUE(live.Admit(MakePod("p3")).ok());
    ASSERT_TRUE(live.Alloc(MakeEntry("p3", "ctr", kGpu, {{0, {"g2"}}})).ok());

    TempDir crash_dir;
    Layout crash = CrashCopy(layout, crash_dir);
    // The compaction got as far as its marker and pods.json.
    const std::string pods_bytes = ReadBytes(crash.pods);
    EXPECT_EQ(pods_bytes, EncodePodsFile(attempted.pods));
    JournalContents contents;
    {
      absl::StatusOr<std::unique_ptr<Journal>> journal =
          Journal::Open(crash.journal, "", &contents);
      ASSERT_TRUE(journal.ok()) << journal.status();
    }
    std::vector<nlohmann::json> markers;
    for (const JournalRecord& record : contents.records) {
      nlohmann::json payload = nlohmann::json::parse(record.payload, nullptr, false);
      if (payload.is_object() && payload.value("op", "") == "compaction") {
        markers.push_back(payload);
      }
    }
    ASSERT_THAT(markers, SizeIs(1));
    EXPECT_EQ(markers[0]["pods"], ContentHash(pods_bytes));
    EXPECT_EQ(markers[0]["checkpoint"], ContentHash(checkpoint::Encode(attempted.devices)));
    // With the obstacle gone, the crash copy restores every acknowledged record.
    fs::remove(crash.root + "/device-plugins");
    fs::rename(crash.root + "/device-plugins.saved", crash.root + "/device-plugins");
    ExpectRestoresAndKeepsNewRecords(crash, live.model());

    fs::remove(plugins_dir);
    fs::rename(plugins_dir + ".saved", plugins_dir);
    compacted = (*store)->Compact();
    ASSERT_TRUE(compacted.ok()) << compacted;
    EXPECT_EQ((*store)->compactions(), before + 1);
    EXPECT_EQ(ReadBytes(layout.checkpoint), checkpoint::Encode(live.model().Devices()));
    EXPECT_EQ(JournalRecordCount(ReadBytes(layout.journal)), 0u);
  }

  // pods.json cannot be written: a directory has its name.
  {
    fs::rename(layout.pods, layout.pods + ".saved");
    fs::create_directory(layout.pods);
    const uint64_t before = (*store)->compactions();
    ASSERT_TRUE(live.RemovePodDevices("p1").ok());
    ASSERT_TRUE(live.Delete("p1").ok());
    absl::Status compacted = (*store)->Compact();
    EXPECT_FALSE(compacted.ok());
    EXPECT_EQ((*store)->compactions(), before);
    ASSERT_TRUE(live.Admit(MakePod("p4")).ok());

    TempDir crash_dir;
    Layout crash = CrashCopy(layout, crash_dir);
    fs::remove(crash.pods);
    fs::rename(crash.pods + ".saved", crash.pods);
    ExpectRestoresAndKeepsNewRecords(crash, live.model());

    fs::remove(layout.pods);
    fs::rename(layout.pods + ".saved", layout.pods);
    compacted = (*store)->Compact();
    ASSERT_TRUE(compacted.ok()) << compacted;
    EXPECT_EQ(ReadBytes(layout.pods), EncodePodsFile(live.model().PodList()));
  }
  (*store)->Close();
  store->reset();
  absl::StatusOr<RestoredState> back = Restore(layout);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Describe(*back), Describe(live.model()));
}

}  // namespace
}  // namespace kdp::manager
