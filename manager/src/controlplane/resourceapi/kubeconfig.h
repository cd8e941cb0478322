// The credentials kubectl, client-go and DRA drivers use to reach kdp-manager's local resource
// API: a random bearer token and a standard kubeconfig file (`<kubelet-root>/kdp/kubeconfig`)
// naming cluster, user and context `kdp`, with `server: https://127.0.0.1:<port>`, the CA that
// signed the server's certificate (certificate-authority-data, serving_certs.h) and the token, so
// an unmodified client started with KUBECONFIG=<that file> verifies the manager and
// authenticates to it. local_api.h generates the token, starts the server with it, then writes
// the file.
//
// Thread-safety: thread-safe (no shared state).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBECONFIG_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBECONFIG_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kdp::manager::resourceapi {

// 32 bytes from OpenSSL's CSPRNG (RAND_bytes), hex-encoded (64 characters). INTERNAL when the
// generator fails.
[[nodiscard]] absl::StatusOr<std::string> GenerateBearerToken();

// The kubeconfig text for `server` ("https://127.0.0.1:8443"), the PEM CA `ca_pem` and `token`.
std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem,
                           const std::string& token);

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

// Creates `<kubelet_root>/kdp`, where the token, the kubeconfig and the TLS keys live, with mode
// 0700 (tightened if it exists with a wider one). Returns its path. Errors name the path:
// NOT_FOUND when kubelet_root does not exist, PERMISSION_DENIED, INTERNAL otherwise.
[[nodiscard]] absl::StatusOr<std::string> EnsureCredentialsDirectory(
    const std::string& kubelet_root);

// EnsureCredentialsDirectory, then durably replaces `<kubelet_root>/kdp/kubeconfig` (mode 0600)
// with KubeconfigYaml("https://127.0.0.1:<port>", ca_pem, token). Returns the file's path.
// Errors name the path: as above, and RESOURCE_EXHAUSTED for a full disk.
[[nodiscard]] absl::StatusOr<std::string> WriteKubeconfig(const std::string& kubelet_root, int port,
                                                          const std::string& ca_pem,
                                                          const std::string& token);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBECONFIG_H_
