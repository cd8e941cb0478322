// TLS material for the local API's unit tests: serving certificates made once per test program
// (EnsureServingCertificates in a temporary directory, removed at once), and cpp-httplib clients
// of 127.0.0.1 that trust that CA only as a kubeconfig's certificate-authority-data is trusted.
//
// Thread-safety: TestCertificates is thread-safe (made on first use); the rest are free
// functions without shared state.
#ifndef KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_TEST_TLS_H_
#define KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_TEST_TLS_H_

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/serving_certs.h"

namespace kdp::testing {

using ::kdp::manager::resourceapi::EnsureServingCertificates;
using ::kdp::manager::resourceapi::ServingCertificates;

inline const ServingCertificates& TestCertificates() {
  static const ServingCertificates* const certificates = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "kdp-test-tls-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    absl::StatusOr<ServingCertificates> made = EnsureServingCertificates(dir);
    std::filesystem::remove_all(dir);
    if (!made.ok()) {
      std::fprintf(stderr, "test certificates: %s\n", made.status().ToString().c_str());
      std::abort();
    }
    return new ServingCertificates(*std::move(made));
  }();
  return *certificates;
}

// A new X509_STORE holding the PEM certificate `ca_pem` (httplib takes ownership).
inline X509_STORE* NewCaStore(const std::string& ca_pem) {
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (ca != nullptr) X509_STORE_add_cert(store, ca);
  X509_free(ca);
  return store;
}

// An https client of 127.0.0.1:`port` that verifies the server against `ca_pem`.
inline std::unique_ptr<httplib::Client> NewHttpsClient(
    int port, const std::string& ca_pem = TestCertificates().ca_pem) {
  auto client = std::make_unique<httplib::Client>(absl::StrCat("https://127.0.0.1:", port));
  client->enable_server_certificate_verification(true);
  client->set_ca_cert_store(NewCaStore(ca_pem));
  return client;
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_TEST_TLS_H_
