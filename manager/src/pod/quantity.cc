#include "manager/src/pod/quantity.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/resource_name.h"

namespace kdp::manager {
namespace {

// apimachinery's error texts (resource/quantity.go).
constexpr char kErrFormatWrong[] =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr char kErrSuffix[] = "unable to parse quantity's suffix";

constexpr int64_t kNanosPerUnit = 1'000'000'000;
// The largest magnitude a Quantity holds: (2^63 - 1) units, in nano-units.
const absl::int128 kMaxNanos =
    absl::int128(std::numeric_limits<int64_t>::max()) * absl::int128(kNanosPerUnit);
// kMaxNanos has 28 decimal digits; anything with more is over the cap.
constexpr std::size_t kMaxNanosDigits = 28;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The pieces parseQuantityString finds; `num` has its leading zeros stripped ("0" when none).
struct Scanned {
  bool positive = true;
  std::string_view num;
  std::string_view denom;
  std::string_view suffix;
};

// A line-by-line equivalent of apimachinery's parseQuantityString, quirks included: it returns
// early (with a zero number) when the text ends inside the sign or the leading zeros, accepts
// "1." and ".5", and only rejects a suffix followed by something other than an exponent.
bool ScanQuantity(std::string_view str, Scanned* out) {
  std::size_t pos = 0;
  const std::size_t end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    out->positive = str[0] == '+';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    out->num = "0";
    return true;
  }
  const std::size_t num_start = pos;
  while (pos < end && IsDigit(str[pos])) ++pos;
  out->num = str.substr(num_start, pos - num_start);
  if (pos >= end) return true;
  if (out->num.empty()) out->num = "0";
  if (str[pos] == '.') {
    ++pos;
    const std::size_t denom_start = pos;
    while (pos < end && IsDigit(str[pos])) ++pos;
    out->denom = str.substr(denom_start, pos - denom_start);
    if (pos >= end) return true;
  }
  const std::size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(str[pos]) != std::string_view::npos) {
    ++pos;
  }
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && IsDigit(str[pos])) ++pos;
  if (pos < end) return false;
  out->suffix = str.substr(suffix_start);
  return true;
}

