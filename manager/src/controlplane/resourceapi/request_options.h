// The query parameters of a list or watch request (metav1.ListOptions), parsed and validated as
// the API server does (ValidateListOptions in apimachinery's metainternalversion/validation):
// selectors, resourceVersion and resourceVersionMatch, limit and continue, watch, the watch-list
// parameters sendInitialEvents and allowWatchBookmarks, and timeoutSeconds. What client-go's
// reflectors send, as seen from Go DRA drivers on kubeletplugin v0.32-v0.37: a watch-list
// (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`), or a
// LIST (`limit=500&resourceVersion=0`) then a WATCH (`resourceVersion=<list's>`).
//
// Also the continue token of a paged list: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":K},
// the API server's layout, where K is the key (namespace/name) the next page starts after.
//
// Thread-safety: pure functions.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_REQUEST_OPTIONS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_REQUEST_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {

// resourceVersionMatch values (metav1.ResourceVersionMatch).
inline constexpr char kResourceVersionMatchNotOlderThan[] = "NotOlderThan";
inline constexpr char kResourceVersionMatchExact[] = "Exact";
// The annotation of the BOOKMARK that ends a watch-list's initial events
// (metav1.InitialEventsAnnotationKey).
inline constexpr char kInitialEventsEndAnnotation[] = "k8s.io/initial-events-end";

struct ListWatchOptions {
  ListOptions selectors = {};
  // As given; empty when absent. "0" means "any version" (served from the current state here).
  std::string resource_version = {};
  // The parsed resourceVersion when it is a number > 0.
  std::optional<int64_t> resource_version_number = {};
  std::string resource_version_match = {};
  int64_t limit = 0;  // 0: no limit
  std::string continue_token = {};
  bool watch = false;
  std::optional<bool> send_initial_events = {};
  bool allow_watch_bookmarks = false;
  std::optional<int64_t> timeout_seconds = {};
};

// Parses and validates `params` (already unescaped as url.ParseQuery does) for a request on
// `kind` in URL version `version`. Errors: BadRequest for unparsable selectors, numbers and
// booleans (naming the parameter); Invalid (422) `ListOptions.meta.k8s.io "" is invalid: ...`
// for the combinations the API server forbids, e.g. sendInitialEvents on a list, watch-list
// without resourceVersionMatch=NotOlderThan or without allowWatchBookmarks, resourceVersionMatch
// without resourceVersion, Exact with "0", continue with a resourceVersion.
[[nodiscard]] absl::StatusOr<ListWatchOptions> ParseListWatchOptions(
    const std::map<std::string, std::string>& params, const KindInfo& kind,
    std::string_view version);

// runtime.Convert_Slice_string_To_bool: "0" and "false" (any case) are false, anything else
// (the empty string included) is true.
bool QueryBool(std::string_view value);

// A continue token for a page ending at `last_key` of a list taken at `resource_version`.
std::string EncodeContinueToken(int64_t resource_version, std::string_view last_key);

struct ContinuePoint {
  int64_t resource_version = 0;
  std::string last_key = {};
};
// BadRequest `continue key is not valid: ...` for a token this server did not write.
[[nodiscard]] absl::StatusOr<ContinuePoint> DecodeContinueToken(std::string_view token);

// The key a list orders by and a continue token names: "<namespace>/<name>" ("/<name>" for a
// cluster-scoped object).
std::string ListKey(const nlohmann::json& object);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_REQUEST_OPTIONS_H_
