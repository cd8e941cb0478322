// DevicePluginWatcherHandler: the kubelet's device manager ValidatePlugin/RegisterPlugin/
// DeRegisterPlugin texts, and device plugins registering through plugins_registry end to end
// (a real PluginManager, real sockets, a fake RegistrationHandler in place of DeviceManager).
#include "manager/src/devicemanager/plugin_watcher_handler.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/pluginmanager/fake_registration_plugin.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::FakeRegistrationPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class FakeRegistrationHandler final : public RegistrationHandler {
 public:
  absl::Status RegisterPlugin(const std::string& resource_name,
                              const std::string& socket_path) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("register ", resource_name, " ", socket_path));
    return result_;
  }
  void Deregister(const std::string& resource_name, const std::string& socket_path) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("deregister ", resource_name, " ", socket_path));
  }
  void Fail(absl::Status status) {
    absl::MutexLock lock(&mu_);
    result_ = std::move(status);
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  absl::Status result_ ABSL_GUARDED_BY(mu_);
};

class DevicePluginWatcherHandlerTest : public ::testing::Test {
 protected:
  FakeRegistrationHandler registration_;
  DevicePluginWatcherHandler handler_{
      &registration_,
      [this](const std::string& r, const std::string& s) { registration_.Deregister(r, s); }};
};

TEST_F(DevicePluginWatcherHandlerTest, AcceptsAValidPlugin) {
  EXPECT_TRUE(handler_.ValidatePlugin("example.com/gpu", "/r/gpu.sock", {"v1beta1"}).ok());
  EXPECT_TRUE(handler_.ValidatePlugin("example.com/gpu", "/r/gpu.sock", {"v1", "v1beta1"}).ok());
}

TEST_F(DevicePluginWatcherHandlerTest, RejectsUnsupportedVersionsWithKubeletText) {
  absl::Status status = handler_.ValidatePlugin("example.com/gpu", "/r/gpu.sock", {"v1", "v2"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "manager version, v1beta1, is not among plugin supported versions [v1 v2]");
  status = handler_.ValidatePlugin("example.com/gpu", "/r/gpu.sock", {});
  EXPECT_EQ(status.message(),
            "manager version, v1beta1, is not among plugin supported versions []");
}

TEST_F(DevicePluginWatcherHandlerTest, RejectsInvalidResourceNamesWithKubeletText) {
  for (const std::string name : {"gpu", "kubernetes.io/gpu", "requests.example.com/gpu", ""}) {
    absl::Status status = handler_.ValidatePlugin(name, "/r/gpu.sock", {"v1beta1"});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(status.message(), absl::StrCat("invalid name of device plugin socket: the "
                                             "ResourceName \"",
                                             name, "\" is invalid"));
  }
}

TEST_F(DevicePluginWatcherHandlerTest, RejectsEndpointsThatAreNotAbsoluteSocketPaths) {
  for (const std::string& endpoint :
       {std::string("gpu.sock"), std::string(""), "/" + std::string(200, 'x')}) {
    absl::Status status = handler_.ValidatePlugin("example.com/gpu", endpoint, {"v1beta1"});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << endpoint;
  }
}

TEST_F(DevicePluginWatcherHandlerTest, RegisterAndDeregisterReachTheDeviceManager) {
  ASSERT_TRUE(handler_.RegisterPlugin("example.com/gpu", "/r/gpu.sock", {"v1beta1"}).ok());
  handler_.DeRegisterPlugin("example.com/gpu", "/r/gpu.sock");
  EXPECT_THAT(registration_.calls(), ElementsAre("register example.com/gpu /r/gpu.sock",
                                                 "deregister example.com/gpu /r/gpu.sock"));
  registration_.Fail(absl::UnavailableError("failed to dial device plugin: nope"));
  EXPECT_EQ(handler_.RegisterPlugin("example.com/gpu", "/r/gpu.sock", {"v1beta1"}).message(),
            "failed to dial device plugin: nope");
}

TEST_F(DevicePluginWatcherHandlerTest, DeregisterWithoutCallbackIsANoOp) {
  DevicePluginWatcherHandler handler(&registration_, nullptr);
  handler.DeRegisterPlugin("example.com/gpu", "/r/gpu.sock");
  EXPECT_THAT(registration_.calls(), IsEmpty());
}

// Through the plugin manager: the endpoint the device manager gets is absolute.
class DevicePluginThroughRegistryTest : public DevicePluginWatcherHandlerTest {
 protected:
  DevicePluginThroughRegistryTest()
      : registry_(tmp_.Path("plugins_registry")),
        manager_({.dir = registry_,
                  .timeouts = {},
                  .initial_backoff = absl::Milliseconds(50),
                  .max_backoff = absl::Milliseconds(200)}) {
    manager_.AddHandler(pluginmanager::kDevicePlugin, &handler_);
  }
  TempDir tmp_;
  const std::string registry_;
  pluginmanager::PluginManager manager_;
};

TEST_F(DevicePluginThroughRegistryTest, EmptyEndpointMeansTheRegistrationSocket) {
  ASSERT_TRUE(manager_.Start().ok());
  FakeRegistrationPlugin plugin("DevicePlugin", "example.com/gpu", "", {"v1beta1"});
  const std::string sock = registry_ + "/example.com-gpu.sock";
  ASSERT_TRUE(plugin.Serve(sock));
  ASSERT_TRUE(WaitUntil([&] { return plugin.statuses().size() == 1; }));
  EXPECT_TRUE(plugin.statuses()[0].registered);
  EXPECT_THAT(registration_.calls(), ElementsAre("register example.com/gpu " + sock));
  plugin.Stop(/*remove_socket=*/true);
  ASSERT_TRUE(WaitUntil([&] { return registration_.calls().size() == 2; }));
  EXPECT_EQ(registration_.calls()[1], "deregister example.com/gpu " + sock);
}

TEST_F(DevicePluginThroughRegistryTest, OwnEndpointIsPassedAsIs) {
  ASSERT_TRUE(manager_.Start().ok());
  FakeRegistrationPlugin plugin("DevicePlugin", "example.com/fpga", "/run/fpga/dp.sock",
                                {"v1beta1"});
  ASSERT_TRUE(plugin.Serve(registry_ + "/fpga-reg.sock"));
  ASSERT_TRUE(WaitUntil([&] { return !registration_.calls().empty(); }));
  EXPECT_THAT(registration_.calls(), ElementsAre("register example.com/fpga /run/fpga/dp.sock"));
}

TEST_F(DevicePluginThroughRegistryTest, InvalidPluginIsToldWhy) {
  ASSERT_TRUE(manager_.Start().ok());
  FakeRegistrationPlugin plugin("DevicePlugin", "example.com/gpu", "", {"v1alpha"});
  ASSERT_TRUE(plugin.Serve(registry_ + "/old.sock"));
  ASSERT_TRUE(WaitUntil([&] { return !plugin.statuses().empty(); }));
  EXPECT_FALSE(plugin.statuses()[0].registered);
  EXPECT_EQ(plugin.statuses()[0].error,
            "RegisterPlugin error -- plugin validation failed with err: manager version, "
            "v1beta1, is not among plugin supported versions [v1alpha]");
  EXPECT_THAT(registration_.calls(), IsEmpty());
}

}  // namespace
}  // namespace kdp::manager
