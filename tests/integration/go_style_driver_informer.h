// The informer half of GoStyleDriver (go_style_driver.h): a ResourceSlice informer restricted to
// one driver and node (fieldSelector `spec.driver=<driver>,spec.nodeName=<node>`), run by a
// reflector that makes client-go's requests in client-go's order (as observed from real Go
// drivers on helper v0.32-v0.37):
//   - kWatchList (client-go ≥ 0.35, helper v0.36/v0.37): the watch-list `allowWatchBookmarks=true
//     &fieldSelector=…&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=…
//     &timeoutSeconds=…&watch=true`; the ADDED events up to the BOOKMARK annotated
//     `k8s.io/initial-events-end: "true"` replace the store (then the informer has synced), and the
//     same stream carries the live events. A 4xx other than 404/410 falls back to LIST + WATCH for
//     that round, as the reflector does after a 422.
//   - kListWatch (helper v0.32-v0.34): LIST `fieldSelector=…&limit=500&resourceVersion=0`, then
//     WATCH `allowWatchBookmarks=true&fieldSelector=…&resourceVersion=<list RV>&timeout=…
//     &timeoutSeconds=…&watch=true`.
// On 404 the next of `versions` is tried (v1 → v1beta2 → v1beta1); the first that answers is kept.
// When a watch ends it is reopened from the last resourceVersion; a refused connection or a 429 is
// retried with back-off, an ERROR event or answer 410 (Expired) and any other failure relist (a
// relist's Replace reports the objects that vanished as DELETED, client-go's
// DeletedFinalStateUnknown). Every watch event and every store change is recorded.
//
// Thread-safety: thread-safe. The reflector runs on its own thread; `on_change` is called on it
// with no lock held.
#ifndef KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_INFORMER_H_
#define KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_INFORMER_H_

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/integration/go_style_driver_http.h"

namespace kdp::testing {

// One thing the informer saw: a watch event as it arrived (from_relist false: ADDED, MODIFIED,
// DELETED, BOOKMARK, ERROR), or a store change a relist's Replace made (from_relist true).
struct InformerEvent {
  std::string type = {};
  std::string name = {};
  std::string resource_version = {};
  nlohmann::json object = nullptr;
  bool from_relist = false;
  absl::Time at = absl::InfinitePast();
};

class GoSliceReflector {
 public:
  enum class Mode { kWatchList, kListWatch };
  struct Options {
    Mode mode = Mode::kWatchList;
    std::vector<std::string> versions = {"v1", "v1beta2", "v1beta1"};  // tried in this order
    std::string driver = {};
    std::string node = {};
    // Back-off between failed rounds, doubling up to the maximum (client-go: 800 ms to 30 s;
    // shorter here so a test waits seconds, not minutes).
    absl::Duration backoff_initial = absl::Milliseconds(100);
    absl::Duration backoff_max = absl::Seconds(2);
    // Called after every store change (not for BOOKMARK or ERROR), and once the store synced
    // (type "SYNCED").
    std::function<void(const InformerEvent&)> on_change = nullptr;
  };

  // `client` is borrowed and must outlive the reflector.
  GoSliceReflector(GoRestClient* client, Options options)
      : client_(client), options_(std::move(options)), random_(std::random_device()()) {}
  ~GoSliceReflector() { Stop(); }
  GoSliceReflector(const GoSliceReflector&) = delete;
  GoSliceReflector& operator=(const GoSliceReflector&) = delete;

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Ends the watch in progress and joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    client_->CancelStream();
    if (thread_.joinable()) thread_.join();
  }

