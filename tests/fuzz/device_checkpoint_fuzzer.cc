// Fuzzes the device manager's checkpoint reader (kubelet_internal_checkpoint, v1 and v2 layouts;
// manager/src/devicemanager/checkpoint/checkpoint.h), a file the kubelet or an older kdp-manager
// may have left on disk. Whatever decodes is re-encoded, and the encoding must decode to the same
// data, in the v2 layout, with a checksum that matches (Encode's go-spew dump and Decode's agree).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "manager/src/devicemanager/checkpoint/checkpoint.h"

namespace {

namespace cp = kdp::manager::checkpoint;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "device_checkpoint_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<cp::Decoded> decoded = cp::Decode(bytes);
  if (!decoded.ok()) {
    if (decoded.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("Decode failed with a code other than INVALID_ARGUMENT", decoded.status().ToString());
    }
    return 0;
  }
  (void)cp::FormatName(decoded->format);

  const std::string encoded = cp::Encode(decoded->data);
  absl::StatusOr<cp::Decoded> again = cp::Decode(encoded);
  if (!again.ok()) Fail("the re-encoded checkpoint does not decode", encoded);
  if (again->format != cp::Format::kV2) Fail("Encode wrote a layout other than v2", encoded);
  if (!again->checksum_ok()) Fail("the re-encoded checkpoint fails its own checksum", encoded);
  if (!(again->data == decoded->data)) Fail("the round trip changed the data", encoded);
  if (cp::Encode(again->data) != encoded) Fail("Encode is not deterministic", encoded);
  return 0;
}
