// The JSON codec of the local resource API: decodes resource.k8s.io/v1 JSON objects into the typed
// model of types.h with the API server's validation, and encodes typed objects back to v1 JSON.
// The store calls Normalize and Decode* on every write (the API server's defaulting and
// validation) and Decode* again in its typed accessors; the manager calls Encode* to write claim
// status. v1beta1 bodies are converted to v1 first (conversion.h).
//
// Errors, as the API server returns them (api_errors.h):
//   - a value of the wrong JSON type, or a quantity that does not parse: BadRequest (400)
//     `ResourceSlice in version "v1" cannot be handled as a ResourceSlice: <what>`;
//   - a broken rule: Invalid (422) `ResourceClaim.resource.k8s.io "<name>" is invalid: <errs>`,
//     every broken rule listed with its field path, e.g.
//     `spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero`.
// Fields the model does not type (nodeSelector, opaque parameters, newer API fields) are not
// checked beyond their JSON type, and stay in the stored JSON untouched.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CODEC_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CODEC_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// The media type of the JSON the API speaks (requests, answers, OpenAPI documents).
inline constexpr char kJsonMediaType[] = "application/json";

// The API server's v1 defaulting and canonical forms, applied in place before validation so the
// stored object (and the echo a client gets) carries them: a request's (or sub-request's) empty
// allocationMode becomes "ExactCount" and an ExactCount request without count gets count 1
// (SetDefaults_ExactDeviceRequest), a toleration's empty operator becomes "Equal"
// (SetDefaults_DeviceToleration); every quantity of a slice (capacities, their requestPolicy,
// shared counters, counter consumption) and of a request's capacity.requests is rewritten in
// canonical form ("1000" -> "1k", as Quantity.String writes them). Values of the wrong type are
// left for Decode* to report. Never fails.
void Normalize(Kind kind, nlohmann::json* object);

// Decode and validate a v1 object of the kind (metadata included: name rules, namespace).
// Success returns the typed object; errors as described above. Borrowed for the call only.
[[nodiscard]] absl::StatusOr<ResourceSlice> DecodeResourceSlice(const nlohmann::json& object);
[[nodiscard]] absl::StatusOr<DeviceClass> DecodeDeviceClass(const nlohmann::json& object);
// Validates the spec and the status (allocation results, config, reservedFor rules).
[[nodiscard]] absl::StatusOr<ResourceClaim> DecodeResourceClaim(const nlohmann::json& object);
[[nodiscard]] absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(
    const nlohmann::json& object);
// Decode<Kind> with the result dropped; OK for Node (the store owns that object).
[[nodiscard]] absl::Status Validate(Kind kind, const nlohmann::json& object);

// Typed -> v1 JSON, with apiVersion "resource.k8s.io/v1" and kind; empty optional fields are
// omitted as Go's omitempty omits them. Never fail.
nlohmann::json EncodeObjectMeta(const ObjectMeta& meta);
nlohmann::json EncodeResourceSlice(const ResourceSlice& slice);
nlohmann::json EncodeDeviceClass(const DeviceClass& device_class);
nlohmann::json EncodeClaimSpec(const ResourceClaimSpec& spec);
// The `status` object of a claim: {allocation: {devices: {results, config}, nodeSelector},
// reservedFor}.
nlohmann::json EncodeClaimStatus(const ResourceClaimStatus& status);
nlohmann::json EncodeResourceClaim(const ResourceClaim& claim);
nlohmann::json EncodeResourceClaimTemplate(const ResourceClaimTemplate& claim_template);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_CODEC_H_
