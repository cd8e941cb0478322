#include "manager/src/state/state_store.h"

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/pod/pod_json.h"

namespace kdp::manager {
namespace {

using nlohmann::json;

// The member `key` of `o` when it has T's JSON type, else `fallback`: json::value() throws on a
// member of another type, and these files may be damaged (a fuzzer found it).
template <typename T>
T MemberOr(const json& o, const char* key, T fallback) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return fallback;
  } else {
    if (!it->is_number_integer()) return fallback;
  }
  return it->template get<T>();
}

// The kubelet's own words when its checkpoint cannot be read (ManagerImpl.Start in
// pkg/kubelet/cm/devicemanager/manager.go).
constexpr char kKubeletCheckpointWarning[] =
    "Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date";

// Identifies a file's exact bytes in the journal ("" for a missing file).
std::string ContentHash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrCat(absl::Hex(hash, absl::kZeroPad16), "-", bytes.size());
}

std::string TimeSuffix() {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
}

// `<stem>`, or `<stem>-N` for the first N that names no file.
std::string UnusedName(const std::string& stem) {
  std::string name = stem;
  for (int n = 1; ::access(name.c_str(), F_OK) == 0; ++n) name = absl::StrCat(stem, "-", n);
  return name;
}

// Moves an unreadable file aside (`<path>.corrupt-<time>`), so that nothing is silently dropped
// and the next write cannot overwrite it.
void SetAside(const std::string& path, std::string_view what) {
  std::string aside = UnusedName(absl::StrCat(path, ".corrupt-", TimeSuffix()));
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    KDP_LOG_ERROR("Cannot move unreadable file aside", "file", path, "err", strerror(errno));
    return;
  }
  KDP_LOG_WARNING("Unreadable file kept aside", "what", std::string(what), "file", path, "copy",
                  aside);
}

// ---- Pods file: {"version":1,"checksum":"<hash of the pods dump>","pods":[...]} ----

std::string EncodePods(const std::vector<Pod>& pods) {
  json list = json::array();
  for (const Pod& pod : pods) list.push_back(PodToJson(pod));
  std::string dump = list.dump();
  return absl::StrCat(R"({"version":1,"checksum":")", ContentHash(dump), R"(","pods":)", dump,
                      "}\n");
}

absl::StatusOr<std::vector<Pod>> DecodePods(const std::string& bytes, const std::string& path) {
  json doc = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::DataLossError(absl::StrCat(path, ": not a JSON object"));
  }
  if (MemberOr<int>(doc, "version", 0) != 1) {
    return absl::DataLossError(absl::StrCat(path, ": version: must be 1"));
  }
  auto pods = doc.find("pods");
  auto checksum = doc.find("checksum");
  if (pods == doc.end() || !pods->is_array() || checksum == doc.end() || !checksum->is_string()) {
    return absl::DataLossError(absl::StrCat(path, ": must hold \"pods\" (array) and \"checksum\""));
  }
  if (ContentHash(pods->dump()) != checksum->get<std::string>()) {
    return absl::DataLossError(absl::StrCat(path, ": checksum mismatch"));
  }
  std::vector<Pod> out;
  for (size_t i = 0; i < pods->size(); ++i) {
    absl::StatusOr<Pod> pod = PodFromJson((*pods)[i], path, absl::StrCat("pods[", i, "]"));
    if (!pod.ok()) return absl::DataLossError(pod.status().message());
    out.push_back(*std::move(pod));
  }
  return out;
}

// ---- Journal records ----

json EntryToJson(const checkpoint::Entry& entry) {
  json devices = json::object();
  for (const auto& [node, ids] : entry.devices) devices[absl::StrCat(node)] = ids;
  return {{"op", "alloc"},
          {"pod", entry.pod_uid},
          {"container", entry.container_name},
          {"resource", entry.resource_name},
          {"devices", devices},
          {"resp", absl::Base64Escape(entry.alloc_resp)}};
}

absl::StatusOr<checkpoint::Entry> EntryFromJson(const json& record) {
  checkpoint::Entry entry;
  try {
    entry.pod_uid = record.at("pod").get<std::string>();
    entry.container_name = record.at("container").get<std::string>();
    entry.resource_name = record.at("resource").get<std::string>();
    for (const auto& [node, ids] : record.at("devices").items()) {
      int64_t numa = 0;
      if (!absl::SimpleAtoi(node, &numa)) return absl::DataLossError("bad NUMA node key");
      entry.devices[numa] = ids.get<std::vector<std::string>>();
    }
    if (!absl::Base64Unescape(record.at("resp").get<std::string>(), &entry.alloc_resp)) {
      return absl::DataLossError("bad base64 in resp");
    }
  } catch (const json::exception& e) {
    return absl::DataLossError(e.what());
  }
  return entry;
}

