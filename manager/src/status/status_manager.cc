#include "manager/src/status/status_manager.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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
    const auto submitted = submitted_.find(pod.pod.uid);
    const Json& sent = submitted == submitted_.end() ? Json() : submitted->second;
    absl::StatusOr<Json> existing = store_->Get(Kind::kPod, pod.pod.namespace_, pod.pod.name);
    if (existing.ok() && (*existing)["metadata"].value("uid", "") != pod.pod.uid) {
      // Another pod of that name ran before (deleted while the manager was down).
      (void)store_->Delete(Kind::kPod, pod.pod.namespace_, pod.pod.name);
      existing = absl::NotFoundError("replaced");
    }
    if (!existing.ok()) {
      Json object = WithSubmitted(PodObject(pod, options_.node_name, now, options_.health), sent);
      if (absl::Status written = WritePod(store_, object); !written.ok()) {
        KDP_LOG_WARNING("Cannot write a pod to the local API", "pod",
                        absl::StrCat(pod.pod.namespace_, "/", pod.pod.name), "err",
                        written.ToString());
        continue;
      }
      ++changes;
      if (events_ != nullptr) {
        events_->Record({.kind = "Pod",
                         .namespace_ = pod.pod.namespace_,
                         .name = pod.pod.name,
                         .uid = pod.pod.uid},
                        {.component = "default-scheduler", .host = ""}, kEventNormal, "Scheduled",
                        absl::StrCat("Successfully assigned ", pod.pod.namespace_, "/",
                                     pod.pod.name, " to ", options_.node_name));
      }
      continue;
    }
    const absl::Time started = ParseRfc3339((*existing)["metadata"]["creationTimestamp"], now);
    Json desired = PodObject(pod, options_.node_name, started, options_.health);
    if (desired["status"] == (*existing)["status"]) continue;
    Json update = *existing;
    update["status"] = std::move(desired["status"]);
    if (store_->UpdateStatus(Kind::kPod, std::move(update)).ok()) ++changes;
  }
  // What clients sent of pods that are gone, or whose admission failed before they ran.
  for (auto it = submitted_.begin(); it != submitted_.end();) {
    const bool kept = uids.contains(it->first) || pending_.contains(it->first);
    it = kept ? std::next(it) : submitted_.erase(it);
  }
  for (const Json& object : store_->List(Kind::kPod, "").items) {
    const std::string namespace_ = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"].value("name", "");
    if (known.contains({namespace_, name})) continue;
    if (store_->Delete(Kind::kPod, namespace_, name).ok()) ++changes;
  }
  return changes;
}

void StatusManager::SetSubmitted(const std::string& uid, Json object) {
  absl::MutexLock lock(&sync_mu_);
  submitted_[uid] = std::move(object);
  pending_.insert(uid);
}

void StatusManager::EndAdmission(const std::string& uid, bool admitted) {
  absl::MutexLock lock(&sync_mu_);
  pending_.erase(uid);
  if (!admitted) submitted_.erase(uid);
}

absl::Status StatusManager::RecordRejected(const AdmitResult& result, Json submitted) {
  absl::MutexLock lock(&sync_mu_);
  const Pod& pod = result.pod.pod;
  const absl::Time now = options_.now ? options_.now() : absl::Now();
  Json object =
      WithSubmitted(RejectedPodObject(result, options_.node_name, now), std::move(submitted));
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
  if (rejected_.erase({namespace_, name}) == 0) {
    return absl::NotFoundError(absl::StrCat("pod ", namespace_, "/", name, " not found"));
  }
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
