// Fuzzes the replay of the local resource API's journal (`<kubelet-root>/kdp/resources.journal`,
// read at start by StorePersister::Load: StorePersister::Replay over resources.json, then
// ObjectStore::Restore, manager/src/controlplane/resourceapi/persistence.h): records that a
// crash, a full disk, an older or newer kdp or a hand edit may have left. The journal's own
// framing (lengths, checksums, torn tails) is state_store_fuzzer's; this one takes the records'
// payloads. The input is one record per line, replayed over a fixed snapshot at resourceVersion 5
// that holds a DeviceClass and a ResourceClaim.
//
// Properties checked beyond "no crash": a refused record is DATA_LOSS naming the journal and the
// record's number; a replayed snapshot's resourceVersion is at least the snapshot's; a store
// restored from it gives, through its own snapshot, the same store again (as resource_snapshot).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/persistence.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/state/journal/journal.h"

namespace {

namespace ra = kdp::manager::resourceapi;
using Json = nlohmann::json;

constexpr int64_t kSnapshotRv = 5;
constexpr char kPath[] = "/fuzz/kdp/resources.json";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "resource_journal_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

ra::StoreOptions Options() {
  return {.node_name = "node-1", .now = [] { return absl::FromUnixSeconds(1767225600); }};
}

// The snapshot every input's records are replayed over, as a manager that stopped at
// resourceVersion 5 wrote it.
const Json& BaseSnapshot() {
  static const Json* snapshot = [] {
    ra::ObjectStore store(Options());
    auto created =
        store.Create(ra::Kind::kDeviceClass, {{"apiVersion", "resource.k8s.io/v1"},
                                              {"kind", "DeviceClass"},
                                              {"metadata", {{"name", "gpu.example.com"}}}});
    if (!created.ok()) Fail("the base DeviceClass is refused", created.status().ToString());
    created = store.Create(
        ra::Kind::kResourceClaim,
        {{"apiVersion", "resource.k8s.io/v1"},
         {"kind", "ResourceClaim"},
         {"metadata", {{"name", "a"}, {"namespace", "default"}}},
         {"spec",
          {{"devices",
            {{"requests",
              {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}}}}}}}});
    if (!created.ok()) Fail("the base ResourceClaim is refused", created.status().ToString());
    Json saved = store.Snapshot();
    saved["resourceVersion"] = std::to_string(kSnapshotRv);
    return new Json(std::move(saved));
  }();
  return *snapshot;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<kdp::manager::JournalRecord> records;
  uint64_t seq = 0;
  // A file's last line ends with a newline; the record after it is not one.
  const absl::string_view input =
      absl::StripSuffix(absl::string_view(reinterpret_cast<const char*>(data), size), "\n");
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    kdp::manager::JournalRecord record;
    record.seq = ++seq;
    record.payload = std::string(line);
    records.push_back(std::move(record));
  }
  absl::StatusOr<Json> replayed =
      ra::StorePersister::Replay(BaseSnapshot(), kSnapshotRv, records, kPath);
  if (!replayed.ok()) {
    const std::string message(replayed.status().message());
    if (replayed.status().code() != absl::StatusCode::kDataLoss ||
        !absl::StrContains(message, ra::StorePersister::JournalPath(kPath)) ||
        !absl::StrContains(message, "record ")) {
      Fail("a refused record is not DATA_LOSS naming the journal and the record",
           replayed.status().ToString());
    }
    return 0;
  }
  int64_t rv = 0;
  if (!replayed->is_object() || !replayed->contains("resourceVersion") ||
      !(*replayed)["resourceVersion"].is_string() ||
      !absl::SimpleAtoi((*replayed)["resourceVersion"].get<std::string>(), &rv) ||
      rv < kSnapshotRv) {
    Fail("the replayed snapshot's resourceVersion went back", replayed->dump());
  }
  ra::ObjectStore store(Options());
  if (!store.Restore(*replayed).ok()) return 0;  // Load's DATA_LOSS naming both files
  const Json saved = store.Snapshot();
  ra::ObjectStore again(Options());
  if (absl::Status s = again.Restore(saved); !s.ok()) {
    Fail("the store's own snapshot does not restore", s.ToString() + "\n" + saved.dump());
  }
  if (again.Snapshot() != saved) Fail("the snapshot changed through a restore", saved.dump());
  return 0;
}
