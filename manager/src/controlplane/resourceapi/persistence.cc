#include "manager/src/controlplane/resourceapi/persistence.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/logging.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
// kind, namespace, name: one object of the snapshot.
using ObjectKey = std::tuple<std::string, std::string, std::string>;

// The string member `key` of `object`, or "" (a wrong type is the validation's to name).
std::string StringMember(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

ObjectKey KeyOf(const Json& object) {
  const Json& metadata =
      object.is_object() && object.contains("metadata") ? object["metadata"] : Json::object();
  return {StringMember(object, "kind"), StringMember(metadata, "namespace"),
          StringMember(metadata, "name")};
}

// The "resourceVersion" string member of `object` as a number; false when it is none.
bool ResourceVersionOf(const Json& object, int64_t* rv) {
  return absl::SimpleAtoi(StringMember(object, "resourceVersion"), rv) && *rv >= 0;
}

std::string JournalHeader(int64_t snapshot_rv) {
  return Json{{"snapshotResourceVersion", std::to_string(snapshot_rv)}}.dump();
}

}  // namespace

std::string StorePersister::JournalPath(const std::string& path) {
  if (absl::EndsWith(path, ".json")) {
    return absl::StrCat(path.substr(0, path.size() - 5), ".journal");
  }
  return absl::StrCat(path, ".journal");
}

