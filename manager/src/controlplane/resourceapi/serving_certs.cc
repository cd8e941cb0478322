#include "manager/src/controlplane/resourceapi/serving_certs.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace kdp::manager::resourceapi {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The names the serving certificate must carry: how clients reach a loopback API server.
constexpr const char* kServingIps[] = {"127.0.0.1", "::1"};
constexpr const char* kServingHost = "localhost";

// OpenSSL's queued errors as one string, and the queue emptied.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buffer);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::Status OpenSslError(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", OpenSslErrors()));
}

X509Ptr ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return nullptr;
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return cert;
}

KeyPtr ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return nullptr;
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

std::string DrainBio(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError("encoding a certificate");
  }
  return DrainBio(bio.get());
}

absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("encoding a private key");
  }
  return DrainBio(bio.get());
}

absl::Time NotAfter(const X509* cert) {
  struct tm tm = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&tm));
}

absl::StatusOr<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("generating an ECDSA P-256 key");
  return key;
}

// Adds one v3 extension written in OpenSSL's configuration syntax.
absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  if (extension == nullptr) return OpenSslError(absl::StrCat("certificate extension ", value));
  const int added = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  if (added != 1) return OpenSslError(absl::StrCat("certificate extension ", value));
  return absl::OkStatus();
}

struct CertSpec {
  std::string common_name;
  std::string organization;  // empty: none
  bool ca = false;
  // Further extensions (nid, value), added after the key identifiers.
  std::vector<std::pair<int, std::string>> extensions;
};

// A certificate for `key` per `spec`, valid from an hour before `now` for `validity`, signed by
// `issuer`/`issuer_key` (both null: self-signed).
absl::StatusOr<X509Ptr> NewCert(const CertSpec& spec, EVP_PKEY* key, X509* issuer,
                                EVP_PKEY* issuer_key, absl::Time now, absl::Duration validity) {
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), 2) != 1) {
    return OpenSslError("creating a certificate");
  }
  // A random 127-bit serial: unique without bookkeeping, positive as RFC 5280 asks.
  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) return OpenSslError("serial number");
  serial_bytes[0] &= 0x7f;
  BIGNUM* serial_bn = BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr);
  ASN1_INTEGER* serial = serial_bn == nullptr ? nullptr : BN_to_ASN1_INTEGER(serial_bn, nullptr);
  BN_free(serial_bn);
  const bool serial_set = serial != nullptr && X509_set_serialNumber(cert.get(), serial) == 1;
  ASN1_INTEGER_free(serial);
  if (!serial_set) return OpenSslError("serial number");

  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!spec.organization.empty() &&
      X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.organization.c_str()),
                                 -1, -1, 0) != 1) {
    return OpenSslError("certificate subject");
  }
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1) {
    return OpenSslError("certificate subject");
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  EVP_PKEY* signer_key = issuer_key != nullptr ? issuer_key : key;
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 ||
      ASN1_TIME_set(X509_getm_notBefore(cert.get()), absl::ToTimeT(now - absl::Hours(1))) ==
          nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), absl::ToTimeT(now + validity)) == nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslError("certificate fields");
  }
  KDP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_basic_constraints,
                                   spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE"));
  KDP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  if (issuer != nullptr) {
    KDP_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  }
  for (const auto& [nid, value] : spec.extensions) {
    KDP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, nid, value.c_str()));
  }
  if (X509_sign(cert.get(), signer_key, EVP_sha256()) <= 0) {
    return OpenSslError("signing a certificate");
  }
  return cert;
}

struct CaPair {
  X509Ptr cert;
  KeyPtr key;
};

// The pair in `cert_pem`/`key_pem` when both parse and belong together; nullopt otherwise.
std::optional<CaPair> ParsePair(const std::string& cert_pem, const std::string& key_pem) {
  CaPair pair{ParseCert(cert_pem), ParseKey(key_pem)};
  if (pair.cert == nullptr || pair.key == nullptr ||
      X509_check_private_key(pair.cert.get(), pair.key.get()) != 1) {
    ERR_clear_error();
    return std::nullopt;
  }
  return pair;
}

// Why the serving pair cannot be used with `ca` at `now`; empty when it can.
std::string ServingUnfitReason(const CaPair& serving, const CaPair& ca, absl::Time now,
                               absl::Duration renew_before) {
  EVP_PKEY* ca_public = X509_get0_pubkey(ca.cert.get());
  if (ca_public == nullptr || X509_verify(serving.cert.get(), ca_public) != 1) {
    ERR_clear_error();
    return "not signed by the CA";
  }
  for (const char* ip : kServingIps) {
    if (X509_check_ip_asc(serving.cert.get(), ip, 0) != 1) {
      return absl::StrCat("does not name ", ip);
    }
  }
  if (X509_check_host(serving.cert.get(), kServingHost, 0, 0, nullptr) != 1) {
    return absl::StrCat("does not name ", kServingHost);
  }
  if (NotAfter(serving.cert.get()) - now < renew_before) return "expires soon";
  return "";
}

// Reads an optional file: its text, or "" when it does not exist; other errors are returned.
absl::StatusOr<std::string> ReadIfPresent(const std::string& path) {
  absl::StatusOr<std::string> text = kdp::ReadFile(path, 1 << 20);
  if (text.ok()) return text;
  // An unreadable or oversized file is replaced like a malformed one; only the errors that a new
  // file would hit too are worth stopping for.
  if (text.status().code() == absl::StatusCode::kPermissionDenied) return text.status();
  return std::string();
}

