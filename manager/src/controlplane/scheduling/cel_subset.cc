#include "manager/src/controlplane/scheduling/cel_subset.h"

#include <algorithm>
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
#include "manager/src/controlplane/scheduling/cel_lexer.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling {

namespace {

using internal::Kind;
using internal::LexError;
using internal::Node;
using internal::Token;
using internal::TokenKind;
using internal::Type;
using internal::Value;
using NodePtr = std::unique_ptr<Node>;

constexpr char kSupportedFunctions[] =
    "kdp supports the functions quantity(), semver(), has() and the methods compareTo(), "
    "isGreaterThan(), isLessThan(), major(), minor(), patch(), startsWith(), endsWith(), "
    "contains(), matches()";
constexpr char kSupportedOperators[] =
    "kdp supports ==, !=, <, <=, >, >=, in, &&, ||, ! and unary -";

std::string TypeName(Type t) {
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
  }
  return "unknown";
}

bool IsMap(Type t) {
  return t == Type::kAttrRoot || t == Type::kCapRoot || t == Type::kAttrMap || t == Type::kCapMap;
}

// Go's %q for the expression in messages.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class Parser {
 public:
  explicit Parser(std::string_view expression) : expr_(expression) {}

  absl::StatusOr<NodePtr> Parse() {
    LexError lex_error;
    if (!internal::Lex(expr_, &tokens_, &lex_error)) {
      Fail(lex_error.what, lex_error.column, lex_error.supported);
      return error_;
    }
    NodePtr root = ParseOr();
    if (!error_.ok()) return error_;
    const Token& t = Peek();
    if (t.kind != TokenKind::kEnd) {
      if (t.text == "?") {
        Fail("unsupported conditional operator \"?\"", t.column, kSupportedOperators);
        return error_;
      }
      Fail(absl::StrCat("syntax error: unexpected ", Describe(t)), t.column);
      return error_;
    }
    if (root->type != Type::kBool && root->type != Type::kDyn) {
      Fail(absl::StrCat("must evaluate to bool or the unknown type, not ", TypeName(root->type)),
           1);
      return error_;
    }
    return root;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsOp(const Token& t, std::string_view op) const {
    return t.kind == TokenKind::kOperator && t.text == op;
  }

  static std::string Describe(const Token& t) {
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

  void Fail(const std::string& what, int column, const std::string& supported = "") {
    if (error_.ok()) {
      std::string msg = absl::StrCat("selector ", Quote(expr_), ": ", what);
      if (column > 0) absl::StrAppend(&msg, " at column ", column);
      if (!supported.empty()) absl::StrAppend(&msg, "; ", supported);
      error_ = absl::InvalidArgumentError(msg);
    }
  }
  // Returns nullptr after recording the error.
  NodePtr Error(const std::string& what, int column, const std::string& supported = "") {
    Fail(what, column, supported);
    return nullptr;
  }

  static NodePtr Make(Kind kind, Type type, int column) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->type = type;
    n->column = column;
    return n;
  }

  NodePtr Overload(const std::string& op, int column, const std::vector<Type>& types) {
    std::string list;
    for (Type t : types) absl::StrAppend(&list, list.empty() ? "" : ", ", TypeName(t));
    return Error(
        absl::StrCat("found no matching overload for '", op, "' applied to '(", list, ")'"),
        column);
  }

  // cel-go's parser refuses expressions nested deeper than 250 levels (MaxRecursionDepth);
  // kdp's parser, evaluator and tree destructor recurse once per level, so the same limit bounds
  // their stack. Each parenthesis, unary operator, call argument, index and each operand of a
  // relation chain ("a == b == c" nests as cel-go's grammar nests it) is a level; && and || chains
  // are built balanced, as cel-go builds them, so they add only log2(operands) levels.
  static constexpr int kMaxRecursionDepth = 250;

  // Adds levels to depth_ for as long as it lives.
  class DepthScope {
   public:
    explicit DepthScope(int* depth) : depth_(depth) {}
    DepthScope(const DepthScope&) = delete;
    DepthScope& operator=(const DepthScope&) = delete;
    ~DepthScope() { *depth_ -= added_; }
    // One level more; false once past the limit.
    bool Add() {
      ++added_;
      return ++*depth_ <= kMaxRecursionDepth;
    }

   private:
    int* const depth_;
    int added_ = 0;
  };

  NodePtr TooDeep(int column) {
    return Error(absl::StrCat("expression recursion limit exceeded: more than ", kMaxRecursionDepth,
                              " levels of nesting"),
                 column);
  }

  // `operands` joined by `kind` (&& or ||), split in the middle (cel-go's balancer). The
  // operators are associative, and CEL's error commutativity makes the result the same.
  NodePtr Balance(Kind kind, std::vector<NodePtr>& operands, const std::vector<int>& columns,
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
  NodePtr ParseLogical(Kind kind, const char* token, const std::string& op,
                       ParseOperand parse_operand) {
    NodePtr first = parse_operand();
    if (!first || !IsOp(Peek(), token)) return first;
    auto ok = [](Type t) { return t == Type::kBool || t == Type::kDyn; };
    std::vector<NodePtr> operands;
    std::vector<int> columns;
    Type left = first->type;
    operands.push_back(std::move(first));
    while (IsOp(Peek(), token)) {
      const int column = Next().column;
      NodePtr right = parse_operand();
      if (!right) return nullptr;
      if (!ok(left) || !ok(right->type)) return Overload(op, column, {left, right->type});
      left = Type::kBool;
      operands.push_back(std::move(right));
      columns.push_back(column);
    }
    return Balance(kind, operands, columns, 0, operands.size() - 1);
  }

  NodePtr ParseOr() {
    return ParseLogical(Kind::kOr, "||", "_||_", [this] { return ParseAnd(); });
  }

  NodePtr ParseAnd() {
    return ParseLogical(Kind::kAnd, "&&", "_&&_", [this] { return ParseRelation(); });
  }

  NodePtr ParseRelation() {
    DepthScope scope(&depth_);
    NodePtr left = ParseUnary();
    while (left) {
      const Token& t = Peek();
      const bool relop =
          t.kind == TokenKind::kOperator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                             t.text == "<=" || t.text == ">" || t.text == ">=");
      const bool in = t.kind == TokenKind::kIdent && t.text == "in";
      if (!relop && !in) {
        if (t.kind == TokenKind::kOperator &&
            (t.text == "+" || t.text == "-" || t.text == "*" || t.text == "/" || t.text == "%")) {
          return Error(absl::StrCat("unsupported operator \"", t.text, "\""), t.column,
                       kSupportedOperators);
        }
        if (IsOp(t, "?")) {
          return Error("unsupported conditional operator \"?\"", t.column, kSupportedOperators);
        }
        break;
      }
      std::string op = t.text;
      int column = Next().column;
      if (!scope.Add()) return TooDeep(column);
      NodePtr right = ParseUnary();
      if (!right) return nullptr;
      left = in ? In(column, std::move(left), std::move(right))
                : Compare(op, column, std::move(left), std::move(right));
    }
    return left;
  }

  NodePtr In(int column, NodePtr key, NodePtr map) {
    if (!IsMap(map->type) || (key->type != Type::kString && key->type != Type::kDyn)) {
      return Overload("@in", column, {key->type, map->type});
    }
    NodePtr n = Make(Kind::kIn, Type::kBool, column);
    n->args.push_back(std::move(key));
    n->args.push_back(std::move(map));
    return n;
  }

  NodePtr Compare(const std::string& op, int column, NodePtr l, NodePtr r) {
    const std::string name = absl::StrCat("_", op, "_");
    const Type a = l->type;
    const Type b = r->type;
    if (IsMap(a) || IsMap(b) || a == Type::kDevice || b == Type::kDevice) {
      return Overload(name, column, {a, b});
    }
    if (a != Type::kDyn && b != Type::kDyn && a != b) return Overload(name, column, {a, b});
    if (op != "==" && op != "!=") {
      auto orderable = [](Type t) {
        return t == Type::kInt || t == Type::kString || t == Type::kBool || t == Type::kDyn;
      };
      if (!orderable(a) || !orderable(b)) {
        Overload(name, column, {a, b});
        error_ = absl::InvalidArgumentError(
            absl::StrCat(error_.message(),
                         "; compare quantities and versions with compareTo(), isGreaterThan() "
                         "or isLessThan()"));
        return nullptr;
      }
    }
    NodePtr n = Make(Kind::kCompare, Type::kBool, column);
    n->op = op;
    n->args.push_back(std::move(l));
    n->args.push_back(std::move(r));
    return n;
  }

  NodePtr ParseUnary() {
    const Token& t = Peek();
    DepthScope scope(&depth_);
    if (!scope.Add()) return TooDeep(t.column);
    if (IsOp(t, "!")) {
      int column = Next().column;
      NodePtr operand = ParseUnary();
      if (!operand) return nullptr;
      if (operand->type != Type::kBool && operand->type != Type::kDyn) {
        return Overload("!_", column, {operand->type});
      }
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
        return Overload("-_", column, {operand->type});
      }
      NodePtr n = Make(Kind::kNeg, Type::kInt, column);
      n->args.push_back(std::move(operand));
      return n;
    }
    return ParseMember();
  }

  NodePtr ParseMember() {
    NodePtr primary = ParsePrimary();
    if (!primary) return nullptr;
    return ParseMemberSuffix(std::move(primary));
  }

  NodePtr ParseMemberSuffix(NodePtr node) {
    while (node) {
      const Token& t = Peek();
      if (IsOp(t, ".")) {
        Next();
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
        NodePtr key = ParseOr();
        if (!key) return nullptr;
        if (!IsOp(Peek(), "]")) {
          return Error(absl::StrCat("syntax error: expected \"]\", got ", Describe(Peek())),
                       Peek().column);
        }
        Next();
        node = Index(std::move(node), std::move(key), column, false);
      } else {
        break;
      }
    }
    return node;
  }

  // map[key] (from_select: map.key).
  NodePtr Index(NodePtr map, NodePtr key, int column, bool from_select) {
    Type result;
    switch (map->type) {
      case Type::kAttrRoot:
        result = Type::kAttrMap;
        break;
      case Type::kCapRoot:
        result = Type::kCapMap;
        break;
      case Type::kAttrMap:
        result = Type::kDyn;
        break;
      case Type::kCapMap:
        result = Type::kQuantity;
        break;
      default:
        if (from_select) {
          return Error(
              absl::StrCat("type '", TypeName(map->type), "' does not support field selection"),
              column);
        }
        return Overload("_[_]", column, {map->type, key->type});
    }
    if (key->type != Type::kString && key->type != Type::kDyn) {
      return Overload("_[_]", column, {map->type, key->type});
    }
    NodePtr n = Make(Kind::kIndex, result, column);
    n->from_select = from_select;
    n->args.push_back(std::move(map));
    n->args.push_back(std::move(key));
    return n;
  }

  NodePtr Select(NodePtr receiver, const std::string& field, int column) {
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

  // Parses "(" args ")" after the current token.
  bool ParseArgs(std::vector<NodePtr>* args) {
    Next();  // "("
    if (IsOp(Peek(), ")")) {
      Next();
      return true;
    }
    while (true) {
      NodePtr arg = ParseOr();
      if (!arg) return false;
      args->push_back(std::move(arg));
      if (IsOp(Peek(), ",")) {
        Next();
        continue;
      }
      if (IsOp(Peek(), ")")) {
        Next();
        return true;
      }
      Fail(absl::StrCat("syntax error: expected \",\" or \")\", got ", Describe(Peek())),
           Peek().column);
      return false;
    }
  }

  NodePtr ParseMethod(NodePtr receiver, const Token& name) {
    static const std::vector<std::string> kMethods = {
        "compareTo", "isGreaterThan", "isLessThan", "major",    "minor",
        "patch",     "startsWith",    "endsWith",   "contains", "matches"};
    if (std::find(kMethods.begin(), kMethods.end(), name.text) == kMethods.end()) {
      return Error(absl::StrCat("unsupported function \"", name.text, "\""), name.column,
                   kSupportedFunctions);
    }
    std::vector<NodePtr> args;
    if (!ParseArgs(&args)) return nullptr;
    const std::string& m = name.text;
    const Type rt = receiver->type;
    std::vector<Type> sig = {rt};
    for (const NodePtr& a : args) sig.push_back(a->type);
    auto overload_error = [&]() {
      std::string list;
      for (size_t i = 1; i < sig.size(); ++i) {
        absl::StrAppend(&list, i > 1 ? ", " : "", TypeName(sig[i]));
      }
      return Error(absl::StrCat("found no matching overload for '", m, "' applied to '",
                                TypeName(rt), ".(", list, ")'"),
                   name.column);
    };
    Type result;
    if (m == "compareTo" || m == "isGreaterThan" || m == "isLessThan") {
      if (args.size() != 1) return overload_error();
      const Type at = args[0]->type;
      const bool rt_ok = rt == Type::kQuantity || rt == Type::kSemver || rt == Type::kDyn;
      const bool at_ok = at == Type::kQuantity || at == Type::kSemver || at == Type::kDyn;
      if (!rt_ok || !at_ok || (rt != Type::kDyn && at != Type::kDyn && rt != at)) {
        return overload_error();
      }
      result = m == "compareTo" ? Type::kInt : Type::kBool;
    } else if (m == "major" || m == "minor" || m == "patch") {
      if (!args.empty() || (rt != Type::kSemver && rt != Type::kDyn)) return overload_error();
      result = Type::kInt;
    } else {  // string methods
      if (args.size() != 1 || (rt != Type::kString && rt != Type::kDyn) ||
          (args[0]->type != Type::kString && args[0]->type != Type::kDyn)) {
        return overload_error();
      }
      result = Type::kBool;
    }
    NodePtr n = Make(Kind::kMethod, result, name.column);
    n->op = m;
    if (m == "matches") {
      if (args[0]->kind != Kind::kLiteral) {
        return Error("matches() needs a string literal pattern", args[0]->column);
      }
      const std::string& pattern = std::get<std::string>(args[0]->literal);
      // RE2, as CEL's matches() (cel-go compiles patterns with RE2).
      RE2::Options options;
      options.set_log_errors(false);
      auto regex = std::make_shared<const RE2>(pattern, options);
      if (!regex->ok()) {
        return Error(
            absl::StrCat("invalid regular expression ", Quote(pattern), ": ", regex->error()),
            args[0]->column);
      }
      n->regex = std::move(regex);
    }
    n->args.push_back(std::move(receiver));
    for (NodePtr& a : args) n->args.push_back(std::move(a));
    return n;
  }

  NodePtr ParsePrimary() {
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
          NodePtr inner = ParseOr();
          if (!inner) return nullptr;
          if (!IsOp(Peek(), ")")) {
            return Error(absl::StrCat("syntax error: expected \")\", got ", Describe(Peek())),
                         Peek().column);
          }
          Next();
          return inner;
        }
        if (t.text == "[") {
          return Error("unsupported list literal", t.column,
                       "kdp supports int, string and bool literals");
        }
        if (t.text == "{") {
          return Error("unsupported map literal", t.column,
                       "kdp supports int, string and bool literals");
        }
        if (t.text == "+" || t.text == "*" || t.text == "/" || t.text == "%" || t.text == "?" ||
            t.text == ":") {
          return Error(absl::StrCat("unsupported operator \"", t.text, "\""), t.column,
                       kSupportedOperators);
        }
        return Error(absl::StrCat("syntax error: unexpected ", Describe(t)), t.column);
      case TokenKind::kEnd:
        return Error("syntax error: unexpected end of expression", t.column);
    }
    return Error("syntax error", t.column);
  }

  NodePtr ParseIdent(const Token& t) {
    if (t.text == "true" || t.text == "false") {
      NodePtr n = Make(Kind::kLiteral, Type::kBool, t.column);
      n->literal = t.text == "true";
      return n;
    }
    if (t.text == "null") {
      return Error("unsupported literal null", t.column,
                   "kdp supports int, string and bool literals");
    }
    if (t.text == "device") return Make(Kind::kDevice, Type::kDevice, t.column);
    if (IsOp(Peek(), "(")) return ParseFunction(t);
    if (IsOp(Peek(), ".") && Peek(1).kind == TokenKind::kIdent && IsOp(Peek(2), "(")) {
      // A namespaced function such as cel.bind(...).
      return Error(absl::StrCat("unsupported function \"", t.text, ".", Peek(1).text, "\""),
                   t.column, kSupportedFunctions);
    }
    return Error(absl::StrCat("undeclared reference to \"", t.text, "\""), t.column,
                 "kdp supports the variable device");
  }

  NodePtr ParseFunction(const Token& name) {
    const std::string& f = name.text;
    if (f != "quantity" && f != "semver" && f != "has") {
      return Error(absl::StrCat("unsupported function \"", f, "\""), name.column,
                   kSupportedFunctions);
    }
    std::vector<NodePtr> args;
    if (!ParseArgs(&args)) return nullptr;
    if (f == "has") {
      if (args.size() != 1 || args[0]->kind != Kind::kIndex || !args[0]->from_select ||
          (args[0]->args[0]->type != Type::kAttrMap && args[0]->args[0]->type != Type::kCapMap)) {
        return Error("invalid argument to has() macro", name.column,
                     "kdp supports has(device.attributes[\"<domain>\"].<id>) and "
                     "has(device.capacity[\"<domain>\"].<id>)");
      }
      NodePtr n = Make(Kind::kHas, Type::kBool, name.column);
      n->args = std::move(args[0]->args);
      return n;
    }
    if (args.size() != 1 || (args[0]->type != Type::kString && args[0]->type != Type::kDyn)) {
      std::string list;
      for (const NodePtr& a : args)
        absl::StrAppend(&list, list.empty() ? "" : ", ", TypeName(a->type));
      return Error(
          absl::StrCat("found no matching overload for '", f, "' applied to '(", list, ")'"),
          name.column);
    }
    const Type result = f == "quantity" ? Type::kQuantity : Type::kSemver;
    if (args[0]->kind == Kind::kLiteral) {
      // Fold literal conversions so that a typo is reported when compiling.
      const std::string& text = std::get<std::string>(args[0]->literal);
      NodePtr n = Make(Kind::kLiteral, result, name.column);
      if (f == "quantity") {
        absl::StatusOr<Quantity> q = Quantity::Parse(text);
        if (!q.ok()) return Error(std::string(q.status().message()), args[0]->column);
        n->literal = *q;
      } else {
        absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(text);
        if (!v.ok()) return Error(std::string(v.status().message()), args[0]->column);
        n->literal = *v;
      }
      return n;
    }
    NodePtr n = Make(Kind::kCall, result, name.column);
    n->op = f;
    n->args = std::move(args);
    return n;
  }

  std::string_view expr_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;  // levels of nesting entered (kMaxRecursionDepth)
  absl::Status error_;
};

}  // namespace

