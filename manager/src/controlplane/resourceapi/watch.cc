#include "manager/src/controlplane/resourceapi/watch.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/conversion.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// The API server's --min-request-timeout default (1800 s); a watch without timeoutSeconds lasts
// between one and two of it, so that clients do not all reconnect at once.
constexpr absl::Duration kMinRequestTimeout = absl::Seconds(1800);

absl::Duration WatchTimeout(const ListWatchOptions& options) {
  if (options.timeout_seconds && *options.timeout_seconds > 0) {
    return absl::Seconds(*options.timeout_seconds);
  }
  absl::BitGen bitgen;
  return kMinRequestTimeout * (1.0 + absl::Uniform<double>(bitgen, 0.0, 1.0));
}

}  // namespace

WatchStream::WatchStream(const ObjectStore* store, WatchTarget target, ListWatchOptions options,
                         WatchTimings timings)
    : store_(store),
      target_(std::move(target)),
      options_(std::move(options)),
      timings_(timings),
      deadline_(absl::Now() + WatchTimeout(options_)) {}

bool WatchStream::Selected(const Json& object) const {
  if (!target_.namespace_.empty() &&
      FieldValue(object, "metadata.namespace") != target_.namespace_) {
    return false;
  }
  return options_.selectors.fields.Matches(object) && options_.selectors.labels.Matches(object);
}

void WatchStream::AppendEvent(std::string& out, const char* type, const Json& v1_object) const {
  Json object = FromV1(target_.kind, target_.version, v1_object);
  if (target_.transform) object = target_.transform(std::move(object));
  const Json event = {{"type", type}, {"object", std::move(object)}};
  out += event.dump();
  out += '\n';
}

void WatchStream::AppendBookmark(std::string& out, bool initial_events_end) const {
  // What the watch cache sends: an object of the watched kind carrying only the
  // resourceVersion (and, ending a watch-list's initial events, the annotation).
  const KindInfo& info = InfoOf(target_.kind, target_.version);
  Json meta = {{"resourceVersion", std::to_string(cursor_)}};
  if (initial_events_end) meta["annotations"] = {{kInitialEventsEndAnnotation, "true"}};
  const Json event = {{"type", "BOOKMARK"},
                      {"object",
                       {{"kind", info.name},
                        {"apiVersion", ApiVersion(info, target_.version)},
                        {"metadata", std::move(meta)}}}};
  out += event.dump();
  out += '\n';
}

absl::Status WatchStream::Start() {
  const bool initial_events = options_.send_initial_events.value_or(
      options_.resource_version.empty() || options_.resource_version == "0");
  if (options_.resource_version_number) {
    const int64_t wanted = *options_.resource_version_number;
    if (store_->ResourceVersion() < wanted &&
        !store_->WaitForEvents(wanted - 1, timings_.future_resource_version_wait)) {
      return TimeoutError(absl::StrCat("Too large resource version: ", wanted,
                                       ", current: ", store_->ResourceVersion()),
                          1);
    }
  }
  if (initial_events) {
    const ListResult state = store_->List(target_.kind, target_.namespace_, options_.selectors);
    for (const Json& object : state.items) AppendEvent(pending_, "ADDED", object);
    cursor_ = state.resource_version;
    if (options_.send_initial_events.value_or(false)) AppendBookmark(pending_, true);
  } else if (options_.resource_version_number) {
    cursor_ = *options_.resource_version_number;
  } else {
    cursor_ = store_->ResourceVersion();  // sendInitialEvents=false without a version: from now
  }
  if (options_.allow_watch_bookmarks) next_bookmark_ = absl::Now() + timings_.bookmark_interval;
  return absl::OkStatus();
}

WatchStream::Output WatchStream::Next(absl::Duration max_wait) {
  Output out;
  if (ended_) {
    out.ended = true;
    return out;
  }
  out.data = std::move(pending_);
  pending_.clear();
  absl::Time now = absl::Now();
  if (out.data.empty()) {
    const absl::Time wake = std::min(
        {now + max_wait, deadline_, next_bookmark_, last_output_ + timings_.heartbeat_interval});
    store_->WaitForEvents(cursor_, std::max(wake - now, absl::ZeroDuration()));
    now = absl::Now();
  }
  // Everything up to `through` is considered once EventsSince answered (it returns every event
  // of the kind after the cursor, and the store had reached `through` before the call).
  const int64_t through = store_->ResourceVersion();
  absl::StatusOr<std::vector<WatchEvent>> events = store_->EventsSince(cursor_, target_.kind);
  if (!events.ok()) {
    // The client fell further behind than the log reaches (or asked for such a version): the
    // watch cache's errWatcher sends the error as one ERROR event and ends the stream.
    out.data += Json({{"type", "ERROR"}, {"object", ToStatusObject(events.status())}}).dump();
    out.data += '\n';
    ended_ = out.ended = true;
    return out;
  }
  for (const WatchEvent& event : *events) {
    cursor_ = std::max(cursor_, event.resource_version);
    const bool now_selected = Selected(event.object);
    switch (event.type) {
      case WatchEvent::Type::kAdded:
        if (now_selected) AppendEvent(out.data, "ADDED", event.object);
        break;
      case WatchEvent::Type::kDeleted:
        if (now_selected) AppendEvent(out.data, "DELETED", event.object);
        break;
      case WatchEvent::Type::kModified: {
        const bool was_selected =
            event.previous.is_null() ? now_selected : Selected(event.previous);
        if (now_selected && was_selected) AppendEvent(out.data, "MODIFIED", event.object);
        if (now_selected && !was_selected) AppendEvent(out.data, "ADDED", event.object);
        if (!now_selected && was_selected) AppendEvent(out.data, "DELETED", event.object);
        break;
      }
    }
  }
  cursor_ = std::max(cursor_, through);
  if (now >= next_bookmark_) {
    AppendBookmark(out.data, false);
    next_bookmark_ = now + timings_.bookmark_interval;
  }
  if (out.data.empty() && now >= last_output_ + timings_.heartbeat_interval)
    out.data.push_back('\n');
  if (!out.data.empty()) last_output_ = now;
  if (now >= deadline_) ended_ = out.ended = true;
  return out;
}

}  // namespace kdp::manager::resourceapi
