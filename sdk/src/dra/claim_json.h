// Decodes a resource.k8s.io/v1 ResourceClaim (the JSON the API server returns) into the driver's
// view, kdp::Claim: only this driver's allocation results and opaque configs, configs in
// precedence order (FromClass before FromClaim, each in list order), as the example driver and
// the KEP-4381 driver duties describe. Also checks what the Go kubeletplugin helper checks before
// calling the driver: the claim is allocated and its UID is the one the kubelet asked for.
//
// Thread-safety: pure functions.
#ifndef KDP_SDK_SRC_DRA_CLAIM_JSON_H_
#define KDP_SDK_SRC_DRA_CLAIM_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "kdp/dra_driver.h"
#include "nlohmann/json.hpp"

namespace kdp::internal {

// Decodes `claim_json` for `driver`. Errors, each naming "<ns>/<name>" of `requested`:
// FAILED_PRECONDITION "claim <ns>/<name> not allocated" (no status.allocation),
// FAILED_PRECONDITION "claim <ns>/<name> got replaced" (metadata.uid differs from
// requested.uid), INVALID_ARGUMENT for a malformed field (named by its JSON path).
absl::StatusOr<Claim> DecodeClaim(const nlohmann::json& claim_json, const ClaimRef& requested,
                                  const std::string& driver);

// "<request>" of "<request>/<subrequest>" (resourceclaim.BaseRequestRef).
std::string BaseRequestName(const std::string& request);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_CLAIM_JSON_H_
