#include "manager/src/pluginmanager/grpc_error.h"

#include "absl/strings/str_cat.h"

namespace kdp::manager {

std::string GoGrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "Canceled";
    case grpc::StatusCode::UNKNOWN:
      return "Unknown";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "InvalidArgument";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DeadlineExceeded";
    case grpc::StatusCode::NOT_FOUND:
      return "NotFound";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "AlreadyExists";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PermissionDenied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "ResourceExhausted";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FailedPrecondition";
    case grpc::StatusCode::ABORTED:
      return "Aborted";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OutOfRange";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "Unimplemented";
    case grpc::StatusCode::INTERNAL:
      return "Internal";
    case grpc::StatusCode::UNAVAILABLE:
      return "Unavailable";
    case grpc::StatusCode::DATA_LOSS:
      return "DataLoss";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "Unauthenticated";
    default:
      return absl::StrCat("Code(", static_cast<int>(code), ")");
  }
}

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
