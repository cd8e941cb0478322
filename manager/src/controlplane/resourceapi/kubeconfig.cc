#include "manager/src/controlplane/resourceapi/kubeconfig.h"

#include <errno.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/durable_file.h"

namespace kdp::manager::resourceapi {

absl::StatusOr<std::string> GenerateBearerToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("generating the resource API bearer token: RAND_bytes failed");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem,
                           const std::string& token) {
  return absl::StrCat(
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: kdp\n"
      "  cluster:\n"
      "    certificate-authority-data: ",
      absl::Base64Escape(ca_pem),
      "\n"
      "    server: ",
      server,
      "\n"
      "users:\n"
      "- name: kdp\n"
      "  user:\n"
      "    token: ",
      token,
      "\n"
      "contexts:\n"
      "- name: kdp\n"
      "  context:\n"
      "    cluster: kdp\n"
      "    user: kdp\n"
      "current-context: kdp\n");
}

std::optional<KubeconfigCredentials> ReadKubeconfigCredentials(const std::string& kubelet_root) {
  absl::StatusOr<std::string> text = kdp::ReadFile(KubeconfigPath(kubelet_root));
  if (!text.ok()) return std::nullopt;
  KubeconfigCredentials credentials;
  constexpr absl::string_view kServer = "    server: https://127.0.0.1:";
  // What kdp wrote before the API served TLS: its port and token are kept all the same.
  constexpr absl::string_view kPlainServer = "    server: http://127.0.0.1:";
  constexpr absl::string_view kToken = "    token: ";
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, kServer) || absl::ConsumePrefix(&line, kPlainServer)) {
      if (!absl::SimpleAtoi(line, &credentials.port)) return std::nullopt;
    } else if (absl::ConsumePrefix(&line, kToken)) {
      credentials.token = std::string(line);
    }
  }
  // Only what GenerateBearerToken makes: 64 hex digits.
  if (credentials.port <= 0 || credentials.port > 65535 || credentials.token.size() != 64 ||
      !std::all_of(credentials.token.begin(), credentials.token.end(),
                   [](char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  return credentials;
}

std::string KubeconfigPath(const std::string& kubelet_root) {
  return kubelet_root + "/kdp/kubeconfig";
}

absl::StatusOr<std::string> EnsureCredentialsDirectory(const std::string& kubelet_root) {
  const std::string dir = kubelet_root + "/kdp";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("creating ", dir));
  }
  // The token and the CA key are credentials: the directory must not be readable by others even
  // when it existed with a wider mode.
  if (chmod(dir.c_str(), 0700) != 0) return ErrnoStatus(errno, absl::StrCat("chmod ", dir));
  return dir;
}

absl::StatusOr<std::string> WriteKubeconfig(const std::string& kubelet_root, int port,
                                            const std::string& ca_pem, const std::string& token) {
  absl::StatusOr<std::string> dir = EnsureCredentialsDirectory(kubelet_root);
  if (!dir.ok()) return dir.status();
  const std::string path = KubeconfigPath(kubelet_root);
  absl::Status written = WriteFileDurably(
      path, KubeconfigYaml(absl::StrCat("https://127.0.0.1:", port), ca_pem, token), 0600);
  if (!written.ok()) return written;
  return path;
}

}  // namespace kdp::manager::resourceapi
