// Manifests as kdpctl apply -f sends them: one or more YAML (or JSON) documents separated by
// "---", each a Kubernetes object. SplitManifest loads them, drops empty documents as kubectl
// does, and gives each its apiVersion, kind, the yaml-cpp node (for the Pod parser, which reports
// lines and columns) and the same object as JSON (for the resource API, which stores JSON), with
// plain scalars resolved as sigs.k8s.io/yaml does (YAML 1.1 through yaml.v2: 0x10 is 16, "yes"
// is true, "~" is null); quoted scalars stay strings.
//
// Thread-safety: thread-safe (no shared state).
#ifndef KDP_MANAGER_SRC_ADMIN_MANIFEST_H_
#define KDP_MANAGER_SRC_ADMIN_MANIFEST_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

struct ManifestDocument {
  // "<source>" when the manifest holds one document, else "<source> (document N)", 1-based
  // among all documents including empty ones, for error messages.
  std::string source = {};
  std::string api_version = {};
  std::string kind = {};
  YAML::Node node = {};
  nlohmann::json json = {};
};

// INVALID_ARGUMENT "<source>: line L, column C: <parser message>" for malformed YAML; "<source>
// (document N): ..." when a document is not a mapping, has a non-string key, or lacks apiVersion
// or kind (the API server's "Object 'Kind' is missing" texts). No documents at all is an error.
[[nodiscard]] absl::StatusOr<std::vector<ManifestDocument>> SplitManifest(std::string_view text,
                                                                          std::string_view source);

// One YAML node as JSON, as sigs.k8s.io/yaml converts it. INVALID_ARGUMENT naming `path` for a
// non-string mapping key, an alias cycle or a scalar JSON cannot hold (.inf, .nan).
[[nodiscard]] absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node,
                                                        const std::string& path);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_ADMIN_MANIFEST_H_
