#include "manager/src/devicemanager/registration_server.h"

#include <string>

#include "absl/status/status.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;

constexpr char kDir[] = "/var/lib/kubelet/device-plugins";

v1beta1::RegisterRequest Request(const std::string& version, const std::string& resource,
                                 const std::string& endpoint) {
  v1beta1::RegisterRequest request;
  request.set_version(version);
  request.set_resource_name(resource);
  request.set_endpoint(endpoint);
  return request;
}

TEST(ValidateRegisterRequest, AcceptsValidRequestAndComposesSocketPath) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(
      Request("v1beta1", "domain1.com/resource1", "plugin.sock"), kDir, &socket_path);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(socket_path, "/var/lib/kubelet/device-plugins/plugin.sock");
}

TEST(ValidateRegisterRequest, RejectsUnsupportedVersionWithKubeletText) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(
      Request("v1", "domain1.com/resource1", "plugin.sock"), kDir, &socket_path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "requested API version \"v1\" is not supported by kubelet. Supported version is "
            "[\"v1beta1\"]");
}

TEST(ValidateRegisterRequest, RejectsEmptyVersion) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(Request("", "domain1.com/resource1", "plugin.sock"),
                                                kDir, &socket_path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "requested API version \"\" is not supported by kubelet. Supported version is "
            "[\"v1beta1\"]");
}

TEST(ValidateRegisterRequest, ChecksVersionBeforeResourceName) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(Request("v2", "x", ""), kDir, &socket_path);
  EXPECT_THAT(std::string(status.message()), HasSubstr("requested API version \"v2\""));
}

TEST(ValidateRegisterRequest, RejectsInvalidResourceNameWithKubeletText) {
  std::string socket_path;
  absl::Status status =
      ValidateRegisterRequest(Request("v1beta1", "x", "plugin.sock"), kDir, &socket_path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "the ResourceName \"x\" is invalid");
}

TEST(ValidateRegisterRequest, RejectsNativeAndRequestsPrefixedNames) {
  for (const char* name : {"kubernetes.io/gpu", "requests.example.com/gpu", "cpu", "a/b/c", ""}) {
    std::string socket_path;
    absl::Status status =
        ValidateRegisterRequest(Request("v1beta1", name, "plugin.sock"), kDir, &socket_path);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(status.message(), "the ResourceName \"" + std::string(name) + "\" is invalid");
  }
}

TEST(ValidateRegisterRequest, ChecksResourceNameBeforeEndpoint) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(Request("v1beta1", "x", ""), kDir, &socket_path);
  EXPECT_EQ(status.message(), "the ResourceName \"x\" is invalid");
}

TEST(ValidateRegisterRequest, RejectsEndpointsThatAreNotAFileInTheDirectory) {
  for (const std::string& endpoint :
       {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
        std::string("/abs"), std::string("/var/lib/kubelet/device-plugins/p.sock"),
        std::string("../kubelet.sock"), std::string("dir/"), std::string("nul\0byte", 8)}) {
    std::string socket_path = "unchanged";
    absl::Status status =
        ValidateRegisterRequest(Request("v1beta1", "domain1.com/r", endpoint), kDir, &socket_path);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << '"' << endpoint << '"';
    EXPECT_THAT(std::string(status.message()), HasSubstr("invalid endpoint")) << endpoint;
  }
}

TEST(ValidateRegisterRequest, AcceptsUnusualButPlainFileNames) {
  for (const std::string& endpoint :
       {std::string("weird=name:0"), std::string("no-suffix"), std::string("...sock"),
        std::string(".hidden.sock"), std::string("a b.sock")}) {
    std::string socket_path;
    absl::Status status =
        ValidateRegisterRequest(Request("v1beta1", "domain1.com/r", endpoint), kDir, &socket_path);
    ASSERT_TRUE(status.ok()) << endpoint << ": " << status;
    EXPECT_EQ(socket_path, std::string(kDir) + "/" + endpoint);
  }
}

TEST(ValidateRegisterRequest, RejectsSocketPathsLongerThanSunPath) {
  const std::string dir = kDir;
  // dir + "/" + endpoint == 107 bytes fits sockaddr_un.sun_path with its NUL; 108 does not.
  const std::string fits(107 - dir.size() - 1, 'a');
  const std::string too_long(108 - dir.size() - 1, 'a');
  std::string socket_path;
  absl::Status status =
      ValidateRegisterRequest(Request("v1beta1", "domain1.com/r", fits), dir, &socket_path);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(socket_path.size(), 107u);

  status =
      ValidateRegisterRequest(Request("v1beta1", "domain1.com/r", too_long), dir, &socket_path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("invalid endpoint"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("longer than 107 bytes"));
}

TEST(ValidateRegisterRequest, ComposesPathWithGivenDirectory) {
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(Request("v1beta1", "example.com/nic", "nic.sock"),
                                                "/tmp/x", &socket_path);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(socket_path, "/tmp/x/nic.sock");
}

}  // namespace
}  // namespace kdp::manager
