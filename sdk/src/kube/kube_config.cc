// Where the SDK's Kubernetes client gets its configuration (declared in kube_client.h): kubeconfig
// files as client-go's clientcmd reads them (k8s.io/client-go/tools/clientcmd: loader.go
// ResolvePaths, validation.go validateClusterInfo/validateAuthInfo, client_config.go), and the
// in-cluster service account as rest.InClusterConfig reads it. Only what a node-local driver
// needs is supported; anything that would change who we authenticate as or where we connect
// (exec and auth-provider plugins, basic auth, impersonation, proxies) is refused rather than
// ignored.
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "sdk/src/kube/kube_client.h"
#include "yaml-cpp/yaml.h"

namespace kdp::internal {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Relative file references in a kubeconfig are relative to the kubeconfig's directory
// (clientcmd ResolvePaths).
std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return absl::StrCat(base_dir, "/", path);
}

// The entry of `list` (clusters, users or contexts) named `name`, or an undefined node.
YAML::Node FindNamed(const YAML::Node& list, const std::string& name) {
  if (!list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& entry : list) {
    if (entry.IsMap() && entry["name"] && entry["name"].as<std::string>() == name) return entry;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Scalar(const YAML::Node& map, const char* key) {
  const YAML::Node value = map[key];
  if (!value || value.IsNull()) return "";
  return value.as<std::string>();
}

// A PEM value from `<key>-data` (base64) or `<key>` (a file path), not both.
absl::StatusOr<std::string> PemField(const YAML::Node& map, const std::string& key,
                                     const std::string& base_dir, const std::string& where) {
  const std::string data = Scalar(map, (key + "-data").c_str());
  const std::string file = Scalar(map, key.c_str());
  if (!data.empty() && !file.empty()) {
    // clientcmd validation: "<key>-data and <key> are both specified".
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", key, "-data and ", key, " are both specified"));
  }
  if (!data.empty()) {
    std::string decoded;
    // Kubeconfig data fields are standard base64; whitespace (line breaks) is not allowed by
    // Go's decoder either.
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", key, "-data is not valid base64"));
    }
    return decoded;
  }
  if (!file.empty()) {
    const std::string path = ResolvePath(base_dir, file);
    absl::StatusOr<std::string> content = ReadFile(path, kMaxKubeConfigFileBytes);
    if (!content.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": unable to read ", key, " ", path,
                                                     ": ", content.status().message()));
    }
    return content;
  }
  return std::string();
}

absl::StatusOr<KubeConfig> ParseKubeConfig(const YAML::Node& root, const std::string& path) {
  const std::string base_dir = DirectoryOf(path);
  auto invalid = [&path](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": ", rule));
  };
  if (!root.IsMap()) return invalid("not a kubeconfig (expected a mapping at the top level)");
  const std::string context_name = Scalar(root, "current-context");
  if (context_name.empty()) return invalid("no current-context is set");
  const YAML::Node context_entry = FindNamed(root["contexts"], context_name);
  if (!context_entry || !context_entry["context"].IsMap()) {
    return invalid(absl::StrCat("context \"", context_name, "\" (current-context) not found"));
  }
  const YAML::Node context = context_entry["context"];
  const std::string cluster_name = Scalar(context, "cluster");
  const std::string user_name = Scalar(context, "user");

  const YAML::Node cluster_entry = FindNamed(root["clusters"], cluster_name);
  if (cluster_name.empty() || !cluster_entry || !cluster_entry["cluster"].IsMap()) {
    return invalid(
        absl::StrCat("cluster \"", cluster_name, "\" of context \"", context_name, "\" not found"));
  }
  const YAML::Node cluster = cluster_entry["cluster"];
  const std::string cluster_where =
      absl::StrCat("kubeconfig ", path, ": cluster \"", cluster_name, "\"");
  KubeConfig config;
  config.server = Scalar(cluster, "server");
  if (config.server.empty())
    return invalid(absl::StrCat("cluster \"", cluster_name, "\" has no server"));
  if (!Scalar(cluster, "proxy-url").empty()) {
    return invalid(absl::StrCat("cluster \"", cluster_name, "\": proxy-url is not supported"));
  }
  if (cluster["insecure-skip-tls-verify"]) {
    config.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].as<bool>();
  }
  config.tls_server_name = Scalar(cluster, "tls-server-name");
  absl::StatusOr<std::string> ca =
      PemField(cluster, "certificate-authority", base_dir, cluster_where);
  if (!ca.ok()) return ca.status();
  config.certificate_authority_pem = *std::move(ca);
  if (config.insecure_skip_tls_verify && !config.certificate_authority_pem.empty()) {
    // clientcmd validation: "specifying a root certificates file with the insecure flag is not
    // allowed".
    return invalid(absl::StrCat("cluster \"", cluster_name,
                                "\": a certificate authority together with "
                                "insecure-skip-tls-verify is not allowed"));
  }

  // A context without a user is anonymous access (allowed by client-go).
  if (!user_name.empty()) {
    const YAML::Node user_entry = FindNamed(root["users"], user_name);
    if (!user_entry || !user_entry["user"].IsMap()) {
      return invalid(
          absl::StrCat("user \"", user_name, "\" of context \"", context_name, "\" not found"));
    }
    const YAML::Node user = user_entry["user"];
    const std::string user_where = absl::StrCat("kubeconfig ", path, ": user \"", user_name, "\"");
    for (const char* unsupported :
         {"exec", "auth-provider", "username", "password", "as", "as-uid", "as-groups"}) {
      if (user[unsupported] && !user[unsupported].IsNull()) {
        return invalid(absl::StrCat("user \"", user_name, "\": ", unsupported,
                                    " is not supported (use a token, tokenFile or a client "
                                    "certificate)"));
      }
    }
    config.bearer_token = Scalar(user, "token");
    const std::string token_file = Scalar(user, "tokenFile");
    if (!token_file.empty()) {
      config.bearer_token_file = ResolvePath(base_dir, token_file);
      absl::StatusOr<std::string> token =
          ReadFile(config.bearer_token_file, kMaxKubeConfigFileBytes);
      if (!token.ok()) {
        return invalid(absl::StrCat("user \"", user_name,
                                    "\": unable to read tokenFile: ", token.status().message()));
      }
      // client-go: the file's contents take precedence over `token`.
      config.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
    }
    absl::StatusOr<std::string> cert = PemField(user, "client-certificate", base_dir, user_where);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = PemField(user, "client-key", base_dir, user_where);
    if (!key.ok()) return key.status();
    if (cert->empty() != key->empty()) {
      return invalid(absl::StrCat("user \"", user_name,
                                  "\": client-certificate and client-key must be given together"));
    }
    config.client_certificate_pem = *std::move(cert);
    config.client_key_pem = *std::move(key);
  }
  return config;
}

