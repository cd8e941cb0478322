#include "common/grpc_server.h"

#include "absl/strings/str_cat.h"
#include "common/path_safety.h"
#include "common/unix_socket.h"

namespace kdp {

absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service,
                                                                int max_threads) {
  return ServeOnUnixSocket(socket_path, service, ServeOptions{.max_threads = max_threads});
}

absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service,
                                                                const ServeOptions& options) {
  if (absl::Status removed = RemoveSocketIfPresent(socket_path); !removed.ok()) return removed;
  grpc::ServerBuilder builder;
  if (options.max_threads > 0) {
    grpc::ResourceQuota quota(absl::StrCat("threads of ", socket_path));
    quota.SetMaxThreads(options.max_threads);
    builder.SetResourceQuota(quota);
  }
  if (options.max_pollers > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                options.max_pollers);
  }
  builder.AddListeningPort(UnixTarget(socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::InternalError(absl::StrCat("cannot listen on unix socket ", socket_path));
  }
  // gRPC bound the socket with the umask's mode: only the owner may connect.
  if (absl::Status restricted = RestrictSocketToOwner(socket_path); !restricted.ok()) {
    server->Shutdown();
    return restricted;
  }
  return server;
}

std::shared_ptr<grpc::Channel> DialUnixSocket(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return grpc::CreateCustomChannel(UnixTarget(socket_path), grpc::InsecureChannelCredentials(),
                                   args);
}

}  // namespace kdp
