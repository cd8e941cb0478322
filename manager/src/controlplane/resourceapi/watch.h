// WatchStream: one WATCH request of the local resource API, as the API server's watch cache
// serves it, turned into the bytes of the response: newline-separated JSON watch events
// `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}` (objects in the URL's
// version). It follows the store's change log (ObjectStore::EventsSince) from a starting
// resourceVersion:
//   - sendInitialEvents=true (watch-list, client-go ≥ 0.35's reflector): the matching objects as
//     ADDED, then a BOOKMARK annotated k8s.io/initial-events-end=true at the state's
//     resourceVersion, then live events;
//   - no resourceVersion, or "0": the current objects as ADDED, then live events;
//   - resourceVersion=N: the events after N (a classic LIST then WATCH). N older than the log
//     reaches gives one ERROR event (410 Expired, "too old resource version") and the end, so
//     the reflector re-lists; N newer than the store is waited for up to 3 s, then 504.
// Selectors apply to every event; an object that stops matching is sent as DELETED and one that
// starts matching as ADDED, as the watch cache does. With allowWatchBookmarks, a BOOKMARK
// carrying the current resourceVersion goes out every bookmark interval; when nothing was sent
// for the heartbeat interval a bare newline goes out (JSON streams allow whitespace between
// values), so that a client that went away is noticed by the failed write and its worker thread
// freed. The stream ends at timeoutSeconds (or 30-60 minutes without it, as the API server's
// --min-request-timeout does) or when the server stops.
//
// Thread-safety: a WatchStream is used by one thread (the request's worker); the store is
// thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_WATCH_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_WATCH_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/request_options.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

struct WatchTarget {
  Kind kind = Kind::kResourceSlice;
  std::string version = "v1";   // the URL's version; events are converted to it
  std::string namespace_ = {};  // only this namespace; empty: all
  // Applied to each event's object after the conversion (a meta.k8s.io Table for kubectl get
  // -w); nullptr: the object as it is. Called on the thread that reads the stream.
  std::function<nlohmann::json(nlohmann::json)> transform = nullptr;
};

struct WatchTimings {
  absl::Duration bookmark_interval = absl::Minutes(1);
  absl::Duration heartbeat_interval = absl::Seconds(5);
  // How long a resourceVersion newer than the store's is waited for (the watch cache's 3 s).
  absl::Duration future_resource_version_wait = absl::Seconds(3);
};

class WatchStream {
 public:
  // REQUIRES: options.watch. `store` is borrowed.
  WatchStream(const ObjectStore* store, WatchTarget target, ListWatchOptions options,
              WatchTimings timings = {});

  // Takes the starting state: the initial events, or the starting resourceVersion. Errors, which
  // the server answers instead of a stream: Timeout (504) for a resourceVersion the store did not
  // reach within the wait.
  [[nodiscard]] absl::Status Start();

  struct Output {
    std::string data;    // zero or more complete events, each followed by '\n'
    bool ended = false;  // nothing more will come; finish the response
  };
  // Waits up to `max_wait` (less when the timeout comes sooner) for something to send and
  // returns it. REQUIRES: Start() succeeded.
  Output Next(absl::Duration max_wait);

  // The resourceVersion the client has been brought up to (for tests).
  int64_t resource_version() const { return cursor_; }

 private:
  bool Selected(const nlohmann::json& object) const;
  void AppendEvent(std::string& out, const char* type, const nlohmann::json& v1_object) const;
  void AppendBookmark(std::string& out, bool initial_events_end) const;

  const ObjectStore* const store_;
  const WatchTarget target_;
  const ListWatchOptions options_;
  const WatchTimings timings_;
  const absl::Time deadline_;

  std::string pending_;  // initial events not yet handed out
  int64_t cursor_ = 0;   // every event up to here was considered
  bool ended_ = false;
  absl::Time next_bookmark_ = absl::InfiniteFuture();
  absl::Time last_output_ = absl::Now();
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_WATCH_H_
