#include "manager/src/controlplane/resourceapi/serving_certs.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/resourceapi/file_mode_test_util.h"

namespace kdp::manager::resourceapi {
namespace {

using testing::ModeOf;

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

// What a TLS client does with the kubeconfig's CA: verify the chain at `when` for purpose
// serverAuth, and the name it dialled (an IP address or a host name).
std::string Verify(const ServingCertificates& certs, const std::string& name,
                   absl::Time when = absl::Now()) {
  X509* ca = ParseCert(certs.ca_pem);
  X509* leaf = ParseCert(certs.cert_pem);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* context = X509_STORE_CTX_new();
  X509_STORE_CTX_init(context, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(context);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM_set_time(param, absl::ToTimeT(when));
  if (name.find_first_not_of("0123456789.:") == std::string::npos) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
  }
  const int ok = X509_verify_cert(context);
  std::string error =
      ok == 1 ? "" : X509_verify_cert_error_string(X509_STORE_CTX_get_error(context));
  X509_STORE_CTX_free(context);
  X509_STORE_free(store);
  X509_free(leaf);
  X509_free(ca);
  return error;
}

TEST(ServingCertificates, CreatesACaAndAServingCertificateForLoopback) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> certs = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  EXPECT_TRUE(certs->ca_created);
  EXPECT_TRUE(certs->cert_created);
  for (const char* name : {"127.0.0.1", "::1", "localhost"}) {
    EXPECT_EQ(Verify(*certs, name), "") << name;
  }
  EXPECT_NE(Verify(*certs, "10.0.0.1"), "");
  EXPECT_NE(Verify(*certs, "example.com"), "");
  // Lifetimes: a year for the serving certificate, ten for the CA (kubeadm's).
  EXPECT_NEAR(absl::ToDoubleHours(certs->not_after - absl::Now()), 24 * 365, 1);
  EXPECT_NEAR(absl::ToDoubleHours(certs->ca_not_after - absl::Now()), 24 * 3650, 1);
  // Keys are private; certificates are group-readable at most, as every file under kdp/.
  EXPECT_EQ(ModeOf(dir.Path("ca.key")), 0600u);
  EXPECT_EQ(ModeOf(dir.Path("apiserver.key")), 0600u);
  EXPECT_EQ(ModeOf(CaCertPath(dir.path())), 0640u);
  EXPECT_EQ(ModeOf(ServingCertPath(dir.path())), 0640u);
  EXPECT_EQ(*ReadFile(CaCertPath(dir.path())), certs->ca_pem);
  EXPECT_EQ(*ReadFile(ServingCertPath(dir.path())), certs->cert_pem);
  EXPECT_EQ(*ReadFile(dir.Path("apiserver.key")), certs->key_pem);
}

TEST(ServingCertificates, ReusesWhatIsStillGood) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> first = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(first.ok());
  absl::StatusOr<ServingCertificates> second = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->ca_created);
  EXPECT_FALSE(second->cert_created);
  EXPECT_EQ(second->ca_pem, first->ca_pem);
  EXPECT_EQ(second->cert_pem, first->cert_pem);
  EXPECT_EQ(second->key_pem, first->key_pem);
}

TEST(ServingCertificates, RenewsTheServingCertificateBeforeItExpires) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> first = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(first.ok());
  // 334 days on: 31 days left, more than renew_before (30): kept.
  const absl::Time early = absl::Now() + absl::Hours(24 * 334);
  absl::StatusOr<ServingCertificates> kept =
      EnsureServingCertificates(dir.path(), {.now = [early] { return early; }});
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->cert_created);
  // 340 days on: renewed, signed by the same CA, valid for a year from then.
  const absl::Time later = absl::Now() + absl::Hours(24 * 340);
  absl::StatusOr<ServingCertificates> renewed =
      EnsureServingCertificates(dir.path(), {.now = [later] { return later; }});
  ASSERT_TRUE(renewed.ok());
  EXPECT_TRUE(renewed->cert_created);
  EXPECT_FALSE(renewed->ca_created);
  EXPECT_EQ(renewed->ca_pem, first->ca_pem);
  EXPECT_NE(renewed->cert_pem, first->cert_pem);
  EXPECT_EQ(Verify(*renewed, "127.0.0.1", later), "");
  EXPECT_NEAR(absl::ToDoubleHours(renewed->not_after - later), 24 * 365, 1);
  EXPECT_EQ(*ReadFile(ServingCertPath(dir.path())), renewed->cert_pem);
}

