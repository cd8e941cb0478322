#include "common/go_json.h"

#include <cstdint>

namespace kdp {
namespace {

// Decodes one UTF-8 sequence at s[i] as Go's utf8.DecodeRuneInString does; false when invalid.
bool DecodeRune(std::string_view s, size_t i, uint32_t* rune, size_t* length) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  size_t n = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (n == 0 || lead > 0xf4 || i + n > s.size()) return false;
  uint32_t value = lead & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return false;
    value = (value << 6) | (byte(k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMin[n] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return false;
  *rune = value;
  *length = n;
  return true;
}

}  // namespace

void AppendGoJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out->append("\\\"");
          break;
        case '\\':
          out->append("\\\\");
          break;
        case '\b':
          out->append("\\b");
          break;
        case '\f':
          out->append("\\f");
          break;
        case '\n':
          out->append("\\n");
          break;
        case '\r':
          out->append("\\r");
          break;
        case '\t':
          out->append("\\t");
          break;
        default:
          // Other control characters, and <, > and & (escaped for safe embedding in HTML).
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out->append("\\u00");
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 0xf]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    size_t length = 0;
    if (!DecodeRune(s, i, &rune, &length)) {
      out->append("\\ufffd");  // Go replaces each invalid byte.
      ++i;
      continue;
    }
    if (rune == 0x2028 || rune == 0x2029) {
      out->append(rune == 0x2028 ? "\\u2028" : "\\u2029");
    } else {
      out->append(s.substr(i, length));
    }
    i += length;
  }
  out->push_back('"');
}

}  // namespace kdp
