// A parser and evaluator for the subset of CEL that DRA device selectors use
// (DeviceClass.spec.selectors[].cel.expression, ResourceClaim requests' selectors), standing in for
// k8s.io/dynamic-resource-allocation/cel in kdp-manager's claim allocator (claim_allocator.h).
// An expression is compiled once (CompiledSelector::Compile) and evaluated against many devices.
//
// Grammar (CEL syntax; everything not listed is rejected when compiling, naming the construct):
//   expr     ::= or [ "?" or ":" expr ]
//   or       ::= and { "||" and }
//   and      ::= rel { "&&" rel }
//   rel      ::= add { ("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") add }
//   add      ::= mul { ("+" | "-") mul }
//   mul      ::= unary { ("*" | "/" | "%") unary }
//   unary    ::= "!" unary | "-" unary | member
//   member   ::= primary { "." IDENT [ "(" args ")" ] | "[" expr "]" }
//   primary  ::= "device" | VAR | literal | "(" expr ")" | IDENT "(" args ")"
//              | "cel.bind(" VAR "," expr "," expr ")" | "sets." IDENT "(" args ")"
//              | "[" [ expr { "," expr } [","] ] "]" | "{" [ key ":" expr { "," ... } ] "}"
//                (elements of one type; map keys int, string or bool)
//   literal  ::= INT (decimal or 0x hex) | STRING ("..." '...' r"..." with CEL escapes)
//              | "true" | "false"
// Variables: device.driver (string); device.attributes["<domain>"].<id> and
// device.attributes["<domain>"]["<id>"] (int, bool, string or semver, by the attribute's value);
// device.capacity["<domain>"].<id> (quantity); device.allowMultipleAllocations (bool, from
// DeviceView). An attribute or capacity named without a domain is under the driver's name, and an
// unknown domain is an empty map, both as upstream DeviceMatches does. VAR: a macro's or
// cel.bind's variable.
// Operators: == and != on any two values (heterogeneous values compare unequal, as in CEL; lists
// and map literals element-wise); < <= > >= on int, string and bool; + - * / % and unary - on int
// ("integer overflow", "division by zero", "modulus by zero" at run time); + on strings and on
// lists; && || ! on bools; c ? a : b (only the chosen branch is evaluated, an error in c is the
// result); x in <list> (equality) and "key" in <map> (key presence); list[int], map[key].
// Macros (over lists, and over maps' keys): has(m.f), e.all(x, p), e.exists(x, p),
// e.exists_one(x, p), e.map(x, t), e.map(x, p, t), e.filter(x, p), and cel.bind(x, init, body).
// Functions (the DRA environment's: CEL's standard library, Kubernetes' quantity, semver, lists
// and regex libraries, cel-go's strings v2 and sets extensions):
//   size(x) and x.size() on string (code points), list and map; int(int|string),
//   string(int|string|bool), dyn(x); quantity(s), isQuantity(s), semver(s), isSemver(s);
//   quantity: compareTo isGreaterThan isLessThan sign isInteger asInteger;
//   semver: compareTo isGreaterThan isLessThan major minor patch;
//   string: startsWith endsWith contains matches find findAll lowerAscii upperAscii trim charAt
//     indexOf lastIndexOf replace split substring;
//   list: join isSorted sum min max indexOf lastIndexOf;
//   sets.contains sets.intersects sets.equivalent.
// matches(), find() and findAll() take RE2 patterns (as cel-go); a literal pattern is checked
// when compiling, another one when evaluating.
// Not supported (refused when compiling): double, uint, bytes and null literals, timestamps,
// durations, optional values (".?f", "[?k]", optional.*), two-variable comprehensions,
// transformList/transformMap, format() and strings.quote(), quantity
// add()/sub()/asApproximateFloat(), and the URL, IP, CIDR, image and authorization libraries.
//
// Semantics are CEL's: && and || are commutative over errors (false && error is false, true ||
// error is true, otherwise the error wins), and so are all() and exists() over their elements;
// exists_one(), map() and filter() fail on any element's error; a missing key is the runtime error
// "no such key: <id>"; an operator applied to values it has no overload for is "no such
// overload". Types known when compiling are checked then ("found no matching overload for '_==_'
// applied to '(int, string)'"), and the expression must be a bool (or of a type known only at run
// time). Literal arguments of quantity() and semver() are parsed when compiling (upstream: at
// evaluation); a bad one is an INVALID_ARGUMENT either way for the claim.
//
// Cost: every evaluation counts a cost close to cel-go's (1 per variable, field, index and call,
// strings by length x 0.1, list literals 10, map literals 30, 3 per macro iteration and 12 more
// per element map() and filter() keep, lists by length in list functions) and is cancelled with
// "operation cancelled: actual cost limit exceeded" past CompileOptions::cost_limit (upstream
// resourceapi.CELSelectorExpressionMaxCost, 1,000,000). Compile estimates the worst case from the
// API's bounds (at most 32 attributes, 32 capacities and 32 domains per device, strings of at most
// 64 bytes per attribute value, 63 per domain, 32 per id) and refuses an expression above
// CompileOptions::max_estimated_cost: "too complex, exceeds cost limit". The estimate differs from
// cel-go's in its details (cel-go loses the size of a macro's result, kdp keeps it), so a
// borderline expression may be accepted by one and refused by the other.
//
// Thread-safety: CompiledSelector and DeviceView are immutable after construction; const methods
// are safe to call concurrently.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/pod/quantity.h"
#include "manager/src/pod/semver.h"

