#include "manager/src/controlplane/scheduling/cel_lexer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kdp::manager::scheduling::internal {
namespace {

constexpr char kSupportedLiterals[] =
    "kdp supports int, string and bool literals, quantity(\"...\") and semver(\"...\")";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view s, LexError* error) : s_(s), error_(error) {}

  bool Run(std::vector<Token>* tokens) {
    while (true) {
      SkipSpaceAndComments();
      Token t;
      t.column = Column(i_);
      if (i_ >= s_.size()) {
        tokens->push_back(t);
        return true;
      }
      const char c = s_[i_];
      const char next = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
      bool ok = true;
      if ((c == 'r' || c == 'R') && (next == '"' || next == '\'')) {
        ++i_;
        ok = String(/*raw=*/true, &t);
      } else if ((c == 'b' || c == 'B') && (next == '"' || next == '\'')) {
        return Fail("unsupported bytes literal", i_, kSupportedLiterals);
      } else if (IsIdentStart(c)) {
        size_t start = i_;
        while (i_ < s_.size() && IsIdentChar(s_[i_])) ++i_;
        t.kind = TokenKind::kIdent;
        t.text = std::string(s_.substr(start, i_ - start));
      } else if (IsDigit(c) || (c == '.' && IsDigit(next))) {
        ok = Number(&t);
      } else if (c == '"' || c == '\'') {
        ok = String(/*raw=*/false, &t);
      } else {
        ok = Operator(&t);
      }
      if (!ok) return false;
      tokens->push_back(std::move(t));
    }
  }

 private:
  // The 1-based column (in characters) of `offset`. Offsets grow as lexing proceeds, so the count
  // resumes from the last offset asked for (rescanning from the start made lexing quadratic:
  // 70 ms for a 10 KiB selector).
  int Column(size_t offset) {
    offset = std::min(offset, s_.size());
    if (offset < column_offset_) {
      column_offset_ = 0;
      column_ = 1;
    }
    for (; column_offset_ < offset; ++column_offset_) {
      if ((static_cast<unsigned char>(s_[column_offset_]) & 0xC0) != 0x80) ++column_;
    }
    return column_;
  }

  bool Fail(std::string what, size_t offset, std::string supported = "") {
    error_->what = std::move(what);
    error_->column = Column(offset);
    error_->supported = std::move(supported);
    return false;
  }

  void SkipSpaceAndComments() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  bool Number(Token* t) {
    const size_t start = i_;
    if (s_[i_] == '.') return Fail("unsupported double literal", start, kSupportedLiterals);
    uint64_t value = 0;
    bool overflow = false;
    auto accumulate = [&](uint64_t base, int digit) {
      if (value > (UINT64_MAX - static_cast<uint64_t>(digit)) / base) overflow = true;
      value = value * base + static_cast<uint64_t>(digit);
    };
    if (s_[i_] == '0' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'x' || s_[i_ + 1] == 'X')) {
      i_ += 2;
      if (i_ >= s_.size() || !IsHex(s_[i_])) return Fail("invalid hex literal", start);
      while (i_ < s_.size() && IsHex(s_[i_])) accumulate(16, HexValue(s_[i_++]));
    } else {
      while (i_ < s_.size() && IsDigit(s_[i_])) accumulate(10, s_[i_++] - '0');
      const char c = i_ < s_.size() ? s_[i_] : '\0';
      const char n = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
      if ((c == '.' && IsDigit(n)) || c == 'e' || c == 'E') {
        return Fail("unsupported double literal", start, kSupportedLiterals);
      }
    }
    if (i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U')) {
      return Fail("unsupported unsigned int literal", start, kSupportedLiterals);
    }
    if (i_ < s_.size() && IsIdentChar(s_[i_])) {
      return Fail(absl::StrCat("syntax error: unexpected character '", std::string(1, s_[i_]),
                               "' after a number"),
                  i_);
    }
    if (overflow) return Fail("invalid int literal", start);
    t->kind = TokenKind::kInt;
    t->text = std::string(s_.substr(start, i_ - start));
    t->int_value = value;
    return true;
  }

  // At the opening quote. CEL's escapes in non-raw strings.
  bool String(bool raw, Token* t) {
    const size_t start = raw ? i_ - 1 : i_;
    const char quote = s_[i_];
    if (s_.substr(i_, 3) == std::string(3, quote)) {
      return Fail("unsupported triple-quoted string literal", start, kSupportedLiterals);
    }
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size() || s_[i_] == '\n' || s_[i_] == '\r') {
        return Fail("syntax error: unterminated string literal", start);
      }
      const char c = s_[i_];
      if (c == quote) {
        ++i_;
        break;
      }
      if (c != '\\' || raw) {
        out += c;
        ++i_;
        continue;
      }
      const size_t esc = i_;
      if (++i_ >= s_.size()) return Fail("syntax error: unterminated string literal", start);
      const char e = s_[i_++];
      switch (e) {
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case '\\':
        case '\'':
        case '"':
        case '`':
        case '?':
          out += e;
          break;
        case 'x':
        case 'X':
        case 'u':
        case 'U': {
          const size_t digits = (e == 'x' || e == 'X') ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (size_t k = 0; k < digits; ++k) {
            if (i_ >= s_.size() || !IsHex(s_[i_])) {
              return Fail("syntax error: invalid escape sequence", esc);
            }
            cp = cp * 16 + static_cast<uint32_t>(HexValue(s_[i_++]));
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return Fail("syntax error: invalid unicode code point in escape sequence", esc);
          }
          if (e == 'x' || e == 'X') {
            out += static_cast<char>(cp);  // \x is a byte, as in CEL's string escapes
          } else {
            AppendUtf8(cp, &out);
          }
          break;
        }
        default:
          if (e >= '0' && e <= '3' && i_ + 1 < s_.size() && s_[i_] >= '0' && s_[i_] <= '7' &&
              s_[i_ + 1] >= '0' && s_[i_ + 1] <= '7') {
            out += static_cast<char>((e - '0') * 64 + (s_[i_] - '0') * 8 + (s_[i_ + 1] - '0'));
            i_ += 2;
            break;
          }
          return Fail("syntax error: invalid escape sequence", esc);
      }
    }
    t->kind = TokenKind::kString;
    t->text = std::move(out);
    return true;
  }

  bool Operator(Token* t) {
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    for (std::string_view op : kTwo) {
      if (s_.substr(i_, 2) == op) {
        t->kind = TokenKind::kOperator;
        t->text = std::string(op);
        i_ += 2;
        return true;
      }
    }
    const char c = s_[i_];
    static constexpr std::string_view kOne = "<>!()[].,-+*/%?:{}";
    if (kOne.find(c) != std::string_view::npos) {
      t->kind = TokenKind::kOperator;
      t->text = std::string(1, c);
      ++i_;
      return true;
    }
    if (c == '=') return Fail("syntax error: unexpected \"=\" (did you mean \"==\"?)", i_);
    if (c == '&' || c == '|') {
      return Fail(absl::StrCat("syntax error: unexpected \"", std::string(1, c),
                               "\" (did you mean \"", std::string(2, c), "\"?)"),
                  i_);
    }
    return Fail(absl::StrCat("syntax error: unexpected character '", std::string(1, c), "'"), i_);
  }

  std::string_view s_;
  LexError* error_;
  size_t i_ = 0;
  size_t column_offset_ = 0;  // Column(): the offset counted up to, and its column
  int column_ = 1;
};

}  // namespace

bool Lex(std::string_view expression, std::vector<Token>* tokens, LexError* error) {
  tokens->clear();
  Lexer lexer(expression, error);
  return lexer.Run(tokens);
}

}  // namespace kdp::manager::scheduling::internal
