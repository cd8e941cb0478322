#include "manager/src/events/event_recorder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "manager/src/controlplane/resourceapi/kube_time.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

}  // namespace

EventRecorder::EventRecorder(resourceapi::ObjectStore* store, std::function<absl::Time()> now,
                             size_t max_events)
    : store_(store),
      now_(now ? std::move(now) : [] { return absl::Now(); }),
      max_events_(std::max<size_t>(max_events, 1)) {}

void EventRecorder::Record(const ObjectReference& object, const EventSource& source,
                           const std::string& type, const std::string& reason,
                           const std::string& message) {
  const absl::Time now = now_();
  const std::string namespace_ = object.namespace_.empty() ? "default" : object.namespace_;
  const auto key = std::make_tuple(
      object.uid.empty() ? absl::StrCat(object.namespace_, "/", object.name) : object.uid, type,
      reason, message);
  absl::MutexLock lock(&mu_);
  if (auto it = seen_.find(key); it != seen_.end()) {
    absl::StatusOr<Json> existing =
        store_->Get(resourceapi::Kind::kEvent, it->second.first, it->second.second);
    if (existing.ok()) {
      (*existing)["count"] = existing->value("count", 1) + 1;
      (*existing)["lastTimestamp"] = resourceapi::KubeTime(now);
      absl::StatusOr<Json> updated = store_->Update(resourceapi::Kind::kEvent, *existing);
      if (updated.ok()) return;
    }
    seen_.erase(it);  // deleted by a client meanwhile: record it anew
  }
  Json involved = {
      {"kind", object.kind}, {"name", object.name}, {"apiVersion", object.api_version}};
  if (!object.namespace_.empty()) involved["namespace"] = object.namespace_;
  if (!object.uid.empty()) involved["uid"] = object.uid;
  Json src = {{"component", source.component}};
  if (!source.host.empty()) src["host"] = source.host;
  // client-go names an Event "<object name>.<UnixNano in hex>".
  const std::string name =
      absl::StrFormat("%s.%x", object.name, static_cast<uint64_t>(absl::ToUnixNanos(now)));
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", namespace_}}},
                {"involvedObject", std::move(involved)},
                {"reason", reason},
                {"message", message},
                {"source", std::move(src)},
                {"firstTimestamp", resourceapi::KubeTime(now)},
                {"lastTimestamp", resourceapi::KubeTime(now)},
                {"count", 1},
                {"type", type},
                {"eventTime", nullptr},
                {"reportingComponent", source.component},
                {"reportingInstance", source.host}};
  absl::StatusOr<Json> created = store_->Create(resourceapi::Kind::kEvent, std::move(event));
  if (!created.ok()) {
    KDP_LOG_WARNING("Cannot record an event", "reason", reason, "object",
                    absl::StrCat(object.kind, " ", object.namespace_, "/", object.name), "err",
                    created.status().ToString());
    return;
  }
  // The correlator's cache is bounded too (client-go keeps 4096 entries in an LRU).
  if (seen_.size() >= 4096) seen_.clear();
  seen_[key] = {namespace_, name};
  recorded_.emplace_back(namespace_, name);
  while (recorded_.size() > max_events_) {
    (void)store_->Delete(resourceapi::Kind::kEvent, recorded_.front().first,
                         recorded_.front().second);
    recorded_.pop_front();
  }
}

}  // namespace kdp::manager
