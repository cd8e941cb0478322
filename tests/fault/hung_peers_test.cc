// Fault injection, hung peers (issue 7): a real kdp-manager in a temporary kubelet root meets
// peers written here on the wire API that accept a call and never answer it: a device plugin
// whose Allocate never returns, a DRA driver whose NodePrepareResources never returns, and unix
// sockets that accept connections and never speak (a registration socket in plugins_registry, a
// device-plugin endpoint named in a Register request).
//
// Each test shows the four things a node agent owes its node when a peer hangs:
//   - the deadline fires, measured and printed (FIGURE lines) next to the kubelet's own deadline
//     for the same call (device plugins: no deadline on Allocate and a 10 s blocking dial, in
//     pkg/kubelet/cm/devicemanager/endpoint.go and plugin/v1beta1/client.go; plugin watcher: a
//     10 s dial and a 1 s GetInfo, GenerateRegisterPluginFunc in pkg/kubelet/pluginmanager; DRA:
//     45 s for NodePrepareResources, defaultClientCallTimeout in pkg/kubelet/cm/dra/plugin);
//   - the admission fails with a clear error naming the call and the deadline;
//   - nothing stays reserved: the devices are allocatable again, the claim is not prepared and
//     the next pod gets the same devices;
//   - the rest of the node keeps working: the manager answers `kdpctl status` within
//     ResponsivenessBound() throughout (a prober thread, peers_fixture.h), other plugins register
//     meanwhile, and another plugin's pod is admitted without waiting for the hung call: no lock
//     is held across a peer's call (issue 17), so only pods of the hung resource or driver wait
//     for it, and they are delayed by at most its deadline, never failed.
//
// The manager runs with short deadlines (--call-timeout, --dra-call-timeout, --dial-timeout:
// KDP_HUNG_TIMEOUT_S, default 2 s) so the suite stays within CI's budget; the registration
// socket's 10 s dial and 1 s GetInfo are the kubelet's fixed values, as in kdp.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "dra/v1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fault/peers_fixture.h"
#include "tests/integration/dra_fixture.h"
#include "tests/integration/hung_dra_plugin.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {
namespace {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

int TimeoutS() { return EnvInt("KDP_HUNG_TIMEOUT_S", 2); }
absl::Duration Timeout() { return absl::Seconds(TimeoutS()); }
// How late a deadline may be seen to fire: process start-up of kdpctl, polling, and the two CI
// cores shared with sanitizers.
absl::Duration Slack() { return Sanitized() ? absl::Seconds(6) : absl::Seconds(2); }

std::string Seconds(absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d), " s"); }

// `kdpctl apply -f` of a manifest on its own thread, timed. Join() before reading the result.
class AsyncApply {
 public:
  AsyncApply(std::function<KdpctlResult(std::vector<std::string>)> kdpctl, std::string path)
      : thread_([this, kdpctl = std::move(kdpctl), path = std::move(path)] {
          const absl::Time start = absl::Now();
          result_ = kdpctl({"apply", "-f", path});
          took_ = absl::Now() - start;
        }) {}
  ~AsyncApply() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // REQUIRES: Join() returned.
  const KdpctlResult& result() const { return result_; }
  absl::Duration took() const { return took_; }

 private:
  KdpctlResult result_;
  absl::Duration took_;
  std::thread thread_;
};

class HungPeers : public DraE2ETest {
 protected:
  std::string AdminSocket() const { return Root() + "/kdp/manager.sock"; }

  // Writes `yaml` to a new file in the root (from the test's thread) and returns its path.
  std::string WriteManifest(const std::string& name, const std::string& yaml) {
    std::string path = root_.Path(name + ".yaml");
    std::ofstream(path) << yaml;
    return path;
  }
  std::unique_ptr<AsyncApply> ApplyAsync(const std::string& name, const std::string& yaml) {
    return std::make_unique<AsyncApply>(
        [this](std::vector<std::string> args) { return Kdpctl(std::move(args)); },
        WriteManifest(name, yaml));
  }

