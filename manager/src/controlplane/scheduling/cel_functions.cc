// The function library of the selector subset (see cel_subset.h for the list): its type checker
// (CheckFunction, used when compiling) and its implementations (CallFunction, when evaluating).
// String functions follow cel-go's strings extension (version 2, which the DRA environment
// enables) and count in code points; list functions follow k8s.io/apiserver/pkg/cel/library.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"
#include "manager/src/controlplane/scheduling/cel_strings.h"

namespace kdp::manager::scheduling::internal {

std::string TypeName(Type t, Type elem) {
  switch (t) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kString:
      return "string";
    case Type::kQuantity:
      return "kubernetes.Quantity";
    case Type::kSemver:
      return "kubernetes.Semver";
    case Type::kDyn:
      return "dyn";
    case Type::kDevice:
      return "kubernetes.DRADevice";
    case Type::kAttrRoot:
      return "map(string, map(string, dyn))";
    case Type::kCapRoot:
      return "map(string, map(string, kubernetes.Quantity))";
    case Type::kAttrMap:
      return "map(string, dyn)";
    case Type::kCapMap:
      return "map(string, kubernetes.Quantity)";
    case Type::kList:
      return absl::StrCat("list(", TypeName(elem), ")");
    case Type::kMap:
      return absl::StrCat("map(dyn, ", TypeName(elem), ")");
  }
  return "unknown";
}

std::string ValueTypeName(const Value& v) {
  switch (v.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "string";
    case 3:
      return "kubernetes.Quantity";
    case 4:
      return "kubernetes.Semver";
    case 5:
    case 6:
    case 7:
    case 10:
      return "map";
    case 9:
      return "list";
    default:
      return "kubernetes.DRADevice";
  }
}

absl::Status NoSuchOverload(const std::string& op, const std::vector<const Value*>& args) {
  std::string list;
  for (const Value* v : args) absl::StrAppend(&list, list.empty() ? "" : ", ", ValueTypeName(*v));
  return absl::InvalidArgumentError(
      absl::StrCat("no such overload: ", op, " applied to (", list, ")"));
}

bool ValuesEqual(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const auto* v = std::get_if<SemanticVersion>(&a)) {
    return v->Compare(std::get<SemanticVersion>(b)) == 0;
  }
  if (const auto* q = std::get_if<Quantity>(&a)) return *q == std::get<Quantity>(b);
  if (const auto* s = std::get_if<std::string>(&a)) return *s == std::get<std::string>(b);
  if (const auto* i = std::get_if<int64_t>(&a)) return *i == std::get<int64_t>(b);
  if (const auto* x = std::get_if<bool>(&a)) return *x == std::get<bool>(b);
  if (const auto* l = std::get_if<ListPtr>(&a)) {
    const auto& x = (*l)->items;
    const auto& y = std::get<ListPtr>(b)->items;
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), ValuesEqual);
  }
  if (const auto* m = std::get_if<MapPtr>(&a)) {
    const auto& x = (*m)->entries;
    const auto& y = std::get<MapPtr>(b)->entries;
    if (x.size() != y.size()) return false;
    for (const auto& entry : x) {
      auto it = std::find_if(y.begin(), y.end(),
                             [&](const auto& e) { return ValuesEqual(e.first, entry.first); });
      if (it == y.end() || !ValuesEqual(it->second, entry.second)) return false;
    }
    return true;
  }
  return false;  // device maps: compared as references, never equal (refused when compiling)
}

