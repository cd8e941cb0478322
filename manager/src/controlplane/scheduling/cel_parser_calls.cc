// cel_parser.h's calls: functions and methods (checked by cel_functions.cc's CheckFunction),
// the macros has(), all(), exists(), exists_one(), map(), filter() and cel.bind(), and list and
// map literals.
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

// Parses a comma-separated list of expressions from the opening token up to `close`.
bool Parser::ParseList(std::string_view close, std::vector<NodePtr>* args) {
  Next();  // the opening token
  while (!IsOp(Peek(), close)) {
    NodePtr arg = ParseExpr();
    if (!arg) return false;
    args->push_back(std::move(arg));
    if (IsOp(Peek(), ",")) {
      Next();
      continue;
    }
    if (!IsOp(Peek(), close)) {
      Fail(absl::StrCat("syntax error: expected \",\" or \"", std::string(close), "\", got ",
                        Describe(Peek())),
           Peek().column);
      return false;
    }
  }
  Next();
  return true;
}

bool Parser::IsMacro(const std::string& name) {
  return name == "all" || name == "exists" || name == "exists_one" || name == "map" ||
         name == "filter";
}

// The call's node once CheckFunction accepted it.
NodePtr Parser::Call(Kind kind, const Token& name, std::vector<NodePtr> args) {
  std::vector<const Node*> view;
  for (const NodePtr& a : args) view.push_back(a.get());
  absl::StatusOr<internal::Signature> sig =
      internal::CheckFunction(name.text, kind == Kind::kMethod, view);
  if (!sig.ok()) return Error(std::string(sig.status().message()), name.column);
  NodePtr n = Make(kind, sig->result, name.column);
  n->elem = sig->elem;
  n->op = name.text;
  const bool regex = name.text == "matches" || name.text == "find" || name.text == "findAll";
  if (regex && kind == Kind::kMethod && args.size() >= 2 && args[1]->kind == Kind::kLiteral) {
    // A literal pattern is compiled once, and a bad one refused now (ValidateRegexLiterals).
    const std::string& pattern = std::get<std::string>(args[1]->literal);
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_shared<const RE2>(pattern, options);
    if (!re->ok()) {
      return Error(absl::StrCat("invalid regular expression ", Quote(pattern), ": ", re->error()),
                   args[1]->column);
    }
    n->regex = std::move(re);
  }
  n->args = std::move(args);
  return n;
}

NodePtr Parser::ParseMethod(NodePtr receiver, const Token& name) {
  if (IsMacro(name.text)) return ParseMacro(std::move(receiver), name);
  if (!internal::IsLibraryFunction(name.text, /*member=*/true)) {
    return Error(absl::StrCat("unsupported function \"", name.text, "\""), name.column,
                 kSupportedFunctions);
  }
  std::vector<NodePtr> args;
  args.push_back(std::move(receiver));
  if (!ParseArgs(&args)) return nullptr;
  return Call(Kind::kMethod, name, std::move(args));
}

// Declares `var` for the duration of parsing a macro's or cel.bind's body.
int Parser::Declare(const Token& var, Type type, Type elem) {
  scope_.push_back({var.text, slots_, type, elem});
  return slots_++;
}

// Reads the variable name of a macro; nullptr-equivalent false after recording the error.
bool Parser::ParseVarName(const std::string& macro, Token* var) {
  *var = Next();
  if (var->kind != TokenKind::kIdent) {
    Fail(absl::StrCat(macro, "() variable must be a simple name"), var->column);
    return false;
  }
  return Expect(",");
}

NodePtr Parser::ParseMacro(NodePtr range, const Token& name) {
  const std::string& m = name.text;
  Next();  // "("
  Token var;
  if (!ParseVarName(m, &var)) return nullptr;
  if (Peek().kind == TokenKind::kIdent && IsOp(Peek(1), ",") && m != "map") {
    return Error(absl::StrCat("unsupported two-variable comprehension ", m, "(", var.text, ", ",
                              Peek().text, ", ...)"),
                 name.column, "kdp supports the one-variable macros");
  }
  const Type rt = range->type;
  if (rt != Type::kList && rt != Type::kDyn && !IsMapType(rt)) {
    return Error(absl::StrCat("expression of type '", TypeName(rt, range->elem),
                              "' cannot be range of a comprehension (must be list, map, or "
                              "dynamic)"),
                 range->column);
  }
  const Type var_type = RangeVarType(rt, range->elem);
  NodePtr n = Make(Kind::kLoop, Type::kBool, name.column);
  n->op = m;
  n->slot = Declare(var, var_type, Type::kDyn);
  n->args.push_back(std::move(range));
  while (true) {
    NodePtr body = ParseExpr();
    if (!body) return nullptr;
    n->args.push_back(std::move(body));
    if (!IsOp(Peek(), ",")) break;
    Next();
  }
  scope_.pop_back();
  if (!Expect(")")) return nullptr;
  const size_t bodies = n->args.size() - 1;
  if (bodies != 1 && !(m == "map" && bodies == 2)) {
    return Error(absl::StrCat(m, "() takes a variable and ", m == "map" ? "1 or 2" : "1",
                              " expressions, got ", bodies),
                 name.column);
  }
  const bool has_predicate = m != "map" || bodies == 2;
  if (has_predicate && !BoolOrDyn(n->args[1]->type)) {
    return Error(absl::StrCat(m, "() predicate must be bool, not ",
                              TypeName(n->args[1]->type, n->args[1]->elem)),
                 n->args[1]->column);
  }
  if (m == "map") {
    n->type = Type::kList;
    n->elem = n->args.back()->type;
  } else if (m == "filter") {
    n->type = Type::kList;
    n->elem = var_type;
  }
  return n;
}

