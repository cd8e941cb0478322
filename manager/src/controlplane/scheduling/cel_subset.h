// A parser and evaluator for the subset of CEL that DRA device selectors use
// (DeviceClass.spec.selectors[].cel.expression, ResourceClaim requests' selectors), standing in for
// k8s.io/dynamic-resource-allocation/cel in kdp-manager's claim allocator (claim_allocator.h).
// An expression is compiled once (CompiledSelector::Compile) and evaluated against many devices.
//
// Grammar (CEL syntax; everything not listed is rejected when compiling):
//   expr     ::= or                                      ( "? :" rejected )
//   or       ::= and { "||" and }
//   and      ::= rel { "&&" rel }
//   rel      ::= unary { ("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") unary }
//   unary    ::= "!" unary | "-" unary | member          ( "-" on ints only )
//   member   ::= primary { "." IDENT [ "(" args ")" ] | "[" expr "]" }
//   primary  ::= "device" | literal | "(" expr ")" | IDENT "(" args ")"
//   literal  ::= INT (decimal or 0x hex) | STRING ("..." '...' r"..." with CEL escapes)
//              | "true" | "false"
// Variables: device.driver (string); device.attributes["<domain>"].<id> and
// device.attributes["<domain>"]["<id>"] (int, bool, string or semver, by the attribute's value);
// device.capacity["<domain>"].<id> (quantity); device.allowMultipleAllocations (always false:
// kdp has no consumable capacity). An attribute or capacity named without a domain is under the
// driver's name, and an unknown domain is an empty map, both as upstream DeviceMatches does.
// Functions: quantity(string), semver(string), has(device.attributes["d"].id) (also capacity).
// Methods: quantity and semver .compareTo(x) (int -1/0/1), .isGreaterThan(x), .isLessThan(x);
// semver .major() .minor() .patch(); string .startsWith .endsWith .contains .matches (the pattern
// must be a literal; RE2 syntax, as CEL's: an invalid pattern is rejected when compiling).
// Operators: == and != on any two values of one type (heterogeneous values compare unequal, as in
// CEL); < <= > >= on int, string and bool; && || ! on bools; "key" in <map> (key presence).
//
// Semantics are CEL's: && and || are commutative over errors (false && error is false, true ||
// error is true, otherwise the error wins); a missing key is the runtime error "no such key: <id>";
// an operator applied to values it has no overload for is "no such overload". Types known when
// compiling are checked then ("found no matching overload for '_==_' applied to '(int, string)'"),
// and the expression must be a bool (or of a type known only at run time). Literal arguments of
// quantity() and semver() are parsed when compiling (upstream: at evaluation); a bad one is an
// INVALID_ARGUMENT either way for the claim.
//
// Thread-safety: CompiledSelector and DeviceView are immutable after construction; const methods
// are safe to call concurrently.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_

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

 private:
  std::string driver_;
  std::map<std::string, std::map<std::string, AttributeValue>> attributes_;
  std::map<std::string, std::map<std::string, Quantity>> capacity_;
};

namespace internal {
struct Node;
}  // namespace internal

class CompiledSelector {
 public:
  // Compiles `expression`. INVALID_ARGUMENT for a syntax error, a construct outside the subset
  // or a type error, worded
  //   selector "<expression>": <what> at column <N>[; kdp supports <what is supported>]
  // with N the 1-based column (in characters) of the offending token.
  [[nodiscard]] static absl::StatusOr<CompiledSelector> Compile(std::string_view expression);

  const std::string& expression() const { return expression_; }

  // Evaluates the selector for one device: true when it matches. A CEL runtime error ("no such
  // key: memory", "no such overload: ...") is INVALID_ARGUMENT with CEL's text; upstream's
  // allocator fails the whole allocation on it, and so does kdp's (claim_allocator.h).
  [[nodiscard]] absl::StatusOr<bool> Matches(const DeviceView& device) const;

 private:
  CompiledSelector(std::string expression, std::shared_ptr<const internal::Node> root)
      : expression_(std::move(expression)), root_(std::move(root)) {}

  std::string expression_;
  std::shared_ptr<const internal::Node> root_;  // immutable, shared by copies
};

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_SUBSET_H_
