#include "manager/src/controlplane/scheduling/cel_strings.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/scheduling/cel_ast.h"
#include "re2/re2.h"

namespace kdp::manager::scheduling::internal {
namespace {

using Args = std::vector<Value>;
using Runes = std::vector<char32_t>;

// UTF-8 to code points; an invalid byte is U+FFFD, as Go's []rune(s).
Runes Decode(const std::string& s) {
  Runes out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    out.push_back(ok ? cp : 0xFFFD);
    i += ok ? len : 1;
  }
  return out;
}

std::string Encode(Runes::const_iterator begin, Runes::const_iterator end) {
  std::string out;
  for (auto it = begin; it != end; ++it) {
    const char32_t cp = *it;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

absl::Status OutOfRange(int64_t index) {
  return absl::InvalidArgumentError(absl::StrCat("index out of range: ", index));
}

absl::Status NoOverload(const Node& call, const Args& args) {
  std::vector<const Value*> ptrs;
  for (const Value& v : args) ptrs.push_back(&v);
  return NoSuchOverload(call.op, ptrs);
}

// First index >= from (or <= from, backwards) where `sub` occurs in `s`; -1 if none.
int64_t Search(const Runes& s, const Runes& sub, int64_t from, bool backwards) {
  const int64_t last = static_cast<int64_t>(s.size()) - static_cast<int64_t>(sub.size());
  if (backwards && from > last) from = last;
  for (int64_t i = from; backwards ? i >= 0 : i <= last; i += backwards ? -1 : 1) {
    if (std::equal(sub.begin(), sub.end(), s.begin() + i)) return i;
  }
  return -1;
}

// cel-go's indexOf/lastIndexOf (ext/strings.go), including their checks of the offset.
absl::StatusOr<Value> IndexOf(const Runes& s, const Runes& sub, const Args& args, bool last) {
  const int64_t size = static_cast<int64_t>(s.size());
  int64_t offset = last ? size - 1 : 0;
  if (args.size() == 3) offset = std::get<int64_t>(args[2]);
  if (sub.empty()) return Value(args.size() == 3 ? offset : (last ? size : int64_t{0}));
  if (offset < 0 || offset >= size) return OutOfRange(offset);
  return Value(Search(s, sub, offset, last));
}

absl::StatusOr<Value> Substring(const Runes& s, const Args& args) {
  const int64_t size = static_cast<int64_t>(s.size());
  const int64_t start = std::get<int64_t>(args[1]);
  if (args.size() == 2 && (start < 0 || start > size)) return OutOfRange(start);
  const int64_t end = args.size() == 3 ? std::get<int64_t>(args[2]) : size;
  if (start > end) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid substring range. start: ", start, ", end: ", end));
  }
  if (start < 0 || start > size) return OutOfRange(start);
  if (end < 0 || end > size) return OutOfRange(end);
  return Value(Encode(s.begin() + start, s.begin() + end));
}

// Go's strings.Replace(s, old, new, n): n < 0 replaces all; an empty `old` matches before every
// code point and at the end.
std::string Replace(const std::string& s, const std::string& old, const std::string& repl,
                    int64_t n) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    const Runes r = Decode(s);
    for (size_t i = 0; i <= r.size(); ++i) {
      if (n < 0 || done < n) {
        out += repl;
        ++done;
      }
      if (i < r.size()) out += Encode(r.begin() + i, r.begin() + i + 1);
    }
    return out;
  }
  size_t pos = 0;
  while (n < 0 || done < n) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += repl;
    pos = hit + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// Go's strings.SplitN(s, sep, n): n < 0 all parts, n == 0 none, else at most n parts; an empty
// `sep` splits between code points.
std::vector<Value> Split(const std::string& s, const std::string& sep, int64_t n) {
  std::vector<Value> parts;
  if (n == 0) return parts;
  if (sep.empty()) {
    const Runes r = Decode(s);
    for (size_t i = 0; i < r.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(parts.size()) == n - 1) {
        parts.push_back(Encode(r.begin() + i, r.end()));
        return parts;
      }
      parts.push_back(Encode(r.begin() + i, r.begin() + i + 1));
    }
    return parts;
  }
  size_t pos = 0;
  while (n < 0 || static_cast<int64_t>(parts.size()) < n - 1) {
    const size_t hit = s.find(sep, pos);
    if (hit == std::string::npos) break;
    parts.push_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  parts.push_back(s.substr(pos));
  return parts;
}

bool IsSpace(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::string CaseAscii(const std::string& s, bool upper) {
  std::string out = s;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The node's literal pattern, or `pattern` compiled now (an error as Go's regexp words it).
absl::StatusOr<std::shared_ptr<const RE2>> Regex(const Node& call, const Value& pattern) {
  if (call.regex) return call.regex;
  const auto* p = std::get_if<std::string>(&pattern);
  if (p == nullptr) return NoSuchOverload(call.op, {&pattern});
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(*p, options);
  if (!re->ok()) {
    return absl::InvalidArgumentError(absl::StrCat("error parsing regexp: ", re->error()));
  }
  return re;
}

// Go's FindAllString(s, n): non-overlapping leftmost matches; an empty match right after the
// previous match is skipped.
std::vector<Value> FindAll(const RE2& re, const std::string& s, int64_t n) {
  std::vector<Value> out;
  size_t pos = 0;
  size_t prev_end = std::string::npos;
  while (pos <= s.size() && (n < 0 || static_cast<int64_t>(out.size()) < n)) {
    re2::StringPiece m;
    if (!re.Match(s, pos, s.size(), RE2::UNANCHORED, &m, 1)) break;
    const size_t start = static_cast<size_t>(m.data() - s.data());
    const size_t end = start + m.size();
    if (!(m.empty() && start == prev_end)) out.push_back(std::string(m.data(), m.size()));
    prev_end = end;
    if (end > pos) {
      pos = end;
    } else {
      size_t step = 1;  // past one code point
      while (pos + step < s.size() && (static_cast<unsigned char>(s[pos + step]) & 0xC0) == 0x80) {
        ++step;
      }
      pos += step;
    }
  }
  return out;
}

absl::StatusOr<Value> RegexMethod(const Node& call, const std::string& s, const Args& args,
                                  Activation& act) {
  absl::StatusOr<std::shared_ptr<const RE2>> re = Regex(call, args[1]);
  if (!re.ok()) return re.status();
  const uint64_t pattern = (*re)->pattern().size();
  if (absl::Status st = Charge(act, TraversalCost(s.size()) * (1 + pattern / 4)); !st.ok()) {
    return st;
  }
  if (call.op == "matches") return Value(RE2::PartialMatch(s, **re));
  if (call.op == "find") {
    std::vector<Value> first = FindAll(**re, s, 1);
    return first.empty() ? Value(std::string()) : first[0];
  }
  const int64_t n = args.size() == 3 ? std::get<int64_t>(args[2]) : -1;
  return Value(std::make_shared<const List>(List{FindAll(**re, s, n)}));
}

absl::StatusOr<Value> Affix(const Node& call, const std::string& s, const Args& args) {
  const auto* arg = std::get_if<std::string>(&args[1]);
  if (arg == nullptr) return NoOverload(call, args);
  const std::string& m = call.op;
  if (m == "startsWith")
    return Value(s.compare(0, arg->size(), *arg) == 0 && s.size() >= arg->size());
  if (m == "endsWith") {
    return Value(s.size() >= arg->size() &&
                 s.compare(s.size() - arg->size(), arg->size(), *arg) == 0);
  }
  return Value(s.find(*arg) != std::string::npos);  // contains
}

// Checks the argument types the type checker could not (a dyn receiver or argument).
bool ArgsMatch(const Args& args, std::initializer_list<size_t> strings,
               std::initializer_list<size_t> ints) {
  for (size_t i : strings) {
    if (i < args.size() && !std::holds_alternative<std::string>(args[i])) return false;
  }
  for (size_t i : ints) {
    if (i < args.size() && !std::holds_alternative<int64_t>(args[i])) return false;
  }
  return true;
}

}  // namespace

int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

absl::StatusOr<Value> StringMethod(const Node& call, const std::vector<Value>& args,
                                   Activation& act) {
  const std::string& s = std::get<std::string>(args[0]);
  const std::string& m = call.op;
  if (absl::Status st = Charge(act, TraversalCost(s.size())); !st.ok()) return st;
  if (m == "matches" || m == "find" || m == "findAll") {
    if (!ArgsMatch(args, {1}, {2})) return NoOverload(call, args);
    return RegexMethod(call, s, args, act);
  }
  if (m == "startsWith" || m == "endsWith" || m == "contains") return Affix(call, s, args);
  if (m == "lowerAscii" || m == "upperAscii") return Value(CaseAscii(s, m == "upperAscii"));
  if (m == "trim") {
    const Runes r = Decode(s);
    auto b = r.begin();
    auto e = r.end();
    while (b != e && IsSpace(*b)) ++b;
    while (e != b && IsSpace(*(e - 1))) --e;
    return Value(Encode(b, e));
  }
  if (m == "charAt") {
    if (!ArgsMatch(args, {}, {1})) return NoOverload(call, args);
    const Runes r = Decode(s);
    const int64_t i = std::get<int64_t>(args[1]);
    if (i < 0 || i > static_cast<int64_t>(r.size())) return OutOfRange(i);
    return Value(i == static_cast<int64_t>(r.size()) ? std::string()
                                                     : Encode(r.begin() + i, r.begin() + i + 1));
  }
  if (m == "indexOf" || m == "lastIndexOf") {
    if (!ArgsMatch(args, {1}, {2})) return NoOverload(call, args);
    return IndexOf(Decode(s), Decode(std::get<std::string>(args[1])), args, m == "lastIndexOf");
  }
  if (m == "substring") {
    if (!ArgsMatch(args, {}, {1, 2})) return NoOverload(call, args);
    return Substring(Decode(s), args);
  }
  if (m == "replace") {
    if (!ArgsMatch(args, {1, 2}, {3})) return NoOverload(call, args);
    const int64_t n = args.size() == 4 ? std::get<int64_t>(args[3]) : -1;
    return Value(Replace(s, std::get<std::string>(args[1]), std::get<std::string>(args[2]), n));
  }
  if (m == "split") {
    if (!ArgsMatch(args, {1}, {2})) return NoOverload(call, args);
    const int64_t n = args.size() == 3 ? std::get<int64_t>(args[2]) : -1;
    return Value(std::make_shared<const List>(List{Split(s, std::get<std::string>(args[1]), n)}));
  }
  return NoOverload(call, args);
}

namespace {

// -1, 0, 1 for two ints, strings or bools of one type; nullopt otherwise.
std::optional<int> Order(const Value& a, const Value& b) {
  if (a.index() != b.index()) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&a)) {
    const int64_t j = std::get<int64_t>(b);
    return *i < j ? -1 : (*i > j ? 1 : 0);
  }
  if (const auto* s = std::get_if<std::string>(&a)) {
    const int c = s->compare(std::get<std::string>(b));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (const auto* x = std::get_if<bool>(&a)) {
    return static_cast<int>(*x) - static_cast<int>(std::get<bool>(b));
  }
  return std::nullopt;
}

absl::StatusOr<Value> Join(const Node& call, const std::vector<Value>& items, const Args& args) {
  std::string sep;
  if (args.size() == 2) {
    const auto* s = std::get_if<std::string>(&args[1]);
    if (s == nullptr) return NoOverload(call, args);
    sep = *s;
  }
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto* s = std::get_if<std::string>(&items[i]);
    if (s == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("join: invalid input: ", ValueTypeName(items[i])));
    }
    absl::StrAppend(&out, i == 0 ? "" : sep, *s);
  }
  return Value(out);
}

