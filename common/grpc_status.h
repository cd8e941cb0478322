// The one place where absl::Status and grpc::Status meet: every wire boundary converts here.
#ifndef KDP_COMMON_GRPC_STATUS_H_
#define KDP_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kdp {

// Same code (the two enums share numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace kdp

#endif  // KDP_COMMON_GRPC_STATUS_H_