struct Suffix {
  int base = 10;         // 10 or 2
  int32_t exponent = 0;  // power of `base`
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

// suffixHandler.interpret: the decimal and binary SI tables, then e/E with an int64 exponent that
// Go truncates to int32 (kept: "1e4294967296" is 1e0 upstream too).
std::optional<Suffix> InterpretSuffix(std::string_view s) {
  using F = Quantity::Format;
  static constexpr struct {
    std::string_view text;
    int base;
    int32_t exponent;
  } kTable[] = {{"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3},
                {"k", 10, 3},  {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12},
                {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
                {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60}};
  for (const auto& entry : kTable) {
    if (entry.text == s) {
      return Suffix{entry.base, entry.exponent, entry.base == 2 ? F::kBinarySI : F::kDecimalSI};
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view digits = s.substr(1);
    // strconv.ParseInt accepts one leading sign; absl::SimpleAtoi also accepts '+'.
    int64_t exponent = 0;
    if (!absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &exponent)) {
      return std::nullopt;
    }
    // SimpleAtoi skips surrounding whitespace, which the scanner has already excluded.
    return Suffix{10, static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(exponent))),
                  F::kDecimalExponent};
  }
  return std::nullopt;
}

// Multiplies a decimal digit string (no leading zeros, non-empty) by 2, in place.
void DoubleDigits(std::string* digits) {
  int carry = 0;
  for (auto it = digits->rbegin(); it != digits->rend(); ++it) {
    int d = (*it - '0') * 2 + carry;
    *it = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  if (carry != 0) digits->insert(digits->begin(), static_cast<char>('0' + carry));
}

absl::int128 DigitsToInt128(std::string_view digits) {
  absl::int128 value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

// The magnitude digits * 2^binary_exponent * 10^decimal_exponent in nano-units, rounded up when
// it has a fraction below 1n and capped at kMaxNanos. `digits` has no leading zeros.
absl::int128 ToNanos(std::string digits, int32_t binary_exponent, int64_t decimal_exponent) {
  if (digits.empty()) return 0;
  for (int32_t i = 0; i < binary_exponent; ++i) DoubleDigits(&digits);
  const int64_t scale = decimal_exponent + 9;  // power of ten that turns the digits into nanos
  const auto length = static_cast<int64_t>(digits.size());
  if (scale >= 0) {
    if (length + scale > static_cast<int64_t>(kMaxNanosDigits)) return kMaxNanos;
    absl::int128 value = DigitsToInt128(digits);
    for (int64_t i = 0; i < scale; ++i) value *= 10;
    return value > kMaxNanos ? kMaxNanos : value;
  }
  // Drop the -scale lowest digits; any non-zero among them rounds the result up by one nano.
  const int64_t drop = -scale;
  if (drop >= length) return 1;
  const std::string_view whole = std::string_view(digits).substr(0, length - drop);
  const std::string_view fraction = std::string_view(digits).substr(length - drop);
  if (whole.size() > kMaxNanosDigits) return kMaxNanos;
  absl::int128 value = DigitsToInt128(whole);
  if (fraction.find_first_not_of('0') != std::string_view::npos) value += 1;
  return value > kMaxNanos ? kMaxNanos : value;
}

// Splits |v| (non-zero) into mantissa * 10^exponent, exponent a multiple of 3, as
// int64Amount.AsCanonicalBytes does.
void CanonicalDecimal(absl::int128 nanos, absl::int128* mantissa, int32_t* exponent) {
  absl::int128 m = nanos < 0 ? -nanos : nanos;
  int32_t e = -9;
  while (m % 10 == 0) {
    m /= 10;
    ++e;
  }
  switch (e % 3) {
    case 1:
    case -2:
      m *= 10;
      e -= 1;
      break;
    case 2:
    case -1:
      m *= 100;
      e -= 2;
      break;
    default:
      break;
  }
  *mantissa = m;
  *exponent = e;
}

std::string Int128ToString(absl::int128 value) {
  if (value == 0) return "0";
  std::string out;
  while (value > 0) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  }
  return out;
}

std::optional<std::string_view> DecimalSiSuffix(int32_t exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  auto invalid = [text](std::string_view reason) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantity ", GoQuote(text), " is invalid: ", std::string(reason)));
  };
  if (text.empty()) return invalid(kErrFormatWrong);
  if (text == "0") return Quantity();

  Scanned scanned;
  if (!ScanQuantity(text, &scanned)) return invalid(kErrFormatWrong);
  std::optional<Suffix> suffix = InterpretSuffix(scanned.suffix);
  if (!suffix.has_value()) return invalid(kErrSuffix);

  std::string digits(scanned.num);
  digits += scanned.denom;
  const std::size_t first = digits.find_first_not_of('0');
  digits.erase(0, first == std::string::npos ? digits.size() : first);

  const int32_t binary_exponent = suffix->base == 2 ? suffix->exponent : 0;
  const int64_t decimal_exponent = (suffix->base == 10 ? int64_t{suffix->exponent} : 0) -
                                   static_cast<int64_t>(scanned.denom.size());
  absl::int128 nanos = ToNanos(std::move(digits), binary_exponent, decimal_exponent);
  if (!scanned.positive) nanos = -nanos;
  return Quantity(nanos, suffix->format);
}

Quantity Quantity::FromInt64(int64_t value, Format format) {
  return Quantity(absl::int128(value) * kNanosPerUnit, format);
}

bool Quantity::IsInteger() const { return nanos_ % kNanosPerUnit == 0; }

std::optional<int64_t> Quantity::AsInt64() const {
  if (!IsInteger()) return std::nullopt;
  const absl::int128 units = nanos_ / kNanosPerUnit;
  if (units > std::numeric_limits<int64_t>::max() || units < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(units);
}

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  const absl::int128 magnitude = nanos_ < 0 ? -nanos_ : nanos_;
  std::string out = nanos_ < 0 ? "-" : "";

  Format format = format_;
  if (format == Format::kBinarySI &&
      (magnitude < absl::int128(1024) * kNanosPerUnit || !IsInteger())) {
    format = Format::kDecimalSI;  // as CanonicalizeBytes: avoid rounding, never lose precision
  }
  if (format == Format::kBinarySI) {
    absl::int128 units = magnitude / kNanosPerUnit;
    int power = 0;
    while (units % 1024 == 0) {
      units /= 1024;
      ++power;
    }
    static constexpr std::string_view kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    return absl::StrCat(out, Int128ToString(units), std::string(kBinary[power]));
  }

  absl::int128 mantissa = 0;
  int32_t exponent = 0;
  CanonicalDecimal(nanos_, &mantissa, &exponent);
  absl::StrAppend(&out, Int128ToString(mantissa));
  std::optional<std::string_view> si = DecimalSiSuffix(exponent);
  if (format == Format::kDecimalSI && si.has_value()) {
    absl::StrAppend(&out, std::string(*si));
  } else if (exponent != 0) {
    absl::StrAppend(&out, "e", exponent);
  }
  return out;
}

}  // namespace kdp::manager