absl::StatusOr<Value> Sum(const Node& call, const std::vector<Value>& items) {
  int64_t sum = 0;
  for (const Value& v : items) {
    const auto* i = std::get_if<int64_t>(&v);
    if (i == nullptr) return NoSuchOverload(call.op, {&v});
    if (__builtin_add_overflow(sum, *i, &sum)) {
      return absl::InvalidArgumentError("integer overflow");
    }
  }
  return Value(sum);
}

}  // namespace

absl::StatusOr<Value> ListMethod(const Node& call, const std::vector<Value>& args,
                                 Activation& act) {
  const std::vector<Value>& items = std::get<ListPtr>(args[0])->items;
  const std::string& m = call.op;
  if (absl::Status st = Charge(act, items.size()); !st.ok()) return st;
  if (m == "join") return Join(call, items, args);
  if (m == "sum") return Sum(call, items);
  if (m == "indexOf" || m == "lastIndexOf") {
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = m == "indexOf" ? k : n - 1 - k;
      if (ValuesEqual(items[i], args[1])) return Value(i);
    }
    return Value(int64_t{-1});
  }
  if (m != "isSorted" && m != "min" && m != "max") return NoOverload(call, args);
  if (items.empty()) {
    if (m == "isSorted") return Value(true);
    return absl::InvalidArgumentError(absl::StrCat(m, " called on empty list"));
  }
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    std::optional<int> c = Order(items[m == "isSorted" ? i - 1 : best], items[i]);
    if (!c) return NoSuchOverload(m, {&items[i - 1], &items[i]});
    if (m == "isSorted" && *c > 0) return Value(false);
    if ((m == "min" && *c > 0) || (m == "max" && *c < 0)) best = i;
  }
  if (m == "isSorted") return Value(true);
  if (!Order(items[best], items[best])) return NoSuchOverload(m, {&items[best]});
  return items[best];
}

