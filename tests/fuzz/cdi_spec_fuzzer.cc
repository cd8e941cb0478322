// Fuzzes the CDI spec reader and validator (sdk/include/kdp/cdi.h): ParseJson, Validate,
// MinimumRequiredVersion, and the qualified-name parser. The input is a spec file; it is also
// given to ParseQualifiedName as a device name.
//
// Properties checked beyond "no crash": ToJson of a parsed spec parses back to the same spec (the
// same ToJson, the same Validate outcome); every device of a valid spec has a qualified name that
// ParseQualifiedName splits back into the spec's kind and the device's name; a valid spec's
// cdiVersion is at least its MinimumRequiredVersion.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kdp/cdi.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "cdi_spec_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckCode(const absl::Status& status, const char* what) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    Fail(what, status.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  std::string kind, device;
  const absl::Status qualified = kdp::cdi::ParseQualifiedName(text, &kind, &device);
  CheckCode(qualified, "ParseQualifiedName: undocumented code");
  if (qualified.ok() && kdp::cdi::QualifiedName(kind, device) != text) {
    Fail("ParseQualifiedName's parts do not join back into the name", std::string(text));
  }

  absl::StatusOr<kdp::cdi::Spec> spec = kdp::cdi::ParseJson(text, "fuzz.json");
  CheckCode(spec.status(), "ParseJson: undocumented code");
  if (!spec.ok()) return 0;
  const absl::Status valid = kdp::cdi::Validate(*spec);
  CheckCode(valid, "Validate: undocumented code");
  const std::string minimum = kdp::cdi::MinimumRequiredVersion(*spec);

  const std::string json = kdp::cdi::ToJson(*spec);
  absl::StatusOr<kdp::cdi::Spec> again = kdp::cdi::ParseJson(json, "re-encoded.json");
  if (!again.ok()) Fail("ToJson's output does not parse", again.status().ToString() + "\n" + json);
  if (kdp::cdi::ToJson(*again) != json) Fail("the spec changed through ToJson/ParseJson", json);
  if (kdp::cdi::Validate(*again) != valid) Fail("Validate changed through ToJson/ParseJson", json);
  if (kdp::cdi::MinimumRequiredVersion(*again) != minimum) {
    Fail("MinimumRequiredVersion changed through ToJson/ParseJson", json);
  }
  if (!valid.ok()) return 0;

  for (const kdp::cdi::Device& d : spec->devices) {
    const std::string name = kdp::cdi::QualifiedName(spec->kind, d.name);
    std::string parsed_kind, parsed_device;
    if (absl::Status s = kdp::cdi::ParseQualifiedName(name, &parsed_kind, &parsed_device);
        !s.ok()) {
      Fail("a valid spec's device has a qualified name that does not parse", s.ToString());
    }
    if (parsed_kind != spec->kind || parsed_device != d.name) {
      Fail("a valid spec's qualified name splits differently", name);
    }
  }
  // Validate checks cdiVersion >= MinimumRequiredVersion: a valid spec written with the minimum
  // version instead must stay valid.
  kdp::cdi::Spec lowest = *spec;
  lowest.cdi_version = minimum;
  if (absl::Status s = kdp::cdi::Validate(lowest); !s.ok()) {
    Fail("a valid spec is invalid at its MinimumRequiredVersion", s.ToString() + "\n" + json);
  }
  return 0;
}