TEST(ServingCertificates, ReplacesAnExpiringCaAndEverythingItSigned) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> first = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(first.ok());
  const absl::Time later = absl::Now() + absl::Hours(24 * (3650 - 10));
  absl::StatusOr<ServingCertificates> next =
      EnsureServingCertificates(dir.path(), {.now = [later] { return later; }});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->ca_created);
  EXPECT_TRUE(next->cert_created);
  EXPECT_NE(next->ca_pem, first->ca_pem);
  EXPECT_EQ(Verify(*next, "127.0.0.1", later), "");
}

TEST(ServingCertificates, ReplacesMalformedOrMismatchedFiles) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> first = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(first.ok());

  // A serving key that is not the certificate's (a crash between the two writes).
  testing::TempDir other_dir;
  absl::StatusOr<ServingCertificates> other = EnsureServingCertificates(other_dir.path());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(WriteFileDurably(dir.Path("apiserver.key"), other->key_pem).ok());
  absl::StatusOr<ServingCertificates> fixed = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(fixed->cert_created);
  EXPECT_FALSE(fixed->ca_created);
  EXPECT_EQ(Verify(*fixed, "127.0.0.1"), "");

  // A serving pair another CA signed.
  ASSERT_TRUE(WriteFileDurably(dir.Path("apiserver.key"), other->key_pem).ok());
  ASSERT_TRUE(WriteFileDurably(ServingCertPath(dir.path()), other->cert_pem).ok());
  fixed = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(fixed->cert_created);
  EXPECT_EQ(Verify(*fixed, "127.0.0.1"), "");

  // A truncated CA certificate: a new CA, and a serving certificate it signed.
  ASSERT_TRUE(WriteFileDurably(CaCertPath(dir.path()), "-----BEGIN CERTIFICATE-----\nMII").ok());
  fixed = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(fixed->ca_created);
  EXPECT_TRUE(fixed->cert_created);
  EXPECT_NE(fixed->ca_pem, first->ca_pem);
  EXPECT_EQ(Verify(*fixed, "::1"), "");

  // The serving certificate where the CA should be: not a CA.
  ASSERT_TRUE(WriteFileDurably(CaCertPath(dir.path()), fixed->cert_pem).ok());
  ASSERT_TRUE(WriteFileDurably(dir.Path("ca.key"), fixed->key_pem).ok());
  absl::StatusOr<ServingCertificates> again = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->ca_created);
  EXPECT_EQ(Verify(*again, "localhost"), "");
}

TEST(ServingCertificates, IssuesClientCertificatesTheCaSigned) {
  testing::TempDir dir;
  absl::StatusOr<ServingCertificates> certs = EnsureServingCertificates(dir.path());
  ASSERT_TRUE(certs.ok());
  absl::StatusOr<ClientCertificate> client =
      IssueClientCertificate(certs->ca_pem, *ReadFile(dir.Path("ca.key")), "kdp-admin");
  ASSERT_TRUE(client.ok()) << client.status();
  X509* ca = ParseCert(certs->ca_pem);
  X509* leaf = ParseCert(client->cert_pem);
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(X509_verify(leaf, X509_get0_pubkey(ca)), 1);
  EXPECT_EQ(X509_check_purpose(leaf, X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(X509_check_purpose(leaf, X509_PURPOSE_SSL_SERVER, 0), 1);
  X509_free(leaf);
  X509_free(ca);
  EXPECT_EQ(IssueClientCertificate(certs->ca_pem, certs->key_pem, "x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