absl::Status StorePersister::Load(const std::string& path, ObjectStore* store) {
  Json snapshot = {{"resourceVersion", "0"}, {"objects", Json::array()}};
  absl::StatusOr<std::string> text = kdp::ReadFile(path);
  if (text.ok()) {
    snapshot = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (snapshot.is_discarded()) {
      return absl::DataLossError(absl::StrCat(path, ": not JSON; remove it and ", JournalPath(path),
                                              " to start with no DeviceClasses, ResourceClaims "
                                              "or slices"));
    }
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }

  // The journal's records newer than the snapshot, applied over it.
  const std::string journal_path = JournalPath(path);
  std::error_code error;
  if (std::filesystem::exists(journal_path, error)) {
    int64_t snapshot_rv = 0;
    if (!ResourceVersionOf(snapshot, &snapshot_rv)) {
      // Restore names the problem.
      if (absl::Status restored = store->Restore(snapshot); !restored.ok()) {
        return absl::DataLossError(absl::StrCat(path, ": ", restored.message()));
      }
    }
    JournalContents contents;
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(journal_path, JournalHeader(snapshot_rv), &contents);
    if (!journal.ok()) return journal.status();
    if (contents.dropped_bytes > 0) {
      KDP_LOG_WARNING("Cut a torn tail off the resource API's journal", "path", journal_path,
                      "bytes", contents.dropped_bytes, "reason", contents.dropped_reason, "copy",
                      contents.corrupt_copy_path);
    }
    absl::StatusOr<Json> replayed =
        Replay(std::move(snapshot), snapshot_rv, contents.records, path);
    if (!replayed.ok()) return replayed.status();
    snapshot = *std::move(replayed);
  }
  if (absl::Status restored = store->Restore(snapshot); !restored.ok()) {
    return absl::DataLossError(absl::StrCat(path, " and ", journal_path, ": ", restored.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> StorePersister::Replay(Json snapshot, int64_t snapshot_rv,
                                            const std::vector<JournalRecord>& records,
                                            const std::string& path) {
  const std::string journal_path = JournalPath(path);
  // Without the journal, Restore refuses such a file; with it, the replay must not take it for
  // an empty one (the next compaction would write that over it).
  if (!snapshot.is_object() || !snapshot.contains("objects") || !snapshot["objects"].is_array()) {
    return absl::DataLossError(
        absl::StrCat(path, ": \"objects\" is not an array; remove it and ", journal_path,
                     " to start with no DeviceClasses, ResourceClaims or slices"));
  }
  std::map<ObjectKey, Json> objects;
  for (Json& object : snapshot["objects"]) {
    ObjectKey key = KeyOf(object);  // before the move: json's operator= takes its argument
    objects[std::move(key)] = std::move(object);  // by value, initialized first
  }
  int64_t rv = snapshot_rv;
  for (const JournalRecord& record : records) {
    const Json change = Json::parse(record.payload, nullptr, /*allow_exceptions=*/false);
    int64_t record_rv = 0;
    const bool valid = change.is_object() && ResourceVersionOf(change, &record_rv) &&
                       change.value("objects", Json::array()).is_array() &&
                       change.value("deleted", Json::array()).is_array();
    if (!valid) {
      return absl::DataLossError(absl::StrCat(
          journal_path, ": record ", record.seq,
          " is not {\"resourceVersion\": \"<n>\", \"objects\": [...], \"deleted\": [...]}; "
          "remove the file to start from ",
          path));
    }
    if (record_rv <= snapshot_rv) continue;  // the snapshot holds it (a compaction's crash)
    for (const Json& gone : change.value("deleted", Json::array())) {
      objects.erase({StringMember(gone, "kind"), StringMember(gone, "namespace"),
                     StringMember(gone, "name")});
    }
    for (const Json& object : change.value("objects", Json::array())) {
      objects[KeyOf(object)] = object;
    }
    rv = std::max(rv, record_rv);
  }
  snapshot = {{"resourceVersion", std::to_string(rv)}, {"objects", Json::array()}};
  for (auto& [key, object] : objects) snapshot["objects"].push_back(std::move(object));
  return snapshot;
}

StorePersister::StorePersister(std::string path, ObjectStore* store, absl::Duration delay)
    : path_(std::move(path)), journal_path_(JournalPath(path_)), store_(store), delay_(delay) {
  store_->SetDurabilityHook([this] { return Flush(); });
}

StorePersister::~StorePersister() {
  Stop();
  store_->SetDurabilityHook({});
}

void StorePersister::Start() {
  thread_ = std::thread([this] { Run(); });
}

absl::Status StorePersister::Flush() {
  absl::MutexLock write(&write_mu_);
  return FlushLocked();
}

absl::Status StorePersister::Compact() {
  absl::MutexLock write(&write_mu_);
  return CompactLocked();
}

absl::Status StorePersister::FlushLocked() {
  const int64_t version = store_->PersistedVersion();
  int64_t written = 0;
  {
    absl::MutexLock lock(&mu_);
    if (version == written_version_) return absl::OkStatus();
    written = written_version_;
  }
  // This process's first write, or a journal that stopped taking records: the whole snapshot.
  if (journal_ == nullptr || written < 0) return CompactLocked();
  // Taken after `version` was read: the log holds at least the changes up to it.
  absl::StatusOr<std::vector<WatchEvent>> events = store_->PersistedEventsSince(written);
  if (!events.ok()) return CompactLocked();  // the log no longer reaches back that far
  // The last state of each object changed since the last write.
  std::map<ObjectKey, const WatchEvent*> changed;
  int64_t upto = version;
  for (const WatchEvent& event : *events) {
    changed[KeyOf(event.object)] = &event;
    upto = std::max(upto, event.resource_version);
  }
  Json record = {{"resourceVersion", std::to_string(upto)},
                 {"objects", Json::array()},
                 {"deleted", Json::array()}};
  for (const auto& [key, event] : changed) {
    if (event->type == WatchEvent::Type::kDeleted) {
      const auto& [kind, namespace_, name] = key;
      record["deleted"].push_back({{"kind", kind}, {"namespace", namespace_}, {"name", name}});
    } else {
      record["objects"].push_back(event->object);
    }
  }
  absl::StatusOr<uint64_t> appended = journal_->Append(record.dump(), /*sync=*/true);
  if (absl::IsFailedPrecondition(appended.status())) return CompactLocked();
  if (!appended.ok()) return appended.status();
  ++journal_records_;
  absl::MutexLock lock(&mu_);
  written_version_ = upto;
  return absl::OkStatus();
}

absl::Status StorePersister::CompactLocked() {
  const int64_t version = store_->PersistedVersion();
  // Taken after `version` was read: it holds at least that version.
  const Json snapshot = store_->Snapshot();
  if (absl::Status written = kdp::WriteFileDurably(path_, snapshot.dump(), 0600); !written.ok()) {
    return written;
  }
  int64_t snapshot_rv = 0;
  ResourceVersionOf(snapshot, &snapshot_rv);
  // The records left in the journal are all older than this snapshot: emptying it is tidiness,
  // not correctness, so its failure is logged and the next write tries again.
  absl::Status emptied;
  if (journal_ == nullptr) {
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(journal_path_, JournalHeader(snapshot_rv), nullptr);
    if (journal.ok()) {
      journal_ = *std::move(journal);
    } else {
      emptied = journal.status();
    }
  }
  if (journal_ != nullptr) emptied = journal_->Rewrite(JournalHeader(snapshot_rv), {});
  if (!emptied.ok()) {
    KDP_LOG_WARNING("Cannot empty the resource API's journal; the snapshot holds its records",
                    "path", journal_path_, "err", emptied.message());
    journal_.reset();  // opened again by the next snapshot write
  }
  journal_records_ = 0;
  absl::MutexLock lock(&mu_);
  written_version_ = version;
  return absl::OkStatus();
}

void StorePersister::Run() {
  // When the store last changed, whoever wrote the change down (this thread or a Flush()).
  absl::Time last_change = absl::InfinitePast();
  int64_t seen_version = -1;
  for (;;) {
    int64_t written = 0;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      written = written_version_;
    }
    if (const int64_t version = store_->PersistedVersion(); version != seen_version) {
      seen_version = version;
      last_change = absl::Now();
    }
    if (store_->WaitForPersistedChange(written, absl::Milliseconds(200))) {
      absl::SleepFor(delay_);  // coalesce a burst of changes into one write
      absl::Status flushed;
      {
        absl::MutexLock write(&write_mu_);
        flushed = FlushLocked();
        if (flushed.ok() && journal_ != nullptr && journal_->size_bytes() >= kCompactionBytes) {
          flushed = CompactLocked();
        }
      }
      if (!flushed.ok()) {
        KDP_LOG_WARNING("Cannot write the resource store; retrying", "path", path_, "err",
                        flushed.message());
        absl::SleepFor(absl::Seconds(1));
      }
      continue;
    }
    // Nothing left for this thread to write (a Flush() may have written it): fold the journal
    // into the snapshot once the store is quiet or the journal large.
    absl::MutexLock write(&write_mu_);
    const bool large = journal_ != nullptr && journal_->size_bytes() >= kCompactionBytes;
    if (journal_records_ > 0 && (large || absl::Now() - last_change >= kCompactionIdle)) {
      if (absl::Status compacted = CompactLocked(); !compacted.ok()) {
        KDP_LOG_WARNING("Cannot rewrite the resource store; retrying", "path", path_, "err",
                        compacted.message());
      }
    }
  }
}

void StorePersister::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock write(&write_mu_);
  absl::Status written = FlushLocked();
  if (written.ok() && journal_records_ > 0) written = CompactLocked();
  if (!written.ok()) {
    KDP_LOG_ERROR("Cannot write the resource store at shutdown", "path", path_, "err",
                  written.message());
  }
  journal_.reset();  // its lock goes with it: a successor may open the files
}

}  // namespace kdp::manager::resourceapi
