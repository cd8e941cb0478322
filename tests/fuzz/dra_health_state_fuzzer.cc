// Fuzzes the reader of the DRA device-health state file (`<kubelet root>/dra_health_state`,
// manager/src/dra/health_info.h DecodeHealthState), which kdp-manager loads at start; the kubelet
// writes the same layout. Whatever decodes is encoded again, and the encoding must decode to the
// same state: what the manager writes it must be able to read after a restart.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "manager/src/dra/health_info.h"

namespace {

namespace dra = kdp::manager::dra;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "dra_health_state_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = dra::DecodeHealthState(text);
  if (!decoded.ok()) {
    if (decoded.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("DecodeHealthState failed with a code other than INVALID_ARGUMENT",
           decoded.status().ToString());
    }
    return 0;
  }
  const std::string encoded = dra::EncodeHealthState(*decoded);
  auto again = dra::DecodeHealthState(encoded);
  if (!again.ok()) {
    Fail("the re-encoded state does not decode", again.status().ToString() + "\n" + encoded);
  }
  if (*again != *decoded) Fail("the round trip changed the state", encoded);
  if (dra::EncodeHealthState(*again) != encoded) Fail("EncodeHealthState is not stable", encoded);
  return 0;
}
