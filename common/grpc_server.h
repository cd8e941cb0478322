// The one way kdp serves gRPC: on a unix socket (never a TCP port), a stale socket file at the
// path removed first, insecure credentials as the kubelet uses for its local sockets.
#ifndef KDP_COMMON_GRPC_SERVER_H_
#define KDP_COMMON_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kdp {

// Serves `service` on `socket_path`. FAILED_PRECONDITION when a non-socket file is in the way,
// INTERNAL (naming the path) when gRPC cannot listen there. `service` must outlive the server.
absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service);

}  // namespace kdp

#endif  // KDP_COMMON_GRPC_SERVER_H_
