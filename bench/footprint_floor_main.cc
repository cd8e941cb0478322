// kdp-footprint-floor <socket>: an empty DevicePlugin service on a unix socket until SIGTERM,
// served as kdp-gpu-plugin serves (ServeOnUnixSocket with one idle poller, one malloc arena) and
// linked as it is (kdp_lean_program when KDP_LEAN_BINARIES is on). footprint_benchmark measures it
// as the floor: what any gRPC server of this build pays before a line of kdp's plugin code. A
// program of its own rather than the benchmark re-executed: the benchmark links the manager,
// cpp-httplib and OpenSSL, whose pages a plugin does not load.
#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <string>

#include "common/grpc_server.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kdp-footprint-floor SOCKET\n");
    return 2;
  }
  mallopt(M_ARENA_MAX, 1);  // as kdp::RunPlugins() does
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  v1beta1::DevicePlugin::Service service;
  auto server = kdp::ServeOnUnixSocket(argv[1], &service, kdp::ServeOptions{.max_pollers = 1});
  if (!server.ok()) {
    std::fprintf(stderr, "kdp-footprint-floor: %s\n", server.status().ToString().c_str());
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->Shutdown();
  return 0;
}
