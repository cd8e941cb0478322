// ParsePodManifest turns a v1 Pod manifest (YAML or JSON text, as given to kdpctl) into the Pod
// model, applying the part of the API server's Pod validation that the kubelet's device manager
// relies on, so that a pod kdp-manager admits is one a real cluster would have accepted:
//
//   - exactly one YAML document holding a mapping; apiVersion "v1" and kind "Pod";
//   - metadata.name (or metadata.generateName, completed with 5 random characters as the API
//     server does) a DNS-1123 subdomain; metadata.namespace a DNS-1123 label, default "default";
//     metadata.uid kept as written, else a fresh random UUID v4;
//   - spec.containers non-empty; every container name a DNS-1123 label, unique across
//     spec.initContainers and spec.containers; an init container's restartPolicy absent (regular
//     init container) or "Always" (sidecar);
//   - resources.limits / resources.requests maps of quantities (strings or YAML numbers, read with
//     YAML 1.1 number rules as kubectl does, so 0x10 is 16 and 010 is 8): names valid container
//     resource names, values non-negative; an extended resource's value an integer, its request
//     (optional, defaulting to the limit) equal to its limit, and a request without a limit
//     rejected; other resources' requests at most their limits. kdp-manager also rejects names in
//     the kubernetes.io/ namespace other than the standard ones (the kubelet can never have a
//     device plugin for them).
//
// Fields it does not read are ignored, as kubectl ignores fields it does not know. Field errors
// use the API server's texts (`Required value`, `Invalid value: "x": must be an integer`,
// `must be equal to example.com/gpu limit of 1`, ...), with map keys in the path where the API
// server names only the map (`resources.limits[example.com/gpu]`).
//
// Thread-safety: ParsePodManifest and GeneratePodUid are thread-safe.
#ifndef KDP_MANAGER_SRC_POD_POD_MANIFEST_H_
#define KDP_MANAGER_SRC_POD_POD_MANIFEST_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager {

// Parses one Pod manifest. `source` (e.g. a file name) prefixes every error message. Returns the
// Pod, or INVALID_ARGUMENT:
//   - malformed YAML: "<source>: line L, column C: <parser message>";
//   - not exactly one document, not a mapping, a field of the wrong YAML type, a duplicate key, a
//     wrong apiVersion/kind or an unparsable quantity: "<source>: <field path>: <reason>", one
//     problem, located by line and column where the YAML has one;
//   - validation: "<source>: Pod "<name>" is invalid: <error>", or "[<error>, <error>, ...]" when
//     several rules are broken, each error "<field path>: <API server text>".
// Borrowed arguments are read during the call only.
[[nodiscard]] absl::StatusOr<Pod> ParsePodManifest(std::string_view text, std::string_view source);

// The same for one document of a multi-document manifest already loaded by yaml-cpp (kdpctl
// apply -f with several documents): `source` names the file and the document.
[[nodiscard]] absl::StatusOr<Pod> ParsePodManifestDocument(const YAML::Node& document,
                                                           std::string_view source);

// A random (version 4, RFC 4122 variant) UUID in lower-case 8-4-4-4-12 form, the form the API
// server gives metadata.uid.
std::string GeneratePodUid();

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_POD_MANIFEST_H_
