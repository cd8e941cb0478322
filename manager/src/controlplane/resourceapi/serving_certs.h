// The TLS identity of kdp-manager's local API: a private certificate authority and a serving
// certificate it signs for 127.0.0.1, ::1 and localhost, kept as PEM files beside the kubeconfig
// (`<kubelet-root>/kdp/{ca.crt,ca.key,apiserver.crt,apiserver.key}`, the names kubeadm gives the
// cluster CA and the API server's pair; keys 0600). client-go (kubectl, every Go DRA driver)
// sends its kubeconfig's token or client certificate only to an https:// server, so without
// this no real Kubernetes client could authenticate.
//
// The files are reused across restarts, so drivers that read the kubeconfig once keep trusting
// the manager; what is missing, unreadable, malformed, mismatched (a key that is not the
// certificate's, a certificate the CA did not sign, a name missing) or within `renew_before` of
// its expiry is made anew and logged. A new CA also means a new serving certificate (and a
// kubeconfig the caller must write again: clients that read the old CA stop trusting the server).
//
// Keys are ECDSA P-256, signatures SHA-256: what Go's crypto/x509 and OpenSSL both verify.
//
// Thread-safety: thread-safe (no shared state; callers serialise calls on one directory).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVING_CERTS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVING_CERTS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kdp::manager::resourceapi {

struct ServingCertificateOptions {
  // Lifetime of a new CA (kubeadm's: 10 years).
  absl::Duration ca_validity = absl::Hours(24 * 3650);
  // Lifetime of a new serving certificate (kubeadm's: 1 year).
  absl::Duration serving_validity = absl::Hours(24 * 365);
  // A certificate that expires within this is made anew.
  absl::Duration renew_before = absl::Hours(24 * 30);
  // The clock; absl::Now when empty. New certificates are valid from an hour before it (clock
  // skew between the manager and a client).
  std::function<absl::Time()> now = nullptr;
};

// What the API server serves with and what clients trust, all PEM.
struct ServingCertificates {
  std::string ca_pem;    // the CA certificate: the kubeconfig's certificate-authority-data
  std::string cert_pem;  // the serving certificate
  std::string key_pem;   // the serving certificate's private key
  absl::Time ca_not_after = absl::InfinitePast();
  absl::Time not_after = absl::InfinitePast();  // the serving certificate's expiry
  // What this call made anew (false: reused from the files).
  bool ca_created = false;
  bool cert_created = false;
};

// The paths, under `dir` (`<kubelet-root>/kdp`).
std::string CaCertPath(const std::string& dir);
std::string ServingCertPath(const std::string& dir);

// Loads the CA and serving pair from `dir`, making anew what is missing or unfit (see above),
// and writes what it made durably (certificates 0640, keys 0600: kdp/ files are never
// world-readable). REQUIRES: `dir` exists.
// Errors name the file: PERMISSION_DENIED, RESOURCE_EXHAUSTED (a full disk), INTERNAL (OpenSSL).
[[nodiscard]] absl::StatusOr<ServingCertificates> EnsureServingCertificates(
    const std::string& dir, const ServingCertificateOptions& options = {});

// A new key pair and certificate signed by the CA in `ca_pem`/`ca_key_pem`, for client
// certificate authentication (subject CN `common_name`, extended key usage clientAuth), valid
// for `validity` from now. INVALID_ARGUMENT when the CA does not parse.
struct ClientCertificate {
  std::string cert_pem;
  std::string key_pem;
};
[[nodiscard]] absl::StatusOr<ClientCertificate> IssueClientCertificate(
    const std::string& ca_pem, const std::string& ca_key_pem, const std::string& common_name,
    absl::Duration validity = absl::Hours(24 * 365));

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVING_CERTS_H_
