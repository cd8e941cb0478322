// The SDK's Kubernetes REST client (private): what a DRA driver needs from the API server (GET a
// ResourceClaim, GET the Node, create/update/list/delete ResourceSlices), over HTTPS with CA
// verification, bearer tokens or client certificates, or plain HTTP to a loopback server (the
// local resource API of kdp-manager). Configuration comes from a kubeconfig file, $KUBECONFIG, or
// the in-cluster service account, in the order client-go's tools use.
//
// Thread-safety: KubeClient is thread-safe (each request uses its own connection).
#ifndef KDP_SDK_SRC_KUBE_KUBE_CLIENT_H_
#define KDP_SDK_SRC_KUBE_KUBE_CLIENT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kdp::internal {

// Where and how to reach the API server, resolved from a kubeconfig's current context or the
// in-cluster environment. PEM data is held in memory (kubeconfig *-data fields decoded, file
// fields read relative to the kubeconfig's directory).
struct KubeConfig {
  std::string server = {};                     // "https://host:port" or "http://127.0.0.1:port"
  std::string certificate_authority_pem = {};  // empty: the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name = {};  // overrides the name checked in the server's certificate
  std::string bearer_token = {};     // token, or the contents of tokenFile
  // When set, the client re-reads the token from this file (at most once a minute), as
  // client-go does: projected service-account tokens are rotated by the kubelet while the driver
  // runs. A failed re-read keeps the last good token.
  std::string bearer_token_file = {};
  std::string client_certificate_pem = {};
  std::string client_key_pem = {};
  absl::Duration timeout = absl::Seconds(30);
};

// The most bytes read from a kubeconfig, a token file or a PEM file it names: far above a real
// one (a kubeconfig of many clusters with embedded CA bundles stays under 1 MiB), low enough that
// a wrong path (a log, a device) is refused instead of read into memory.
inline constexpr size_t kMaxKubeConfigFileBytes = 4u << 20;

// Reads the kubeconfig at `path` (YAML or JSON) and resolves its current context: INVALID_ARGUMENT
// naming the file and the missing or malformed entry (no current-context, unknown cluster or user,
// bad base64, unsupported auth such as exec plugins, a file over kMaxKubeConfigFileBytes).
absl::StatusOr<KubeConfig> LoadKubeConfigFile(const std::string& path);

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT and the service account's token and
// CA under `service_account_dir` (default /var/run/secrets/kubernetes.io/serviceaccount).
// NOT_FOUND when not running in a cluster.
absl::StatusOr<KubeConfig> LoadInClusterConfig(
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// client-go's order: `explicit_path` when non-empty, else $KUBECONFIG (the first file of the
// ':'-separated list that exists; NOT_FOUND when it is set but none exists), else the in-cluster
// configuration read from `service_account_dir`. The error names every place tried.
absl::StatusOr<KubeConfig> ResolveKubeConfig(
    const std::string& explicit_path,
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // INVALID_ARGUMENT when the server URL or the PEM data cannot be used.
  static absl::StatusOr<std::unique_ptr<KubeClient>> Create(KubeConfig config);

  // One request; `path` is absolute ("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=...")
  // and is appended to the server URL's own path, if any. A 2xx answer returns the body as JSON
  // (an empty body as an empty object; a body that is not JSON is UNKNOWN). Transport failures,
  // TLS verification failures included, are UNAVAILABLE. Non-2xx answers map to statuses as
  // client-go's apierrors reasons do: 404 NOT_FOUND; 409 ALREADY_EXISTS (reason AlreadyExists,
  // or no reason on a POST) or ABORTED (reason Conflict: a stale resourceVersion on update);
  // 401 UNAUTHENTICATED; 403 PERMISSION_DENIED; 400/422 INVALID_ARGUMENT; 429
  // RESOURCE_EXHAUSTED; 500 INTERNAL; 503 UNAVAILABLE; 504 DEADLINE_EXCEEDED; others UNKNOWN.
  // The message holds the method, path, HTTP code and the Status object's `message` (or the
  // start of the body when it is not a Status).
  virtual absl::StatusOr<nlohmann::json> Get(const std::string& path) = 0;
  virtual absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                              const nlohmann::json& body) = 0;
  virtual absl::StatusOr<nlohmann::json> Put(const std::string& path,
                                             const nlohmann::json& body) = 0;
  virtual absl::StatusOr<nlohmann::json> Delete(const std::string& path) = 0;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_KUBE_KUBE_CLIENT_H_
