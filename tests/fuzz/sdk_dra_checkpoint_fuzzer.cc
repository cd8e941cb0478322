// Fuzzes the SDK DRA driver's own checkpoint reader (sdk/src/dra/checkpoint.h), the file a driver
// reads at start to learn which claims it prepared. The input is read as a whole file, and also
// wrapped as the "data" text of an envelope with the right CRC-32, so the claim decoder is reached
// without the fuzzer having to forge a checksum. Whatever decodes is re-encoded, and the encoding
// must decode to the same claims.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "manager/src/dra/checkpoint/checkpoint.h"  // Crc32Ieee: zlib's crc32, as the SDK uses
#include "nlohmann/json.hpp"
#include "sdk/src/dra/checkpoint.h"

namespace {

constexpr char kDriver[] = "gpu.example.com";
constexpr char kWhat[] = "fuzz-input";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "sdk_dra_checkpoint_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void Check(const std::string& bytes) {
  absl::StatusOr<kdp::internal::PreparedClaims> claims =
      kdp::internal::DecodeDraCheckpoint(bytes, kDriver, kWhat);
  if (!claims.ok()) {
    const absl::StatusCode code = claims.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("DecodeDraCheckpoint failed with an undocumented code", claims.status().ToString());
    }
    return;
  }
  for (const auto& [uid, record] : *claims) {
    if (uid.empty() || uid != record.ref.uid) Fail("a claim is keyed by another UID", uid);
  }
  const std::string encoded = kdp::internal::EncodeDraCheckpoint(kDriver, *claims);
  absl::StatusOr<kdp::internal::PreparedClaims> again =
      kdp::internal::DecodeDraCheckpoint(encoded, kDriver, kWhat);
  if (!again.ok()) Fail("the re-encoded checkpoint does not decode", encoded);
  if (*again != *claims) Fail("the round trip changed the claims", encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  // The same bytes as the data text of a well-formed envelope.
  const uint32_t crc = kdp::manager::dra::Crc32Ieee(bytes);
  const nlohmann::json file = {{"checksum", crc}, {"data", bytes}};
  Check(file.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}
