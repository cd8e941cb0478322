// The worst-case cost estimate of a checked selector: the cost cel_eval.cc would charge for the
// largest device the API admits. As upstream's sizeEstimator (k8s.io/dynamic-resource-allocation/
// cel/compile.go) declares them, a device has at most 32 domains, 32 attributes and 32 capacities
// per domain (ResourceSliceMaxAttributesAndCapacitiesPerDevice), attribute string values of at
// most 64 bytes (DeviceAttributeMaxValueLength), domains of 63 (DeviceMaxDomainLength), ids of 32
// (DeviceMaxIDLength) and a driver name of 63 (DriverNameMaxLength). Each value's size bound
// (string bytes, list elements, map entries) and its elements' bound flow through the tree, so
// a macro over a macro's result is bounded too; cel-go's estimator loses that bound and refuses
// such expressions where kdp accepts them.
#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "manager/src/controlplane/scheduling/cel_ast.h"

namespace kdp::manager::scheduling::internal {
namespace {

constexpr uint64_t kUnbounded = uint64_t{1} << 62;
constexpr uint64_t kMaxEntries = 32;
constexpr uint64_t kMaxAttributeValue = 64;
constexpr uint64_t kMaxDomain = 63;
constexpr uint64_t kMaxId = 32;
constexpr uint64_t kMaxDriver = 63;

uint64_t Add(uint64_t a, uint64_t b) { return std::min(kUnbounded, a + b); }
uint64_t Mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kUnbounded / b ? kUnbounded : a * b;
}

// What is known of a value: the cost of computing it, its size, its elements' (or keys') size.
struct Estimate {
  uint64_t cost = 0;
  uint64_t size = 0;
  uint64_t elem = kUnbounded;
};

class Estimator {
 public:
  explicit Estimator(int slots) : slots_(static_cast<size_t>(slots)) {}

  Estimate Visit(const Node& n) {
    std::vector<Estimate> args;
    if (n.kind != Kind::kLoop && n.kind != Kind::kBind) {
      for (const auto& a : n.args) args.push_back(Visit(*a));
    }
    Estimate e = Own(n, args);
    if (n.kind != Kind::kCond && n.kind != Kind::kLoop && n.kind != Kind::kBind) {
      for (const Estimate& a : args) e.cost = Add(e.cost, a.cost);
    }
    return e;
  }

 private:
  Estimate Own(const Node& n, const std::vector<Estimate>& args) {
    switch (n.kind) {
      case Kind::kLiteral:
        if (const auto* s = std::get_if<std::string>(&n.literal)) return {0, s->size(), 0};
        return {0, 0, 0};
      case Kind::kDevice:
        return {0, 0, 0};
      case Kind::kDriver:
        return {1, kMaxDriver, 0};
      case Kind::kAllowMultiple:
        return {1, 0, 0};
      case Kind::kAttrRoot:
      case Kind::kCapRoot:
        return {1, kMaxEntries, kMaxDomain};
      case Kind::kVar:
        return {1, slots_[n.slot].size, slots_[n.slot].elem};
      case Kind::kIndex:
        return Index(n, args);
      case Kind::kHas:
        return {1, 0, 0};
      case Kind::kIn:
        return {Add(1, args[1].size), 0, 0};
      case Kind::kNot:
      case Kind::kNeg:
        return {1, 0, 0};
      case Kind::kAnd:
      case Kind::kOr:
        return {0, 0, 0};
      case Kind::kCompare:
        return {Add(1, TraversalCost(std::min(args[0].size, args[1].size))), 0, 0};
      case Kind::kArith:
        return Arith(n, args);
      case Kind::kCond:
        return {Add(args[0].cost, std::max(args[1].cost, args[2].cost)),
                std::max(args[1].size, args[2].size), std::max(args[1].elem, args[2].elem)};
      case Kind::kList:
      case Kind::kMapLit:
        return Aggregate(n, args);
      case Kind::kCall:
      case Kind::kMethod:
        return Call(n, args);
      case Kind::kLoop:
        return Loop(n);
      case Kind::kBind: {
        const Estimate init = Visit(*n.args[0]);
        slots_[n.slot] = init;
        const Estimate body = Visit(*n.args[1]);
        return {Add(init.cost, body.cost), body.size, body.elem};
      }
    }
    return {kUnbounded, kUnbounded, kUnbounded};
  }

