// The JSON form of the Pod model (pod.h), in which kdp-manager persists its own pod store across
// restarts. PodToJson writes it; PodFromJson reads it back, checking the rules the Pod model
// promises (a Pod that ParsePodManifest admitted always satisfies them), so that a damaged or
// hand-edited store file is reported with the JSON path of its first bad field instead of
// admitting a pod the device manager cannot serve. The form is stable (keys sorted by
// nlohmann::json, so dump() of equal Pods gives equal text):
//
//   {"namespace": "ml", "name": "train", "uid": "5b1c...",
//    "initContainers": [C, ...], "containers": [C, ...]}
//   plus, only when used: "resourceClaims", "resourceClaimStatuses", "terminating": true for
//   a pod whose deletion started, and "apiObject" (a string: the API client's Pod; pod.h).
//   C = {"name": "warmup", "kind": "init" | "sidecar" | "app",
//        "extendedResources": {"example.com/gpu": 2, ...}, "otherLimits": {"cpu": "500m", ...}}
//
// Strings are copied unchanged, so every Pod that keeps the rules below and whose strings are
// valid UTF-8 (any code point, NUL and other control characters included; no DNS-name rules are
// checked here) round-trips through PodToJson, dump(), parse() and PodFromJson to an equal Pod.
// JSON text is UTF-8 only; see PodToJson for the one lossy case.
//
// Thread-safety: PodToJson and PodFromJson are thread-safe.
#ifndef KDP_MANAGER_SRC_POD_POD_JSON_H_
#define KDP_MANAGER_SRC_POD_POD_JSON_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "manager/src/pod/pod.h"
#include "nlohmann/json_fwd.hpp"

namespace kdp::manager {

// Returns the JSON form of `pod` above. Never fails and never throws, and dump() of the result
// never throws either: a string that is not valid UTF-8 (possible only in a uid written with
// invalid bytes, the one such field ParsePodManifest keeps unchecked) has each invalid byte
// replaced by U+FFFD, as Go's encoding/json writes it and so as the device-manager checkpoint
// (devicemanager/checkpoint/checkpoint.h) stores that pod's uid; the pod reads back with the
// same replaced uid. A Pod that breaks the model's rules (say an empty uid) is written as it is,
// and PodFromJson rejects the result.
nlohmann::json PodToJson(const Pod& pod);

// The inverse of PodToJson. Returns the Pod, or INVALID_ARGUMENT "<source>: <json path>: <rule>"
// for the first broken rule in document order, the path starting with `path_prefix` (e.g.
// "pods[3]" gives "pods[3].containers[0].kind"; an empty prefix gives "containers[0].kind", and
// "<source>: <rule>" for the value itself). Rules:
//   - every field above present ("Required value") and of its type ("must be an object",
//     "must be an array", "must be a string");
//   - namespace, name, uid and every container name non-empty ("must be non-empty");
//   - containers non-empty ("must be non-empty"; initContainers may be empty);
//   - kind one of "init", "sidecar", "app"; "init" or "sidecar" in initContainers, "app" in
//     containers;
//   - container names unique across initContainers and containers ("must be unique in the pod:
//     "x" is also <path of the first>");
//   - extendedResources[<name>] an integer from 0 to INT64_MAX ("must be a non-negative
//     integer"; 2.0 is a float and is rejected); otherLimits[<name>] a string;
//   - apiObject, when present, a string that is a JSON object ("must be a JSON object").
// Unknown keys are ignored, so a newer kdp-manager may add fields. Nothing throws. Borrowed
// arguments are read during the call only.
[[nodiscard]] absl::StatusOr<Pod> PodFromJson(const nlohmann::json& json, std::string_view source,
                                              std::string_view path_prefix);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_POD_JSON_H_