absl::StatusOr<DeviceView> DeviceView::Build(std::string_view driver,
                                             const resourceapi::Device& device) {
  DeviceView view;
  view.driver_ = std::string(driver);
  auto split = [&](const std::string& name) -> std::pair<std::string, std::string> {
    size_t slash = name.find('/');
    if (slash == std::string::npos) return {view.driver_, name};
    return {name.substr(0, slash), name.substr(slash + 1)};
  };
  for (const auto& [name, attr] : device.attributes) {
    AttributeValue value;
    if (attr.int_value) {
      value = *attr.int_value;
    } else if (attr.bool_value) {
      value = *attr.bool_value;
    } else if (attr.string_value) {
      value = *attr.string_value;
    } else if (attr.version_value) {
      absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(*attr.version_value);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute ", name, ": parse semantic version: ", v.status().message()));
      }
      value = *v;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute ", name, ": unsupported attribute value"));
    }
    auto [domain, id] = split(name);
    view.attributes_[domain][id] = std::move(value);
  }
  for (const auto& [name, cap] : device.capacity) {
    absl::StatusOr<Quantity> q = Quantity::Parse(cap.value);
    if (!q.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("capacity ", name, ": ", q.status().message()));
    }
    auto [domain, id] = split(name);
    view.capacity_[domain][id] = *q;
  }
  return view;
}

absl::StatusOr<CompiledSelector> CompiledSelector::Compile(std::string_view expression) {
  Parser parser(expression);
  absl::StatusOr<NodePtr> root = parser.Parse();
  if (!root.ok()) return root.status();
  return CompiledSelector(std::string(expression), std::shared_ptr<const Node>(*std::move(root)));
}

}  // namespace kdp::manager::scheduling
