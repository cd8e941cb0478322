// Internal to cel_subset: splits a selector expression into tokens with their 1-based columns,
// rejecting the literal forms outside kdp's CEL subset (doubles, unsigned ints, bytes,
// triple-quoted strings) with a message naming the construct.
//
// Thread-safety: stateless function.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_LEXER_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kdp::manager::scheduling::internal {

enum class TokenKind { kIdent, kInt, kString, kOperator, kEnd };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;        // identifier, operator, or the decoded string literal
  uint64_t int_value = 0;  // kInt: the magnitude (a leading "-" is a separate token)
  int column = 0;          // 1-based, in characters
};

struct LexError {
  std::string what;       // "unsupported double literal", "unterminated string literal", ...
  int column = 0;         // 1-based
  std::string supported;  // what kdp supports instead, or empty
};

// Tokenizes `expression`; the last token is kEnd. False with `error` set on a lexical error.
bool Lex(std::string_view expression, std::vector<Token>* tokens, LexError* error);

}  // namespace kdp::manager::scheduling::internal

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_CEL_LEXER_H_