namespace kdp::manager::scheduling {

// An attribute value as CEL sees it.
using AttributeValue = std::variant<bool, int64_t, std::string, SemanticVersion>;

// One device as a selector sees it: attributes and capacities grouped by domain.
class DeviceView {
 public:
  // Builds the view of `device` published by `driver`. INVALID_ARGUMENT, as upstream
  // DeviceMatches fails for the device, when an attribute has no value ("attribute <name>:
  // unsupported attribute value"), a versionValue is not a semantic version ("attribute <name>:
  // parse semantic version: ...") or a capacity is not a quantity.
  [[nodiscard]] static absl::StatusOr<DeviceView> Build(std::string_view driver,
                                                        const resourceapi::Device& device);

  const std::string& driver() const { return driver_; }
  // domain -> id -> value.
  const std::map<std::string, std::map<std::string, AttributeValue>>& attributes() const {
    return attributes_;
  }
  const std::map<std::string, std::map<std::string, Quantity>>& capacity() const {
    return capacity_;
  }
  // device.allowMultipleAllocations: the device's field (consumable capacity, KEP-5075).
  bool allow_multiple_allocations() const { return allow_multiple_allocations_; }

 private:
  std::string driver_;
  bool allow_multiple_allocations_ = false;
  std::map<std::string, std::map<std::string, AttributeValue>> attributes_;
  std::map<std::string, std::map<std::string, Quantity>> capacity_;
};

namespace internal {
struct Node;
}  // namespace internal

// resourceapi.CELSelectorExpressionMaxLength: the API refuses a longer selector (in bytes).
inline constexpr size_t kCelSelectorExpressionMaxLength = 10 * 1024;
// resourceapi.CELSelectorExpressionMaxCost: the runtime cost limit of one evaluation, and the
// largest worst-case estimate API validation accepts.
inline constexpr uint64_t kCelSelectorExpressionMaxCost = 1000000;

struct CompileOptions {
  // Longest expression accepted, in bytes; 0: any. Upstream checks the length in API validation
  // (kCelSelectorExpressionMaxLength, "may not be more than 10240 bytes"), not when the
  // scheduler compiles; validating callers set it.
  size_t max_length = 0;
  // Largest worst-case cost estimate accepted; 0: no estimate is checked.
  uint64_t max_estimated_cost = kCelSelectorExpressionMaxCost;
  // Cost at which an evaluation is cancelled.
  uint64_t cost_limit = kCelSelectorExpressionMaxCost;
};

class CompiledSelector {
 public:
  // Compiles `expression`. INVALID_ARGUMENT for a syntax error, a construct outside the subset,
  // a type error, an estimated cost above options.max_estimated_cost or a length above
  // options.max_length, worded
  //   selector "<expression>": <what> at column <N>[; kdp supports <what is supported>]
  // with N the 1-based column (in characters) of the offending token.
  [[nodiscard]] static absl::StatusOr<CompiledSelector> Compile(std::string_view expression,
                                                                const CompileOptions& options = {});

  const std::string& expression() const { return expression_; }
  // The worst-case cost estimated when compiling (cel.EstimateCost's Max in upstream).
  uint64_t max_cost() const { return max_cost_; }

  // Evaluates the selector for one device: true when it matches. A CEL runtime error ("no such
  // key: memory", "no such overload: ...", "operation cancelled: actual cost limit exceeded") is
  // INVALID_ARGUMENT with CEL's text; upstream's allocator fails the whole allocation on it, and
  // so does kdp's (claim_allocator.h).
  [[nodiscard]] absl::StatusOr<bool> Matches(const DeviceView& device) const;

 private:
  CompiledSelector(std::string expression, std::shared_ptr<const internal::Node> root, int slots,
                   uint64_t max_cost, uint64_t cost_limit)
      : expression_(std::move(expression)),
        root_(std::move(root)),
        slots_(slots),
        max_cost_(max_cost),
        cost_limit_(cost_limit) {}

  std::string expression_;
  std::shared_ptr<const internal::Node> root_;  // immutable, shared by copies
  int slots_ = 0;                               // variables (macros, cel.bind)
  uint64_t max_cost_ = 0;
  uint64_t cost_limit_ = kCelSelectorExpressionMaxCost;
};

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_
