// Evaluation of the checked tree built by cel_subset.cc (see cel_subset.h for the semantics).
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/pod/semver.h"

namespace kdp::manager::scheduling {
namespace internal {

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
      return "map";
    default:
      return "kubernetes.DRADevice";
  }
}

namespace {

absl::StatusOr<Value> Eval(const Node& n, const DeviceView& d);

absl::Status NoSuchOverload(const std::string& op, const std::vector<const Value*>& args) {
  std::string list;
  for (const Value* v : args) absl::StrAppend(&list, list.empty() ? "" : ", ", ValueTypeName(*v));
  return absl::InvalidArgumentError(
      absl::StrCat("no such overload: ", op, " applied to (", list, ")"));
}

absl::StatusOr<bool> EvalBool(const Node& n, const DeviceView& d, const std::string& op) {
  absl::StatusOr<Value> v = Eval(n, d);
  if (!v.ok()) return v.status();
  if (const bool* b = std::get_if<bool>(&*v)) return *b;
  return NoSuchOverload(op, {&*v});
}

int Sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

// ==: false for values of different types (CEL heterogeneous equality).
bool Equal(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const auto* v = std::get_if<SemanticVersion>(&a)) {
    return v->Compare(std::get<SemanticVersion>(b)) == 0;
  }
  if (const auto* q = std::get_if<Quantity>(&a)) return *q == std::get<Quantity>(b);
  if (const auto* s = std::get_if<std::string>(&a)) return *s == std::get<std::string>(b);
  if (const auto* i = std::get_if<int64_t>(&a)) return *i == std::get<int64_t>(b);
  if (const auto* x = std::get_if<bool>(&a)) return *x == std::get<bool>(b);
  return false;
}

absl::StatusOr<Value> EvalCompare(const Node& n, const DeviceView& d) {
  absl::StatusOr<Value> l = Eval(*n.args[0], d);
  if (!l.ok()) return l.status();
  absl::StatusOr<Value> r = Eval(*n.args[1], d);
  if (!r.ok()) return r.status();
  if (n.op == "==") return Value(Equal(*l, *r));
  if (n.op == "!=") return Value(!Equal(*l, *r));
  int c = 0;
  if (l->index() != r->index()) return NoSuchOverload(absl::StrCat("_", n.op, "_"), {&*l, &*r});
  if (const auto* i = std::get_if<int64_t>(&*l)) {
    const int64_t j = std::get<int64_t>(*r);
    c = *i < j ? -1 : (*i > j ? 1 : 0);
  } else if (const auto* s = std::get_if<std::string>(&*l)) {
    c = Sign(s->compare(std::get<std::string>(*r)));
  } else if (const auto* b = std::get_if<bool>(&*l)) {
    c = static_cast<int>(*b) - static_cast<int>(std::get<bool>(*r));
  } else {
    return NoSuchOverload(absl::StrCat("_", n.op, "_"), {&*l, &*r});
  }
  if (n.op == "<") return Value(c < 0);
  if (n.op == "<=") return Value(c <= 0);
  if (n.op == ">") return Value(c > 0);
  return Value(c >= 0);
}

absl::StatusOr<Value> EvalLogical(const Node& n, const DeviceView& d) {
  // CEL's commutative && and ||: a decisive operand wins over an error in the other one.
  const bool is_and = n.kind == Kind::kAnd;
  const std::string op = is_and ? "_&&_" : "_||_";
  const bool decisive = !is_and;  // false decides &&, true decides ||
  absl::StatusOr<bool> l = EvalBool(*n.args[0], d, op);
  if (l.ok() && *l == decisive) return Value(decisive);
  absl::StatusOr<bool> r = EvalBool(*n.args[1], d, op);
  if (r.ok() && *r == decisive) return Value(decisive);
  if (!l.ok()) return l.status();
  if (!r.ok()) return r.status();
  return Value(!decisive);
}

