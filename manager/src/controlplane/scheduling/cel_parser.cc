// The grammar of cel_parser.h: operators by precedence, member access, primaries.
#include "manager/src/controlplane/scheduling/cel_parser.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
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
#include "manager/src/controlplane/scheduling/cel_lexer.h"
#include "manager/src/controlplane/scheduling/cel_parser.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling::internal {

bool IsDeviceMap(Type t) {
  return t == Type::kAttrRoot || t == Type::kCapRoot || t == Type::kAttrMap || t == Type::kCapMap;
}
bool IsMapType(Type t) { return IsDeviceMap(t) || t == Type::kMap; }
bool BoolOrDyn(Type t) { return t == Type::kBool || t == Type::kDyn; }

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

Type RangeVarType(Type t, Type elem) {
  if (t == Type::kList) return elem;
  if (IsDeviceMap(t)) return Type::kString;
  return Type::kDyn;
}

absl::StatusOr<NodePtr> Parser::Parse() {
  LexError lex_error;
  if (!internal::Lex(expr_, &tokens_, &lex_error)) {
    Fail(lex_error.what, lex_error.column, lex_error.supported);
    return error_;
  }
  NodePtr root = ParseExpr();
  if (!error_.ok()) return error_;
  const Token& t = Peek();
  if (t.kind != TokenKind::kEnd) {
    Fail(absl::StrCat("syntax error: unexpected ", Describe(t)), t.column);
    return error_;
  }
  if (!BoolOrDyn(root->type)) {
    Fail(absl::StrCat("must evaluate to bool or the unknown type, not ",
                      TypeName(root->type, root->elem)),
         1);
    return error_;
  }
  return root;
}

std::string Parser::Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEnd:
      return "end of expression";
    case TokenKind::kString:
      return "string literal";
    case TokenKind::kInt:
      return absl::StrCat("number ", t.text);
    default:
      return absl::StrCat("\"", t.text, "\"");
  }
}

// Consumes `op` or records a syntax error.
bool Parser::Expect(std::string_view op) {
  if (IsOp(Peek(), op)) {
    Next();
    return true;
  }
  Fail(absl::StrCat("syntax error: expected \"", std::string(op), "\", got ", Describe(Peek())),
       Peek().column);
  return false;
}

NodePtr Parser::Overload(const std::string& op, int column, const std::vector<const Node*>& args) {
  std::string list;
  for (const Node* a : args) {
    absl::StrAppend(&list, list.empty() ? "" : ", ", TypeName(a->type, a->elem));
  }
  return Error(absl::StrCat("found no matching overload for '", op, "' applied to '(", list, ")'"),
               column);
}

// c ? a : b. The branches must have one type (or one of them be dyn), as cel-go checks.
NodePtr Parser::ParseExpr() {
  NodePtr cond = ParseOr();
  if (!cond || !IsOp(Peek(), "?")) return cond;
  DepthScope scope(&depth_);
  const int column = Next().column;
  if (!scope.Add()) return TooDeep(column);
  NodePtr yes = ParseOr();
  if (!yes || !Expect(":")) return nullptr;
  NodePtr no = ParseExpr();
  if (!no) return nullptr;
  const bool same = yes->type == no->type && yes->elem == no->elem;
  if (!BoolOrDyn(cond->type) || (!same && yes->type != Type::kDyn && no->type != Type::kDyn)) {
    return Overload("_?_:_", column, {cond.get(), yes.get(), no.get()});
  }
  NodePtr n = Make(Kind::kCond, same ? yes->type : Type::kDyn, column);
  n->elem = same ? yes->elem : Type::kDyn;
  n->args.push_back(std::move(cond));
  n->args.push_back(std::move(yes));
  n->args.push_back(std::move(no));
  return n;
}

// `operands` joined by `kind` (&& or ||), split in the middle (cel-go's balancer). The
// operators are associative, and CEL's error commutativity makes the result the same.
NodePtr Parser::Balance(Kind kind, std::vector<NodePtr>& operands, const std::vector<int>& columns,
                        size_t lo, size_t hi) {
  if (lo == hi) return std::move(operands[lo]);
  const size_t mid = (lo + hi + 1) / 2;  // operands[mid] follows the operator columns[mid - 1]
  NodePtr n = Make(kind, Type::kBool, columns[mid - 1]);
  n->args.push_back(Balance(kind, operands, columns, lo, mid - 1));
  n->args.push_back(Balance(kind, operands, columns, mid, hi));
  return n;
}