absl::StatusOr<Value> SetFunction(const Node& call, const std::vector<Value>& args,
                                  Activation& act) {
  const auto* a = std::get_if<ListPtr>(&args[0]);
  const auto* b = std::get_if<ListPtr>(&args[1]);
  if (a == nullptr || b == nullptr) return NoOverload(call, args);
  const auto& x = (*a)->items;
  const auto& y = (*b)->items;
  if (absl::Status st = Charge(act, x.size() * y.size()); !st.ok()) return st;
  auto in = [](const std::vector<Value>& list, const Value& v) {
    return std::any_of(list.begin(), list.end(), [&](const Value& e) { return ValuesEqual(e, v); });
  };
  auto contains = [&](const std::vector<Value>& big, const std::vector<Value>& small) {
    return std::all_of(small.begin(), small.end(), [&](const Value& v) { return in(big, v); });
  };
  if (call.op == "sets.contains") return Value(contains(x, y));
  if (call.op == "sets.equivalent") return Value(contains(x, y) && contains(y, x));
  return Value(std::any_of(y.begin(), y.end(), [&](const Value& v) { return in(x, v); }));
}

absl::StatusOr<int64_t> ParseGoInt(const std::string& s) {
  const std::string prefix = absl::StrCat("strconv.ParseInt: parsing \"", s, "\": ");
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) i = 1;
  if (i == s.size()) return absl::InvalidArgumentError(prefix + "invalid syntax");
  uint64_t magnitude = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return absl::InvalidArgumentError(prefix + "invalid syntax");
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) overflow = true;
    magnitude = magnitude * 10 + digit;
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (overflow || magnitude > limit) {
    return absl::InvalidArgumentError(prefix + "value out of range");
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

}  // namespace kdp::manager::scheduling::internal
