// Third-party plugins registering through <kubelet-root>/plugins_registry (the kubelet's plugin
// watcher, pkg/kubelet/pluginmanager) against a kdp-manager process: a plugin type kdp-manager
// has no handler for (a CSI driver, an unknown type) is told so in NotifyRegistrationStatus; a
// device plugin of type "DevicePlugin" (devicemanager/plugin/v1beta1/handler.go) works exactly as
// one that calls Register on kubelet.sock, whether its DevicePlugin service is on a socket of its
// own or on the registration socket itself (empty endpoint); removing its registration socket
// deregisters it (devices unhealthy, allocatable 0, capacity kept for the grace period).
#include <filesystem>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/example_names.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

class PluginsRegistryE2E : public E2ETest {
 protected:
  void SetUp() override { StartManager(); }

  std::string RegistryDir() const { return root_.Path("plugins_registry"); }

  // The registered_plugins entry of `name` in kdpctl status, or null.
  nlohmann::json RegisteredPlugin(const std::string& name) {
    nlohmann::json status = Status();
    if (!status.is_object()) return nullptr;
    for (const auto& plugin : status["registered_plugins"]) {
      if (plugin["name"] == name) return plugin;
    }
    return nullptr;
  }

  // Registration refused for a plugin of `type`: told so, with the type named, and not listed.
  void ExpectUnsupportedType(const std::string& type) {
    SCOPED_TRACE(type);
    const std::string socket = absl::StrCat(RegistryDir(), "/", type, "-reg.sock");
    const std::string name = absl::StrCat("plugin.", type, ".example.com");
    FakeRegistration registration(FakeRegistration::Info(type, name, "", {"1.0.0"}));
    std::unique_ptr<grpc::Server> server = ServeUnix(socket, {&registration});
    ASSERT_NE(server, nullptr);
    absl::Cleanup shutdown = [&] { ShutdownServer(server); };
    ASSERT_TRUE(WaitUntil([&] { return !registration.statuses().empty(); })) << manager_->Output();
    const pluginregistration::RegistrationStatus status = registration.statuses().front();
    EXPECT_FALSE(status.plugin_registered());
    // The kubelet's "no handler registered for plugin type: <type> at socket <path>", plus what
    // kdp-manager supports.
    EXPECT_THAT(status.error(), HasSubstr(absl::StrCat("no handler registered for plugin type: ",
                                                       type, " at socket ", socket)));
    EXPECT_THAT(status.error(),
                HasSubstr(absl::StrCat("kdp-manager does not support plugin type \"", type, "\"")));
    EXPECT_THAT(status.error(), HasSubstr("DevicePlugin"));
    EXPECT_THAT(status.error(), HasSubstr("DRAPlugin"));
    EXPECT_TRUE(RegisteredPlugin(name).is_null()) << Status().dump();
    std::error_code ignored;
    std::filesystem::remove(socket, ignored);
  }

  // A device plugin registered through plugins_registry: listed, its devices allocatable, a pod
  // admitted through it; removing `registration_socket` deregisters it.
  void ExpectWorksAndDeregisters(StubPlugin& plugin, FakeRegistration& registration,
                                 const std::string& registration_socket,
                                 const std::string& endpoint) {
    ASSERT_TRUE(WaitUntil([&] { return registration.registered(); })) << manager_->Output();
    ASSERT_TRUE(WaitForAllocatable(kGpuResource, 3, 4)) << Status().dump() << manager_->Output();
    nlohmann::json listed = RegisteredPlugin(kGpuResource);
    ASSERT_TRUE(listed.is_object()) << Status().dump();
    EXPECT_EQ(listed["type"], "DevicePlugin");
    EXPECT_EQ(listed["endpoint"], endpoint);
    EXPECT_EQ(listed["socket"], registration_socket);

    KdpctlResult applied = Apply(GpuPod("through-registry", 2));
    ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
    EXPECT_EQ(applied.json["admitted"], true);
    EXPECT_EQ(applied.json["containers"][0]["devices"][kGpuResource], nlohmann::json({"g0", "g1"}));
    EXPECT_EQ(applied.json["containers"][0]["envs"]["STUB_DEVICES"], "g0,g1");
    EXPECT_EQ(plugin.allocate_calls(), 1);
    EXPECT_EQ(Resource(kGpuResource)["allocated"], 2) << Status().dump();

    // The socket going away is the plugin going away (DeRegisterPlugin): its devices become
    // unhealthy while the capacity stays for the grace period; the pod keeps its devices.
    ASSERT_TRUE(std::filesystem::remove(registration_socket));
    EXPECT_TRUE(WaitForAllocatable(kGpuResource, 0, 4)) << Status().dump() << manager_->Output();
    EXPECT_TRUE(WaitUntil([&] { return RegisteredPlugin(kGpuResource).is_null(); }))
        << Status().dump();
    EXPECT_EQ(Resource(kGpuResource)["connected"], false) << Status().dump();
    KdpctlResult rejected = Apply(GpuPod("after-removal", 1));
    EXPECT_EQ(rejected.exit_code, 1) << rejected.out;
    EXPECT_EQ(rejected.json["admitted"], false) << rejected.out;
    KdpctlResult pods = Kdpctl({"get", "pods"});
    ASSERT_EQ(pods.json["pods"].size(), 1u) << pods.out;
    EXPECT_EQ(pods.json["pods"][0]["containers"][0]["devices"][kGpuResource],
              nlohmann::json({"g0", "g1"}));
  }

