#include "manager/src/status/status_manager.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;
using resourceapi::Kind;

// Creates the Pod with the manager's UID, then writes its status (a create does not take one).
absl::Status WritePod(resourceapi::ObjectStore* store, const Json& object) {
  absl::StatusOr<Json> created = store->CreateKeepingUid(Kind::kPod, object);
  if (!created.ok()) return created.status();
  return store->UpdateStatus(Kind::kPod, object).status();
}

absl::Time ParseRfc3339(const Json& text, absl::Time fallback) {
  absl::Time t;
  std::string error;
  if (!text.is_string() ||
      !absl::ParseTime(absl::RFC3339_full, text.get<std::string>(), &t, &error)) {
    return fallback;
  }
  return t;
}

}  // namespace

StatusManager::StatusManager(resourceapi::ObjectStore* store, EventRecorder* events,
                             StatusManagerOptions options)
    : store_(store), events_(events), options_(std::move(options)) {}

StatusManager::~StatusManager() { Stop(); }

int StatusManager::Sync() {
  absl::MutexLock lock(&sync_mu_);
  const absl::Time now = options_.now ? options_.now() : absl::Now();
  int changes = 0;
  // Every pod the manager has, terminating ones included (the API keeps what it had of those
  // until their deletion completes).
  std::set<std::pair<std::string, std::string>> known = rejected_;
  std::set<std::string> uids;
  for (const AdmittedPod& pod : options_.pods()) {
    known.insert({pod.pod.namespace_, pod.pod.name});
    uids.insert(pod.pod.uid);
    if (pod.pod.terminating) continue;
    changes += SyncOneLocked(pod, now);
  }
  for (const Json& object : store_->List(Kind::kPod, "").items) {
    const std::string namespace_ = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"].value("name", "");
    if (known.contains({namespace_, name})) continue;
    if (store_->Delete(Kind::kPod, namespace_, name).ok()) ++changes;
  }
  return changes;
}

int StatusManager::SyncOneLocked(const AdmittedPod& pod, absl::Time now) {
  absl::StatusOr<Json> existing = store_->Get(Kind::kPod, pod.pod.namespace_, pod.pod.name);
  if (existing.ok() && (*existing)["metadata"].value("uid", "") != pod.pod.uid) {
    // Another pod of that name ran before (deleted while the manager was down).
    (void)store_->Delete(Kind::kPod, pod.pod.namespace_, pod.pod.name);
    existing = absl::NotFoundError("replaced");
  }
  if (!existing.ok()) {
    // The client's object (PodFromJson checked that it is one); null for kdpctl's pods.
    Json sent = pod.pod.api_object.empty()
                    ? Json()
                    : Json::parse(pod.pod.api_object, nullptr, /*allow_exceptions=*/false);
    if (sent.is_discarded()) sent = nullptr;
    Json object =
        WithSubmitted(PodObject(pod, options_.node_name, now, options_.health), std::move(sent));
    if (absl::Status written = WritePod(store_, object); !written.ok()) {
      KDP_LOG_WARNING("Cannot write a pod to the local API", "pod",
                      absl::StrCat(pod.pod.namespace_, "/", pod.pod.name), "err",
                      written.ToString());
      return 0;
    }
    if (events_ != nullptr) {
      events_->Record({.kind = "Pod",
                       .namespace_ = pod.pod.namespace_,
                       .name = pod.pod.name,
                       .uid = pod.pod.uid},
                      {.component = "default-scheduler", .host = ""}, kEventNormal, "Scheduled",
                      absl::StrCat("Successfully assigned ", pod.pod.namespace_, "/", pod.pod.name,
                                   " to ", options_.node_name));
    }
    return 1;
  }
  const absl::Time started = ParseRfc3339((*existing)["metadata"]["creationTimestamp"], now);
  Json desired = PodObject(pod, options_.node_name, started, options_.health);
  if (desired["status"] == (*existing)["status"]) return 0;
  Json update = *existing;
  update["status"] = std::move(desired["status"]);
  return store_->UpdateStatus(Kind::kPod, std::move(update)).ok() ? 1 : 0;
}

int StatusManager::SyncPod(const std::string& namespace_, const std::string& name) {
  if (!options_.pod) return Sync();
  absl::MutexLock lock(&sync_mu_);
  if (rejected_.contains({namespace_, name})) return 0;
  const std::optional<AdmittedPod> pod = options_.pod(namespace_, name);
  if (pod.has_value()) {
    // A terminating pod keeps what the API had of it until its deletion completes.
    return pod->pod.terminating ? 0
                                : SyncOneLocked(*pod, options_.now ? options_.now() : absl::Now());
  }
  return store_->Delete(Kind::kPod, namespace_, name).ok() ? 1 : 0;
}

