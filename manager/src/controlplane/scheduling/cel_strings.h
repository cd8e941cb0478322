// Internal to cel_subset: the string, list and set functions of the selector library
// (cel_functions.cc dispatches to them). Strings are UTF-8 and indexed in code points, as in
// cel-go's strings extension; lists follow k8s.io/apiserver/pkg/cel/library's lists library and
// cel-go's sets extension.
//
// Thread-safety: stateless functions.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_STRINGS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_STRINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"

namespace kdp::manager::scheduling::internal {

// call.op on a string receiver args[0]: startsWith endsWith contains matches find findAll
// lowerAscii upperAscii trim charAt indexOf lastIndexOf replace split substring.
absl::StatusOr<Value> StringMethod(const Node& call, const std::vector<Value>& args,
                                   Activation& act);
// call.op on a list receiver args[0]: join isSorted sum min max indexOf lastIndexOf.
absl::StatusOr<Value> ListMethod(const Node& call, const std::vector<Value>& args, Activation& act);
// sets.contains, sets.intersects, sets.equivalent.
absl::StatusOr<Value> SetFunction(const Node& call, const std::vector<Value>& args,
                                  Activation& act);
// Go's strconv.ParseInt(s, 10, 64) with its error texts, as CEL's int(string).
absl::StatusOr<int64_t> ParseGoInt(const std::string& s);

}  // namespace kdp::manager::scheduling::internal

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_STRINGS_H_