struct Header {
  std::string checkpoint;
  std::string pods;
  std::string dra;  // "" also when the store keeps no DRA state
  bool foreign = false;
};

std::string EncodeHeader(const Header& header) {
  json out{{"kdp_state_journal", 1}, {"checkpoint", header.checkpoint}, {"pods", header.pods}};
  if (!header.dra.empty()) out["dra"] = header.dra;
  if (header.foreign) out["foreign_checkpoint"] = true;
  return out.dump();
}

// One file's state at start: its hash, and whether its bytes were usable.
struct FileState {
  std::string hash;  // "" when missing or set aside
  bool usable = true;
};

// The journal records to replay over a file: those with seq > *start, or none.
std::optional<uint64_t> ReplayStart(const FileState& file, const std::string& header_hash,
                                    const std::vector<json>& markers, const char* key) {
  if (!file.usable) return std::nullopt;
  if (file.hash == header_hash) return 0;
  for (auto it = markers.rbegin(); it != markers.rend(); ++it) {
    if (MemberOr<std::string>((*it), key, std::string()) == file.hash)
      return MemberOr<uint64_t>((*it), "upto", uint64_t{0});
  }
  return std::nullopt;
}

// Applies a "dra_claims" record to `claims` (by "<namespace>/<name>").
absl::Status ReplayDraClaims(const json& record,
                             std::map<std::string, dra::state::ClaimInfoState>* claims) {
  const json deleted = record.value("deleted", json::array());
  if (!deleted.is_array()) return absl::DataLossError("\"deleted\" is not an array");
  for (const json& key : deleted) {
    if (!key.is_string()) return absl::DataLossError("\"deleted\" holds a non-string");
    claims->erase(key.get<std::string>());
  }
  const std::string set = MemberOr<std::string>(record, "set", std::string());
  if (set.empty()) return absl::OkStatus();
  absl::StatusOr<dra::CheckpointData> data = dra::DecodeCheckpointData(set);
  if (!data.ok()) return absl::DataLossError(data.status().message());
  for (dra::state::ClaimInfoState& claim : data->claims) {
    std::string key = dra::ClaimInfoKey(claim.claim_name, claim.namespace_);
    (*claims)[key] = std::move(claim);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(StateStoreOptions options,
                                                             RestoredState* restored) {
  *restored = {};
  // The checkpoint (the kubelet's file: either layout).
  FileState checkpoint_file;
  if (absl::StatusOr<std::string> bytes = ReadFile(options.checkpoint_path); bytes.ok()) {
    absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(*bytes);
    std::string problem;
    if (!decoded.ok()) {
      problem = std::string(decoded.status().message());
    } else if (!decoded->checksum_ok()) {
      problem = absl::StrCat("checkpoint is corrupted: checksum ", decoded->checksum, ", computed ",
                             decoded->computed_checksum);
    }
    if (!problem.empty()) {
      KDP_LOG_WARNING(kKubeletCheckpointWarning, "err", problem, "file", options.checkpoint_path);
      if (options.strict) {
        return absl::DataLossError(absl::StrCat(options.checkpoint_path, ": ", problem,
                                                " (--strict-checkpoint: refusing to start)"));
      }
      SetAside(options.checkpoint_path, "device manager checkpoint");
      checkpoint_file.usable = false;
    } else {
      if (decoded->format == checkpoint::Format::kV1) {
        KDP_LOG_INFO("Read a pre-1.20 (v1) checkpoint; its devices are taken as NUMA node 0",
                     "file", options.checkpoint_path, "entries", decoded->data.entries.size());
      }
      restored->devices = std::move(decoded->data);
      checkpoint_file.hash = ContentHash(*bytes);
    }
  } else if (!absl::IsNotFound(bytes.status())) {
    return bytes.status();
  }

  // The pod store.
  FileState pods_file;
  std::map<std::string, Pod> pods;
  if (absl::StatusOr<std::string> bytes = ReadFile(options.pods_path); bytes.ok()) {
    absl::StatusOr<std::vector<Pod>> decoded = DecodePods(*bytes, options.pods_path);
    if (!decoded.ok()) {
      KDP_LOG_WARNING("Continue after failing to read the pod store; admitted pods may be missing",
                      "err", decoded.status().message());
      if (options.strict) {
        return absl::DataLossError(
            absl::StrCat(decoded.status().message(), " (--strict-checkpoint: refusing to start)"));
      }
      SetAside(options.pods_path, "pod store");
      pods_file.usable = false;
    } else {
      for (Pod& pod : *decoded) pods[pod.uid] = std::move(pod);
      pods_file.hash = ContentHash(*bytes);
    }
  } else if (!absl::IsNotFound(bytes.status())) {
    return bytes.status();
  }

  // The DRA manager's checkpoint. Unlike the device manager's, a corrupted one stops the start, as
  // it stops the kubelet's (#127653: drain the node and remove the file).
  FileState dra_file;
  std::map<std::string, dra::state::ClaimInfoState> dra_claims;
  if (!options.dra_checkpoint_path.empty()) {
    if (absl::StatusOr<std::string> bytes = ReadFile(options.dra_checkpoint_path); bytes.ok()) {
      absl::StatusOr<std::vector<dra::state::ClaimInfoState>> decoded =
          dra::DecodeCheckpoint(*bytes);
      if (!decoded.ok()) {
        return absl::Status(
            decoded.status().code(),
            absl::StrCat("failed to get checkpoint ", dra::kCheckpointFileName, ": ",
                         decoded.status().message(), " (", options.dra_checkpoint_path, ")"));
      }
      for (dra::state::ClaimInfoState& claim : *decoded) {
        std::string key = dra::ClaimInfoKey(claim.claim_name, claim.namespace_);
        dra_claims[key] = std::move(claim);
      }
      dra_file.hash = ContentHash(*bytes);
    } else if (!absl::IsNotFound(bytes.status())) {
      return bytes.status();
    }
  }

  // The journal: replay over each file what came after it.
  struct stat journal_stat {};
  const bool journal_existed = ::stat(options.journal_path.c_str(), &journal_stat) == 0;
  JournalContents contents;
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal,
                       Journal::Open(options.journal_path,
                                     EncodeHeader({.checkpoint = checkpoint_file.hash,
                                                   .pods = pods_file.hash,
                                                   .dra = dra_file.hash,
                                                   .foreign = !checkpoint_file.hash.empty()}),
                                     &contents));
  if (contents.dropped_bytes > 0) {
    KDP_LOG_WARNING("Journal tail cut off (a write the crash interrupted; never acknowledged)",
                    "file", options.journal_path, "bytes", contents.dropped_bytes, "reason",
                    contents.dropped_reason);
  }
  json header = json::parse(contents.header, nullptr, false);
  if (header.is_discarded() || !header.is_object() ||
      MemberOr<int>(header, "kdp_state_journal", 0) != 1) {
    return absl::DataLossError(
        absl::StrCat(options.journal_path, ": header is not a kdp state journal header"));
  }
  std::vector<json> parsed;
  std::vector<json> markers;
  for (const JournalRecord& record : contents.records) {
    json payload = json::parse(record.payload, nullptr, false);
    if (payload.is_discarded() || !payload.is_object()) {
      return absl::DataLossError(
          absl::StrCat(options.journal_path, ": record ", record.seq, " is not a JSON object"));
    }
    if (MemberOr<std::string>(payload, "op", std::string()) == "compaction")
      markers.push_back(payload);
    parsed.push_back(std::move(payload));
  }
  const std::optional<uint64_t> device_start =
      ReplayStart(checkpoint_file, MemberOr<std::string>(header, "checkpoint", std::string()),
                  markers, "checkpoint");
  const std::optional<uint64_t> pods_start =
      ReplayStart(pods_file, MemberOr<std::string>(header, "pods", std::string()), markers, "pods");
  const std::optional<uint64_t> dra_start =
      ReplayStart(dra_file, MemberOr<std::string>(header, "dra", std::string()), markers, "dra");
  restored->foreign_checkpoint =
      !checkpoint_file.hash.empty() &&
      (!journal_existed || !device_start.has_value() || !pods_file.usable ||
       (MemberOr<bool>(header, "foreign_checkpoint", false) &&
        MemberOr<std::string>(header, "checkpoint", std::string()) == checkpoint_file.hash));

  using EntryKey = std::tuple<std::string, std::string, std::string>;
  std::map<EntryKey, checkpoint::Entry> entries;
  for (checkpoint::Entry& entry : restored->devices.entries) {
    EntryKey key(entry.pod_uid, entry.container_name, entry.resource_name);
    entries[key] = std::move(entry);
  }
  std::vector<JournalRecord> kept;  // the records replayed, in order
  size_t set_aside = 0;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const json& record = parsed[i];
    const uint64_t seq = contents.records[i].seq;
    const std::string op = MemberOr<std::string>(record, "op", std::string());
    if (op == "compaction") continue;
    const bool device_op = op == "alloc" || op == "remove_pod" || op == "resource";
    const std::optional<uint64_t>& start =
        device_op ? device_start : (op == "dra_claims" ? dra_start : pods_start);
    if (!start.has_value() || seq <= *start) {
      set_aside += start.has_value() ? 0 : 1;
      continue;
    }
    if (op == "alloc") {
      absl::StatusOr<checkpoint::Entry> entry = EntryFromJson(record);
      if (!entry.ok()) {
        return absl::DataLossError(
            absl::StrCat(options.journal_path, ": record ", seq, ": ", entry.status().message()));
      }
      EntryKey key(entry->pod_uid, entry->container_name, entry->resource_name);
      entries[key] = *std::move(entry);
    } else if (op == "remove_pod") {
      const std::string uid = MemberOr<std::string>(record, "pod", std::string());
      for (auto it = entries.lower_bound(EntryKey(uid, "", ""));
           it != entries.end() && std::get<0>(it->first) == uid;) {
        it = entries.erase(it);
      }
    } else if (op == "resource") {
      const std::string name = MemberOr<std::string>(record, "name", std::string());
      if (MemberOr<bool>(record, "registered", false)) {
        restored->devices.registered_devices.try_emplace(name);
      } else {
        restored->devices.registered_devices.erase(name);
      }
    } else if (op == "pod_admitted") {
      absl::StatusOr<Pod> pod = PodFromJson(record.value("pod", json()), options.journal_path,
                                            absl::StrCat("record ", seq));
      if (!pod.ok()) return absl::DataLossError(pod.status().message());
      pods[pod->uid] = *std::move(pod);
    } else if (op == "pod_terminating") {
      // A pod whose record is gone (a deletion replayed before it) stays gone.
      auto it = pods.find(MemberOr<std::string>(record, "pod", std::string()));
      if (it != pods.end()) it->second.terminating = true;
    } else if (op == "pod_deleted") {
      pods.erase(MemberOr<std::string>(record, "pod", std::string()));
    } else if (op == "dra_claims") {
      absl::Status replayed = ReplayDraClaims(record, &dra_claims);
      if (!replayed.ok()) {
        return absl::DataLossError(
            absl::StrCat(options.journal_path, ": record ", seq, ": ", replayed.message()));
      }
    } else {
      return absl::DataLossError(
          absl::StrCat(options.journal_path, ": record ", seq, ": unknown op \"", op, "\""));
    }
    kept.push_back(contents.records[i]);
  }
  restored->devices.entries.clear();
  for (auto& [key, entry] : entries) restored->devices.entries.push_back(std::move(entry));
  for (auto& [uid, pod] : pods) restored->pods.push_back(std::move(pod));
  for (auto& [key, claim] : dra_claims) restored->dra_claims.push_back(std::move(claim));

  // From here on the journal must describe the files as they are now, so that what is appended
  // after this start is replayed by the next one whatever happened to the files before.
  const Header now{.checkpoint = checkpoint_file.hash,
                   .pods = pods_file.hash,
                   .dra = dra_file.hash,
                   .foreign = restored->foreign_checkpoint};
  if (set_aside > 0) {
    std::string copy = UnusedName(absl::StrCat(options.journal_path, ".stale-", TimeSuffix()));
    KDP_LOG_WARNING(
        "Journal records do not follow the files found (a checkpoint copied in, or one that was "
        "unreadable); they are not replayed",
        "records", set_aside, "copy", copy);
    if (absl::StatusOr<std::string> bytes = ReadFile(options.journal_path); bytes.ok()) {
      KDP_RETURN_IF_ERROR(WriteFileDurably(copy, *bytes));
    }
  }
  if (set_aside > 0 || device_start.value_or(0) != 0 || pods_start.value_or(0) != 0 ||
      dra_start.value_or(0) != 0 ||
      MemberOr<std::string>(header, "checkpoint", std::string()) != now.checkpoint ||
      MemberOr<std::string>(header, "pods", std::string()) != now.pods ||
      MemberOr<std::string>(header, "dra", std::string()) != now.dra ||
      MemberOr<bool>(header, "foreign_checkpoint", false) != now.foreign) {
    KDP_RETURN_IF_ERROR(journal->Rewrite(EncodeHeader(now), kept));
  }

  auto store = std::unique_ptr<StateStore>(new StateStore(std::move(options), std::move(journal)));
  absl::MutexLock lock(&store->mu_);
  store->tail_ = std::move(kept);
  // Write the restored state into the two files soon.
  store->dirty_ = true;
  store->dirty_since_ = absl::Now();
  return store;
}

