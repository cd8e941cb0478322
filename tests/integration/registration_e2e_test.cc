// Third-party plugins (the wire-level StubPlugin, no kdp SDK) against a kdp-manager process:
// every registration rejection with the kubelet's text, odd socket names, repeated lists and
// repeated IDs, re-registration of a newer instance.
#include "absl/strings/match.h"
#include "tests/integration/e2e_fixture.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {
namespace {

class RegistrationE2E : public E2ETest {
 protected:
  void SetUp() override { StartManager(); }

  std::unique_ptr<StubPlugin> Serve(const std::string& name,
                                    v1beta1::DevicePluginOptions options = {}) {
    auto plugin = std::make_unique<StubPlugin>(PluginsDir() + "/" + name, options);
    EXPECT_TRUE(plugin->Start().ok());
    return plugin;
  }
};

TEST_F(RegistrationE2E, RejectsAnUnsupportedVersion) {
  absl::Status status = StubPlugin::Register(KubeletSocket(), "v1alpha", "x.sock", "example.com/x");
  EXPECT_EQ(status.message(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported version is "
            "[\"v1beta1\"]");
}

TEST_F(RegistrationE2E, RejectsAnInvalidResourceName) {
  for (const char* name : {"nodomain", "kubernetes.io/gpu", "requests.example.com/x", ""}) {
    absl::Status status = StubPlugin::Register(KubeletSocket(), "v1beta1", "x.sock", name);
    EXPECT_EQ(status.message(), absl::StrCat("the ResourceName \"", name, "\" is invalid"));
  }
}

TEST_F(RegistrationE2E, RejectsEndpointsOutsideTheDirectory) {
  for (const char* endpoint : {"../x.sock", "/abs/x.sock", "", "..", "sub/x.sock"}) {
    absl::Status status =
        StubPlugin::Register(KubeletSocket(), "v1beta1", endpoint, "example.com/x");
    EXPECT_FALSE(status.ok()) << endpoint;
    EXPECT_TRUE(absl::StrContains(status.message(), "invalid endpoint")) << status;
  }
}

TEST_F(RegistrationE2E, RejectsAPluginThatIsNotServing) {
  absl::Status status =
      StubPlugin::Register(KubeletSocket(), "v1beta1", "nobody.sock", "example.com/x");
  EXPECT_TRUE(absl::StartsWith(status.message(), "failed to dial device plugin: ")) << status;
  EXPECT_EQ(Resource("example.com/x"), nullptr);
}

TEST_F(RegistrationE2E, AcceptsSocketNamesWithoutSuffixAndWithEqualsAndColons) {
  auto plugin = Serve("vendor=acc:0");
  plugin->SetDevices({MakeDevice("a0"), MakeDevice("a1", "Unhealthy")});
  ASSERT_TRUE(
      StubPlugin::Register(KubeletSocket(), "v1beta1", "vendor=acc:0", "example.com/acc").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/acc", 1, 2));
  KdpctlResult result = Apply(GpuPod("acc", 1, "example.com/acc"));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.json["containers"][0]["envs"]["STUB_DEVICES"], "a0");
  EXPECT_EQ(plugin->allocate_calls(), 1);
}

TEST_F(RegistrationE2E, RepeatedListsAndRepeatedIdsCollapse) {
  auto plugin = Serve("dup.sock");
  plugin->SetDevices(
      {MakeDevice("d0"), MakeDevice("d0"), MakeDevice("d1", "healthy"), MakeDevice("d2", "", {0})});
  ASSERT_TRUE(StubPlugin::Register(KubeletSocket(), "v1beta1", "dup.sock", "example.com/dup").ok());
  // Only the exact string "Healthy" is healthy; the duplicate counts once.
  ASSERT_TRUE(WaitForAllocatable("example.com/dup", 1, 3));
  // The same list again and again, as some plugins send it every few seconds.
  for (int i = 0; i < 5; ++i) {
    int sent = plugin->messages_sent();
    plugin->Resend();
    ASSERT_TRUE(WaitUntil([&] { return plugin->messages_sent() > sent; }));
  }
  EXPECT_TRUE(WaitForAllocatable("example.com/dup", 1, 3));
}

TEST_F(RegistrationE2E, PreferredAllocationIsAskedAndHonoured) {
  v1beta1::DevicePluginOptions options;
  options.set_get_preferred_allocation_available(true);
  auto plugin = Serve("pref.sock", options);
  plugin->SetDevices({MakeDevice("p0"), MakeDevice("p1"), MakeDevice("p2"), MakeDevice("p3")});
  ASSERT_TRUE(
      StubPlugin::Register(KubeletSocket(), "v1beta1", "pref.sock", "example.com/pref").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/pref", 4));
  KdpctlResult result = Apply(GpuPod("pref", 2, "example.com/pref"));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(plugin->preferred_calls(), 1);
  // The stub prefers the last IDs offered; without it the manager would pick p0, p1.
  EXPECT_EQ(result.json["containers"][0]["devices"]["example.com/pref"],
            nlohmann::json({"p2", "p3"}));
}

TEST_F(RegistrationE2E, PreStartContainerGetsTheAllocatedDevicesWhenRequired) {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  auto plugin = Serve("prestart.sock", options);
  plugin->SetDevices({MakeDevice("s0"), MakeDevice("s1"), MakeDevice("s2")});
  ASSERT_TRUE(
      StubPlugin::Register(KubeletSocket(), "v1beta1", "prestart.sock", "example.com/ps").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/ps", 3));
  KdpctlResult result = Apply(GpuPod("ps", 2, "example.com/ps"));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::vector<std::string> ids = result.json["containers"][0]["devices"]["example.com/ps"];
  ASSERT_EQ(plugin->pre_start_calls().size(), 1u);
  EXPECT_EQ(plugin->pre_start_calls()[0], ids);
  // The run options are exactly the Allocate answer.
  EXPECT_EQ(result.json["containers"][0]["envs"]["STUB_DEVICES"], "s0,s1");
}

TEST_F(RegistrationE2E, AFailedPreStartRejectsThePodAndFreesItsDevices) {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  auto plugin = Serve("prestart.sock", options);
  plugin->SetDevices({MakeDevice("s0")});
  plugin->FailPreStart(grpc::Status(grpc::StatusCode::INTERNAL, "device reset failed"));
  ASSERT_TRUE(
      StubPlugin::Register(KubeletSocket(), "v1beta1", "prestart.sock", "example.com/ps").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/ps", 1));
  KdpctlResult result = Apply(GpuPod("ps", 1, "example.com/ps"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.json["reason"], "CreateContainerConfigError");
  EXPECT_EQ(result.json["message"],
            "device plugin PreStartContainer rpc failed with err: device reset failed");
  EXPECT_EQ(Resource("example.com/ps")["allocated"], 0);
  plugin->FailPreStart(grpc::Status::OK);
  EXPECT_EQ(Apply(GpuPod("ps", 1, "example.com/ps")).exit_code, 0) << "the device was freed";
}

TEST_F(RegistrationE2E, ANewerInstanceReplacesTheOldAndSurvivesItsExit) {
  auto old_instance = Serve("old.sock");
  old_instance->SetDevices({MakeDevice("o0"), MakeDevice("o1")});
  ASSERT_TRUE(StubPlugin::Register(KubeletSocket(), "v1beta1", "old.sock", "example.com/r").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/r", 2, 2));
  auto new_instance = Serve("new.sock");
  new_instance->SetDevices({MakeDevice("n0")});
  ASSERT_TRUE(StubPlugin::Register(KubeletSocket(), "v1beta1", "new.sock", "example.com/r").ok());
  ASSERT_TRUE(WaitForAllocatable("example.com/r", 1, 1));
  // The old instance going away must not take the new one's devices with it (kubernetes #121994).
  old_instance->Stop();
  new_instance->Resend();
  ASSERT_TRUE(WaitUntil([&] { return new_instance->messages_sent() >= 2; }));
  EXPECT_TRUE(WaitForAllocatable("example.com/r", 1, 1));
  EXPECT_EQ(Resource("example.com/r")["connected"], true);
}

}  // namespace
}  // namespace kdp::testing
