// SemanticVersion: a Semantic Versioning 2.0.0 version ("1.2.3", "1.0.0-rc.1+build.5"), parsed
// strictly as github.com/blang/semver/v4 Parse does, which is what the DRA CEL environment uses
// for `semver("...")` and for ResourceSlice attributes with a versionValue
// (k8s.io/dynamic-resource-allocation/cel), and what the API server's validation of a
// versionValue parses with. A value type beside Quantity, below both of its users: the selector
// evaluator (controlplane/scheduling/cel_subset.h) and the resource API's validation
// (controlplane/resourceapi/validation.cc).
//
// Thread-safety: immutable value type; const methods are safe to call concurrently.
#ifndef KDP_MANAGER_SRC_POD_SEMVER_H_
#define KDP_MANAGER_SRC_POD_SEMVER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kdp::manager {

class SemanticVersion {
 public:
  // Parses MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]. No "v" prefix, no missing parts, no leading
  // zeros in numeric parts or numeric pre-release identifiers, identifiers [0-9A-Za-z-]+.
  // INVALID_ARGUMENT naming `text` and the rule broken, worded as blang/semver words it
  // ("No Major.Minor.Patch elements found", "Version segment starts with 0", ...).
  [[nodiscard]] static absl::StatusOr<SemanticVersion> Parse(std::string_view text);

  uint64_t major() const { return major_; }
  uint64_t minor() const { return minor_; }
  uint64_t patch() const { return patch_; }
  const std::vector<std::string>& pre_release() const { return pre_; }
  const std::string& build() const { return build_; }

  // Semver precedence (blang Version.Compare): -1, 0 or 1. Build metadata is ignored, so
  // "1.0.0+a" and "1.0.0+b" compare equal; a pre-release sorts before its release.
  int Compare(const SemanticVersion& other) const;

  // The version as written in canonical form.
  std::string ToString() const;

 private:
  uint64_t major_ = 0;
  uint64_t minor_ = 0;
  uint64_t patch_ = 0;
  std::vector<std::string> pre_;
  std::string build_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_SEMVER_H_