  bool synced() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return synced_;
  }
  // The API version that answered ("" while none has).
  std::string version() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return version_;
  }
  // The slices in the store, by name.
  std::map<std::string, nlohmann::json> slices() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return store_;
  }
  std::vector<InformerEvent> events() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  // How a round (a list or watch request) ended.
  enum class Outcome { kEnded, kRelist, kNotServed, kFallBackToList, kRetry, kStopped };

  std::string SlicesPath(const std::string& version) const {
    return absl::StrCat("/apis/resource.k8s.io/", version, "/resourceslices?");
  }
  std::string FieldSelector() const {
    return absl::StrCat("fieldSelector=",
                        GoQueryEscape(absl::StrCat("spec.driver=", options_.driver,
                                                   ",spec.nodeName=", options_.node)));
  }
  // client-go's reflector: timeoutSeconds = minWatchTimeout (5 min) * (1 + rand), also sent as
  // the request's `timeout` in Go duration form.
  std::string WatchTimeouts() {
    const int64_t seconds = 300 + static_cast<int64_t>(random_() % 300);
    return absl::StrCat("timeout=", GoDurationString(seconds), "&timeoutSeconds=", seconds);
  }

  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Duration delay = options_.backoff_initial;
    while (!stopping()) {
      Outcome outcome = Outcome::kNotServed;
      if (options_.mode == Mode::kWatchList) outcome = AcrossVersions(&GoSliceReflector::WatchList);
      if (outcome == Outcome::kNotServed || outcome == Outcome::kFallBackToList) {
        outcome = AcrossVersions(&GoSliceReflector::List);
      }
      if (outcome == Outcome::kEnded) {
        outcome = WatchLoop();
        delay = options_.backoff_initial;  // the round got through: the back-off starts over
      }
      if (outcome == Outcome::kStopped) break;
      // client-go's BackoffUntil waits between any two ListAndWatch rounds.
      Backoff(&delay);
    }
  }

  // `round` on the chosen version, or on each version in order until one is served.
  Outcome AcrossVersions(Outcome (GoSliceReflector::*round)(const std::string&)) {
    std::vector<std::string> versions = options_.versions;
    if (std::string chosen = version(); !chosen.empty()) versions = {chosen};
    for (const std::string& v : versions) {
      Outcome outcome = (this->*round)(v);
      if (outcome != Outcome::kNotServed) return outcome;
    }
    return Outcome::kNotServed;
  }

  Outcome WatchList(const std::string& version) ABSL_LOCKS_EXCLUDED(mu_) {
    std::string rv = RewatchResourceVersion();
    std::string path =
        absl::StrCat(SlicesPath(version), "allowWatchBookmarks=true&", FieldSelector(),
                     rv.empty() ? "" : "&resourceVersion=" + GoQueryEscape(rv),
                     "&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&", WatchTimeouts(),
                     "&watch=true");
    bool initial = true;
    std::map<std::string, nlohmann::json> replay;
    Outcome outcome = Watch(path, version, &initial, &replay);
    // A stream that ended before the initial events did: try again after the back-off.
    if (outcome == Outcome::kEnded && initial) return Outcome::kRetry;
    return outcome;
  }

  Outcome List(const std::string& version) ABSL_LOCKS_EXCLUDED(mu_) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::string rv = RelistResourceVersion();
      ApiResponse list =
          client_->Do("GET", absl::StrCat(SlicesPath(version), FieldSelector(), "&limit=500",
                                          rv.empty() ? "" : "&resourceVersion=" + rv));
      if (stopping()) return Outcome::kStopped;
      if (list.status == 404) return Outcome::kNotServed;
      if ((list.status == 410 || list.status == 504) && attempt == 0) {
        // isExpiredError / isTooLargeResourceVersionError: list again from the newest state.
        absl::MutexLock lock(&mu_);
        rv_unavailable_ = true;
        continue;
      }
      if (list.status != 200 || !list.json.is_object()) return Outcome::kRetry;
      std::map<std::string, nlohmann::json> items;
      if (list.json.contains("items") && list.json["items"].is_array()) {
        for (const auto& item : list.json["items"]) items[NameOf(item)] = item;
      }
      Replace(std::move(items), list.json["metadata"].value("resourceVersion", ""), version);
      return Outcome::kEnded;
    }
    return Outcome::kRetry;
  }

  // Classic watches from the last resourceVersion until one must relist.
  Outcome WatchLoop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Duration delay = options_.backoff_initial;
    while (!stopping()) {
      const std::string version = this->version();
      std::string rv;
      {
        absl::MutexLock lock(&mu_);
        rv = rv_;
      }
      std::string path =
          absl::StrCat(SlicesPath(version), "allowWatchBookmarks=true&", FieldSelector(),
                       "&resourceVersion=", GoQueryEscape(rv), "&", WatchTimeouts(), "&watch=true");
      bool initial = false;
      Outcome outcome = Watch(path, version, &initial, nullptr);
      if (outcome == Outcome::kEnded) {
        delay = options_.backoff_initial;
        continue;
      }
      if (outcome != Outcome::kRetry) return outcome;
      Backoff(&delay);
    }
    return Outcome::kStopped;
  }

  // One watch request; `*initial` while the watch-list's initial events are being replayed
  // into `replay`.
  Outcome Watch(const std::string& path, const std::string& version, bool* initial,
                std::map<std::string, nlohmann::json>* replay) ABSL_LOCKS_EXCLUDED(mu_) {
    std::string buffer;
    Outcome end = Outcome::kEnded;
    ApiResponse response = client_->Stream(path, [&](std::string_view data) {
      buffer.append(data);
      for (size_t eol; (eol = buffer.find('\n')) != std::string::npos;) {
        const std::string line = buffer.substr(0, eol);
        buffer.erase(0, eol + 1);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // heartbeat
        nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!event.is_object() || !event.contains("type")) {
          end = Outcome::kRelist;  // a stream client-go cannot decode ends the watch
          return false;
        }
        if (!HandleEvent(event, version, initial, replay)) {
          end = Outcome::kRelist;
          return false;
        }
      }
      return !stopping();
    });
    if (stopping()) return Outcome::kStopped;
    if (response.status == 0) return Outcome::kRetry;  // connection refused or broken
    if (response.status == 200) return end;
    if (response.status == 404) return Outcome::kNotServed;
    if (response.status == 429) return Outcome::kRetry;
    if (response.status == 410 || response.status == 504) {
      // Expired, or newer than the server has (a restarted server): list from the newest state.
      absl::MutexLock lock(&mu_);
      rv_unavailable_ = true;
      return Outcome::kRelist;
    }
    return initial != nullptr && *initial && response.status >= 400 && response.status < 500
               ? Outcome::kFallBackToList
               : Outcome::kRelist;
  }

  // Applies one watch event; false when the watch must end (an ERROR event).
  bool HandleEvent(const nlohmann::json& event, const std::string& version, bool* initial,
                   std::map<std::string, nlohmann::json>* replay) ABSL_LOCKS_EXCLUDED(mu_) {
    const std::string type = event.value("type", "");
    const nlohmann::json object = event.value("object", nlohmann::json::object());
    InformerEvent seen{.type = type,
                       .name = NameOf(object),
                       .resource_version = ResourceVersionOf(object),
                       .object = object,
                       .at = absl::Now()};
    std::vector<InformerEvent> changes;
    {
      absl::MutexLock lock(&mu_);
      events_.push_back(seen);
      if (type == "ERROR") {
        // 410 Expired: the next list starts from the last resourceVersion (client-go keeps it).
        return false;
      }
      if (!seen.resource_version.empty()) rv_ = seen.resource_version;
      if (type == "BOOKMARK") {
        const nlohmann::json& meta = object.value("metadata", nlohmann::json::object());
        const bool end_of_initial =
            meta.contains("annotations") && meta["annotations"].is_object() &&
            meta["annotations"].value("k8s.io/initial-events-end", "") == "true";
        if (!*initial || !end_of_initial) return true;
      } else if (*initial && replay != nullptr) {
        (*replay)[seen.name] = object;
        return true;
      } else {
        if (type == "DELETED") {
          store_.erase(seen.name);
        } else {
          store_[seen.name] = object;
        }
        changes.push_back(seen);
      }
    }
    if (type == "BOOKMARK") {  // the end of the watch-list's initial events
      *initial = false;
      Replace(std::move(*replay), ResourceVersionOf(object), version);
      return true;
    }
    Notify(changes);
    return true;
  }

  // The informer's Replace: the store becomes `items`, each vanished object reported DELETED.
  void Replace(std::map<std::string, nlohmann::json> items, const std::string& rv,
               const std::string& version) ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<InformerEvent> changes;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      for (const auto& [name, object] : store_) {
        if (items.count(name) == 0) {
          changes.push_back({.type = "DELETED",
                             .name = name,
                             .resource_version = ResourceVersionOf(object),
                             .object = object,
                             .from_relist = true,
                             .at = now});
        }
      }
      for (const auto& [name, object] : items) {
        changes.push_back({.type = store_.count(name) > 0 ? "MODIFIED" : "ADDED",
                           .name = name,
                           .resource_version = ResourceVersionOf(object),
                           .object = object,
                           .from_relist = true,
                           .at = now});
      }
      events_.insert(events_.end(), changes.begin(), changes.end());
      store_ = std::move(items);
      rv_ = rv;
      rv_unavailable_ = false;
      version_ = version;
      synced_ = true;
      changes.push_back({.type = "SYNCED", .at = now});
    }
    Notify(changes);
  }

  void Notify(const std::vector<InformerEvent>& changes) {
    if (!options_.on_change) return;
    for (const InformerEvent& change : changes) options_.on_change(change);
  }

  std::string RewatchResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return rv_unavailable_ ? "" : rv_;
  }
  // client-go's relistResourceVersion: "0" (the watch cache) first, the last seen one after,
  // none (a quorum read) when that one is gone.
  std::string RelistResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (rv_unavailable_) return "";
    return rv_.empty() ? "0" : rv_;
  }

  void Backoff(absl::Duration* delay) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), *delay);
    *delay = std::min(*delay * 2, options_.backoff_max);
  }
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  static std::string NameOf(const nlohmann::json& object) {
    if (!object.is_object() || !object.contains("metadata")) return "";
    return object["metadata"].value("name", "");
  }
  static std::string ResourceVersionOf(const nlohmann::json& object) {
    if (!object.is_object() || !object.contains("metadata")) return "";
    return object["metadata"].value("resourceVersion", "");
  }

  GoRestClient* const client_;
  const Options options_;
  std::mt19937_64 random_;  // reflector thread only
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::string version_ ABSL_GUARDED_BY(mu_);
  std::string rv_ ABSL_GUARDED_BY(mu_);  // lastSyncResourceVersion
  bool rv_unavailable_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, nlohmann::json> store_ ABSL_GUARDED_BY(mu_);
  std::vector<InformerEvent> events_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_INFORMER_H_
