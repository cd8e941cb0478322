// Fuzzes the value parsers that peers' text reaches: Kubernetes quantities
// (manager/src/pod/quantity.h; pod limits, device capacities published by drivers, selector
// literals) and semantic versions (manager/src/pod/semver.h; device attributes).
//
// Properties checked beyond "no crash": the canonical form of a quantity parses back to the same
// value and is a fixed point; AsInt64 agrees with IsInteger and with the value; a version's
// ToString parses back to an equal version (Compare == 0).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "manager/src/pod/quantity.h"
#include "manager/src/pod/semver.h"

namespace {

using kdp::manager::Quantity;
using kdp::manager::SemanticVersion;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "quantity_fuzzer: %s\ninput: %.*s\n%s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  std::abort();
}

void CheckQuantity(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) {
    if (q.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("Quantity::Parse failed with a code other than INVALID_ARGUMENT", text,
           q.status().ToString());
    }
    return;
  }
  const std::string canonical = q->ToString();
  absl::StatusOr<Quantity> again = Quantity::Parse(canonical);
  if (!again.ok()) Fail("the canonical form does not parse", text, canonical);
  if (!(*again == *q)) Fail("the canonical form has another value", text, canonical);
  if (again->ToString() != canonical) Fail("ToString is not a fixed point", text, canonical);
  const std::optional<int64_t> as_int = q->AsInt64();
  if (as_int.has_value()) {
    if (!q->IsInteger()) Fail("AsInt64 has a value for a non-integer", text, canonical);
    if (!(Quantity::FromInt64(*as_int) == *q)) Fail("AsInt64 is not the value", text, canonical);
  }
  if (q->Sign() == 0 ? !q->IsZero() : q->IsZero()) Fail("Sign and IsZero disagree", text, "");
}

void CheckVersion(std::string_view text) {
  absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(text);
  if (!v.ok()) {
    if (v.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("SemanticVersion::Parse failed with a code other than INVALID_ARGUMENT", text,
           v.status().ToString());
    }
    return;
  }
  const std::string printed = v->ToString();
  absl::StatusOr<SemanticVersion> again = SemanticVersion::Parse(printed);
  if (!again.ok()) Fail("ToString does not parse", text, printed);
  if (again->Compare(*v) != 0 || v->Compare(*again) != 0)
    Fail("ToString compares unequal", text, printed);
  if (v->Compare(*v) != 0) Fail("a version is not equal to itself", text, printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // neither form is that long in any API object
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckQuantity(text);
  CheckVersion(text);
  return 0;
}