absl::Status StatusManager::LoadRefused() {
  if (options_.refused_pods_path.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> text = ReadFile(options_.refused_pods_path);
  if (absl::IsNotFound(text.status())) return absl::OkStatus();
  if (!text.ok()) return text.status();
  const std::string& path = options_.refused_pods_path;
  const Json pods = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!pods.is_array()) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a JSON array of refused Pods; kdp-manager keeps it as it is"));
  }
  absl::MutexLock lock(&sync_mu_);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const Json& pod = pods[i];
    // (operator[] of a const json is undefined for a missing key: find, not [].)
    const auto meta = pod.is_object() ? pod.find("metadata") : pod.end();
    const bool valid = pod.is_object() && pod.value("kind", "") == "Pod" && meta != pod.end() &&
                       meta->is_object() && !meta->value("name", "").empty() &&
                       !meta->value("namespace", "").empty() && !meta->value("uid", "").empty();
    if (!valid) {
      return absl::DataLossError(
          absl::StrCat(path, ": [", i, "]: not a Pod with metadata.namespace, name and uid"));
    }
    const std::string namespace_ = meta->value("namespace", "");
    const std::string name = meta->value("name", "");
    // A new store counts its own resourceVersions (as a restarted manager's API does); the UID
    // stays.
    Json object = pod;
    object["metadata"].erase("resourceVersion");
    KDP_RETURN_IF_ERROR(WritePod(store_, object));
    rejected_.insert({namespace_, name});
  }
  return absl::OkStatus();
}

absl::Status StatusManager::WriteRefusedLocked(
    const Json* added, const std::pair<std::string, std::string>* removed) const {
  if (options_.refused_pods_path.empty()) return absl::OkStatus();
  Json pods = Json::array();
  for (const auto& key : rejected_) {
    if (removed != nullptr && key == *removed) continue;
    absl::StatusOr<Json> object = store_->Get(Kind::kPod, key.first, key.second);
    if (object.ok()) pods.push_back(*std::move(object));
  }
  if (added != nullptr) pods.push_back(*added);
  return WriteFileDurably(options_.refused_pods_path, pods.dump());
}

absl::Status StatusManager::RecordRejected(const AdmitResult& result, Json submitted) {
  absl::MutexLock lock(&sync_mu_);
  const Pod& pod = result.pod.pod;
  const absl::Time now = options_.now ? options_.now() : absl::Now();
  Json object =
      WithSubmitted(RejectedPodObject(result, options_.node_name, now), std::move(submitted));
  // On disk first, so that a refusal the client is told of is never lost.
  KDP_RETURN_IF_ERROR(WriteRefusedLocked(&object, nullptr));
  // A Pod of that name still shown (a pod deleted a moment ago whose Sync has not run) goes;
  // NOT_FOUND when there is none.
  (void)store_->Delete(Kind::kPod, pod.namespace_, pod.name);
  KDP_RETURN_IF_ERROR(WritePod(store_, object));
  rejected_.insert({pod.namespace_, pod.name});
  return absl::OkStatus();
}

absl::StatusOr<Json> StatusManager::Rejected(const std::string& namespace_,
                                             const std::string& name) const {
  absl::MutexLock lock(&sync_mu_);
  if (!rejected_.contains({namespace_, name})) {
    return absl::NotFoundError(absl::StrCat("pod ", namespace_, "/", name, " was not refused"));
  }
  return store_->Get(Kind::kPod, namespace_, name);
}

absl::StatusOr<Json> StatusManager::DeleteRejected(const std::string& namespace_,
                                                   const std::string& name) {
  absl::MutexLock lock(&sync_mu_);
  const std::pair<std::string, std::string> key(namespace_, name);
  if (!rejected_.contains(key)) {
    return absl::NotFoundError(absl::StrCat("pod ", namespace_, "/", name, " not found"));
  }
  KDP_RETURN_IF_ERROR(WriteRefusedLocked(nullptr, &key));
  rejected_.erase(key);
  absl::StatusOr<resourceapi::DeleteResult> deleted = store_->Delete(Kind::kPod, namespace_, name);
  if (!deleted.ok()) return deleted.status();
  return std::move(deleted->object);
}

absl::StatusOr<Json> StatusManager::Get(const std::string& namespace_,
                                        const std::string& name) const {
  return store_->Get(Kind::kPod, namespace_, name);
}

void StatusManager::Start() {
  Sync();
  thread_.Start(options_.sync_period, [this] { Sync(); });
}

void StatusManager::Stop() { thread_.Stop(); }

}  // namespace kdp::manager
