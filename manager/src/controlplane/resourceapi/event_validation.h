// The API server's validation of Events (pkg/apis/core/validation/events.go), which depends on
// the API a request came through: every Event passes the legacy rules (namespace agreement and, for
// an Event with an eventTime, reportingController, reportingInstance, action and reason), and one
// written through events.k8s.io/v1 also the strict rules of the new API (eventTime required, type
// Normal or Warning, the deprecated core fields unset, a series of at least 2). The REST server
// calls these with the stored (core/v1) form of the object before the store writes it; the
// field paths are core/v1's, as the API server reports them.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_EVENT_VALIDATION_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_EVENT_VALIDATION_H_

#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// ValidateEventCreate: OK, or the 422 Invalid the API server answers
// (`Event "<name>" is invalid: [eventTime: Required value, reportingController: Required value]`,
// one cause per rule broken). `event` is the core/v1 form; `request_version` the URL's version
// ("v1" for /api/v1, kEventsV1 for events.k8s.io/v1). The object-meta rules the strict path also
// names are the store's (codec.h), checked when the store writes the event.
[[nodiscard]] absl::Status ValidateEventCreate(const nlohmann::json& event,
                                               std::string_view request_version);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_EVENT_VALIDATION_H_