std::string JoinHostPort(const std::string& host, const std::string& port) {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace

absl::StatusOr<KubeConfig> LoadKubeConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path, kMaxKubeConfigFileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("kubeconfig: ", text.status().message()));
  }
  try {
    // YAML is a superset of JSON, so JSON kubeconfigs parse too.
    return ParseKubeConfig(YAML::Load(*text), path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": ", e.what()));
  }
}

absl::StatusOr<KubeConfig> LoadInClusterConfig(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    // rest.ErrNotInCluster.
    return absl::NotFoundError(
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be defined");
  }
  KubeConfig config;
  config.server = absl::StrCat("https://", JoinHostPort(host, port));
  config.bearer_token_file = absl::StrCat(service_account_dir, "/token");
  absl::StatusOr<std::string> token = ReadFile(config.bearer_token_file, kMaxKubeConfigFileBytes);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat("in-cluster configuration: service account token: ",
                                     token.status().message()));
  }
  config.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
  const std::string ca_path = absl::StrCat(service_account_dir, "/ca.crt");
  absl::StatusOr<std::string> ca = ReadFile(ca_path, kMaxKubeConfigFileBytes);
  if (ca.ok()) {
    config.certificate_authority_pem = *std::move(ca);
  } else {
    // rest.InClusterConfig logs and goes on with the system's trust store.
    KDP_LOG_WARNING("Expected to load the root CA of the in-cluster configuration", "path", ca_path,
                    "err", ca.status().ToString());
  }
  return config;
}

absl::StatusOr<KubeConfig> ResolveKubeConfig(const std::string& explicit_path,
                                             const std::string& service_account_dir) {
  if (!explicit_path.empty()) return LoadKubeConfigFile(explicit_path);
  const char* env = std::getenv("KUBECONFIG");
  if (env != nullptr && *env != '\0') {
    std::vector<std::string> files = absl::StrSplit(env, ':', absl::SkipEmpty());
    for (const std::string& file : files) {
      if (FileExists(file)) return LoadKubeConfigFile(file);
    }
    return absl::NotFoundError(absl::StrCat("no kubeconfig: none of the files in $KUBECONFIG (",
                                            absl::StrJoin(files, ", "), ") exists"));
  }
  absl::StatusOr<KubeConfig> in_cluster = LoadInClusterConfig(service_account_dir);
  if (in_cluster.ok() || !absl::IsNotFound(in_cluster.status())) return in_cluster;
  return absl::NotFoundError(absl::StrCat(
      "no Kubernetes API configuration: no kubeconfig path given, $KUBECONFIG is not set, and "
      "the in-cluster configuration failed: ",
      in_cluster.status().message()));
}

}  // namespace kdp::internal
