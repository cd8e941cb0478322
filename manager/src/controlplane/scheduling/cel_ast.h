// Internal to cel_subset: the checked syntax tree the parser (cel_subset.cc) builds, the run-time
// values, and the entry points of the evaluator (cel_eval.cc), the function library
// (cel_functions.cc) and the cost estimator (cel_cost.cc). Not for use outside the selector code.
//
// Thread-safety: a Node tree is immutable once built and may be evaluated concurrently, each
// evaluation with its own Activation.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/pod/quantity.h"
#include "manager/src/pod/semver.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling::internal {

// Static types. kDyn is a value known only at run time (an attribute). Lists and map literals
// carry their element type in Node::elem (kDyn when unknown or mixed).
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
  kList,      // list(elem)
  kMap,       // a map literal: map(dyn, elem)
};

enum class Kind {
  kLiteral,
  kDevice,
  kDriver,
  kAllowMultiple,
  kAttrRoot,
  kCapRoot,
  kVar,      // a macro's iteration variable or a cel.bind variable: slot
  kIndex,    // args[0][args[1]]; also args[0].<field> with args[1] a string literal
  kHas,      // has(args[0].<field>): args[0] a map, args[1] the key literal
  kIn,       // args[0] in args[1]
  kNot,      // !args[0]
  kNeg,      // -args[0]
  kAnd,      // args[0] && args[1]
  kOr,       // args[0] || args[1]
  kCompare,  // op: == != < <= > >=
  kArith,    // op: + - * / %
  kCond,     // args[0] ? args[1] : args[2]
  kList,     // [args...]
  kMapLit,   // {args[0]: args[1], args[2]: args[3], ...}
  kCall,     // op: a global function (quantity, semver, size, int, ...); args its arguments
  kMethod,   // op: method name; args[0] receiver, args[1..] arguments
  kLoop,     // op: all exists exists_one map filter; slot iterates args[0]; args[1] the
             // predicate or transform; map with 3 arguments: args[1] filter, args[2] transform
  kBind,     // cel.bind: slot = args[0], then args[1]
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
struct List;
struct MapValue;
using ListPtr = std::shared_ptr<const List>;
using MapPtr = std::shared_ptr<const MapValue>;

using Value = std::variant<bool, int64_t, std::string, Quantity, SemanticVersion, AttrMapRef,
                           CapMapRef, RootRef, DeviceRef, ListPtr, MapPtr>;

struct List {
  std::vector<Value> items;
};
// A map literal's entries in source order (keys are bool, int or string, all distinct).
struct MapValue {
  std::vector<std::pair<Value, Value>> entries;
};

struct Node {
  Kind kind = Kind::kLiteral;
  Type type = Type::kDyn;
  Type elem = Type::kDyn;  // type kList / kMap: the element (value) type
  int column = 0;          // 1-based column of the token that produced the node
  int slot = -1;           // kVar, kLoop, kBind: the variable's slot in the Activation
  std::string op;
  Value literal = false;
  bool from_select = false;  // kIndex built from ".field" (what has() accepts)
  std::vector<std::unique_ptr<Node>> args;
  std::shared_ptr<const RE2> regex;  // matches() and find() with a literal pattern
};

// The state of one evaluation: the device, the variables' values, and the cost so far.
struct Activation {
  const DeviceView* device = nullptr;
  std::vector<Value> slots;
  uint64_t cost = 0;
  uint64_t cost_limit = 0;
};

// The text cel-go's cost tracker cancels an evaluation with.
inline constexpr char kCostLimitExceeded[] = "operation cancelled: actual cost limit exceeded";

// CEL's name of a run-time value's type, for "no such overload" errors.
std::string ValueTypeName(const Value& v);
// CEL's name of a static type, for compile errors.
std::string TypeName(Type t, Type elem = Type::kDyn);

// "no such overload: <op> applied to (<types>)" as INVALID_ARGUMENT.
absl::Status NoSuchOverload(const std::string& op, const std::vector<const Value*>& args);

// CEL equality: false for values of different types (heterogeneous equality).
bool ValuesEqual(const Value& a, const Value& b);

// Adds `units` to the activation's cost; RESOURCE_EXHAUSTED kCostLimitExceeded past the limit
// (an error that nothing absorbs: &&, ||, all and exists pass it through).
absl::Status Charge(Activation& act, uint64_t units);

// Evaluates `node`; a CEL runtime error is INVALID_ARGUMENT with CEL's text, the cost limit
// RESOURCE_EXHAUSTED.
absl::StatusOr<Value> Evaluate(const Node& node, Activation& act);

// The type checker of the function library: the result type of calling `name` on `args`
// (args[0] is the receiver when `member`), or an error message (empty when `name` is not a
// function of the library at all). `elem` receives the result's element type for lists.
struct Signature {
  Type result = Type::kDyn;
  Type elem = Type::kDyn;
};
absl::StatusOr<Signature> CheckFunction(const std::string& name, bool member,
                                        const std::vector<const Node*>& args);
// True for every name CheckFunction knows.
bool IsLibraryFunction(const std::string& name, bool member);
// Calls a library function on evaluated arguments (receiver first for methods).
absl::StatusOr<Value> CallFunction(const Node& call, const std::vector<Value>& args,
                                   Activation& act);

// The number of code points in UTF-8 `s`.
int64_t CodePoints(const std::string& s);

// cel-go's cost per list literal and map literal, and per character traversed (x 0.1).
inline constexpr uint64_t kListCreateCost = 10;
inline constexpr uint64_t kMapCreateCost = 30;
// The cost of traversing `chars` characters: ceil(0.1 * chars), as cel-go's
// StringTraversalCostFactor.
inline uint64_t TraversalCost(uint64_t chars) { return (chars + 9) / 10; }
// What one macro iteration costs besides its body, as cel-go's expansion of the macro charges it:
// the loop condition and the accumulator (3); map() and filter() also append a one-element list
// literal to the accumulator for each element they keep (10 + 2).
inline constexpr uint64_t kLoopStepCost = 3;
inline constexpr uint64_t kLoopAppendCost = kListCreateCost + 2;

// Worst-case cost of evaluating `root` for any device within the API's limits (see cel_cost.cc).
uint64_t EstimateCost(const Node& root, int slots);

}  // namespace kdp::manager::scheduling::internal

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_AST_H_
