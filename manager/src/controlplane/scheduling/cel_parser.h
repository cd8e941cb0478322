// Internal to cel_subset: the recursive-descent parser and type checker of selector expressions
// (the grammar is in cel_subset.h). It builds the checked tree of cel_ast.h; cel_parser.cc holds
// the operators and primaries, cel_parser_calls.cc the calls, macros and aggregate literals.
//
// Thread-safety: a Parser is used by one thread for one expression.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_PARSER_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_PARSER_H_

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"
#include "manager/src/controlplane/scheduling/cel_lexer.h"

namespace kdp::manager::scheduling::internal {

using NodePtr = std::unique_ptr<Node>;

inline constexpr char kSupportedFunctions[] =
    "kdp supports the functions quantity(), semver(), has(), size() and the methods listed in "
    "cel_subset.h (DRA's CEL environment without doubles, durations, optionals, formatting and the "
    "URL/IP/CIDR libraries)";

bool IsDeviceMap(Type t);
bool IsMapType(Type t);
bool BoolOrDyn(Type t);
// Go's %q for the expression in messages.
std::string Quote(std::string_view s);
// The iteration variable's type when a macro ranges over a value of type `t` (element `elem`):
// list elements, map keys.
Type RangeVarType(Type t, Type elem);

// Parses one expression: Parse() returns the checked tree or INVALID_ARGUMENT
//   selector "<expression>": <what> at column <N>[; <what is supported>]
class Parser {
 public:
  explicit Parser(std::string_view expression) : expr_(expression) {}

  absl::StatusOr<NodePtr> Parse();

  int slots() const { return slots_; }

 private:
  struct Variable {
    std::string name;
    int slot;
    Type type;
    Type elem;
  };

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

  static std::string Describe(const Token& t);

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
  // Consumes `op` or records a syntax error.
  bool Expect(std::string_view op);

  static NodePtr Make(Kind kind, Type type, int column) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->type = type;
    n->column = column;
    return n;
  }

  NodePtr Overload(const std::string& op, int column, const std::vector<const Node*>& args);

  // cel-go's parser refuses expressions nested deeper than 250 levels (MaxRecursionDepth);
  // kdp's parser, evaluator and tree destructor recurse once per level, so the same limit bounds
  // their stack. Each parenthesis, unary operator, call argument, index and each operand of a
  // relation or arithmetic chain ("a == b == c" nests as cel-go's grammar nests it) is a level;
  // && and || chains are built balanced, as cel-go builds them, so they add only
  // log2(operands) levels.
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

  // c ? a : b. The branches must have one type (or one of them be dyn), as cel-go checks.
  NodePtr ParseExpr();

  // `operands` joined by `kind` (&& or ||), split in the middle (cel-go's balancer). The
  // operators are associative, and CEL's error commutativity makes the result the same.
  NodePtr Balance(Kind kind, std::vector<NodePtr>& operands, const std::vector<int>& columns,
                  size_t lo, size_t hi);

  // A chain of `next` operands joined by `op`, type-checked left to right as the left-nested
  // form would be (the first failure reported at its operator), then balanced.
  template <typename ParseOperand>
  NodePtr ParseLogical(Kind kind, const char* token, const std::string& op,
                       ParseOperand parse_operand);

  NodePtr ParseOr();

  NodePtr ParseAnd();

  NodePtr ParseRelation();

  // A left-nested chain of `ops` over `parse_operand`, each operand after the first a level.
  template <typename ParseOperand>
  NodePtr ParseArithChain(std::initializer_list<std::string_view> ops, ParseOperand parse_operand);

  NodePtr ParseAdditive();
  NodePtr ParseMultiplicative();

  // int op int; also string + string and list + list.
  NodePtr Arith(const std::string& op, int column, NodePtr l, NodePtr r);

  NodePtr In(int column, NodePtr key, NodePtr container);

  NodePtr Compare(const std::string& op, int column, NodePtr l, NodePtr r);

  NodePtr ParseUnary();

  NodePtr ParseMemberSuffix(NodePtr node);

  // container[key] (from_select: container.key).
  NodePtr Index(NodePtr container, NodePtr key, int column, bool from_select);

  NodePtr Select(NodePtr receiver, const std::string& field, int column);

  // Parses a comma-separated list of expressions from the opening token up to `close`.
  bool ParseList(std::string_view close, std::vector<NodePtr>* args);
  bool ParseArgs(std::vector<NodePtr>* args) { return ParseList(")", args); }

  static bool IsMacro(const std::string& name);

  // The call's node once CheckFunction accepted it.
  NodePtr Call(Kind kind, const Token& name, std::vector<NodePtr> args);

  NodePtr ParseMethod(NodePtr receiver, const Token& name);

  // Declares `var` for the duration of parsing a macro's or cel.bind's body.
  int Declare(const Token& var, Type type, Type elem);

  // Reads a macro's variable name and the comma after it; false after recording the error.
  bool ParseVarName(const std::string& macro, Token* var);

  NodePtr ParseMacro(NodePtr range, const Token& name);

  // cel.bind(var, init, body), after "cel" "." "bind".
  NodePtr ParseBind(const Token& name);

  // [a, b, ...] and {k: v, ...}. Elements of different known types are refused, as the DRA
  // environment's HomogeneousAggregateLiterals does.
  NodePtr ParseAggregate(const Token& open);

  bool ParseMapEntries(std::vector<NodePtr>* args);

  NodePtr ParsePrimary();

  NodePtr ParseIdent(const Token& t);

  NodePtr ParseFunction(const Token& name, const std::string& f);

  NodePtr ParseHas(const Token& name);

  std::string_view expr_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;  // levels of nesting entered (kMaxRecursionDepth)
  int slots_ = 0;  // variables declared so far
  std::vector<Variable> scope_;
  absl::Status error_;
};

}  // namespace kdp::manager::scheduling::internal

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_PARSER_H_
