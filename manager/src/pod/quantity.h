// Quantity: a Kubernetes resource quantity ("1", "500m", "2Gi", "1.5", "1e3"), parsed with
// apimachinery's grammar (k8s.io/apimachinery/pkg/api/resource, ParseQuantity) and held as an
// exact fixed-point number: a signed count of nano-units (10^-9), never a floating point value.
// The pod-manifest parser uses it to check that extended-resource limits are integers, that
// requests equal limits, and to read device counts.
//
//   <quantity>        ::= <signedNumber><suffix>
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <signedNumber>    ::= <number> | <sign><number>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (integer exponent)
//
// As upstream: a non-zero value finer than 1n is rounded away from zero to the next nano-unit
// ("0.1n" is 1n), and the scanner's quirks are kept, so a bare sign, "." or a suffix with no
// digits ("+", ".", "m", "Ki") parse as zero. The magnitude is capped at 2^63-1 units, as
// apimachinery documents and does for binary suffixes ("8Ei" is 9223372036854775807); recent
// apimachinery no longer caps decimal values, which no resource count or size can reach.
//
// Thread-safety: immutable value type; const methods are safe to call concurrently.
#ifndef KDP_MANAGER_SRC_POD_QUANTITY_H_
#define KDP_MANAGER_SRC_POD_QUANTITY_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"

namespace kdp::manager {

class Quantity {
 public:
  // How the value was written; ToString keeps the same kind of suffix, as apimachinery does.
  enum class Format {
    kDecimalSI,        // "", n, u, m, k, M, G, T, P, E: 12M is 12 * 10^6
    kBinarySI,         // Ki ... Ei: 12Mi is 12 * 2^20
    kDecimalExponent,  // e/E notation: 12e6
  };

  // Zero, DecimalSI.
  Quantity() = default;

  // Parses `text` exactly as ParseQuantity does (no surrounding whitespace allowed; callers that
  // decode YAML/JSON trim first, as Quantity.UnmarshalJSON does). INVALID_ARGUMENT naming `text`
  // (quoted as Go's %q) with upstream's reason when it does not match the grammar:
  //   quantity "<text>" is invalid: quantities must match the regular expression '...'
  //   quantity "<text>" is invalid: unable to parse quantity's suffix
  [[nodiscard]] static absl::StatusOr<Quantity> Parse(std::string_view text);

  // An integer quantity in `format`.
  static Quantity FromInt64(int64_t value, Format format = Format::kDecimalSI);

  Format format() const { return format_; }
  // The exact value in nano-units (value * 10^9).
  absl::int128 nanos() const { return nanos_; }
  bool IsZero() const { return nanos_ == 0; }
  // -1, 0 or 1.
  int Sign() const { return nanos_ < 0 ? -1 : (nanos_ > 0 ? 1 : 0); }
  // True when the value has no fractional part ("2", "2000m", "1Ki"; not "1500m").
  bool IsInteger() const;
  // The value when it is an exact integer that fits in int64; std::nullopt otherwise.
  std::optional<int64_t> AsInt64() const;

  // apimachinery's canonical form (Quantity.String): zero is "0"; otherwise the mantissa with
  // the largest suffix of the value's format that loses nothing, e.g. "1.5" -> "1500m",
  // "1000" -> "1k", "1.5Gi" -> "1536Mi", "2048Ki" -> "2Mi", "1e3" -> "1e3", "0.5Ki" -> "512".
  // A binary value below 1024 in magnitude, or with a fractional part, is written as DecimalSI.
  std::string ToString() const;

  // The value `nanos` / 10^9 in `format` (exact; what arithmetic on nanos() gives back).
  static Quantity FromNanos(absl::int128 nanos, Format format = Format::kDecimalSI) {
    return Quantity(nanos, format);
  }
  // Sum and difference in the left operand's format, as Quantity.Add and Quantity.Sub keep the
  // receiver's; exact (the counters and capacities the DRA allocator adds up).
  friend Quantity operator+(const Quantity& a, const Quantity& b) {
    return Quantity(a.nanos_ + b.nanos_, a.format_);
  }
  friend Quantity operator-(const Quantity& a, const Quantity& b) {
    return Quantity(a.nanos_ - b.nanos_, a.format_);
  }

  // Compares values only: "1k" == "1000" and "1Ki" == "1024" regardless of format, like
  // Quantity.Cmp.
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    if (a.nanos_ < b.nanos_) return std::strong_ordering::less;
    if (a.nanos_ > b.nanos_) return std::strong_ordering::greater;
    return std::strong_ordering::equal;
  }

 private:
  Quantity(absl::int128 nanos, Format format) : nanos_(nanos), format_(format) {}

  absl::int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_QUANTITY_H_