StateStore::StateStore(StateStoreOptions options, std::unique_ptr<Journal> journal)
    : options_(std::move(options)), journal_(std::move(journal)) {}

StateStore::~StateStore() { Close(); }

void StateStore::StartCompaction(std::function<StateSnapshot()> snapshot) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_ || thread_.joinable()) return;  // after Close(), or a second call: no thread
  }
  snapshot_ = std::move(snapshot);
  thread_ = std::thread([this] { CompactionLoop(); });
}

absl::Status StateStore::Record(const std::string& payload, bool sync, const ApplyFn& apply) {
  absl::ReaderMutexLock change(&change_mu_);
  absl::StatusOr<uint64_t> appended = journal_->Append(payload, sync);
  if (!appended.ok()) {
    absl::MutexLock lock(&mu_);
    last_write_status_ = appended.status();
    ++write_failures_;
    return appended.status();
  }
  const uint64_t seq = *appended;
  if (apply) apply();
  absl::MutexLock lock(&mu_);
  last_write_status_ = absl::OkStatus();
  tail_.push_back({.seq = seq, .payload = payload});
  if (!dirty_) {
    dirty_ = true;
    dirty_since_ = absl::Now();
  }
  return absl::OkStatus();
}

absl::Status StateStore::RecordAllocation(const checkpoint::Entry& entry, const ApplyFn& apply) {
  return Record(EntryToJson(entry).dump(), /*sync=*/false, apply);
}

