// Client-side gRPC errors as the kubelet (a Go program) prints them: "rpc error: code =
// DeadlineExceeded desc = context deadline exceeded". The plugin manager and the DRA plugin
// clients use these texts in the errors they return and send back to plugins, so logs and
// events read like the kubelet's. Candidates for common/grpc_status.h once more callers need them.
//
// Thread-safety: pure functions.
#ifndef KDP_MANAGER_SRC_PLUGINMANAGER_GRPC_ERROR_H_
#define KDP_MANAGER_SRC_PLUGINMANAGER_GRPC_ERROR_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"
#include "common/grpc_status.h"  // GoGrpcCodeName

namespace kdp::manager {

// status.Error(...).Error() of grpc-go: "rpc error: code = <GoGrpcCodeName> desc = <message>".
// gRPC C++'s client-side "Deadline Exceeded" becomes Go's "context deadline exceeded" (the text
// the kubelet's callers see when their context expires). REQUIRES: !status.ok().
std::string GoGrpcErrorText(const grpc::Status& status);

// An absl::Status with the same code and GoGrpcErrorText as the message; OK for OK.
absl::Status FromGrpcStatusGoStyle(const grpc::Status& status);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_PLUGINMANAGER_GRPC_ERROR_H_
