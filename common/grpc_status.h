// The one place where absl::Status and grpc::Status meet: every wire boundary converts here.
#ifndef KDP_COMMON_GRPC_STATUS_H_
#define KDP_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace kdp {

// Same code (the two enums share numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// The name grpc-go's codes.Code.String() gives `code` ("OK", "Canceled", "DeadlineExceeded", ...;
// "Code(N)" outside the known codes): the kubelet's error texts and metric labels use it.
std::string GoGrpcCodeName(grpc::StatusCode code);

}  // namespace kdp

#endif  // KDP_COMMON_GRPC_STATUS_H_