// A chain of `next` operands joined by `op`, type-checked left to right as the left-nested
// form would be (the first failure reported at its operator), then balanced.
template <typename ParseOperand>
NodePtr Parser::ParseLogical(Kind kind, const char* token, const std::string& op,
                             ParseOperand parse_operand) {
  NodePtr first = parse_operand();
  if (!first || !IsOp(Peek(), token)) return first;
  std::vector<NodePtr> operands;
  std::vector<int> columns;
  Node left;  // the type of the chain so far, for the message
  left.type = first->type;
  left.elem = first->elem;
  operands.push_back(std::move(first));
  while (IsOp(Peek(), token)) {
    const int column = Next().column;
    NodePtr right = parse_operand();
    if (!right) return nullptr;
    if (!BoolOrDyn(left.type) || !BoolOrDyn(right->type)) {
      return Overload(op, column, {&left, right.get()});
    }
    left.type = Type::kBool;
    operands.push_back(std::move(right));
    columns.push_back(column);
  }
  return Balance(kind, operands, columns, 0, operands.size() - 1);
}

NodePtr Parser::ParseOr() {
  return ParseLogical(Kind::kOr, "||", "_||_", [this] { return ParseAnd(); });
}

NodePtr Parser::ParseAnd() {
  return ParseLogical(Kind::kAnd, "&&", "_&&_", [this] { return ParseRelation(); });
}

NodePtr Parser::ParseRelation() {
  DepthScope scope(&depth_);
  NodePtr left = ParseAdditive();
  while (left) {
    const Token& t = Peek();
    const bool relop =
        t.kind == TokenKind::kOperator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                           t.text == "<=" || t.text == ">" || t.text == ">=");
    const bool in = t.kind == TokenKind::kIdent && t.text == "in";
    if (!relop && !in) break;
    std::string op = t.text;
    int column = Next().column;
    if (!scope.Add()) return TooDeep(column);
    NodePtr right = ParseAdditive();
    if (!right) return nullptr;
    left = in ? In(column, std::move(left), std::move(right))
              : Compare(op, column, std::move(left), std::move(right));
  }
  return left;
}

// A left-nested chain of `ops` over `parse_operand`, each operand after the first a level.
template <typename ParseOperand>
NodePtr Parser::ParseArithChain(std::initializer_list<std::string_view> ops,
                                ParseOperand parse_operand) {
  DepthScope scope(&depth_);
  NodePtr left = parse_operand();
  while (left) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kOperator || std::find(ops.begin(), ops.end(), t.text) == ops.end()) {
      break;
    }
    const std::string op = t.text;
    const int column = Next().column;
    if (!scope.Add()) return TooDeep(column);
    NodePtr right = parse_operand();
    if (!right) return nullptr;
    left = Arith(op, column, std::move(left), std::move(right));
  }
  return left;
}

NodePtr Parser::ParseAdditive() {
  return ParseArithChain({"+", "-"}, [this] { return ParseMultiplicative(); });
}

NodePtr Parser::ParseMultiplicative() {
  return ParseArithChain({"*", "/", "%"}, [this] { return ParseUnary(); });
}

// int op int; also string + string and list + list.
NodePtr Parser::Arith(const std::string& op, int column, NodePtr l, NodePtr r) {
  auto allowed = [&](Type t) {
    return t == Type::kInt || t == Type::kDyn ||
           (op == "+" && (t == Type::kString || t == Type::kList));
  };
  const Type a = l->type;
  const Type b = r->type;
  if (!allowed(a) || !allowed(b) || (a != Type::kDyn && b != Type::kDyn && a != b)) {
    return Overload(absl::StrCat("_", op, "_"), column, {l.get(), r.get()});
  }
  NodePtr n = Make(Kind::kArith, a != Type::kDyn ? a : b, column);
  if (n->type == Type::kList) n->elem = l->elem == r->elem ? l->elem : Type::kDyn;
  n->op = op;
  n->args.push_back(std::move(l));
  n->args.push_back(std::move(r));
  return n;
}

NodePtr Parser::In(int column, NodePtr key, NodePtr container) {
  const Type c = container->type;
  const bool device_map = IsDeviceMap(c);
  if ((c != Type::kList && c != Type::kMap && c != Type::kDyn && !device_map) ||
      (device_map && key->type != Type::kString && key->type != Type::kDyn)) {
    return Overload("@in", column, {key.get(), container.get()});
  }
  NodePtr n = Make(Kind::kIn, Type::kBool, column);
  n->args.push_back(std::move(key));
  n->args.push_back(std::move(container));
  return n;
}