absl::Status StateStore::RecordPodDevicesRemoved(const std::string& pod_uid, const ApplyFn& apply) {
  return Record(json{{"op", "remove_pod"}, {"pod", pod_uid}}.dump(), /*sync=*/false, apply);
}

absl::Status StateStore::RecordResource(const std::string& resource, bool registered,
                                        const ApplyFn& apply) {
  return Record(json{{"op", "resource"}, {"name", resource}, {"registered", registered}}.dump(),
                /*sync=*/false, apply);
}

absl::Status StateStore::RecordPodAdmitted(const Pod& pod, const ApplyFn& apply) {
  return Record(json{{"op", "pod_admitted"}, {"pod", PodToJson(pod)}}.dump(), /*sync=*/true, apply);
}

absl::Status StateStore::RecordPodTerminating(const std::string& pod_uid, const ApplyFn& apply) {
  return Record(json{{"op", "pod_terminating"}, {"pod", pod_uid}}.dump(), /*sync=*/true, apply);
}

absl::Status StateStore::RecordPodDeleted(const std::string& pod_uid, const ApplyFn& apply) {
  return Record(json{{"op", "pod_deleted"}, {"pod", pod_uid}}.dump(), /*sync=*/true, apply);
}

absl::Status StateStore::RecordDraClaims(const std::vector<dra::state::ClaimInfoState>& set,
                                         const std::vector<std::string>& deleted, bool sync) {
  if (!keeps_dra_state()) {
    return absl::FailedPreconditionError("the state store keeps no DRA state");
  }
  // The claims as dra_manager_state's Data holds them, so the record and the file share one codec.
  return Record(json{{"op", "dra_claims"},
                     {"set", set.empty() ? std::string() : dra::EncodeCheckpointData(set)},
                     {"deleted", deleted}}
                    .dump(),
                sync, {});
}

