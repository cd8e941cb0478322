#include "manager/src/controlplane/resourceapi/kubeconfig.h"

#include <set>

#include "absl/strings/escaping.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/resourceapi/file_mode_test_util.h"
#include "yaml-cpp/yaml.h"

namespace kdp::manager::resourceapi {
namespace {

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

using testing::ModeOf;

TEST(Kubeconfig, TokensAreLongRandomHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<std::string> token = GenerateBearerToken();
    ASSERT_TRUE(token.ok());
    EXPECT_THAT(*token, ::testing::MatchesRegex("[0-9a-f]{64}"));
    seen.insert(*token);
  }
  EXPECT_EQ(seen.size(), 8u);
}

TEST(Kubeconfig, WritesPrivateStandardKubeconfig) {
  testing::TempDir root;
  ASSERT_EQ(mkdir(root.Path("kdp").c_str(), 0755), 0);  // an existing, too-open directory
  absl::StatusOr<std::string> path = WriteKubeconfig(root.path(), 43210, kCa, "tok123");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, root.path() + "/kdp/kubeconfig");
  EXPECT_EQ(ModeOf(root.Path("kdp")), 0700u);
  EXPECT_EQ(ModeOf(*path), 0600u);

  YAML::Node config = YAML::Load(*ReadFile(*path));
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(config["kind"].as<std::string>(), "Config");
  EXPECT_EQ(config["current-context"].as<std::string>(), "kdp");
  EXPECT_EQ(config["clusters"][0]["name"].as<std::string>(), "kdp");
  EXPECT_EQ(config["clusters"][0]["cluster"]["server"].as<std::string>(),
            "https://127.0.0.1:43210");
  std::string ca;
  ASSERT_TRUE(absl::Base64Unescape(
      config["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>(), &ca));
  EXPECT_EQ(ca, kCa);
  EXPECT_FALSE(config["clusters"][0]["cluster"]["insecure-skip-tls-verify"]);
  EXPECT_EQ(config["users"][0]["name"].as<std::string>(), "kdp");
  EXPECT_EQ(config["users"][0]["user"]["token"].as<std::string>(), "tok123");
  EXPECT_EQ(config["contexts"][0]["name"].as<std::string>(), "kdp");
  EXPECT_EQ(config["contexts"][0]["context"]["cluster"].as<std::string>(), "kdp");
  EXPECT_EQ(config["contexts"][0]["context"]["user"].as<std::string>(), "kdp");

  // Rewriting replaces the token.
  ASSERT_TRUE(WriteKubeconfig(root.path(), 1, kCa, "tok456").ok());
  EXPECT_EQ(YAML::Load(*ReadFile(*path))["users"][0]["user"]["token"].as<std::string>(), "tok456");
}

TEST(Kubeconfig, MissingRootIsNotFound) {
  testing::TempDir root;
  EXPECT_EQ(WriteKubeconfig(root.Path("absent"), 1, kCa, "t").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kdp::manager::resourceapi

namespace kdp::manager::resourceapi {
namespace {

TEST(ReadKubeconfigCredentials, ReadsBackWhatWriteKubeconfigWrote) {
  kdp::testing::TempDir root;
  EXPECT_FALSE(ReadKubeconfigCredentials(root.path()).has_value());
  absl::StatusOr<std::string> token = GenerateBearerToken();
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(WriteKubeconfig(root.path(), 41234, kCa, *token).ok());
  std::optional<KubeconfigCredentials> read = ReadKubeconfigCredentials(root.path());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->port, 41234);
  EXPECT_EQ(read->token, *token);
}

TEST(ReadKubeconfigCredentials, KeepsThePortAndTokenOfAPlainHttpKubeconfig) {
  // What kdp wrote before the API served TLS: an upgraded manager keeps its port and token.
  kdp::testing::TempDir root;
  ASSERT_TRUE(WriteKubeconfig(root.path(), 41234, kCa, std::string(64, 'b')).ok());
  std::string text = *ReadFile(KubeconfigPath(root.path()));
  text.replace(text.find("https://"), 8, "http://");
  ASSERT_TRUE(WriteFileDurably(KubeconfigPath(root.path()), text).ok());
  std::optional<KubeconfigCredentials> read = ReadKubeconfigCredentials(root.path());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->port, 41234);
}

TEST(ReadKubeconfigCredentials, IgnoresFilesItDidNotWrite) {
  kdp::testing::TempDir root;
  ASSERT_TRUE(WriteKubeconfig(root.path(), 41234, kCa, "not-a-generated-token").ok());
  EXPECT_FALSE(ReadKubeconfigCredentials(root.path()).has_value());
  ASSERT_TRUE(WriteKubeconfig(root.path(), 0, kCa, std::string(64, 'a')).ok());
  EXPECT_FALSE(ReadKubeconfigCredentials(root.path()).has_value());
  ASSERT_TRUE(WriteKubeconfig(root.path(), 8080, kCa, std::string(64, 'a')).ok());
  EXPECT_TRUE(ReadKubeconfigCredentials(root.path()).has_value());
}

}  // namespace
}  // namespace kdp::manager::resourceapi
