// The PATCH request bodies kube-apiserver accepts (k8s.io/apiserver endpoints/handlers/patch.go),
// applied to a stored object: JSON patch (RFC 6902, `kubectl patch --type=json`), JSON merge
// patch (RFC 7386, `--type=merge`) and strategic merge patch (k8s.io/apimachinery
// util/strategicpatch, what client-side `kubectl apply`, `kubectl patch`, `kubectl label` and
// `kubectl annotate` send), so those commands work against the local resource API. The REST
// server picks the type from the Content-Type, applies the body to the stored object here, then
// validates and stores the result as an update. Strategic merge patch needs the patchStrategy /
// patchMergeKey struct tags of the kind's Go types; StrategicMergeSchema carries them as data.
// Server-side apply (application/apply-patch+yaml) needs managed fields and is not implemented.
//
// Thread-safety: pure functions and immutable schemas; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PATCH_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PATCH_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMergePatch, kApplyPatch };

// The patch type named by a request's Content-Type ("application/merge-patch+json; charset=utf-8"
// names kMergePatch: parameters and surrounding blanks are ignored, the media type itself is
// compared exactly, as the API server does). nullopt for any other media type; the server then
// answers 415 UnsupportedMediaType with UnsupportedPatchMediaTypeMessage().
std::optional<PatchType> PatchTypeFromContentType(std::string_view content_type);

// negotiation.NewUnsupportedMediaTypeError's text for a built-in kind's PATCH route: "the body of
// the request was in an unknown format - accepted media types include: application/json-patch+json,
// application/merge-patch+json, application/strategic-merge-patch+json,
// application/apply-patch+yaml" (the installer's order).
std::string UnsupportedPatchMediaTypeMessage();

// The strategic-merge-patch facts of one kind: which lists merge element-wise (Go struct tag
// patchStrategy:"merge", keyed by patchMergeKey) instead of being replaced whole. Every other list
// is atomic, whatever its listType. A path names object keys from the object's root joined by
// '.', a list's elements written "[]": "spec.containers[].env". Only the server-side rules
// matter: `$retainKeys` is honoured wherever a patch carries it, and no field of the kinds served
// here has patchStrategy:"replace". Immutable once built.
class StrategicMergeSchema {
 public:
  struct MergeList {
    std::string path;       // "spec.containers", "metadata.finalizers"
    std::string merge_key;  // "name"; empty for a list of primitives merged as a set
  };

  explicit StrategicMergeSchema(const std::vector<MergeList>& merge_lists);

  // The patchMergeKey of the list at `path` ("" for a set of primitives); nullopt when that list
  // (or the field) is atomic. The view is valid as long as the schema.
  std::optional<std::string_view> MergeKey(std::string_view path) const;

 private:
  std::map<std::string, std::string, std::less<>> merge_keys_;
};

// core/v1 Pod: metadata.ownerReferences by uid, metadata.finalizers as a set; spec.volumes,
// spec.{initContainers,containers,ephemeralContainers}, spec.imagePullSecrets,
// spec.schedulingGates, spec.resourceClaims by name; each container's ports by containerPort, env
// by name, volumeMounts by mountPath, volumeDevices by devicePath; spec.hostAliases by ip,
// spec.topologySpreadConstraints by topologyKey; status.conditions by type, status.podIPs and
// status.hostIPs by ip, status.resourceClaimStatuses by name. Everything else (tolerations,
// containers' resources.claims, envFrom, command, ...) is atomic.
const StrategicMergeSchema& PodSchema();
// core/v1 Namespace: the metadata rules and status.conditions by type (spec.finalizers is atomic).
const StrategicMergeSchema& NamespaceSchema();
// core/v1 Event: the metadata rules only.
const StrategicMergeSchema& EventSchema();
// resource.k8s.io ResourceClaim: the metadata rules and status.reservedFor by uid (the only
// patchStrategy tag in the resource.k8s.io types).
const StrategicMergeSchema& ResourceClaimSchema();
// Any other kind (ResourceSlice, DeviceClass, ResourceClaimTemplate): metadata.ownerReferences by
// uid and metadata.finalizers as a set; every other list is atomic.
const StrategicMergeSchema& GenericSchema();

// Applies `patch`, the raw request body of `type`, to `original` (a stored object; REQUIRES: a
// JSON object) and returns the patched object. `schema` is read for kStrategicMergePatch only.
// Errors, all INVALID_ARGUMENT with the API server's wording where it has one, answered by the
// REST server as the API server answers them (api_errors.h ToStatusObject):
//  - a body that is not JSON, or not the JSON the type needs (kJsonPatch: an array of operation
//    objects; kMergePatch: an object, "Invalid JSON Patch"; kStrategicMergePatch: an object or
//    null), or nested deeper than 1000 levels: 400 BadRequest;
//  - a JSON patch of more than 10000 operations: 413 RequestEntityTooLarge;
//  - a JSON patch operation that does not apply (it decoded, Apply failed): "testing value
//    /metadata/labels/a failed: test failed", `remove operation does not apply: ...`,
//    "Unexpected kind: frob" as the absl message, answered 422 Invalid with only "the server
//    rejected our request due to an error in our request" (UnprocessableEntityError), as
//    patch.go's NewGenericServerResponse does;
//  - a strategic merge patch the merge rejects: "map: {...} does not contain declared merge key:
//    name", "invalid patch format of retainKeys", "The order in patch list: ... doesn't match
//    $setElementOrder list: ...", "unknown patch type: frob in map: ...": 400 BadRequest.
// kApplyPatch returns UNIMPLEMENTED (server-side apply needs managed fields); the REST server
// answers it 415 like any unsupported media type.
// A strategic merge patch value for a field the original lacks is merged into an empty value, so
// nulls and directives inside it are resolved rather than stored (the API server keeps them and
// lets its typed decoder drop them); a `$deleteFromPrimitiveList` for an absent list deletes
// nothing.
absl::StatusOr<nlohmann::json> ApplyPatch(const nlohmann::json& original, std::string_view patch,
                                          PatchType type, const StrategicMergeSchema& schema);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PATCH_H_
