// Fuzzes the DRA manager's checkpoint reader (`dra_manager_state`, manager/src/dra/checkpoint.h),
// a file the kubelet or an earlier kdp-manager left on disk. The input is read twice: as a whole
// file (envelope, CRC-32, then Data) and as the Data text itself, so the claim decoder is reached
// without the fuzzer having to forge a CRC. Whatever decodes is re-encoded, and the encoding must
// decode to the same claims with a matching checksum.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "manager/src/dra/checkpoint/checkpoint.h"

namespace {

namespace dra = kdp::manager::dra;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "dra_checkpoint_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// EncodeCheckpoint(claims) must decode back to `claims`, through both entry points.
void CheckRoundTrip(const std::vector<dra::state::ClaimInfoState>& claims) {
  const std::string file = dra::EncodeCheckpoint(claims);
  absl::StatusOr<dra::CheckpointEnvelope> envelope = dra::DecodeCheckpointEnvelope(file);
  if (!envelope.ok()) Fail("the re-encoded envelope does not decode", file);
  if (!envelope->checksum_ok()) Fail("the re-encoded checkpoint fails its own checksum", file);
  if (envelope->data != dra::EncodeCheckpointData(claims))
    Fail("Data changed in the envelope", file);
  absl::StatusOr<std::vector<dra::state::ClaimInfoState>> again = dra::DecodeCheckpoint(file);
  if (!again.ok()) Fail("the re-encoded checkpoint does not decode", file);
  if (*again != claims) Fail("the round trip changed the claims", file);
  absl::StatusOr<dra::CheckpointData> data = dra::DecodeCheckpointData(envelope->data);
  if (!data.ok() || data->kind != dra::kCheckpointKind ||
      data->api_version != dra::kCheckpointApiVersion || data->list_key != "ClaimInfoStateList") {
    Fail("the re-encoded Data lost its type or list key", envelope->data);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<std::vector<dra::state::ClaimInfoState>> claims = dra::DecodeCheckpoint(bytes);
  if (claims.ok()) {
    CheckRoundTrip(*claims);
  } else if (claims.status().code() != absl::StatusCode::kDataLoss &&
             claims.status().code() != absl::StatusCode::kFailedPrecondition) {
    Fail("DecodeCheckpoint failed with an undocumented code", claims.status().ToString());
  }

  absl::StatusOr<dra::CheckpointData> decoded = dra::DecodeCheckpointData(bytes);
  if (decoded.ok()) {
    CheckRoundTrip(decoded->claims);
  } else if (decoded.status().code() != absl::StatusCode::kInvalidArgument) {
    Fail("DecodeCheckpointData failed with a code other than INVALID_ARGUMENT",
         decoded.status().ToString());
  }
  return 0;
}