namespace {

// One overload: parameter types (the receiver first for methods; kDyn accepts anything, kMap
// any map) and the result. kResultElem: the result is the receiver's element type.
constexpr Type kAnyMap = Type::kMap;
constexpr Type kResultElem = Type::kDevice;  // marker, never a real result
struct Overload {
  const char* name;
  bool member;
  std::vector<Type> params;
  Type result;
  Type elem = Type::kDyn;
};

const std::vector<Overload>& Overloads() {
  using T = Type;
  static const std::vector<Overload>* const kOverloads = new std::vector<Overload>{
      {"quantity", false, {T::kString}, T::kQuantity},
      {"isQuantity", false, {T::kString}, T::kBool},
      {"semver", false, {T::kString}, T::kSemver},
      {"isSemver", false, {T::kString}, T::kBool},
      {"size", false, {T::kString}, T::kInt},
      {"size", false, {T::kList}, T::kInt},
      {"size", false, {kAnyMap}, T::kInt},
      {"int", false, {T::kInt}, T::kInt},
      {"int", false, {T::kString}, T::kInt},
      {"string", false, {T::kString}, T::kString},
      {"string", false, {T::kInt}, T::kString},
      {"string", false, {T::kBool}, T::kString},
      {"dyn", false, {T::kDyn}, T::kDyn},
      {"sets.contains", false, {T::kList, T::kList}, T::kBool},
      {"sets.intersects", false, {T::kList, T::kList}, T::kBool},
      {"sets.equivalent", false, {T::kList, T::kList}, T::kBool},
      {"compareTo", true, {T::kQuantity, T::kQuantity}, T::kInt},
      {"compareTo", true, {T::kSemver, T::kSemver}, T::kInt},
      {"isGreaterThan", true, {T::kQuantity, T::kQuantity}, T::kBool},
      {"isGreaterThan", true, {T::kSemver, T::kSemver}, T::kBool},
      {"isLessThan", true, {T::kQuantity, T::kQuantity}, T::kBool},
      {"isLessThan", true, {T::kSemver, T::kSemver}, T::kBool},
      {"major", true, {T::kSemver}, T::kInt},
      {"minor", true, {T::kSemver}, T::kInt},
      {"patch", true, {T::kSemver}, T::kInt},
      {"sign", true, {T::kQuantity}, T::kInt},
      {"isInteger", true, {T::kQuantity}, T::kBool},
      {"asInteger", true, {T::kQuantity}, T::kInt},
      {"size", true, {T::kString}, T::kInt},
      {"size", true, {T::kList}, T::kInt},
      {"size", true, {kAnyMap}, T::kInt},
      {"startsWith", true, {T::kString, T::kString}, T::kBool},
      {"endsWith", true, {T::kString, T::kString}, T::kBool},
      {"contains", true, {T::kString, T::kString}, T::kBool},
      {"matches", true, {T::kString, T::kString}, T::kBool},
      {"find", true, {T::kString, T::kString}, T::kString},
      {"findAll", true, {T::kString, T::kString}, T::kList, T::kString},
      {"findAll", true, {T::kString, T::kString, T::kInt}, T::kList, T::kString},
      {"lowerAscii", true, {T::kString}, T::kString},
      {"upperAscii", true, {T::kString}, T::kString},
      {"trim", true, {T::kString}, T::kString},
      {"charAt", true, {T::kString, T::kInt}, T::kString},
      {"indexOf", true, {T::kString, T::kString}, T::kInt},
      {"indexOf", true, {T::kString, T::kString, T::kInt}, T::kInt},
      {"lastIndexOf", true, {T::kString, T::kString}, T::kInt},
      {"lastIndexOf", true, {T::kString, T::kString, T::kInt}, T::kInt},
      {"replace", true, {T::kString, T::kString, T::kString}, T::kString},
      {"replace", true, {T::kString, T::kString, T::kString, T::kInt}, T::kString},
      {"split", true, {T::kString, T::kString}, T::kList, T::kString},
      {"split", true, {T::kString, T::kString, T::kInt}, T::kList, T::kString},
      {"substring", true, {T::kString, T::kInt}, T::kString},
      {"substring", true, {T::kString, T::kInt, T::kInt}, T::kString},
      {"join", true, {T::kList}, T::kString},
      {"join", true, {T::kList, T::kString}, T::kString},
      {"isSorted", true, {T::kList}, T::kBool},
      {"sum", true, {T::kList}, kResultElem},
      {"min", true, {T::kList}, kResultElem},
      {"max", true, {T::kList}, kResultElem},
      {"indexOf", true, {T::kList, T::kDyn}, T::kInt},
      {"lastIndexOf", true, {T::kList, T::kDyn}, T::kInt},
  };
  return *kOverloads;
}

bool Accepts(Type param, const Node& arg) {
  if (param == Type::kDyn || arg.type == Type::kDyn) return true;
  if (param == kAnyMap) {
    return arg.type == Type::kMap || arg.type == Type::kAttrRoot || arg.type == Type::kCapRoot ||
           arg.type == Type::kAttrMap || arg.type == Type::kCapMap;
  }
  return param == arg.type;
}

}  // namespace