void StateStore::RequestCompaction() {
  absl::MutexLock lock(&mu_);
  if (!dirty_) {
    dirty_ = true;
    dirty_since_ = absl::Now();
  }
}

absl::Status StateStore::Compact() {
  absl::MutexLock compacting(&compact_mu_);
  uint64_t upto = 0;
  StateSnapshot snapshot;
  {
    // No change is half done while the snapshot is taken: every record up to `upto` is in it.
    absl::MutexLock change(&change_mu_);
    upto = journal_->last_seq();
    {
      absl::MutexLock lock(&mu_);
      dirty_ = false;
    }
    snapshot = snapshot_();
  }
  const std::string checkpoint_bytes = checkpoint::Encode(snapshot.devices);
  const std::string pods_bytes = EncodePods(snapshot.pods);
  const bool dra = keeps_dra_state();
  const std::string dra_bytes = dra ? dra::EncodeCheckpoint(snapshot.dra_claims) : std::string();
  const Header written{.checkpoint = ContentHash(checkpoint_bytes),
                       .pods = ContentHash(pods_bytes),
                       .dra = dra ? ContentHash(dra_bytes) : std::string()};
  absl::Status status = [&]() -> absl::Status {
    // The marker first: should a crash leave one file new and the other old, the next start
    // still knows which records each one already holds.
    json marker{{"op", "compaction"},
                {"upto", upto},
                {"checkpoint", written.checkpoint},
                {"pods", written.pods}};
    if (dra) marker["dra"] = written.dra;
    KDP_RETURN_IF_ERROR(journal_->Append(marker.dump(), /*sync=*/true).status());
    KDP_RETURN_IF_ERROR(WriteFileDurably(options_.pods_path, pods_bytes));
    KDP_RETURN_IF_ERROR(WriteFileDurably(options_.checkpoint_path, checkpoint_bytes));
    if (dra) KDP_RETURN_IF_ERROR(WriteFileDurably(options_.dra_checkpoint_path, dra_bytes));
    absl::MutexLock change(&change_mu_);
    absl::MutexLock lock(&mu_);
    std::vector<JournalRecord> after;
    for (JournalRecord& record : tail_) {
      if (record.seq > upto) after.push_back(std::move(record));
    }
    // Records are pushed after their append, so concurrent ones can arrive out of seq order.
    std::sort(after.begin(), after.end(),
              [](const JournalRecord& a, const JournalRecord& b) { return a.seq < b.seq; });
    tail_ = std::move(after);
    KDP_RETURN_IF_ERROR(journal_->Rewrite(EncodeHeader(written), tail_));
    ++compactions_;
    return absl::OkStatus();
  }();
  absl::MutexLock lock(&mu_);
  last_write_status_ = status;
  if (!status.ok()) {
    ++write_failures_;
    if (!dirty_) {
      dirty_ = true;
      dirty_since_ = absl::Now();
    }
  }
  return status;
}