NodePtr Parser::Compare(const std::string& op, int column, NodePtr l, NodePtr r) {
  const std::string name = absl::StrCat("_", op, "_");
  const Type a = l->type;
  const Type b = r->type;
  if (IsDeviceMap(a) || IsDeviceMap(b) || a == Type::kDevice || b == Type::kDevice) {
    return Overload(name, column, {l.get(), r.get()});
  }
  if (a != Type::kDyn && b != Type::kDyn && a != b) {
    return Overload(name, column, {l.get(), r.get()});
  }
  if (op != "==" && op != "!=") {
    auto orderable = [](Type t) {
      return t == Type::kInt || t == Type::kString || t == Type::kBool || t == Type::kDyn;
    };
    if (!orderable(a) || !orderable(b)) {
      Overload(name, column, {l.get(), r.get()});
      if (a == Type::kQuantity || a == Type::kSemver) {
        error_ = absl::InvalidArgumentError(
            absl::StrCat(error_.message(),
                         "; compare quantities and versions with compareTo(), "
                         "isGreaterThan() or isLessThan()"));
      }
      return nullptr;
    }
  }
  NodePtr n = Make(Kind::kCompare, Type::kBool, column);
  n->op = op;
  n->args.push_back(std::move(l));
  n->args.push_back(std::move(r));
  return n;
}

NodePtr Parser::ParseUnary() {
  const Token& t = Peek();
  DepthScope scope(&depth_);
  if (!scope.Add()) return TooDeep(t.column);
  if (IsOp(t, "!")) {
    int column = Next().column;
    NodePtr operand = ParseUnary();
    if (!operand) return nullptr;
    if (!BoolOrDyn(operand->type)) return Overload("!_", column, {operand.get()});
    NodePtr n = Make(Kind::kNot, Type::kBool, column);
    n->args.push_back(std::move(operand));
    return n;
  }
  if (IsOp(t, "-")) {
    int column = Next().column;
    const Token& lit = Peek();
    if (lit.kind == TokenKind::kInt) {
      // Fold "-<int>" into one literal so that -9223372036854775808 is representable.
      Next();
      constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
      if (lit.int_value > kMinMagnitude) return Error("invalid int literal", lit.column);
      NodePtr n = Make(Kind::kLiteral, Type::kInt, column);
      n->literal = lit.int_value == kMinMagnitude ? std::numeric_limits<int64_t>::min()
                                                  : -static_cast<int64_t>(lit.int_value);
      return ParseMemberSuffix(std::move(n));
    }
    NodePtr operand = ParseUnary();
    if (!operand) return nullptr;
    if (operand->type != Type::kInt && operand->type != Type::kDyn) {
      return Overload("-_", column, {operand.get()});
    }
    NodePtr n = Make(Kind::kNeg, Type::kInt, column);
    n->args.push_back(std::move(operand));
    return n;
  }
  NodePtr primary = ParsePrimary();
  if (!primary) return nullptr;
  return ParseMemberSuffix(std::move(primary));
}

NodePtr Parser::ParseMemberSuffix(NodePtr node) {
  while (node) {
    const Token& t = Peek();
    if (IsOp(t, ".")) {
      Next();
      if (IsOp(Peek(), "?")) {
        return Error("unsupported optional field selection \".?\"", Peek().column,
                     "kdp supports has() and \"in\" to test for a key");
      }
      const Token& name = Next();
      if (name.kind != TokenKind::kIdent) {
        return Error(
            absl::StrCat("syntax error: expected a field or method name, got ", Describe(name)),
            name.column);
      }
      if (IsOp(Peek(), "(")) {
        node = ParseMethod(std::move(node), name);
      } else {
        node = Select(std::move(node), name.text, name.column);
      }
    } else if (IsOp(t, "[")) {
      int column = Next().column;
      if (IsOp(Peek(), "?")) {
        return Error("unsupported optional index \"[?\"", Peek().column,
                     "kdp supports has() and \"in\" to test for a key");
      }
      NodePtr key = ParseExpr();
      if (!key || !Expect("]")) return nullptr;
      node = Index(std::move(node), std::move(key), column, false);
    } else {
      break;
    }
  }
  return node;
}

