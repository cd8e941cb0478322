#include "common/grpc_server.h"

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"

namespace kdp {

absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service) {
  if (absl::Status removed = RemoveSocketIfPresent(socket_path); !removed.ok()) return removed;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::InternalError(absl::StrCat("cannot listen on unix socket ", socket_path));
  }
  return server;
}

}  // namespace kdp