  // A stub plugin serving `count` healthy devices `<prefix>0..` of `resource`, registered.
  std::unique_ptr<StubPlugin> StartStub(const std::string& socket, const std::string& resource,
                                        const std::string& prefix, int count) {
    auto stub = std::make_unique<StubPlugin>(PluginsDir() + "/" + socket);
    EXPECT_TRUE(stub->Start().ok());
    std::vector<v1beta1::Device> devices;
    for (int i = 0; i < count; ++i) devices.push_back(MakeDevice(absl::StrCat(prefix, i)));
    stub->SetDevices(devices);
    absl::Status registered = StubPlugin::Register(KubeletSocket(), "v1beta1", socket, resource);
    EXPECT_TRUE(registered.ok()) << registered << manager_->Output();
    EXPECT_TRUE(WaitForAllocatable(resource, count, count)) << Status().dump();
    return stub;
  }

  // Checks that kdpctl itself (the CLI, a new process) answers while a peer hangs.
  void ExpectKdpctlStatusAnswers(const std::string& scenario) {
    const absl::Time start = absl::Now();
    KdpctlResult status = Kdpctl({"status"});
    const absl::Duration took = absl::Now() - start;
    EXPECT_EQ(status.exit_code, 0) << status.err;
    Figure(absl::StrCat(scenario, " kdpctl status (process, while hung)"), Ms(took));
  }

  int64_t Allocated(const std::string& resource) {
    nlohmann::json r = Resource(resource);
    return r.is_object() ? r["allocated"].get<int64_t>() : -1;
  }
};

TEST_F(HungPeers, PluginThatNeverAnswersAllocateFailsTheAdmissionAndHoldsNothing) {
  ASSERT_NO_FATAL_FAILURE(StartManager({"--call-timeout", absl::StrCat(TimeoutS())}));
  std::unique_ptr<StubPlugin> hung = StartStub("hung.sock", "example.com/hung", "hung", 2);
  std::unique_ptr<StubPlugin> good = StartStub("good.sock", "example.com/good", "good", 2);
  hung->Hold(StubPlugin::Call::kAllocate);
  absl::Cleanup release = [&] { hung->Release(StubPlugin::Call::kAllocate); };
  StatusProber prober(AdminSocket());
  prober.Start();

  std::unique_ptr<AsyncApply> stuck = ApplyAsync("stuck", GpuPod("stuck", 2, "example.com/hung"));
  ASSERT_TRUE(WaitUntil([&] { return hung->waiting(StubPlugin::Call::kAllocate) == 1; }))
      << manager_->Output();
  const absl::Time hung_since = absl::Now();
  // Meanwhile: another plugin's pod is admitted (it shares nothing with the hung call), a new
  // plugin registers and publishes its devices, and kdpctl answers.
  std::unique_ptr<AsyncApply> queued =
      ApplyAsync("queued", GpuPod("queued", 1, "example.com/good"));
  std::unique_ptr<StubPlugin> late = StartStub("late.sock", "example.com/late", "late", 3);
  ExpectKdpctlStatusAnswers("hung Allocate");
  EXPECT_EQ(Allocated("example.com/hung"), 0) << "a reservation is not an admitted pod";

  // The manager cancels the call at the deadline: the peer sees its call end.
  ASSERT_TRUE(WaitUntil([&] { return hung->waiting(StubPlugin::Call::kAllocate) == 0; },
                        Timeout() + Slack() + absl::Seconds(5)));
  const absl::Duration seen_by_peer = absl::Now() - hung_since;
  stuck->Join();
  queued->Join();
  ExpectResponsive("hung Allocate", prober.Stop());

  Figure("hung Allocate: deadline seen by the plugin", Seconds(seen_by_peer));
  Figure("hung Allocate: admission rejected after", Seconds(stuck->took()));
  Figure("hung Allocate: deadline configured (--call-timeout; kubelet: none, default 30 s)",
         Seconds(Timeout()));
  Figure("hung Allocate: another plugin's pod admitted after", Seconds(queued->took()));
  EXPECT_GE(stuck->took(), Timeout() - absl::Milliseconds(100));
  EXPECT_LE(stuck->took(), Timeout() + Slack());
  EXPECT_LE(seen_by_peer, Timeout() + Slack());

  const KdpctlResult& rejected = stuck->result();
  EXPECT_EQ(rejected.exit_code, 1) << rejected.out << rejected.err;
  EXPECT_EQ(rejected.json.value("admitted", true), false) << rejected.out;
  EXPECT_EQ(rejected.json.value("reason", ""), "UnexpectedAdmissionError") << rejected.out;
  const std::string message = rejected.json.value("message", "");
  EXPECT_THAT(message, HasSubstr("Allocate failed due to")) << message;
  EXPECT_THAT(message, HasSubstr("Deadline Exceeded")) << message;

  // The other plugin's pod did not wait for the deadline, and was admitted.
  EXPECT_EQ(queued->result().json.value("admitted", false), true) << queued->result().out;
  EXPECT_LE(queued->took(), Timeout() + Slack());

  // Nothing stays reserved: both devices allocatable and free, no such pod, nothing in the
  // checkpoint but the queued pod's entry.
  nlohmann::json resource = Resource("example.com/hung");
  ASSERT_TRUE(resource.is_object()) << Status().dump();
  EXPECT_EQ(resource["allocatable"], 2) << resource;
  EXPECT_EQ(resource["allocated"], 0) << resource;
  const std::map<std::string, nlohmann::json> pods = ListedPods();
  EXPECT_FALSE(pods.contains("stuck"));
  EXPECT_TRUE(pods.contains("queued"));

  // Once the plugin answers again, the same two devices go to the next pod.
  std::move(release).Invoke();
  KdpctlResult next = Apply(GpuPod("next", 2, "example.com/hung"));
  EXPECT_EQ(next.exit_code, 0) << next.out << next.err << manager_->Output();
  EXPECT_EQ(Allocated("example.com/hung"), 2);
  KdpctlResult checkpoint = Inspect(PluginsDir() + "/kubelet_internal_checkpoint");
  ASSERT_TRUE(WaitUntil([&] {
    checkpoint = Inspect(PluginsDir() + "/kubelet_internal_checkpoint");
    return checkpoint.exit_code == 0 && checkpoint.out.find("stuck") == std::string::npos &&
           absl::StrContains(checkpoint.out, "hung0") && absl::StrContains(checkpoint.out, "good");
  })) << checkpoint.out;
  EXPECT_EQ(hung->allocate_calls(), 2);
}

