#include "common/resource_name.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kdp {
namespace {

// Texts from k8s.io/apimachinery/pkg/util/validation (validation.go and api/validate/content).
constexpr char kDns1123LabelFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kDns1123LabelErrMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr char kDns1123SubdomainFmt[] =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr char kDns1123SubdomainErrMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr char kQualifiedNameFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr char kQualifiedNameErrMsg[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";

constexpr std::string_view kRequestsPrefix = "requests.";
constexpr std::string_view kDefaultNamespacePrefix = "kubernetes.io/";

// validation.RegexError, including its quirk of a doubled space before each " or ".
std::string RegexError(std::string_view msg, std::string_view fmt,
                       const std::vector<std::string_view>& examples) {
  std::string out(msg);
  if (examples.empty()) {
    out += " (regex used for validation is '";
    out += fmt;
    out += "')";
    return out;
  }
  out += " (e.g. ";
  for (std::size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'";
    out += examples[i];
    out += "', ";
  }
  out += "regex used for validation is '";
  out += fmt;
  out += "')";
  return out;
}

std::string MaxLenError(std::size_t length) {
  return absl::StrCat("must be no more than ", length, " characters");
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit).
bool MatchesLabelRegex(std::string_view value) {
  if (value.empty() || !IsLowerAlnum(value.front()) || !IsLowerAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// Matches the subdomain regex: one or more label-regex parts joined by '.' (no length limit).
bool MatchesSubdomainRegex(std::string_view value) {
  while (true) {
    std::size_t dot = value.find('.');
    if (!MatchesLabelRegex(value.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    value.remove_prefix(dot + 1);
  }
}

// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (no length limit).
bool MatchesQualifiedNameRegex(std::string_view value) {
  if (value.empty() || !IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Decodes one UTF-8 sequence at the start of `s` (non-empty). Returns its length and sets *rune,
// or returns 0 when the first byte does not start a valid, shortest-form, non-surrogate sequence.
std::size_t DecodeUtf8(std::string_view s, uint32_t* rune) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  std::size_t len = 0;
  uint32_t r = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    *rune = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, r = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, r = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, r = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80) return 0;
    r = (r << 6) | (b & 0x3F);
  }
  if (r < min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) return 0;
  *rune = r;
  return len;
}

void AppendHex(std::string* out, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out->push_back(kHex[(value >> shift) & 0xF]);
  }
}

}  // namespace

bool IsDns1123Label(std::string_view value) { return Dns1123LabelErrors(value).empty(); }

std::vector<std::string> Dns1123LabelErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123LabelMaxLength) errs.push_back(MaxLenError(kDns1123LabelMaxLength));
  if (!MatchesLabelRegex(value)) {
    if (MatchesSubdomainRegex(value)) {
      // A valid subdomain that is not a valid label: the length was checked above, so it is dots.
      errs.emplace_back("must not contain dots");
    } else {
      errs.push_back(RegexError(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

bool IsDns1123Subdomain(std::string_view value) { return Dns1123SubdomainErrors(value).empty(); }

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  if (!MatchesSubdomainRegex(value)) {
    errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

bool IsQualifiedName(std::string_view value) { return QualifiedNameErrors(value).empty(); }

std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  const std::size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back(absl::StrCat(
          "a qualified name ",
          RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}),
          " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
      return errs;
    }
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.emplace_back("prefix part must be non-empty");
    } else {
      for (std::string& msg : Dns1123SubdomainErrors(prefix)) {
        errs.push_back(absl::StrCat("prefix part ", msg));
      }
    }
  }
  if (name.empty()) {
    errs.emplace_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back(absl::StrCat("name part ", MaxLenError(kQualifiedNameMaxLength)));
  }
  if (!MatchesQualifiedNameRegex(name)) {
    errs.push_back(absl::StrCat("name part ", RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt,
                                                         {"MyName", "my.name", "123-abc"})));
  }
  return errs;
}

bool IsNativeResourceName(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find(kDefaultNamespacePrefix) != std::string_view::npos;
}

bool IsExtendedResourceName(std::string_view name) {
  if (IsNativeResourceName(name) || name.substr(0, kRequestsPrefix.size()) == kRequestsPrefix) {
    return false;
  }
  // The quota system names this resource "requests.<name>"; that must be a qualified name too.
  std::string for_quota(kRequestsPrefix);
  for_quota += name;
  return IsQualifiedName(for_quota);
}

absl::Status ValidateExtendedResourceName(std::string_view name) {
  if (IsExtendedResourceName(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the ResourceName ", GoQuote(name), " is invalid"));
}

std::string GoQuote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('"');
  while (!value.empty()) {
    uint32_t rune = 0;
    std::size_t len = DecodeUtf8(value, &rune);
    if (len == 0) {
      out += "\\x";
      AppendHex(&out, static_cast<unsigned char>(value[0]), 2);
      value.remove_prefix(1);
      continue;
    }
    if (rune == '"' || rune == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(rune));
    } else if (rune >= 0x20 && rune < 0x7F) {
      out.push_back(static_cast<char>(rune));
    } else if (rune < 0x80) {
      switch (rune) {
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          out += "\\x";
          AppendHex(&out, rune, 2);
      }
    } else if (rune < 0xA0 || rune == 0xA0 || rune == 0xAD) {
      out += "\\u";
      AppendHex(&out, rune, 4);
    } else {
      out.append(value.substr(0, len));
    }
    value.remove_prefix(len);
  }
  out.push_back('"');
  return out;
}

}  // namespace kdp