bool IsLibraryFunction(const std::string& name, bool member) {
  for (const Overload& o : Overloads()) {
    if (o.member == member && name == o.name) return true;
  }
  return false;
}

absl::StatusOr<Signature> CheckFunction(const std::string& name, bool member,
                                        const std::vector<const Node*>& args) {
  std::vector<Signature> found;
  for (const Overload& o : Overloads()) {
    if (o.member != member || name != o.name || o.params.size() != args.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < args.size() && ok; ++i) ok = Accepts(o.params[i], *args[i]);
    if (!ok) continue;
    Signature s{o.result, o.elem};
    if (o.result == kResultElem) s = {args[0]->type == Type::kList ? args[0]->elem : Type::kDyn};
    // sum() of a list(string) and friends: k8s declares sum for numbers, min/max for comparables.
    if (o.result == kResultElem && name == "sum" && s.result != Type::kInt &&
        s.result != Type::kDyn) {
      continue;
    }
    found.push_back(s);
  }
  if (found.empty()) {
    std::string list;
    for (size_t i = member ? 1 : 0; i < args.size(); ++i) {
      absl::StrAppend(&list, list.empty() ? "" : ", ", TypeName(args[i]->type, args[i]->elem));
    }
    const std::string receiver =
        member ? absl::StrCat(TypeName(args[0]->type, args[0]->elem), ".") : "";
    return absl::InvalidArgumentError(absl::StrCat("found no matching overload for '", name,
                                                   "' applied to '", receiver, "(", list, ")'"));
  }
  for (const Signature& s : found) {
    if (s.result != found[0].result || s.elem != found[0].elem) return Signature{};
  }
  return found[0];
}