  static Estimate Index(const Node& n, const std::vector<Estimate>& args) {
    switch (n.args[0]->type) {
      case Type::kAttrRoot:
      case Type::kCapRoot:
        return {1, kMaxEntries, kMaxId};
      case Type::kAttrMap:
        return {1, kMaxAttributeValue, 0};
      case Type::kCapMap:
        return {1, 0, 0};
      default:
        // A list's element or a map literal's value: bounded by the elements' bound; a dyn
        // container may be an attribute map.
        return {1, std::max(args[0].elem, n.args[0]->type == Type::kDyn ? kMaxEntries : 0),
                kUnbounded};
    }
  }

  static Estimate Arith(const Node& n, const std::vector<Estimate>& args) {
    if (n.type == Type::kInt) return {1, 0, 0};
    const uint64_t size = Add(args[0].size, args[1].size);
    if (n.type == Type::kList) {
      return {Add(1, size), size, std::max(args[0].elem, args[1].elem)};
    }
    return {Add(1, TraversalCost(size)), size, 0};  // string, or dyn: the larger bound
  }

  static Estimate Aggregate(const Node& n, const std::vector<Estimate>& args) {
    Estimate e{n.kind == Kind::kList ? kListCreateCost : kMapCreateCost, 0, 0};
    for (const Estimate& a : args) e.elem = std::max(e.elem, a.size);
    e.size = n.kind == Kind::kList ? args.size() : args.size() / 2;
    return e;
  }

  static Estimate Call(const Node& n, const std::vector<Estimate>& args) {
    const std::string& f = n.op;
    const Estimate& recv = args.empty() ? Estimate{} : args[0];
    if (f.rfind("sets.", 0) == 0) return {Add(1, Mul(args[0].size, args[1].size)), 0, 0};
    if (n.kind == Kind::kCall || f == "size" || f == "compareTo" || f == "isGreaterThan" ||
        f == "isLessThan" || f == "major" || f == "minor" || f == "patch" || f == "sign" ||
        f == "isInteger" || f == "asInteger") {
      const bool to_string = f == "string" || f == "dyn";
      return {1, to_string ? std::max<uint64_t>(recv.size, 20) : 0, recv.elem};
    }
    if (n.args[0]->type == Type::kList) return ListCall(n, args);
    // A string method (or a dyn receiver, charged as a string of its bound).
    uint64_t cost = Add(1, TraversalCost(recv.size));
    if (f == "matches" || f == "find" || f == "findAll") {
      cost = Add(cost, Mul(TraversalCost(recv.size), 1 + args[1].size / 4));
    }
    if (f == "split" || f == "findAll") return {cost, Add(recv.size, 1), recv.size};
    if (f == "charAt") return {cost, 4, 0};
    if (f == "replace") {
      return {cost, Add(recv.size, Mul(Add(recv.size, 1), args[2].size)), 0};
    }
    if (f == "join" || f == "isSorted" || f == "sum" || f == "min" || f == "max" ||
        ((f == "indexOf" || f == "lastIndexOf") && n.args[0]->type == Type::kDyn)) {
      // A dyn receiver may be a list: charge the list's way too.
      const Estimate list = ListCall(n, args);
      return {Add(cost, list.cost), std::max(recv.size, list.size), kUnbounded};
    }
    return {cost, recv.size, 0};
  }

  static Estimate ListCall(const Node& n, const std::vector<Estimate>& args) {
    const Estimate& list = args[0];
    const uint64_t cost = Add(1, list.size);
    if (n.op == "join") {
      const uint64_t sep = args.size() == 2 ? args[1].size : 0;
      return {cost, Mul(list.size, Add(list.elem, sep)), 0};
    }
    if (n.op == "min" || n.op == "max") return {cost, list.elem, kUnbounded};
    return {cost, 0, 0};
  }

  Estimate Loop(const Node& n) {
    const Estimate range = Visit(*n.args[0]);
    slots_[n.slot] = Estimate{0, range.elem, kUnbounded};
    const bool collects = n.op == "map" || n.op == "filter";
    uint64_t per_element = kLoopStepCost + (collects ? kLoopAppendCost : 0);
    uint64_t result_elem = range.elem;
    for (size_t i = 1; i < n.args.size(); ++i) {
      const Estimate body = Visit(*n.args[i]);
      per_element = Add(per_element, body.cost);
      if (n.op == "map" && i + 1 == n.args.size()) result_elem = body.size;
    }
    const uint64_t cost = Add(range.cost, Mul(range.size, per_element));
    if (collects) return {cost, range.size, result_elem};
    return {cost, 0, 0};
  }

  std::vector<Estimate> slots_;
};

}  // namespace

uint64_t EstimateCost(const Node& root, int slots) { return Estimator(slots).Visit(root).cost; }

}  // namespace kdp::manager::scheduling::internal
