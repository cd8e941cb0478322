// The one way kdp serves and dials gRPC: on a unix socket (never a TCP port), a stale socket file
// at the path removed first, insecure credentials as the kubelet uses for its local sockets.
#ifndef KDP_COMMON_GRPC_SERVER_H_
#define KDP_COMMON_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kdp {

// Serves `service` on `socket_path`, the socket file mode 0600 (kSocketMode, set right after gRPC
// binds it, whatever the umask). FAILED_PRECONDITION when a non-socket file is in the way,
// INTERNAL (naming the path) when gRPC cannot listen there. `service` must outlive the server.
// `max_threads` > 0 bounds the threads gRPC's synchronous server runs handlers on (a
// grpc::ResourceQuota): without it gRPC starts a thread for every call that arrives while the
// others are busy, hundreds in a flood. A call that finds every thread busy and none left to start
// is answered RESOURCE_EXHAUSTED ("Server Threadpool Exhausted") at once; a streaming call holds
// its thread until it ends, so a server with long streams needs room for them.
absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service,
                                                                int max_threads = 0);

// How a small server (a device plugin: one kubelet, one ListAndWatch stream, an Allocate now and
// then) runs its synchronous handlers.
struct ServeOptions {
  // As `max_threads` above; 0: unbounded.
  int max_threads = 0;
  // > 0: one completion queue, polled by at least one and at most `max_pollers` idle threads
  // (gRPC's defaults: 2 at most, so a server at rest keeps two). A call takes the poller that
  // found it and a new one is started while it runs; it exits after the call when more than
  // `max_pollers` are idle, so a burst never leaves threads behind. 0: gRPC's defaults.
  int max_pollers = 0;
};

// ServeOnUnixSocket above with `options`.
absl::StatusOr<std::unique_ptr<grpc::Server>> ServeOnUnixSocket(const std::string& socket_path,
                                                                grpc::Service* service,
                                                                const ServeOptions& options);

// A channel to the socket at `socket_path` that owns its connection: gRPC's global subchannel
// pool would hand a new channel an open connection to whatever process used to listen at the same
// path (an old plugin instance still shutting down after a new one replaced its socket), so a
// re-registration would be served by the old process. Proxies from the environment are ignored.
std::shared_ptr<grpc::Channel> DialUnixSocket(const std::string& socket_path);

}  // namespace kdp

#endif  // KDP_COMMON_GRPC_SERVER_H_