void StateStore::CompactionLoop() {
  while (true) {
    bool closing = false;
    {
      absl::MutexLock lock(&mu_);
      auto closing_or_dirty = [this]()
                                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closing_ || dirty_; };
      auto is_closing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closing_; };
      mu_.Await(absl::Condition(&closing_or_dirty));
      // Changes that follow within the delay are written by the same compaction.
      if (!closing_) {
        mu_.AwaitWithDeadline(absl::Condition(&is_closing),
                              dirty_since_ + options_.compaction_delay);
      }
      closing = closing_;
    }
    absl::Status compacted = Compact();
    // A compaction builds the whole state as JSON (tens of MiB at 10,000 pods) and frees it
    // again; glibc keeps those pages, and the holes left between the pods admitted meanwhile, in
    // its arenas. Handing free pages back here keeps kdp-manager's resident memory near what it
    // holds (about 140 -> 125 MiB at 10,000 pods, footprint_benchmark), at the cost of one walk
    // over malloc's free lists per compaction (at most one a compaction delay).
    malloc_trim(0);
    if (!compacted.ok()) {
      KDP_LOG_ERROR("Failed to write checkpoint file", "err", compacted.message());
      if (closing) return;
      // Retry after the delay (e.g. once disk space is back).
      absl::MutexLock lock(&mu_);
      auto is_closing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closing_; };
      mu_.AwaitWithTimeout(absl::Condition(&is_closing), options_.compaction_delay);
    }
    if (closing) return;
  }
}

void StateStore::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    closing_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t StateStore::compactions() const {
  absl::MutexLock lock(&mu_);
  return compactions_;
}

absl::Status StateStore::last_write_status() const {
  absl::MutexLock lock(&mu_);
  return last_write_status_;
}

uint64_t StateStore::write_failures() const {
  absl::MutexLock lock(&mu_);
  return write_failures_;
}

}  // namespace kdp::manager