TEST_F(HungPeers, DriverThatNeverAnswersNodePrepareResourcesFailsThePodAndPreparesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager(
      {"--dra-call-timeout", absl::StrCat(TimeoutS()), "--dra-reconcile-period", "1s"}));
  const std::string driver = "hung.example.com";
  const std::string dra_socket = root_.Path("plugins/hung.example.com/dra.sock");
  HungDraPlugin dra(kDraNode);
  FakeRegistration registration(
      FakeRegistration::Info("DRAPlugin", driver, dra_socket, {"v1.DRAPlugin"}));
  std::unique_ptr<grpc::Server> dra_server = ServeUnix(dra_socket, {&dra});
  ASSERT_NE(dra_server, nullptr);
  std::unique_ptr<grpc::Server> registration_server =
      ServeUnix(RegistryDir() + "/hung.example.com-reg.sock", {&registration});
  ASSERT_NE(registration_server, nullptr);
  absl::Cleanup shutdown = [&] {
    dra.Answer();
    ShutdownServer(registration_server);
    ShutdownServer(dra_server);
  };
  ASSERT_TRUE(WaitUntil([&] { return registration.registered(); })) << manager_->Output();
  nlohmann::json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "node-a-hung.example.com"}}},
      {"spec",
       {{"driver", driver},
        {"nodeName", kDraNode},
        {"pool", {{"name", kDraNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices", {{{"name", "dev0"}}, {{"name", "dev1"}}}}}}};
  HttpResponse posted = Api("POST", "/apis/resource.k8s.io/v1/resourceslices", slice.dump());
  ASSERT_EQ(posted.status, 201) << posted.error << posted.body;
  KdpctlResult objects = Apply(
      absl::StrCat(DeviceClass(driver, driver), "---\n", ClaimTemplate("two", 2, "", driver)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  std::unique_ptr<StubPlugin> good = StartStub("good.sock", "example.com/good", "good", 2);
  StatusProber prober(AdminSocket());
  prober.Start();

  std::unique_ptr<AsyncApply> stuck = ApplyAsync("stuck", ClaimPod("stuck", "two"));
  ASSERT_TRUE(WaitUntil([&] { return dra.prepare_calls() == 1; })) << manager_->Output();
  std::unique_ptr<AsyncApply> queued =
      ApplyAsync("queued", GpuPod("queued", 1, "example.com/good"));
  ExpectKdpctlStatusAnswers("hung NodePrepareResources");
  // While the call hangs the claim is in the cache (checkpointed before the RPC, kubernetes
  // #116411), not prepared.
  for (const auto& claim : PreparedClaims()) EXPECT_EQ(claim["prepared"], false) << claim;

  ASSERT_TRUE(WaitUntil([&] { return !dra.cancelled_after().empty(); },
                        Timeout() + Slack() + absl::Seconds(5)));
  stuck->Join();
  queued->Join();
  ExpectResponsive("hung NodePrepareResources", prober.Stop());

  const absl::Duration seen_by_peer = dra.cancelled_after().front();
  Figure("hung NodePrepareResources: deadline seen by the driver", Seconds(seen_by_peer));
  Figure("hung NodePrepareResources: admission rejected after", Seconds(stuck->took()));
  Figure("hung NodePrepareResources: deadline configured (--dra-call-timeout; kubelet: 45 s)",
         Seconds(Timeout()));
  Figure("hung NodePrepareResources: another plugin's pod admitted after", Seconds(queued->took()));
  EXPECT_GE(seen_by_peer, Timeout() - absl::Milliseconds(100));
  EXPECT_LE(seen_by_peer, Timeout() + Slack());
  EXPECT_LE(stuck->took(), Timeout() + Slack());

  nlohmann::json pod = PodOf(stuck->result().json);
  ASSERT_TRUE(pod.is_object()) << stuck->result().out << stuck->result().err;
  EXPECT_EQ(pod["admitted"], false) << pod;
  EXPECT_EQ(pod["reason"], "FailedPrepareDynamicResources") << pod;
  const std::string message = pod.value("message", "");
  EXPECT_THAT(message, HasSubstr("NodePrepareResources")) << message;
  EXPECT_THAT(message, HasSubstr("DeadlineExceeded")) << message;
  EXPECT_EQ(queued->result().json.value("admitted", false), true) << queued->result().out;
  EXPECT_LE(queued->took(), Timeout() + Slack());

  // Nothing stays prepared or reserved: the cache empties (at once or by the reconcile loop),
  // the checkpoint holds no claim, no claim is reserved for the pod.
  EXPECT_TRUE(WaitUntil([&] { return PreparedClaims().empty(); })) << PreparedClaims();
  KdpctlResult state;
  EXPECT_TRUE(WaitUntil([&] {  // the file follows the journal within the compaction delay
    state = Inspect(DraCheckpointPath());
    return state.exit_code == 0 && state.json.value("claims", nlohmann::json::array()).empty();
  })) << state.out;
  ASSERT_EQ(state.exit_code, 0) << state.out << state.err;
  EXPECT_THAT(state.json.value("claims", nlohmann::json::array()), IsEmpty()) << state.out;
  HttpResponse claims = Api("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims");
  ASSERT_EQ(claims.status, 200) << claims.error;
  for (const auto& claim : claims.json["items"]) {
    const nlohmann::json status = claim.value("status", nlohmann::json::object());
    EXPECT_TRUE(!status.contains("reservedFor") || status["reservedFor"].empty()) << claim;
    EXPECT_FALSE(status.contains("allocation")) << claim;
  }
  EXPECT_FALSE(ListedPods().contains("stuck"));

  // Once the driver answers, both devices go to the next pod.
  dra.Answer();
  nlohmann::json next = ApplyPod(ClaimPod("next", "two"));
  EXPECT_EQ(next["admitted"], true) << next << manager_->Output();
  EXPECT_EQ(ClaimCdiIds(next).size(), 1u) << next;
}

TEST_F(HungPeers, SilentRegistrationSocketInPluginsRegistryTimesOutAndOthersRegister) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  StatusProber prober(AdminSocket());
  prober.Start();
  SilentSocket silent;
  std::string error;
  const std::string silent_path = RegistryDir() + "/silent.example.com-reg.sock";
  const absl::Time created = absl::Now();
  ASSERT_TRUE(silent.Listen(silent_path, &error)) << error;
  ASSERT_TRUE(WaitUntil([&] { return silent.accepted() > 0; })) << manager_->Output();

  // A driver that registers while the silent socket is being dialled is not held up by it.
  const absl::Time good_created = absl::Now();
  FakeRegistration good(FakeRegistration::Info("DRAPlugin", "good.example.com",
                                               root_.Path("plugins/good.example.com/dra.sock"),
                                               {"v1.DRAPlugin"}));
  std::unique_ptr<grpc::Server> good_server =
      ServeUnix(RegistryDir() + "/good.example.com-reg.sock", {&good});
  ASSERT_NE(good_server, nullptr);
  absl::Cleanup shutdown = [&] { ShutdownServer(good_server); };
  ASSERT_TRUE(WaitUntil([&] { return good.registered(); })) << manager_->Output();
  const absl::Duration good_took = absl::Now() - good_created;
  ExpectKdpctlStatusAnswers("silent registration socket");

  // The manager gives up on the silent socket at its deadline and says why.
  const std::string failure = "Plugin registration failed; will retry";
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string out = manager_->Output();
        const size_t at = out.find(failure);
        return at != std::string::npos && out.find(silent_path, at) != std::string::npos;
      },
      absl::Seconds(10) + absl::Seconds(1) + Slack() + absl::Seconds(5)))
      << manager_->Output();
  const absl::Duration gave_up = absl::Now() - created;
  const std::string out = manager_->Output();
  const size_t at = out.find(failure);
  const std::string line = out.substr(at, out.find('\n', at) - at);
  std::printf("manager: %s\n", line.c_str());
  EXPECT_TRUE(absl::StrContains(line, "context deadline exceeded") ||
              absl::StrContains(line, "DeadlineExceeded"))
      << line;
  ExpectResponsive("silent registration socket", prober.Stop());
  Figure(
      "silent registration socket: registration abandoned after (the 10 s dial deadline; "
      "kubelet: 10 s dial, then 1 s GetInfo)",
      Seconds(gave_up));
  Figure("silent registration socket: another driver registered meanwhile in", Seconds(good_took));
  EXPECT_LE(gave_up, absl::Seconds(11) + Slack());
  EXPECT_LT(good_took, absl::Seconds(5));

  // Only the good driver is registered.
  nlohmann::json status = Status();
  std::vector<std::string> registered;
  for (const auto& plugin : status["registered_plugins"]) registered.push_back(plugin["name"]);
  EXPECT_EQ(registered, std::vector<std::string>{"good.example.com"}) << status.dump();
}

TEST_F(HungPeers, SilentDevicePluginEndpointFailsItsRegistrationAtTheDialDeadline) {
  ASSERT_NO_FATAL_FAILURE(StartManager({"--dial-timeout", absl::StrCat(TimeoutS())}));
  StatusProber prober(AdminSocket());
  prober.Start();
  SilentSocket silent;
  std::string error;
  ASSERT_TRUE(silent.Listen(PluginsDir() + "/silent.sock", &error)) << error;

  absl::Status silent_result;
  absl::Duration silent_took;
  std::thread registering([&] {
    const absl::Time start = absl::Now();
    silent_result =
        StubPlugin::Register(KubeletSocket(), "v1beta1", "silent.sock", "example.com/silent");
    silent_took = absl::Now() - start;
  });
  ASSERT_TRUE(WaitUntil([&] { return silent.accepted() > 0; })) << manager_->Output();
  // The registration server keeps serving others while it dials the silent endpoint.
  const absl::Time good_start = absl::Now();
  std::unique_ptr<StubPlugin> good = StartStub("good.sock", "example.com/good", "good", 2);
  const absl::Duration good_took = absl::Now() - good_start;
  ExpectKdpctlStatusAnswers("silent device plugin endpoint");
  registering.join();
  ExpectResponsive("silent device plugin endpoint", prober.Stop());

  Figure("silent device plugin endpoint: Register failed after", Seconds(silent_took));
  Figure(
      "silent device plugin endpoint: deadline configured (--dial-timeout; kubelet: 10 s dial, "
      "no deadline on GetDevicePluginOptions)",
      Seconds(Timeout()));
  Figure("silent device plugin endpoint: another plugin registered meanwhile in",
         Seconds(good_took));
  EXPECT_FALSE(silent_result.ok());
  EXPECT_THAT(std::string(silent_result.message()),
              ::testing::AnyOf(HasSubstr("failed to dial device plugin"),
                               HasSubstr("failed to get device plugin options")))
      << silent_result;
  EXPECT_GE(silent_took, Timeout() - absl::Milliseconds(100));
  EXPECT_LE(silent_took, Timeout() + Slack());
  EXPECT_LT(good_took, Timeout());
  EXPECT_TRUE(Resource("example.com/silent").is_null()) << Status().dump();
  EXPECT_TRUE(Resource("example.com/good").is_object()) << Status().dump();
}

}  // namespace
}  // namespace kdp::testing
