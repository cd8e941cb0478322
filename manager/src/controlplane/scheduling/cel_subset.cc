#include "manager/src/controlplane/scheduling/cel_subset.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"
#include "manager/src/controlplane/scheduling/cel_parser.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling {

using internal::Node;
using internal::NodePtr;
using internal::Parser;
using internal::Quote;

absl::StatusOr<DeviceView> DeviceView::Build(std::string_view driver,
                                             const resourceapi::Device& device) {
  DeviceView view;
  view.driver_ = std::string(driver);
  view.allow_multiple_allocations_ = device.allow_multiple_allocations;
  auto split = [&](const std::string& name) -> std::pair<std::string, std::string> {
    size_t slash = name.find('/');
    if (slash == std::string::npos) return {view.driver_, name};
    return {name.substr(0, slash), name.substr(slash + 1)};
  };
  for (const auto& [name, attr] : device.attributes) {
    AttributeValue value;
    if (attr.int_value) {
      value = *attr.int_value;
    } else if (attr.bool_value) {
      value = *attr.bool_value;
    } else if (attr.string_value) {
      value = *attr.string_value;
    } else if (attr.version_value) {
      absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(*attr.version_value);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute ", name, ": parse semantic version: ", v.status().message()));
      }
      value = *v;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute ", name, ": unsupported attribute value"));
    }
    auto [domain, id] = split(name);
    view.attributes_[domain][id] = std::move(value);
  }
  for (const auto& [name, cap] : device.capacity) {
    absl::StatusOr<Quantity> q = Quantity::Parse(cap.value);
    if (!q.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("capacity ", name, ": ", q.status().message()));
    }
    auto [domain, id] = split(name);
    view.capacity_[domain][id] = *q;
  }
  return view;
}

absl::StatusOr<CompiledSelector> CompiledSelector::Compile(std::string_view expression,
                                                           const CompileOptions& options) {
  if (options.max_length > 0 && expression.size() > options.max_length) {
    // Upstream's field.TooLong; the expression is not quoted, it is the long thing.
    return absl::InvalidArgumentError(
        absl::StrCat("selector expression: may not be more than ", options.max_length, " bytes"));
  }
  Parser parser(expression);
  absl::StatusOr<NodePtr> root = parser.Parse();
  if (!root.ok()) return root.status();
  const uint64_t cost = internal::EstimateCost(**root, parser.slots());
  if (options.max_estimated_cost > 0 && cost > options.max_estimated_cost) {
    return absl::InvalidArgumentError(absl::StrCat(
        "selector ", Quote(expression), ": too complex, exceeds cost limit (estimated cost ", cost,
        ", limit ", options.max_estimated_cost, ")"));
  }
  return CompiledSelector(std::string(expression), std::shared_ptr<const Node>(*std::move(root)),
                          parser.slots(), cost, options.cost_limit);
}

}  // namespace kdp::manager::scheduling
