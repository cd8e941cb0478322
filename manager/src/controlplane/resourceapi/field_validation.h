// Server-side field validation (KEP-2885), as kube-apiserver does it: a field the object's schema
// does not have is an "unknown field", refused with fieldValidation=Strict (kubectl's default),
// reported as a Warning with Warn (the API server's default when a request names none) and
// accepted silently with Ignore. kdpctl apply is strict.
//
// The schemas are the OpenAPI v3 ones the server serves (openapi.h). They list the fields that
// manifests commonly carry, not every field of every upstream type, so unknown fields are
// reported only inside the schemas kdp keeps complete: a Pod's top level, container resources and
// claims, and the resource.k8s.io/v1 kinds down to their device requests, selectors,
// constraints and configs. Those are where a typo changes what a pod gets (`limts:` instead of
// `limits:` asks for no device at all; `selector:` instead of `selectors:` drops a CEL filter);
// elsewhere (a volume source, an affinity term) a field kdp does not describe is let through, as
// kdp-manager ignores it anyway. resource.k8s.io/v1beta1 objects are not checked.
//
// Thread-safety: thread-safe (the schemas are read once and immutable).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_FIELD_VALIDATION_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_FIELD_VALIDATION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

enum class FieldValidation { kIgnore, kWarn, kStrict };

// The fieldValidation query parameter: "Ignore", "Warn", "Strict"; empty: Warn (the API server's
// default). BadRequest naming the value otherwise, with the API server's text.
absl::StatusOr<FieldValidation> ParseFieldValidation(std::string_view value);

// The unknown fields of `object`, a `kind` in `version` ("v1" for Pods and resource.k8s.io/v1;
// other versions have none), as the API server's strict decoder names them
// (`spec.containers[0].resources.limts`), the keys of each object in sorted order (the API
// server lists them in document order; the parsed JSON keeps no order).
std::vector<std::string> UnknownFields(Kind kind, std::string_view version,
                                       const nlohmann::json& object);

// The strict decoder's error for `unknown`, as the API server words a refused body:
// `strict decoding error: unknown field "a", unknown field "b"`. REQUIRES: !unknown.empty().
std::string StrictDecodingError(const std::vector<std::string>& unknown);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_FIELD_VALIDATION_H_
