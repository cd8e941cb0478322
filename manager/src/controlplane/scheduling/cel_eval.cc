// Evaluation of the checked tree built by cel_subset.cc (see cel_subset.h for the semantics).
// Every node charges its cost to the Activation as cel-go's cost tracker does (approximately:
// see cel_subset.h); past the limit the evaluation stops with kCostLimitExceeded, an error that
// the commutative operators do not absorb.
#include <cstdint>
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
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/pod/semver.h"

namespace kdp::manager::scheduling {
namespace internal {

absl::Status Charge(Activation& act, uint64_t units) {
  act.cost = units > act.cost_limit - std::min(act.cost, act.cost_limit) ? act.cost_limit + 1
                                                                         : act.cost + units;
  if (act.cost > act.cost_limit) return absl::ResourceExhaustedError(kCostLimitExceeded);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<Value> Eval(const Node& n, Activation& act);

bool Cancelled(const absl::Status& s) { return s.code() == absl::StatusCode::kResourceExhausted; }

absl::StatusOr<bool> EvalBool(const Node& n, Activation& act, const std::string& op) {
  absl::StatusOr<Value> v = Eval(n, act);
  if (!v.ok()) return v.status();
  if (const bool* b = std::get_if<bool>(&*v)) return *b;
  return NoSuchOverload(op, {&*v});
}

int Sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

// The two operands of a binary node, left to right; the first error wins.
absl::Status EvalPair(const Node& n, Activation& act, Value* l, Value* r) {
  absl::StatusOr<Value> a = Eval(*n.args[0], act);
  if (!a.ok()) return a.status();
  absl::StatusOr<Value> b = Eval(*n.args[1], act);
  if (!b.ok()) return b.status();
  *l = *std::move(a);
  *r = *std::move(b);
  return absl::OkStatus();
}

uint64_t StringLength(const Value& v) {
  const auto* s = std::get_if<std::string>(&v);
  return s == nullptr ? 0 : s->size();
}

absl::StatusOr<Value> EvalCompare(const Node& n, Activation& act) {
  Value l, r;
  if (absl::Status st = EvalPair(n, act, &l, &r); !st.ok()) return st;
  if (absl::Status st = Charge(act, TraversalCost(std::min(StringLength(l), StringLength(r))));
      !st.ok()) {
    return st;
  }
  if (n.op == "==") return Value(ValuesEqual(l, r));
  if (n.op == "!=") return Value(!ValuesEqual(l, r));
  int c = 0;
  if (l.index() != r.index()) return NoSuchOverload(absl::StrCat("_", n.op, "_"), {&l, &r});
  if (const auto* i = std::get_if<int64_t>(&l)) {
    const int64_t j = std::get<int64_t>(r);
    c = *i < j ? -1 : (*i > j ? 1 : 0);
  } else if (const auto* s = std::get_if<std::string>(&l)) {
    c = Sign(s->compare(std::get<std::string>(r)));
  } else if (const auto* b = std::get_if<bool>(&l)) {
    c = static_cast<int>(*b) - static_cast<int>(std::get<bool>(r));
  } else {
    return NoSuchOverload(absl::StrCat("_", n.op, "_"), {&l, &r});
  }
  if (n.op == "<") return Value(c < 0);
  if (n.op == "<=") return Value(c <= 0);
  if (n.op == ">") return Value(c > 0);
  return Value(c >= 0);
}

absl::StatusOr<Value> IntArith(const std::string& op, int64_t a, int64_t b) {
  int64_t out = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(a, b, &out);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(a, b, &out);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(a, b, &out);
  } else {
    if (b == 0) {
      return absl::InvalidArgumentError(op == "/" ? "division by zero" : "modulus by zero");
    }
    overflow = a == std::numeric_limits<int64_t>::min() && b == -1;
    if (!overflow) out = op == "/" ? a / b : a % b;  // truncated, as Go's
  }
  if (overflow) return absl::InvalidArgumentError("integer overflow");
  return Value(out);
}

absl::StatusOr<Value> EvalArith(const Node& n, Activation& act) {
  Value l, r;
  if (absl::Status st = EvalPair(n, act, &l, &r); !st.ok()) return st;
  if (l.index() == r.index()) {
    if (const auto* a = std::get_if<int64_t>(&l)) return IntArith(n.op, *a, std::get<int64_t>(r));
    if (n.op == "+") {
      if (const auto* a = std::get_if<std::string>(&l)) {
        const std::string& b = std::get<std::string>(r);
        if (absl::Status st = Charge(act, TraversalCost(a->size() + b.size())); !st.ok()) return st;
        return Value(*a + b);
      }
      if (const auto* a = std::get_if<ListPtr>(&l)) {
        const ListPtr& b = std::get<ListPtr>(r);
        auto out = std::make_shared<List>(**a);
        out->items.insert(out->items.end(), b->items.begin(), b->items.end());
        if (absl::Status st = Charge(act, out->items.size()); !st.ok()) return st;
        return Value(ListPtr(std::move(out)));
      }
    }
  }
  return NoSuchOverload(absl::StrCat("_", n.op, "_"), {&l, &r});
}

absl::StatusOr<Value> EvalLogical(const Node& n, Activation& act) {
  // CEL's commutative && and ||: a decisive operand wins over an error in the other one.
  const bool is_and = n.kind == Kind::kAnd;
  const std::string op = is_and ? "_&&_" : "_||_";
  const bool decisive = !is_and;  // false decides &&, true decides ||
  absl::StatusOr<bool> l = EvalBool(*n.args[0], act, op);
  if (l.ok() && *l == decisive) return Value(decisive);
  if (!l.ok() && Cancelled(l.status())) return l.status();
  absl::StatusOr<bool> r = EvalBool(*n.args[1], act, op);
  if (r.ok() && *r == decisive) return Value(decisive);
  if (!r.ok() && Cancelled(r.status())) return r.status();
  if (!l.ok()) return l.status();
  if (!r.ok()) return r.status();
  return Value(!decisive);
}

absl::Status NoSuchKey(const Value& key) {
  if (const auto* i = std::get_if<int64_t>(&key)) {
    return absl::InvalidArgumentError(absl::StrCat("no such key: ", *i));
  }
  if (const auto* b = std::get_if<bool>(&key)) {
    return absl::InvalidArgumentError(absl::StrCat("no such key: ", *b ? "true" : "false"));
  }
  return absl::InvalidArgumentError(absl::StrCat("no such key: ", std::get<std::string>(key)));
}

// The value under `key` in a map literal, or nullptr.
const Value* FindEntry(const MapValue& map, const Value& key) {
  for (const auto& [k, v] : map.entries) {
    if (ValuesEqual(k, key)) return &v;
  }
  return nullptr;
}

absl::StatusOr<Value> EvalIndex(const Value& container, const Value& key, const DeviceView& d) {
  if (const auto* list = std::get_if<ListPtr>(&container)) {
    const auto* i = std::get_if<int64_t>(&key);
    if (i == nullptr) return NoSuchOverload("_[_]", {&container, &key});
    if (*i < 0 || *i >= static_cast<int64_t>((*list)->items.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("index '", *i, "' out of range in list size '", (*list)->items.size(), "'"));
    }
    return (*list)->items[static_cast<size_t>(*i)];
  }
  if (const auto* map = std::get_if<MapPtr>(&container)) {
    if (!std::holds_alternative<std::string>(key) && !std::holds_alternative<int64_t>(key) &&
        !std::holds_alternative<bool>(key)) {
      return NoSuchOverload("_[_]", {&container, &key});
    }
    if (const Value* v = FindEntry(**map, key)) return *v;
    return NoSuchKey(key);
  }
  const std::string* k = std::get_if<std::string>(&key);
  if (k == nullptr) return NoSuchOverload("_[_]", {&container, &key});
  if (const auto* root = std::get_if<RootRef>(&container)) {
    // Upstream wraps both root maps so that an unknown domain is an empty map.
    if (root->capacity) {
      auto it = d.capacity().find(*k);
      return Value(CapMapRef{it == d.capacity().end() ? nullptr : &it->second});
    }
    auto it = d.attributes().find(*k);
    return Value(AttrMapRef{it == d.attributes().end() ? nullptr : &it->second});
  }
  if (const auto* attrs = std::get_if<AttrMapRef>(&container)) {
    if (attrs->map != nullptr) {
      if (auto it = attrs->map->find(*k); it != attrs->map->end()) {
        return std::visit([](const auto& v) { return Value(v); }, it->second);
      }
    }
    return NoSuchKey(key);
  }
  if (const auto* caps = std::get_if<CapMapRef>(&container)) {
    if (caps->map != nullptr) {
      if (auto it = caps->map->find(*k); it != caps->map->end()) return Value(it->second);
    }
    return NoSuchKey(key);
  }
  return NoSuchOverload("_[_]", {&container, &key});
}

absl::StatusOr<bool> Contains(const Value& container, const Value& key, const DeviceView& d) {
  if (const auto* list = std::get_if<ListPtr>(&container)) {
    for (const Value& v : (*list)->items) {
      if (ValuesEqual(v, key)) return true;
    }
    return false;
  }
  if (const auto* map = std::get_if<MapPtr>(&container)) return FindEntry(**map, key) != nullptr;
  const std::string* k = std::get_if<std::string>(&key);
  if (k == nullptr) return NoSuchOverload("@in", {&key, &container});
  if (const auto* root = std::get_if<RootRef>(&container)) {
    return root->capacity ? d.capacity().count(*k) > 0 : d.attributes().count(*k) > 0;
  }
  if (const auto* attrs = std::get_if<AttrMapRef>(&container)) {
    return attrs->map != nullptr && attrs->map->count(*k) > 0;
  }
  if (const auto* caps = std::get_if<CapMapRef>(&container)) {
    return caps->map != nullptr && caps->map->count(*k) > 0;
  }
  return NoSuchOverload("@in", {&key, &container});
}

// The values a macro iterates: a list's elements, a map's keys.
absl::StatusOr<std::vector<Value>> RangeOf(const Value& range, const DeviceView& d) {
  std::vector<Value> out;
  auto keys = [&out](const auto* map) {
    if (map == nullptr) return;
    for (const auto& entry : *map) out.push_back(entry.first);
  };
  if (const auto* list = std::get_if<ListPtr>(&range)) return (*list)->items;
  if (const auto* map = std::get_if<MapPtr>(&range)) {
    for (const auto& entry : (*map)->entries) out.push_back(entry.first);
  } else if (const auto* a = std::get_if<AttrMapRef>(&range)) {
    keys(a->map);
  } else if (const auto* c = std::get_if<CapMapRef>(&range)) {
    keys(c->map);
  } else if (const auto* r = std::get_if<RootRef>(&range)) {
    if (r->capacity) {
      keys(&d.capacity());
    } else {
      keys(&d.attributes());
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("no such overload: ", ValueTypeName(range), " cannot be iterated"));
  }
  return out;
}

// all() and exists(): the decisive value (false for all, true for exists) wins over errors in
// other elements, as cel-go's comprehension over @not_strictly_false does; else the first error.
absl::StatusOr<Value> EvalQuantifier(const Node& n, const std::vector<Value>& range,
                                     Activation& act) {
  const bool decisive = n.op == "exists";
  absl::Status first_error;
  for (const Value& v : range) {
    if (absl::Status st = Charge(act, kLoopStepCost); !st.ok()) return st;
    act.slots[n.slot] = v;
    absl::StatusOr<bool> b = EvalBool(*n.args[1], act, n.op);
    if (b.ok() && *b == decisive) return Value(decisive);
    if (!b.ok()) {
      if (Cancelled(b.status())) return b.status();
      if (first_error.ok()) first_error = b.status();
    }
  }
  if (!first_error.ok()) return first_error;
  return Value(!decisive);
}

// exists_one(), map() and filter(): any element's error is the result.
absl::StatusOr<Value> EvalCollect(const Node& n, const std::vector<Value>& range, Activation& act) {
  int64_t count = 0;
  auto out = std::make_shared<List>();
  const bool has_filter = n.op != "map" || n.args.size() == 3;
  for (const Value& v : range) {
    if (absl::Status st = Charge(act, kLoopStepCost); !st.ok()) return st;
    act.slots[n.slot] = v;
    if (has_filter) {
      absl::StatusOr<bool> keep = EvalBool(*n.args[1], act, n.op);
      if (!keep.ok()) return keep.status();
      if (!*keep) continue;
    }
    if (n.op == "exists_one") {
      ++count;
      continue;
    }
    if (absl::Status st = Charge(act, kLoopAppendCost); !st.ok()) return st;
    if (n.op == "filter") {
      out->items.push_back(v);
    } else {
      absl::StatusOr<Value> mapped = Eval(*n.args.back(), act);
      if (!mapped.ok()) return mapped.status();
      out->items.push_back(*std::move(mapped));
    }
  }
  if (n.op == "exists_one") return Value(count == 1);
  return Value(ListPtr(std::move(out)));
}

absl::StatusOr<Value> EvalLoop(const Node& n, Activation& act) {
  absl::StatusOr<Value> range_value = Eval(*n.args[0], act);
  if (!range_value.ok()) return range_value.status();
  absl::StatusOr<std::vector<Value>> range = RangeOf(*range_value, *act.device);
  if (!range.ok()) return range.status();
  if (n.op == "all" || n.op == "exists") return EvalQuantifier(n, *range, act);
  return EvalCollect(n, *range, act);
}

absl::StatusOr<Value> EvalAggregate(const Node& n, Activation& act) {
  std::vector<Value> values;
  for (const auto& a : n.args) {
    absl::StatusOr<Value> v = Eval(*a, act);
    if (!v.ok()) return v.status();
    values.push_back(*std::move(v));
  }
  if (n.kind == Kind::kList) return Value(std::make_shared<const List>(List{std::move(values)}));
  auto map = std::make_shared<MapValue>();
  for (size_t i = 0; i + 1 < values.size(); i += 2) {
    const Value& key = values[i];
    if (!std::holds_alternative<std::string>(key) && !std::holds_alternative<int64_t>(key) &&
        !std::holds_alternative<bool>(key)) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported key type: ", ValueTypeName(key)));
    }
    if (FindEntry(*map, key) != nullptr) {
      return absl::InvalidArgumentError("Failed with repeated key");
    }
    map->entries.emplace_back(key, values[i + 1]);
  }
  return Value(MapPtr(std::move(map)));
}

absl::StatusOr<Value> EvalCall(const Node& n, Activation& act) {
  std::vector<Value> values;
  for (const auto& a : n.args) {
    absl::StatusOr<Value> v = Eval(*a, act);
    if (!v.ok()) return v.status();
    values.push_back(*std::move(v));
  }
  return CallFunction(n, values, act);
}

absl::StatusOr<Value> EvalMembership(const Node& n, Activation& act) {
  const bool in = n.kind == Kind::kIn;
  absl::StatusOr<Value> container = Eval(*n.args[in ? 1 : 0], act);
  if (!container.ok()) return container.status();
  absl::StatusOr<Value> key = Eval(*n.args[in ? 0 : 1], act);
  if (!key.ok()) return key.status();
  if (n.kind == Kind::kIndex) return EvalIndex(*container, *key, *act.device);
  if (const auto* list = std::get_if<ListPtr>(&*container)) {
    if (absl::Status st = Charge(act, (*list)->items.size()); !st.ok()) return st;
  }
  absl::StatusOr<bool> found = Contains(*container, *key, *act.device);
  if (!found.ok()) return found.status();
  return Value(*found);
}

absl::StatusOr<Value> EvalUnary(const Node& n, Activation& act) {
  if (n.kind == Kind::kNot) {
    absl::StatusOr<bool> b = EvalBool(*n.args[0], act, "!_");
    if (!b.ok()) return b.status();
    return Value(!*b);
  }
  absl::StatusOr<Value> v = Eval(*n.args[0], act);
  if (!v.ok()) return v.status();
  const auto* i = std::get_if<int64_t>(&*v);
  if (i == nullptr) return NoSuchOverload("-_", {&*v});
  if (*i == std::numeric_limits<int64_t>::min()) {
    return absl::InvalidArgumentError("integer overflow");
  }
  return Value(-*i);
}

// The cost a node charges before its operands: 1 per variable, field, index, operator and call
// (cel-go's SelectAndIdentCost and default call cost), 0 for literals, && || ?: and cel.bind.
uint64_t OwnCost(const Node& n) {
  switch (n.kind) {
    case Kind::kLiteral:
    case Kind::kDevice:
    case Kind::kAnd:
    case Kind::kOr:
    case Kind::kCond:
    case Kind::kBind:
    case Kind::kLoop:
      return 0;
    case Kind::kList:
      return kListCreateCost;
    case Kind::kMapLit:
      return kMapCreateCost;
    default:
      return 1;
  }
}

absl::StatusOr<Value> Eval(const Node& n, Activation& act) {
  if (absl::Status st = Charge(act, OwnCost(n)); !st.ok()) return st;
  switch (n.kind) {
    case Kind::kLiteral:
      return n.literal;
    case Kind::kDevice:
      return Value(DeviceRef{});
    case Kind::kDriver:
      return Value(act.device->driver());
    case Kind::kAllowMultiple:
      return Value(act.device->allow_multiple_allocations());
    case Kind::kAttrRoot:
      return Value(RootRef{false});
    case Kind::kCapRoot:
      return Value(RootRef{true});
    case Kind::kVar:
      return act.slots[n.slot];
    case Kind::kIndex:
    case Kind::kHas:
    case Kind::kIn:
      return EvalMembership(n, act);
    case Kind::kNot:
    case Kind::kNeg:
      return EvalUnary(n, act);
    case Kind::kAnd:
    case Kind::kOr:
      return EvalLogical(n, act);
    case Kind::kCompare:
      return EvalCompare(n, act);
    case Kind::kArith:
      return EvalArith(n, act);
    case Kind::kCond: {
      absl::StatusOr<bool> c = EvalBool(*n.args[0], act, "_?_:_");
      if (!c.ok()) return c.status();
      return Eval(*n.args[*c ? 1 : 2], act);
    }
    case Kind::kList:
    case Kind::kMapLit:
      return EvalAggregate(n, act);
    case Kind::kCall:
    case Kind::kMethod:
      return EvalCall(n, act);
    case Kind::kLoop:
      return EvalLoop(n, act);
    case Kind::kBind: {
      absl::StatusOr<Value> init = Eval(*n.args[0], act);
      if (!init.ok()) return init.status();
      act.slots[n.slot] = *std::move(init);
      return Eval(*n.args[1], act);
    }
  }
  return absl::InternalError("unknown CEL node");
}

}  // namespace

absl::StatusOr<Value> Evaluate(const Node& node, Activation& act) { return Eval(node, act); }

}  // namespace internal

absl::StatusOr<bool> CompiledSelector::Matches(const DeviceView& device) const {
  internal::Activation act;
  act.device = &device;
  act.slots.resize(static_cast<size_t>(slots_));
  act.cost_limit = cost_limit_;
  absl::StatusOr<internal::Value> v = internal::Evaluate(*root_, act);
  if (!v.ok()) return absl::InvalidArgumentError(v.status().message());
  if (const bool* b = std::get_if<bool>(&*v)) return *b;
  return absl::InvalidArgumentError(absl::StrCat("CEL result of type ", internal::ValueTypeName(*v),
                                                 " could not be converted to bool"));
}

}  // namespace kdp::manager::scheduling