// cel.bind(var, init, body), after "cel" "." "bind".
NodePtr Parser::ParseBind(const Token& name) {
  Next();  // "("
  Token var;
  if (!ParseVarName("cel.bind", &var)) return nullptr;
  NodePtr init = ParseExpr();
  if (!init || !Expect(",")) return nullptr;
  NodePtr n = Make(Kind::kBind, Type::kDyn, name.column);
  n->slot = Declare(var, init->type, init->elem);
  NodePtr body = ParseExpr();
  scope_.pop_back();
  if (!body || !Expect(")")) return nullptr;
  n->type = body->type;
  n->elem = body->elem;
  n->args.push_back(std::move(init));
  n->args.push_back(std::move(body));
  return n;
}

// [a, b, ...] and {k: v, ...}. Elements of different known types are refused, as the DRA
// environment's HomogeneousAggregateLiterals does.
NodePtr Parser::ParseAggregate(const Token& open) {
  const bool is_map = open.text == "{";
  NodePtr n =
      Make(is_map ? Kind::kMapLit : Kind::kList, is_map ? Type::kMap : Type::kList, open.column);
  --pos_;  // ParseList consumes the opening token
  if (!is_map) {
    if (!ParseList("]", &n->args)) return nullptr;
  } else if (!ParseMapEntries(&n->args)) {
    return nullptr;
  }
  Type seen[2] = {Type::kDyn, Type::kDyn};  // key, value (lists: value only)
  for (size_t i = 0; i < n->args.size(); ++i) {
    const Node& e = *n->args[i];
    const size_t which = is_map && i % 2 == 0 ? 0 : 1;
    if (which == 0 && e.type != Type::kString && e.type != Type::kInt && e.type != Type::kBool &&
        e.type != Type::kDyn) {
      return Error(absl::StrCat("unsupported map key type ", TypeName(e.type, e.elem)), e.column,
                   "map keys are int, string or bool");
    }
    if (e.type == Type::kDyn) continue;
    if (seen[which] != Type::kDyn && seen[which] != e.type) {
      return Error(absl::StrCat("expected type '", TypeName(seen[which]), "' but found '",
                                TypeName(e.type, e.elem), "'"),
                   e.column);
    }
    seen[which] = e.type;
  }
  n->elem = seen[1];
  return n;
}

bool Parser::ParseMapEntries(std::vector<NodePtr>* args) {
  Next();  // "{"
  while (!IsOp(Peek(), "}")) {
    NodePtr key = ParseExpr();
    if (!key || !Expect(":")) return false;
    NodePtr value = ParseExpr();
    if (!value) return false;
    args->push_back(std::move(key));
    args->push_back(std::move(value));
    if (IsOp(Peek(), ",")) {
      Next();
    } else if (!IsOp(Peek(), "}")) {
      Fail(absl::StrCat("syntax error: expected \",\" or \"}\", got ", Describe(Peek())),
           Peek().column);
      return false;
    }
  }
  Next();
  return true;
}

NodePtr Parser::ParseFunction(const Token& name, const std::string& f) {
  if (f == "has") return ParseHas(name);
  if (!internal::IsLibraryFunction(f, /*member=*/false)) {
    return Error(absl::StrCat("unsupported function \"", f, "\""), name.column,
                 kSupportedFunctions);
  }
  std::vector<NodePtr> args;
  if (!ParseArgs(&args)) return nullptr;
  Token call = name;
  call.text = f;
  NodePtr n = Call(Kind::kCall, call, std::move(args));
  if (!n || (f != "quantity" && f != "semver") || n->args[0]->kind != Kind::kLiteral) return n;
  // Fold literal conversions so that a typo is reported when compiling.
  const std::string& text = std::get<std::string>(n->args[0]->literal);
  NodePtr lit = Make(Kind::kLiteral, n->type, name.column);
  if (f == "quantity") {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    if (!q.ok()) return Error(std::string(q.status().message()), n->args[0]->column);
    lit->literal = *q;
  } else {
    absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(text);
    if (!v.ok()) return Error(std::string(v.status().message()), n->args[0]->column);
    lit->literal = *v;
  }
  return lit;
}

NodePtr Parser::ParseHas(const Token& name) {
  std::vector<NodePtr> args;
  if (!ParseArgs(&args)) return nullptr;
  if (args.size() != 1 || args[0]->kind != Kind::kIndex || !args[0]->from_select ||
      args[0]->args[0]->type == Type::kList) {
    return Error("invalid argument to has() macro", name.column,
                 "kdp supports has(device.attributes[\"<domain>\"].<id>), "
                 "has(device.capacity[\"<domain>\"].<id>) and has(<map>.<key>)");
  }
  NodePtr n = Make(Kind::kHas, Type::kBool, name.column);
  n->args = std::move(args[0]->args);
  return n;
}

}  // namespace kdp::manager::scheduling::internal
