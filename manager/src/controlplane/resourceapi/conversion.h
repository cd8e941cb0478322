// Conversion between resource.k8s.io/v1beta1 and v1 JSON, as the API server's generated and
// hand-written conversions in pkg/apis/resource/v1beta1 do through the internal version (which
// has v1's shape). The REST server converts a v1beta1 request body to v1 before the store sees it
// and every object it answers back to the version named in the URL, so a slice POSTed through
// v1beta1 reads back through v1 and the reverse (the helpers of Go drivers up to v0.33 speak
// only v1beta1; newer ones try v1 first).
//
// What differs between the versions:
//   - ResourceSlice: v1beta1 wraps each device's fields in `basic`
//     (devices[].basic{attributes, capacity, ...}); v1 has them on the device itself.
//   - ResourceClaim, ResourceClaimTemplate: a v1beta1 request carries deviceClassName,
//     selectors, allocationMode, count, adminAccess, tolerations and capacity on the request
//     itself; v1 moves them under `exactly`. firstAvailable and the status are identical.
//   - DeviceClass: same shape.
//   - Event (core/v1 in the store, events.k8s.io/v1 as kEventsV1, kinds.h): involvedObject is
//     `regarding`, message `note`, source `deprecatedSource`, firstTimestamp, lastTimestamp and
//     count `deprecatedFirstTimestamp`, `deprecatedLastTimestamp` and `deprecatedCount`,
//     reportingComponent `reportingController`; the fields Go always writes for the target type
//     are added when absent (regarding, deprecatedSource, eventTime: null; involvedObject, source,
//     reportingComponent, reportingInstance), so a round trip of an object that has them is exact.
// apiVersion is rewritten; every other field is copied untouched, so fields this code does not
// know survive the trip.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CONVERSION_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CONVERSION_H_

#include <string_view>

#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// Converts one object of `kind` written in `from_version` ("v1" or "v1beta1"; kEventsV1 for an
// Event) to v1. An object already in v1 is returned unchanged except for apiVersion, which is set
// when the kind belongs to resource.k8s.io. REQUIRES: IsServedVersion(from_version), or an Event
// in kEventsV1. Never fails: shapes it does not recognise (a request that is not an object) are
// copied as they are for validation to report.
nlohmann::json ToV1(Kind kind, std::string_view from_version, nlohmann::json object);

// The inverse: one v1 object of `kind` in `to_version`. REQUIRES: IsServedVersion(to_version), or
// an Event in kEventsV1.
nlohmann::json FromV1(Kind kind, std::string_view to_version, nlohmann::json object);

// The v1beta1 flat request fields that v1 keeps under `exactly`.
inline constexpr const char* kExactRequestFields[] = {
    "deviceClassName", "selectors",   "allocationMode", "count",
    "adminAccess",     "tolerations", "capacity"};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CONVERSION_H_