namespace {

using Args = std::vector<Value>;

absl::Status Overloaded(const Node& call, const Args& args) {
  std::vector<const Value*> ptrs;
  for (const Value& v : args) ptrs.push_back(&v);
  return NoSuchOverload(call.op, ptrs);
}

absl::StatusOr<Value> CompareMethod(const Node& call, const Args& args) {
  const std::string& m = call.op;
  int c = 0;
  const Value& recv = args[0];
  if (const auto* q = std::get_if<Quantity>(&recv);
      q && std::holds_alternative<Quantity>(args[1])) {
    const Quantity& o = std::get<Quantity>(args[1]);
    c = *q < o ? -1 : (*q > o ? 1 : 0);
  } else if (const auto* v = std::get_if<SemanticVersion>(&recv);
             v && std::holds_alternative<SemanticVersion>(args[1])) {
    c = v->Compare(std::get<SemanticVersion>(args[1]));
  } else {
    return Overloaded(call, args);
  }
  if (m == "compareTo") return Value(int64_t{c});
  return Value(m == "isGreaterThan" ? c > 0 : c < 0);
}

absl::StatusOr<Value> SemverPart(const Node& call, const Args& args) {
  const auto* v = std::get_if<SemanticVersion>(&args[0]);
  if (v == nullptr) return Overloaded(call, args);
  const std::string& m = call.op;
  const uint64_t part = m == "major" ? v->major() : (m == "minor" ? v->minor() : v->patch());
  if (part > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError("integer overflow");
  }
  return Value(static_cast<int64_t>(part));
}

absl::StatusOr<Value> QuantityMethod(const Node& call, const Args& args) {
  const auto* q = std::get_if<Quantity>(&args[0]);
  if (q == nullptr) return Overloaded(call, args);
  if (call.op == "sign") return Value(int64_t{q->Sign()});
  if (call.op == "isInteger") return Value(q->IsInteger());
  std::optional<int64_t> i = q->AsInt64();
  if (!i) return absl::InvalidArgumentError("cannot convert value to integer");
  return Value(*i);
}

absl::StatusOr<int64_t> Size(const Node& call, const Args& args, const DeviceView& d) {
  const Value& v = args.back();
  if (const auto* s = std::get_if<std::string>(&v)) return CodePoints(*s);
  if (const auto* l = std::get_if<ListPtr>(&v)) return static_cast<int64_t>((*l)->items.size());
  if (const auto* m = std::get_if<MapPtr>(&v)) return static_cast<int64_t>((*m)->entries.size());
  if (const auto* a = std::get_if<AttrMapRef>(&v)) {
    return a->map == nullptr ? 0 : static_cast<int64_t>(a->map->size());
  }
  if (const auto* c = std::get_if<CapMapRef>(&v)) {
    return c->map == nullptr ? 0 : static_cast<int64_t>(c->map->size());
  }
  if (const auto* r = std::get_if<RootRef>(&v)) {
    return static_cast<int64_t>(r->capacity ? d.capacity().size() : d.attributes().size());
  }
  return Overloaded(call, args);
}

absl::StatusOr<Value> Convert(const Node& call, const Args& args) {
  const Value& v = args[0];
  if (call.op == "dyn") return v;
  if (call.op == "int") {
    if (std::holds_alternative<int64_t>(v)) return v;
    if (const auto* s = std::get_if<std::string>(&v)) {
      absl::StatusOr<int64_t> i = ParseGoInt(*s);
      if (!i.ok()) return i.status();
      return Value(*i);
    }
    return Overloaded(call, args);
  }
  if (std::holds_alternative<std::string>(v)) return v;
  if (const auto* i = std::get_if<int64_t>(&v)) return Value(absl::StrCat(*i));
  if (const auto* b = std::get_if<bool>(&v)) return Value(std::string(*b ? "true" : "false"));
  return Overloaded(call, args);
}

absl::StatusOr<Value> Global(const Node& call, const Args& args, Activation& act) {
  const std::string& f = call.op;
  if (f == "size") {
    absl::StatusOr<int64_t> n = Size(call, args, *act.device);
    if (!n.ok()) return n.status();
    return Value(*n);
  }
  if (f == "int" || f == "string" || f == "dyn") return Convert(call, args);
  if (f.rfind("sets.", 0) == 0) return SetFunction(call, args, act);
  const auto* s = std::get_if<std::string>(&args[0]);
  if (s == nullptr) return Overloaded(call, args);
  if (f == "quantity" || f == "isQuantity") {
    absl::StatusOr<Quantity> q = Quantity::Parse(*s);
    if (f == "isQuantity") return Value(q.ok());
    if (!q.ok()) return q.status();
    return Value(*q);
  }
  absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(*s);
  if (f == "isSemver") return Value(v.ok());
  if (!v.ok()) return v.status();
  return Value(*v);
}

}  // namespace

absl::StatusOr<Value> CallFunction(const Node& call, const std::vector<Value>& args,
                                   Activation& act) {
  if (call.kind == Kind::kCall) return Global(call, args, act);
  const std::string& m = call.op;
  if (m == "compareTo" || m == "isGreaterThan" || m == "isLessThan") {
    return CompareMethod(call, args);
  }
  if (m == "major" || m == "minor" || m == "patch") return SemverPart(call, args);
  if (m == "sign" || m == "isInteger" || m == "asInteger") return QuantityMethod(call, args);
  if (m == "size") {
    absl::StatusOr<int64_t> n = Size(call, args, *act.device);
    if (!n.ok()) return n.status();
    return Value(*n);
  }
  if (std::holds_alternative<ListPtr>(args[0])) return ListMethod(call, args, act);
  if (std::holds_alternative<std::string>(args[0])) return StringMethod(call, args, act);
  return Overloaded(call, args);
}

}  // namespace kdp::manager::scheduling::internal