absl::Status WritePair(const std::string& cert_path, const std::string& key_path, X509* cert,
                       EVP_PKEY* key) {
  KDP_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key));
  KDP_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert));
  // The key first: a crash between the two leaves a certificate that does not match its key,
  // which the next start replaces, never a new certificate beside an old key.
  KDP_RETURN_IF_ERROR(WriteFileDurably(key_path, key_pem, 0600));
  return WriteFileDurably(cert_path, cert_pem, 0640);
}

}  // namespace

std::string CaCertPath(const std::string& dir) { return dir + "/ca.crt"; }
std::string ServingCertPath(const std::string& dir) { return dir + "/apiserver.crt"; }

absl::StatusOr<ServingCertificates> EnsureServingCertificates(
    const std::string& dir, const ServingCertificateOptions& options) {
  const absl::Time now = options.now ? options.now() : absl::Now();
  const std::string ca_cert_path = CaCertPath(dir);
  const std::string ca_key_path = dir + "/ca.key";
  const std::string cert_path = ServingCertPath(dir);
  const std::string key_path = dir + "/apiserver.key";
  ServingCertificates out;

  KDP_ASSIGN_OR_RETURN(std::string ca_cert_pem, ReadIfPresent(ca_cert_path));
  KDP_ASSIGN_OR_RETURN(std::string ca_key_pem, ReadIfPresent(ca_key_path));
  std::optional<CaPair> ca = ParsePair(ca_cert_pem, ca_key_pem);
  std::string ca_reason;
  if (ca_cert_pem.empty()) {
    ca_reason = "none yet";
  } else if (!ca.has_value()) {
    ca_reason = "malformed, or its key does not match";
  } else if (X509_check_ca(ca->cert.get()) == 0) {
    ca_reason = "not a CA certificate";
  } else if (NotAfter(ca->cert.get()) - now < options.renew_before) {
    ca_reason = "expires soon";
  }
  if (!ca_reason.empty()) {
    KDP_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
    KDP_ASSIGN_OR_RETURN(
        X509Ptr cert,
        NewCert({.common_name = "kdp-ca",
                 .organization = "kdp",
                 .ca = true,
                 .extensions = {{NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign"}}},
                key.get(), nullptr, nullptr, now, options.ca_validity));
    KDP_RETURN_IF_ERROR(WritePair(ca_cert_path, ca_key_path, cert.get(), key.get()));
    if (ca_cert_pem.empty()) {
      KDP_LOG_INFO("Created the local API's certificate authority", "file", ca_cert_path);
    } else {
      KDP_LOG_WARNING(
          "Replaced the local API's certificate authority; clients holding the old CA must "
          "read the kubeconfig again",
          "file", ca_cert_path, "reason", ca_reason);
    }
    ca = CaPair{std::move(cert), std::move(key)};
    out.ca_created = true;
  }
  KDP_ASSIGN_OR_RETURN(out.ca_pem, CertPem(ca->cert.get()));
  out.ca_not_after = NotAfter(ca->cert.get());

  KDP_ASSIGN_OR_RETURN(std::string cert_pem, ReadIfPresent(cert_path));
  KDP_ASSIGN_OR_RETURN(std::string key_pem, ReadIfPresent(key_path));
  std::optional<CaPair> serving = ParsePair(cert_pem, key_pem);
  std::string reason;
  if (cert_pem.empty()) {
    reason = "none yet";
  } else if (!serving.has_value()) {
    reason = "malformed, or its key does not match";
  } else {
    reason = ServingUnfitReason(*serving, *ca, now, options.renew_before);
  }
  if (!reason.empty()) {
    KDP_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
    KDP_ASSIGN_OR_RETURN(
        X509Ptr cert,
        NewCert({.common_name = "kdp-apiserver",
                 .organization = "",
                 .ca = false,
                 .extensions = {{NID_key_usage, "critical,digitalSignature"},
                                {NID_ext_key_usage, "serverAuth"},
                                {NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"}}},
                key.get(), ca->cert.get(), ca->key.get(), now, options.serving_validity));
    KDP_RETURN_IF_ERROR(WritePair(cert_path, key_path, cert.get(), key.get()));
    if (cert_pem.empty()) {
      KDP_LOG_INFO("Created the local API's serving certificate", "file", cert_path);
    } else {
      KDP_LOG_INFO("Renewed the local API's serving certificate", "file", cert_path, "reason",
                   reason);
    }
    serving = CaPair{std::move(cert), std::move(key)};
    out.cert_created = true;
  }
  KDP_ASSIGN_OR_RETURN(out.cert_pem, CertPem(serving->cert.get()));
  KDP_ASSIGN_OR_RETURN(out.key_pem, KeyPem(serving->key.get()));
  out.not_after = NotAfter(serving->cert.get());
  return out;
}

absl::StatusOr<ClientCertificate> IssueClientCertificate(const std::string& ca_pem,
                                                         const std::string& ca_key_pem,
                                                         const std::string& common_name,
                                                         absl::Duration validity) {
  std::optional<CaPair> ca = ParsePair(ca_pem, ca_key_pem);
  if (!ca.has_value()) {
    return absl::InvalidArgumentError("the CA certificate and key do not parse or do not match");
  }
  KDP_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  KDP_ASSIGN_OR_RETURN(X509Ptr cert,
                       NewCert({.common_name = common_name,
                                .organization = "",
                                .ca = false,
                                .extensions = {{NID_key_usage, "critical,digitalSignature"},
                                               {NID_ext_key_usage, "clientAuth"}}},
                               key.get(), ca->cert.get(), ca->key.get(), absl::Now(), validity));
  ClientCertificate out;
  KDP_ASSIGN_OR_RETURN(out.cert_pem, CertPem(cert.get()));
  KDP_ASSIGN_OR_RETURN(out.key_pem, KeyPem(key.get()));
  return out;
}

}  // namespace kdp::manager::resourceapi
