// The credentials a DRA driver uses to reach kdp-manager's local resource API: a random bearer
// token and a standard kubeconfig file (`<kubelet-root>/kdp/kubeconfig`) naming cluster, user and
// context `kdp`, with `server: http://127.0.0.1:<port>` and the token, so an unmodified client-go
// driver started with KUBECONFIG=<that file> talks to the manager. The manager's main generates
// the token, starts the server with it, then writes the file.
//
// Thread-safety: thread-safe (no shared state).
#ifndef KDP_MANAGER_SRC_RESOURCEAPI_KUBECONFIG_H_
#define KDP_MANAGER_SRC_RESOURCEAPI_KUBECONFIG_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kdp::manager::resourceapi {

// 32 bytes from OpenSSL's CSPRNG (RAND_bytes), hex-encoded (64 characters). INTERNAL when the
// generator fails.
[[nodiscard]] absl::StatusOr<std::string> GenerateBearerToken();

// The kubeconfig text for `server` ("http://127.0.0.1:8080") and `token`.
std::string KubeconfigYaml(const std::string& server, const std::string& token);

// What a previous manager on this kubelet root wrote: the port of its server and its token. A
// restarted manager serves on them again (when the port is free), so drivers that read the
// kubeconfig once, as client-go does, keep working across the restart, as they would across an
// API server's. nullopt when there is no such file or it is not one WriteKubeconfig wrote.
struct KubeconfigCredentials {
  int port = 0;
  std::string token = {};
};
std::optional<KubeconfigCredentials> ReadKubeconfigCredentials(const std::string& kubelet_root);

// The kubeconfig path for a kubelet root directory: `<kubelet_root>/kdp/kubeconfig`.
std::string KubeconfigPath(const std::string& kubelet_root);

// Creates `<kubelet_root>/kdp` (mode 0700, tightened if it exists) and durably replaces
// `<kubelet_root>/kdp/kubeconfig` (mode 0600) with KubeconfigYaml("http://127.0.0.1:<port>",
// token). Returns the file's path. Errors name the path: NOT_FOUND when kubelet_root does not
// exist, PERMISSION_DENIED, RESOURCE_EXHAUSTED for a full disk, INTERNAL otherwise.
[[nodiscard]] absl::StatusOr<std::string> WriteKubeconfig(const std::string& kubelet_root, int port,
                                                          const std::string& token);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_RESOURCEAPI_KUBECONFIG_H_
