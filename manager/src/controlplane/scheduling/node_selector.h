// Matching a core/v1 NodeSelector against this node, as the scheduler's DRA allocator does for
// ResourceSlices published with spec.nodeSelector (or a device's nodeSelector under
// perDeviceNodeSelection): k8s.io/component-helpers/scheduling/corev1/nodeaffinity.NodeSelector.
//
// The terms are ORed; a term ANDs its matchExpressions (on the node's labels) and matchFields
// (metadata.name only); a term with neither matches nothing. Operators: In, NotIn (also true
// when the label is absent), Exists, DoesNotExist, Gt and Lt (one value; both sides parse as
// integers). A requirement upstream would reject when parsing (unknown operator, wrong number of
// values, a field other than metadata.name) makes its term match nothing: the API server refuses
// such selectors when the slice is written, so only a hand-edited store meets one.
//
// Thread-safety: pure function.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_NODE_SELECTOR_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_NODE_SELECTOR_H_

#include <map>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace kdp::manager::scheduling {

// The node a selector is matched against: its name and its labels.
struct NodeView {
  std::string name = {};
  std::map<std::string, std::string> labels = {};
};

// True when `selector` (a NodeSelector object: {"nodeSelectorTerms": [...]}) selects `node`.
bool NodeSelectorMatches(const nlohmann::json& selector, const NodeView& node);

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_NODE_SELECTOR_H_
