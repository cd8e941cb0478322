// Per-kind write rules of the local resource API, after the API server's registry strategies
// (pkg/registry/resource/*/strategy.go): what a create resets, what an update keeps from the
// stored object, when generation moves, which fields are immutable, and what a status update
// may change. ObjectStore calls these with its lock held; they only transform JSON.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STRATEGY_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STRATEGY_H_

#include "absl/status/status.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// PrepareForCreate: a claim's status is dropped (it is written only through /status); every
// kind starts at generation 1; deletion fields are cleared. Then the codec's defaults apply.
void PrepareForCreate(Kind kind, nlohmann::json* object);

// PrepareForUpdate: `object` keeps the stored object's system metadata (uid, creationTimestamp,
// deletionTimestamp, namespace), a claim keeps its stored status, defaults apply, and generation
// is the stored one plus one when the spec changed.
void PrepareForUpdate(Kind kind, const nlohmann::json& old_object, nlohmann::json* object);

// PrepareForStatusUpdate: returns the stored object with only `status` taken from `object`
// (ResetObjectMetaForStatus: labels, annotations, finalizers and spec cannot change here).
nlohmann::json PrepareForStatusUpdate(const nlohmann::json& old_object,
                                      const nlohmann::json& object);

// Codec validation of a new object (BadRequest or Invalid, see codec.h).
[[nodiscard]] absl::Status ValidateCreate(Kind kind, const nlohmann::json& object);
// ValidateCreate plus update rules: the spec of ResourceClaim and ResourceClaimTemplate is
// immutable (`spec: Invalid value: "object": field is immutable`).
[[nodiscard]] absl::Status ValidateUpdate(Kind kind, const nlohmann::json& old_object,
                                          const nlohmann::json& object);
// ValidateCreate plus ValidateResourceClaimStatusUpdate: a set allocation cannot change
// (`status.allocation: Invalid value: "object": field is immutable`); it may be removed only
// together with every reservedFor entry.
[[nodiscard]] absl::Status ValidateStatusUpdate(Kind kind, const nlohmann::json& old_object,
                                                const nlohmann::json& object);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_STRATEGY_H_