// container[key] (from_select: container.key).
NodePtr Parser::Index(NodePtr container, NodePtr key, int column, bool from_select) {
  Type result = Type::kDyn;
  Type elem = Type::kDyn;
  bool key_ok = key->type == Type::kString || key->type == Type::kDyn;
  switch (container->type) {
    case Type::kAttrRoot:
      result = Type::kAttrMap;
      break;
    case Type::kCapRoot:
      result = Type::kCapMap;
      break;
    case Type::kAttrMap:
      break;
    case Type::kCapMap:
      result = Type::kQuantity;
      break;
    case Type::kMap:
      result = container->elem;
      key_ok = true;
      break;
    case Type::kDyn:
      key_ok = true;
      break;
    case Type::kList:
      if (!from_select) {
        result = container->elem;
        key_ok = key->type == Type::kInt || key->type == Type::kDyn;
        break;
      }
      [[fallthrough]];
    default:
      if (from_select) {
        return Error(absl::StrCat("type '", TypeName(container->type, container->elem),
                                  "' does not support field selection"),
                     column);
      }
      return Overload("_[_]", column, {container.get(), key.get()});
  }
  if (!key_ok) return Overload("_[_]", column, {container.get(), key.get()});
  NodePtr n = Make(Kind::kIndex, result, column);
  n->elem = elem;
  n->from_select = from_select;
  n->args.push_back(std::move(container));
  n->args.push_back(std::move(key));
  return n;
}

NodePtr Parser::Select(NodePtr receiver, const std::string& field, int column) {
  if (receiver->type == Type::kDevice) {
    if (field == "driver") return Make(Kind::kDriver, Type::kString, column);
    if (field == "attributes") return Make(Kind::kAttrRoot, Type::kAttrRoot, column);
    if (field == "capacity") return Make(Kind::kCapRoot, Type::kCapRoot, column);
    if (field == "allowMultipleAllocations") {
      return Make(Kind::kAllowMultiple, Type::kBool, column);
    }
    return Error(absl::StrCat("undefined field \"", field, "\""), column,
                 "device has the fields driver, attributes, capacity and "
                 "allowMultipleAllocations");
  }
  NodePtr key = Make(Kind::kLiteral, Type::kString, column);
  key->literal = field;
  return Index(std::move(receiver), std::move(key), column, true);
}

NodePtr Parser::ParsePrimary() {
  const Token& t = Next();
  switch (t.kind) {
    case TokenKind::kInt: {
      if (t.int_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error("invalid int literal", t.column);
      }
      NodePtr n = Make(Kind::kLiteral, Type::kInt, t.column);
      n->literal = static_cast<int64_t>(t.int_value);
      return n;
    }
    case TokenKind::kString: {
      NodePtr n = Make(Kind::kLiteral, Type::kString, t.column);
      n->literal = t.text;
      return n;
    }
    case TokenKind::kIdent:
      return ParseIdent(t);
    case TokenKind::kOperator:
      if (t.text == "(") {
        NodePtr inner = ParseExpr();
        if (!inner || !Expect(")")) return nullptr;
        return inner;
      }
      if (t.text == "[" || t.text == "{") return ParseAggregate(t);
      return Error(absl::StrCat("syntax error: unexpected ", Describe(t)), t.column);
    case TokenKind::kEnd:
      return Error("syntax error: unexpected end of expression", t.column);
  }
  return Error("syntax error", t.column);
}

NodePtr Parser::ParseIdent(const Token& t) {
  if (t.text == "true" || t.text == "false") {
    NodePtr n = Make(Kind::kLiteral, Type::kBool, t.column);
    n->literal = t.text == "true";
    return n;
  }
  for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
    if (it->name == t.text) {
      NodePtr n = Make(Kind::kVar, it->type, t.column);
      n->elem = it->elem;
      n->slot = it->slot;
      n->op = t.text;
      return n;
    }
  }
  if (t.text == "null") {
    return Error("unsupported literal null", t.column,
                 "kdp supports int, string, bool, list and map literals");
  }
  if (t.text == "device") return Make(Kind::kDevice, Type::kDevice, t.column);
  if (IsOp(Peek(), "(")) return ParseFunction(t, t.text);
  if (IsOp(Peek(), ".") && Peek(1).kind == TokenKind::kIdent && IsOp(Peek(2), "(")) {
    // A namespaced function: cel.bind(...), sets.contains(...), optional.of(...).
    const std::string name = absl::StrCat(t.text, ".", Peek(1).text);
    Next();
    Next();
    if (name == "cel.bind") return ParseBind(t);
    return ParseFunction(t, name);
  }
  return Error(absl::StrCat("undeclared reference to \"", t.text, "\""), t.column,
               "kdp supports the variable device");
}

}  // namespace kdp::manager::scheduling::internal
