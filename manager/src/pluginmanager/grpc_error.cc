#include "manager/src/pluginmanager/grpc_error.h"

#include "absl/strings/str_cat.h"

namespace kdp::manager {

std::string GoGrpcErrorText(const grpc::Status& status) {
  std::string desc = status.error_message();
  // grpc-go reports an expired context as context.DeadlineExceeded's text; gRPC C++ says
  // "Deadline Exceeded" for the same client-side event.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && desc == "Deadline Exceeded") {
    desc = "context deadline exceeded";
  }
  return absl::StrCat("rpc error: code = ", GoGrpcCodeName(status.error_code()), " desc = ", desc);
}

absl::Status FromGrpcStatusGoStyle(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), GoGrpcErrorText(status));
}

}  // namespace kdp::manager
