#include "manager/src/status/status_manager.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;
using resourceapi::Kind;

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
  std::set<std::pair<std::string, std::string>> known;
  for (const AdmittedPod& pod : options_.pods()) {
    known.insert({pod.pod.namespace_, pod.pod.name});
    if (pod.pod.terminating) continue;
    absl::StatusOr<Json> existing = store_->Get(Kind::kPod, pod.pod.namespace_, pod.pod.name);
    if (existing.ok() && (*existing)["metadata"].value("uid", "") != pod.pod.uid) {
      // Another pod of that name ran before (deleted while the manager was down).
      (void)store_->Delete(Kind::kPod, pod.pod.namespace_, pod.pod.name);
      existing = absl::NotFoundError("replaced");
    }
    if (!existing.ok()) {
      Json object = PodObject(pod, options_.node_name, now, options_.health);
      absl::StatusOr<Json> created = store_->CreateKeepingUid(Kind::kPod, object);
      absl::StatusOr<Json> written =
          created.ok() ? store_->UpdateStatus(Kind::kPod, object) : created.status();
      if (!written.ok()) {
        KDP_LOG_WARNING("Cannot write a pod to the local API", "pod",
                        absl::StrCat(pod.pod.namespace_, "/", pod.pod.name), "err",
                        written.status().ToString());
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
  for (const Json& object : store_->List(Kind::kPod, "").items) {
    const std::string namespace_ = object["metadata"].value("namespace", "");
    const std::string name = object["metadata"].value("name", "");
    if (known.contains({namespace_, name})) continue;
    if (store_->Delete(Kind::kPod, namespace_, name).ok()) ++changes;
  }
  return changes;
}

void StatusManager::Start() {
  Sync();
  thread_.Start(options_.sync_period, [this] { Sync(); });
}

void StatusManager::Stop() { thread_.Stop(); }

}  // namespace kdp::manager