absl::StatusOr<Value> EvalIndex(const Value& map, const Value& key_value, const DeviceView& d) {
  const std::string* key = std::get_if<std::string>(&key_value);
  if (key == nullptr) return NoSuchOverload("_[_]", {&map, &key_value});
  if (const auto* root = std::get_if<RootRef>(&map)) {
    // Upstream wraps both root maps so that an unknown domain is an empty map.
    if (root->capacity) {
      auto it = d.capacity().find(*key);
      return Value(CapMapRef{it == d.capacity().end() ? nullptr : &it->second});
    }
    auto it = d.attributes().find(*key);
    return Value(AttrMapRef{it == d.attributes().end() ? nullptr : &it->second});
  }
  if (const auto* attrs = std::get_if<AttrMapRef>(&map)) {
    if (attrs->map != nullptr) {
      if (auto it = attrs->map->find(*key); it != attrs->map->end()) {
        return std::visit([](const auto& v) { return Value(v); }, it->second);
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("no such key: ", *key));
  }
  if (const auto* caps = std::get_if<CapMapRef>(&map)) {
    if (caps->map != nullptr) {
      if (auto it = caps->map->find(*key); it != caps->map->end()) return Value(it->second);
    }
    return absl::InvalidArgumentError(absl::StrCat("no such key: ", *key));
  }
  return NoSuchOverload("_[_]", {&map, &key_value});
}

absl::StatusOr<bool> Contains(const Value& map, const Value& key_value, const DeviceView& d) {
  const std::string* key = std::get_if<std::string>(&key_value);
  if (key == nullptr) return NoSuchOverload("@in", {&key_value, &map});
  if (const auto* root = std::get_if<RootRef>(&map)) {
    return root->capacity ? d.capacity().count(*key) > 0 : d.attributes().count(*key) > 0;
  }
  if (const auto* attrs = std::get_if<AttrMapRef>(&map)) {
    return attrs->map != nullptr && attrs->map->count(*key) > 0;
  }
  if (const auto* caps = std::get_if<CapMapRef>(&map)) {
    return caps->map != nullptr && caps->map->count(*key) > 0;
  }
  return NoSuchOverload("@in", {&key_value, &map});
}

absl::StatusOr<Value> EvalMethod(const Node& n, const DeviceView& d) {
  std::vector<Value> values;
  for (const auto& a : n.args) {
    absl::StatusOr<Value> v = Eval(*a, d);
    if (!v.ok()) return v.status();
    values.push_back(*std::move(v));
  }
  const std::string& m = n.op;
  std::vector<const Value*> ptrs;
  for (const Value& v : values) ptrs.push_back(&v);
  const Value& recv = values[0];
  if (m == "compareTo" || m == "isGreaterThan" || m == "isLessThan") {
    int c = 0;
    if (const auto* q = std::get_if<Quantity>(&recv);
        q && std::holds_alternative<Quantity>(values[1])) {
      const Quantity& o = std::get<Quantity>(values[1]);
      c = *q < o ? -1 : (*q > o ? 1 : 0);
    } else if (const auto* v = std::get_if<SemanticVersion>(&recv);
               v && std::holds_alternative<SemanticVersion>(values[1])) {
      c = v->Compare(std::get<SemanticVersion>(values[1]));
    } else {
      return NoSuchOverload(m, ptrs);
    }
    if (m == "compareTo") return Value(int64_t{c});
    return Value(m == "isGreaterThan" ? c > 0 : c < 0);
  }
  if (m == "major" || m == "minor" || m == "patch") {
    const auto* v = std::get_if<SemanticVersion>(&recv);
    if (v == nullptr) return NoSuchOverload(m, ptrs);
    const uint64_t part = m == "major" ? v->major() : (m == "minor" ? v->minor() : v->patch());
    if (part > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError("integer overflow");
    }
    return Value(static_cast<int64_t>(part));
  }
  const auto* s = std::get_if<std::string>(&recv);
  if (s == nullptr) return NoSuchOverload(m, ptrs);
  if (m == "matches") return Value(RE2::PartialMatch(*s, *n.regex));
  const auto* arg = std::get_if<std::string>(&values[1]);
  if (arg == nullptr) return NoSuchOverload(m, ptrs);
  if (m == "startsWith")
    return Value(s->compare(0, arg->size(), *arg) == 0 && s->size() >= arg->size());
  if (m == "endsWith") {
    return Value(s->size() >= arg->size() &&
                 s->compare(s->size() - arg->size(), arg->size(), *arg) == 0);
  }
  return Value(s->find(*arg) != std::string::npos);  // contains
}

absl::StatusOr<Value> Eval(const Node& n, const DeviceView& d) {
  switch (n.kind) {
    case Kind::kLiteral:
      return n.literal;
    case Kind::kDevice:
      return Value(DeviceRef{});
    case Kind::kDriver:
      return Value(d.driver());
    case Kind::kAllowMultiple:
      return Value(false);
    case Kind::kAttrRoot:
      return Value(RootRef{false});
    case Kind::kCapRoot:
      return Value(RootRef{true});
    case Kind::kIndex:
    case Kind::kHas:
    case Kind::kIn: {
      const bool in = n.kind == Kind::kIn;
      absl::StatusOr<Value> map = Eval(*n.args[in ? 1 : 0], d);
      if (!map.ok()) return map.status();
      absl::StatusOr<Value> key = Eval(*n.args[in ? 0 : 1], d);
      if (!key.ok()) return key.status();
      if (n.kind == Kind::kIndex) return EvalIndex(*map, *key, d);
      absl::StatusOr<bool> found = Contains(*map, *key, d);
      if (!found.ok()) return found.status();
      return Value(*found);
    }
    case Kind::kNot: {
      absl::StatusOr<bool> b = EvalBool(*n.args[0], d, "!_");
      if (!b.ok()) return b.status();
      return Value(!*b);
    }
    case Kind::kNeg: {
      absl::StatusOr<Value> v = Eval(*n.args[0], d);
      if (!v.ok()) return v.status();
      const auto* i = std::get_if<int64_t>(&*v);
      if (i == nullptr) return NoSuchOverload("-_", {&*v});
      if (*i == std::numeric_limits<int64_t>::min()) {
        return absl::InvalidArgumentError("integer overflow");
      }
      return Value(-*i);
    }
    case Kind::kAnd:
    case Kind::kOr:
      return EvalLogical(n, d);
    case Kind::kCompare:
      return EvalCompare(n, d);
    case Kind::kCall: {
      absl::StatusOr<Value> v = Eval(*n.args[0], d);
      if (!v.ok()) return v.status();
      const auto* s = std::get_if<std::string>(&*v);
      if (s == nullptr) return NoSuchOverload(n.op, {&*v});
      if (n.op == "quantity") {
        absl::StatusOr<Quantity> q = Quantity::Parse(*s);
        if (!q.ok()) return q.status();
        return Value(*q);
      }
      absl::StatusOr<SemanticVersion> sv = SemanticVersion::Parse(*s);
      if (!sv.ok()) return sv.status();
      return Value(*sv);
    }
    case Kind::kMethod:
      return EvalMethod(n, d);
  }
  return absl::InternalError("unknown CEL node");
}

}  // namespace

absl::StatusOr<Value> Evaluate(const Node& node, const DeviceView& device) {
  return Eval(node, device);
}

}  // namespace internal

absl::StatusOr<bool> CompiledSelector::Matches(const DeviceView& device) const {
  absl::StatusOr<internal::Value> v = internal::Evaluate(*root_, device);
  if (!v.ok()) return absl::InvalidArgumentError(v.status().message());
  if (const bool* b = std::get_if<bool>(&*v)) return *b;
  return absl::InvalidArgumentError(absl::StrCat("CEL result of type ", internal::ValueTypeName(*v),
                                                 " could not be converted to bool"));
}

}  // namespace kdp::manager::scheduling
