// Field and label selectors for list, delete-collection and (next) watch requests, parsed and
// matched as the API server does: fields.ParseSelector with the kind's field-label conversion
// (ResourceSlice supports spec.nodeName and spec.driver besides metadata.name; other kinds only
// metadata.name and metadata.namespace), and the equality/existence subset of labels.Parse. The
// store applies them to its stored JSON; the server parses the query parameters.
//
// Thread-safety: immutable after Parse; const methods are thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SELECTORS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SELECTORS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

class FieldSelector {
 public:
  struct Requirement {
    std::string field;
    bool equal = true;  // "=" / "==" when true, "!=" when false
    std::string value;
  };

  // Selects everything.
  FieldSelector() = default;

  // Parses `text` ("spec.nodeName=node-1,spec.driver!=x"; terms joined by ',', operators "=",
  // "==", "!=", '\' escapes ',', '=' and '\' in values). `version` names the URL's version in the
  // error for an unsupported field. Errors are BadRequest (400), worded as the API server's:
  //   invalid selector: '<text>'; can't understand '<term>'
  //   field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: <field>
  //   field label not supported: <field>    (core/v1 and events.k8s.io kinds)
  // Each requirement names the stored core/v1 field it reads: events.k8s.io's regarding.<x> is
  // involvedObject.<x> and reportingController reportingComponent, and an Event's `source` is
  // source.component, as the API server's label conversion and selectable fields have it.
  //   "<field>" is not a known field selector: only "metadata.name", "metadata.namespace"
  [[nodiscard]] static absl::StatusOr<FieldSelector> Parse(std::string_view text,
                                                           const KindInfo& kind,
                                                           std::string_view version);

  // Convenience for the store's typed accessors: one equality requirement per non-empty pair.
  static FieldSelector Equals(std::vector<std::pair<std::string, std::string>> pairs);

  // True when every requirement holds for the v1 `object` (a missing field reads as "").
  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

class LabelSelector {
 public:
  struct Requirement {
    enum class Op { kEquals, kNotEquals, kExists, kDoesNotExist };
    std::string key;
    Op op = Op::kEquals;
    std::string value;
  };

  LabelSelector() = default;

  // Parses "a=b,c!=d,e,!f" (also "=="). Set-based terms ("in", "notin") and malformed terms are
  // BadRequest `unable to parse requirement: <term>`.
  [[nodiscard]] static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  // True when every requirement holds for the labels in `object.metadata.labels`.
  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  std::vector<Requirement> requirements_;
};

// The value of a selectable field of a v1 object ("metadata.name", "spec.nodeName", ...): a
// string at that dotted path, "" when absent or not a string.
std::string FieldValue(const nlohmann::json& object, std::string_view field);

// What selectors can see of a v1 `object` of `kind`: metadata.name, metadata.namespace,
// metadata.labels and the kind's field labels, at their usual paths (FieldValue and
// LabelSelector::Matches read the projection as they read the object). The store keeps it for
// the object's state before a change, so that a watch can tell an object leaving its selection
// (DELETED) or entering it (ADDED) from one staying in it (MODIFIED), as the watch cache does.
nlohmann::json SelectableProjection(const KindInfo& kind, const nlohmann::json& object);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SELECTORS_H_
