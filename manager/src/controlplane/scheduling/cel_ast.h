// Internal to cel_subset: the checked syntax tree the parser (cel_subset.cc) builds and the
// evaluator (cel_eval.cc) walks, and the run-time values. Not for use outside the selector code.
//
// Thread-safety: a Node tree is immutable once built and may be evaluated concurrently.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/pod/quantity.h"
#include "manager/src/pod/semver.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling::internal {

// Static types. kDyn is a value known only at run time (an attribute).
enum class Type {
  kBool,
  kInt,
  kString,
  kQuantity,
  kSemver,
  kDyn,
  kDevice,
  kAttrRoot,  // device.attributes: domain -> kAttrMap
  kCapRoot,   // device.capacity: domain -> kCapMap
  kAttrMap,   // id -> kDyn
  kCapMap,    // id -> kQuantity
};

enum class Kind {
  kLiteral,
  kDevice,
  kDriver,
  kAllowMultiple,
  kAttrRoot,
  kCapRoot,
  kIndex,    // args[0][args[1]]; also args[0].<field> with args[1] a string literal
  kHas,      // has(args[0].<field>): args[0] a map, args[1] the key literal
  kIn,       // args[0] in args[1]
  kNot,      // !args[0]
  kNeg,      // -args[0]
  kAnd,      // args[0] && args[1]
  kOr,       // args[0] || args[1]
  kCompare,  // op: == != < <= > >=
  kCall,     // op: quantity, semver (non-literal argument)
  kMethod,   // op: method name; args[0] receiver, args[1..] arguments
};

struct AttrMapRef {
  const std::map<std::string, AttributeValue>* map = nullptr;  // nullptr: empty
};
struct CapMapRef {
  const std::map<std::string, Quantity>* map = nullptr;  // nullptr: empty
};
struct RootRef {
  bool capacity = false;  // device.capacity, else device.attributes
};
struct DeviceRef {};

using Value = std::variant<bool, int64_t, std::string, Quantity, SemanticVersion, AttrMapRef,
                           CapMapRef, RootRef, DeviceRef>;

struct Node {
  Kind kind = Kind::kLiteral;
  Type type = Type::kDyn;
  int column = 0;  // 1-based column of the token that produced the node
  std::string op;
  Value literal = false;
  bool from_select = false;  // kIndex built from ".field" (what has() accepts)
  std::vector<std::unique_ptr<Node>> args;
  std::shared_ptr<const RE2> regex;  // matches() with a literal pattern
};

// CEL's name of a run-time value's type, for "no such overload" errors.
std::string ValueTypeName(const Value& v);

// Evaluates `node` for `device`; a CEL runtime error is INVALID_ARGUMENT with CEL's text.
absl::StatusOr<Value> Evaluate(const Node& node, const DeviceView& device);

}  // namespace kdp::manager::scheduling::internal

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_
