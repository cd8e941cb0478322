#include "manager/src/controlplane/resourceapi/local_api.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/kubeconfig.h"
#include "nlohmann/json.hpp"
#include "tests/testing/loopback_http.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::resourceapi {
namespace {

// GET `path` as a client holding only the kubeconfig does: https, its CA, its token.
kdp::testing::HttpAnswer GetWithKubeconfig(const std::string& kubeconfig, const std::string& path) {
  const kdp::testing::KubeconfigParts api = kdp::testing::ReadKubeconfigParts(kubeconfig);
  return kdp::testing::SendHttpRequest(
      {.host = api.host,
       .port = api.port,
       .path = path,
       .headers = absl::StrCat("Authorization: Bearer ", api.token, "\r\n"),
       .timeout = absl::Seconds(10),
       .ca_pem = api.ca_pem});
}

// A clock the test moves.
class TestClock {
 public:
  absl::Time Now() {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::Now();
};

class LocalApiTest : public ::testing::Test {
 protected:
  LocalApiOptions Options() {
    LocalApiOptions options;
    options.kubelet_root = root_.path();
    options.certificates.now = [this] { return clock_.Now(); };
    options.server.threads = 4;
    return options;
  }

  kdp::testing::TempDir root_;
  TestClock clock_;
  ObjectStore store_{StoreOptions{.node_name = "node-1"}};
};

TEST_F(LocalApiTest, AClientWithOnlyTheKubeconfigGetsIn) {
  absl::StatusOr<std::unique_ptr<LocalApi>> api = LocalApi::Start(&store_, Options());
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->kubeconfig_path(), KubeconfigPath(root_.path()));
  const kdp::testing::KubeconfigParts parts =
      kdp::testing::ReadKubeconfigParts((*api)->kubeconfig_path());
  EXPECT_EQ(parts.server, absl::StrCat("https://127.0.0.1:", (*api)->port()));
  EXPECT_EQ(parts.server, (*api)->url());
  EXPECT_EQ(parts.ca_pem, *ReadFile(root_.Path("kdp/ca.crt")));
  kdp::testing::HttpAnswer answer =
      GetWithKubeconfig((*api)->kubeconfig_path(), "/api/v1/nodes/node-1");
  ASSERT_EQ(answer.status, 200) << answer.error << answer.body;
  EXPECT_EQ(nlohmann::json::parse(answer.body)["metadata"]["name"], "node-1");
  // Without the CA the server is not trusted at all.
  kdp::testing::HttpAnswer untrusted =
      kdp::testing::SendHttpRequest({.port = parts.port,
                                     .path = "/version",
                                     .timeout = absl::Seconds(10),
                                     .ca_pem = *ReadFile(root_.Path("kdp/apiserver.crt"))});
  EXPECT_EQ(untrusted.status, 0);
  EXPECT_THAT(untrusted.error, ::testing::HasSubstr("TLS handshake failed"));
}

TEST_F(LocalApiTest, ARestartKeepsPortTokenAndCa) {
  absl::StatusOr<std::unique_ptr<LocalApi>> first = LocalApi::Start(&store_, Options());
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string kubeconfig = *ReadFile((*first)->kubeconfig_path());
  const int port = (*first)->port();
  (*first)->Stop();
  absl::StatusOr<std::unique_ptr<LocalApi>> second = LocalApi::Start(&store_, Options());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->port(), port);
  EXPECT_EQ(*ReadFile((*second)->kubeconfig_path()), kubeconfig);
  EXPECT_EQ(GetWithKubeconfig((*second)->kubeconfig_path(), "/version").status, 200);
}

TEST_F(LocalApiTest, RenewsWhileRunningAndRewritesTheKubeconfigForANewCa) {
  absl::StatusOr<std::unique_ptr<LocalApi>> api = LocalApi::Start(&store_, Options());
  ASSERT_TRUE(api.ok()) << api.status();
  const std::string kubeconfig = *ReadFile((*api)->kubeconfig_path());
  const std::string serving = *ReadFile(root_.Path("kdp/apiserver.crt"));
  // Nothing due: nothing changes.
  ASSERT_TRUE((*api)->RenewCertificates().ok());
  EXPECT_EQ(*ReadFile(root_.Path("kdp/apiserver.crt")), serving);
  // The serving certificate is due: renewed under the same CA; the kubeconfig stays.
  clock_.Advance(absl::Hours(24 * 340));
  ASSERT_TRUE((*api)->RenewCertificates().ok());
  EXPECT_NE(*ReadFile(root_.Path("kdp/apiserver.crt")), serving);
  EXPECT_EQ(*ReadFile((*api)->kubeconfig_path()), kubeconfig);
  // The CA is due: a new one, and the kubeconfig names it (same server and token).
  clock_.Advance(absl::Hours(24 * 3300));
  ASSERT_TRUE((*api)->RenewCertificates().ok());
  const std::string rewritten = *ReadFile((*api)->kubeconfig_path());
  EXPECT_NE(rewritten, kubeconfig);
  const kdp::testing::KubeconfigParts before =
      kdp::testing::ReadKubeconfigParts((*api)->kubeconfig_path());
  EXPECT_EQ(before.ca_pem, *ReadFile(root_.Path("kdp/ca.crt")));
  EXPECT_EQ(before.server, (*api)->url());
}

TEST_F(LocalApiTest, AMissingKubeletRootIsAnErrorNamingIt) {
  LocalApiOptions options = Options();
  options.kubelet_root = root_.Path("absent");
  absl::StatusOr<std::unique_ptr<LocalApi>> api = LocalApi::Start(&store_, options);
  EXPECT_EQ(api.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(api.status().message(), ::testing::HasSubstr(root_.Path("absent")));
}

}  // namespace
}  // namespace kdp::manager::resourceapi
