// Small pieces integration tests share when they play a peer of kdp-manager: a gRPC server on a
// unix socket (a plugin's registration or DRA socket), and the server URL and bearer token of the
// kubeconfig the manager writes for its local resource API.
//
// Thread-safety: free functions without shared state.
#ifndef KDP_TESTS_TESTING_LOCAL_SERVERS_H_
#define KDP_TESTS_TESTING_LOCAL_SERVERS_H_

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace kdp::testing {

// Serves `services` (borrowed; they must outlive the server) together on a unix socket at `path`,
// creating its directory and replacing a stale socket; null when gRPC cannot listen there. Shut it
// down with a deadline: a handler still blocked would hold a plain Shutdown() forever.
inline std::unique_ptr<grpc::Server> ServeUnix(const std::string& path,
                                               const std::vector<grpc::Service*>& services) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  std::filesystem::remove(path, ignored);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* service : services) builder.RegisterService(service);
  return builder.BuildAndStart();
}

// The server and token of a kubeconfig as the manager writes it (`server: http://...`,
// `token: ...`); empty strings when the file has none.
inline std::pair<std::string, std::string> ReadKubeconfigServer(const std::string& path) {
  std::ifstream in(path);
  std::string line, server, token;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&text, "server: ")) server = std::string(text);
    if (absl::ConsumePrefix(&text, "token: ")) token = std::string(text);
  }
  return {server, token};
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_LOCAL_SERVERS_H_