  static std::vector<v1beta1::Device> FourGpusOneUnhealthy() {
    return {MakeDevice("g0"), MakeDevice("g1"), MakeDevice("g2"), MakeDevice("g3", "Unhealthy")};
  }
};

TEST_F(PluginsRegistryE2E, ACsiPluginIsToldItsTypeIsNotSupported) {
  ExpectUnsupportedType("CSIPlugin");
}

TEST_F(PluginsRegistryE2E, AnUnknownPluginTypeIsToldItIsNotSupported) {
  ExpectUnsupportedType("ExamplePlugin");
}

TEST_F(PluginsRegistryE2E, ADevicePluginOnItsOwnSocketWorksAsThroughKubeletSock) {
  StubPlugin plugin(root_.Path("gpu-dp.sock"));
  plugin.SetDevices(FourGpusOneUnhealthy());
  ASSERT_TRUE(plugin.Start().ok());
  const std::string socket = RegistryDir() + "/example.com-gpu-reg.sock";
  FakeRegistration registration(
      FakeRegistration::Info("DevicePlugin", kGpuResource, plugin.socket_path(), {"v1beta1"}));
  std::unique_ptr<grpc::Server> server = ServeUnix(socket, {&registration});
  ASSERT_NE(server, nullptr);
  absl::Cleanup shutdown = [&] {
    ShutdownServer(server);
    plugin.Stop();
  };
  ExpectWorksAndDeregisters(plugin, registration, socket, plugin.socket_path());
}

TEST_F(PluginsRegistryE2E, ADevicePluginServedOnTheRegistrationSocketWorksAsThroughKubeletSock) {
  // Empty endpoint: the registration socket itself serves v1beta1.DevicePlugin.
  const std::string socket = RegistryDir() + "/example.com-gpu.sock";
  StubPlugin plugin(socket);  // served below, together with the registration service
  plugin.SetDevices(FourGpusOneUnhealthy());
  FakeRegistration registration(
      FakeRegistration::Info("DevicePlugin", kGpuResource, "", {"v1beta1"}));
  std::unique_ptr<grpc::Server> server = ServeUnix(socket, {&registration, &plugin});
  ASSERT_NE(server, nullptr);
  absl::Cleanup shutdown = [&] {
    plugin.Stop();  // ends its ListAndWatch streams, so the shutdown does not wait for them
    ShutdownServer(server);
  };
  ExpectWorksAndDeregisters(plugin, registration, socket, socket);
}

TEST_F(PluginsRegistryE2E, ADevicePluginWithoutV1beta1IsRefusedWithTheKubeletsText) {
  StubPlugin plugin(root_.Path("old-dp.sock"));
  plugin.SetDevices(FourGpusOneUnhealthy());
  ASSERT_TRUE(plugin.Start().ok());
  const std::string socket = RegistryDir() + "/old-reg.sock";
  FakeRegistration registration(FakeRegistration::Info("DevicePlugin", kGpuResource,
                                                       plugin.socket_path(), {"v1alpha", "v2"}));
  std::unique_ptr<grpc::Server> server = ServeUnix(socket, {&registration});
  ASSERT_NE(server, nullptr);
  absl::Cleanup shutdown = [&] {
    ShutdownServer(server);
    plugin.Stop();
  };
  ASSERT_TRUE(WaitUntil([&] { return !registration.statuses().empty(); })) << manager_->Output();
  const pluginregistration::RegistrationStatus status = registration.statuses().front();
  EXPECT_FALSE(status.plugin_registered());
  EXPECT_THAT(status.error(),
              HasSubstr("manager version, v1beta1, is not among plugin supported versions "
                        "[v1alpha v2]"));
  EXPECT_EQ(Resource(kGpuResource), nullptr);
}

}  // namespace
}  // namespace kdp::testing
