// Issue 17: no lock across a peer's RPC that unrelated work waits on. A real kdp-manager in a
// temporary kubelet root, real peers on unix sockets written here on the wire API (a DRA driver
// whose NodeUnprepareResources can fail or hang, stub device plugins whose Allocate can hang),
// and kdpctl run as a process with `--timeout 1s`: its own deadline is the assertion that the
// manager answered within 1 s.
//
//   - While the DRA driver hangs in NodeUnprepareResources called by the reconcile loop (a pod
//     whose deletion the driver failed stays terminating, and the loop retries it), a pod for a
//     device-plugin resource is admitted and `kdpctl status`, `get pods` and `delete pod` answer.
//   - While a device plugin hangs in Allocate, a pod for another resource is admitted and
//     `kdpctl status` answers; a pod for the hung resource waits behind it (pods of one
//     resource are admitted one at a time), and kdpctl names the call it waits on.
//
// The hung calls' deadlines are 60 s (--call-timeout, --dra-call-timeout), far beyond every
// assertion, so a manager holding a lock across them fails the test; each test releases its
// peers before it ends, so the manager shuts down at once.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "dra/v1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {
namespace {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;
using ::testing::HasSubstr;

constexpr char kStuckDriver[] = "stuck.example.com";
constexpr char kLongDeadline[] = "60s";

// A v1 DRA driver: NodePrepareResources answers at once with device dev0; what
// NodeUnprepareResources does is set by the test: answer, fail, or hang until Answer() (or the
// caller cancels it).
class ScriptedDriver final : public drapb::DRAPlugin::Service {
 public:
  enum class Unprepare { kAnswer, kFail, kHang };

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const drapb::NodePrepareResourcesRequest* request,
                                    drapb::NodePrepareResourcesResponse* response) override {
    for (const auto& claim : request->claims()) {
      auto* device = (*response->mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name(kDraNode);
      device->set_device_name("dev0");
      device->add_cdi_device_ids("stuck.example.com/dev=dev0");
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drapb::NodeUnprepareResourcesRequest* request,
                                      drapb::NodeUnprepareResourcesResponse* response) override {
    ++unprepare_calls_;
    Unprepare mode;
    {
      absl::MutexLock lock(&mu_);
      mode = mode_;
    }
    if (mode == Unprepare::kFail) {
      for (const auto& claim : request->claims()) {
        (*response->mutable_claims())[claim.uid()].set_error("device busy");
      }
      return grpc::Status::OK;
    }
    if (mode == Unprepare::kHang) {
      ++hanging_;
      while (!answer_.WaitForNotificationWithTimeout(absl::Milliseconds(5))) {
        if (context->IsCancelled()) {
          --hanging_;
          return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
        }
      }
      --hanging_;
    }
    for (const auto& claim : request->claims()) (*response->mutable_claims())[claim.uid()];
    return grpc::Status::OK;
  }

  void Set(Unprepare mode) {
    absl::MutexLock lock(&mu_);
    mode_ = mode;
  }
  // Releases every hanging unprepare, and answers later ones at once.
  void Answer() {
    Set(Unprepare::kAnswer);
    if (!answer_.HasBeenNotified()) answer_.Notify();
  }
  int unprepare_calls() const { return unprepare_calls_.load(); }
  int hanging() const { return hanging_.load(); }

 private:
  absl::Mutex mu_;
  Unprepare mode_ ABSL_GUARDED_BY(mu_) = Unprepare::kAnswer;
  absl::Notification answer_;
  std::atomic<int> unprepare_calls_{0};
  std::atomic<int> hanging_{0};
};

// kdpctl on its own thread (a command that is expected to wait). Join() before reading.
class AsyncKdpctl {
 public:
  explicit AsyncKdpctl(std::function<KdpctlResult()> run)
      : thread_([this, run = std::move(run)] { result_ = run(); }) {}
  ~AsyncKdpctl() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  const KdpctlResult& result() const { return result_; }

 private:
  KdpctlResult result_;
  std::thread thread_;
};

class HungPeerIsolation : public DraE2ETest {
 protected:
  // kdpctl with its own deadline of 1 s: exit 0 means the manager answered within it.
  KdpctlResult Quick(std::vector<std::string> args) {
    args.insert(args.begin(), {"--timeout", "1s"});
    return Kdpctl(std::move(args));
  }
  std::string Manifest(const std::string& name, const std::string& yaml) {
    std::string path = root_.Path(name + ".yaml");
    std::ofstream(path) << yaml;
    return path;
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
  // Every kdpctl command a user runs against the node answers within 1 s.
  void ExpectNodeAnswers(const std::string& scenario) {
    KdpctlResult status = Quick({"status"});
    EXPECT_EQ(status.exit_code, 0) << scenario << ": kdpctl status: " << status.err;
    KdpctlResult listed = Quick({"get", "pods"});
    EXPECT_EQ(listed.exit_code, 0) << scenario << ": kdpctl get pods: " << listed.err;
  }
  // Admits a pod asking for one device of `resource` within 1 s, then deletes it within 1 s.
  void ExpectAdmittedAndDeleted(const std::string& name, const std::string& resource) {
    KdpctlResult applied = Quick({"apply", "-f", Manifest(name, GpuPod(name, 1, resource))});
    EXPECT_EQ(applied.exit_code, 0) << name << ": " << applied.out << applied.err;
    EXPECT_EQ(applied.json.value("admitted", false), true) << applied.out;
    KdpctlResult deleted = Quick({"delete", "pod", name});
    EXPECT_EQ(deleted.exit_code, 0) << name << ": " << deleted.err;
  }
};

TEST_F(HungPeerIsolation, DriverHungInTheReconcileLoopsUnprepareHoldsUpNoOtherPod) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager({"--dra-call-timeout", kLongDeadline, "--call-timeout",
                                           kLongDeadline, "--dra-reconcile-period", "1s"}));
  const std::string dra_socket = root_.Path("plugins/stuck.example.com/dra.sock");
  ScriptedDriver driver;
  FakeRegistration registration(
      FakeRegistration::Info("DRAPlugin", kStuckDriver, dra_socket, {"v1.DRAPlugin"}));
  std::unique_ptr<grpc::Server> dra_server = ServeUnix(dra_socket, {&driver});
  ASSERT_NE(dra_server, nullptr);
  std::unique_ptr<grpc::Server> registration_server =
      ServeUnix(RegistryDir() + "/stuck.example.com-reg.sock", {&registration});
  ASSERT_NE(registration_server, nullptr);
  // Released first whatever happens, so the manager's reconcile thread ends at once.
  absl::Cleanup shutdown = [&] {
    driver.Answer();
    ShutdownServer(registration_server);
    ShutdownServer(dra_server);
  };
  ASSERT_TRUE(WaitUntil([&] { return registration.registered(); })) << manager_->Output();
  nlohmann::json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "node-a-stuck.example.com"}}},
      {"spec",
       {{"driver", kStuckDriver},
        {"nodeName", kDraNode},
        {"pool", {{"name", kDraNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices", {{{"name", "dev0"}}, {{"name", "dev1"}}}}}}};
  HttpResponse posted = Api("POST", "/apis/resource.k8s.io/v1/resourceslices", slice.dump());
  ASSERT_EQ(posted.status, 201) << posted.error << posted.body;
  KdpctlResult objects = Apply(absl::StrCat(DeviceClass(kStuckDriver, kStuckDriver), "---\n",
                                            ClaimTemplate("one", 1, "", kStuckDriver)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  std::unique_ptr<StubPlugin> gpu = StartStub("gpu.sock", "example.com/gpu", "gpu", 2);
  nlohmann::json claimed = ApplyPod(ClaimPod("claimed", "one"));
  ASSERT_EQ(claimed["admitted"], true) << claimed;

  // The driver fails the deletion's unprepare: the pod stays terminating, and the reconcile
  // loop retries it (FinishTerminating), where the driver now hangs.
  driver.Set(ScriptedDriver::Unprepare::kFail);
  KdpctlResult failed = DeletePod("claimed");
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_THAT(failed.err, HasSubstr("device busy"));
  driver.Set(ScriptedDriver::Unprepare::kHang);
  ASSERT_TRUE(WaitUntil([&] { return driver.hanging() == 1; })) << manager_->Output();

  ExpectNodeAnswers("while the reconcile loop's NodeUnprepareResources hangs");
  ExpectAdmittedAndDeleted("other", "example.com/gpu");
  // A pod with a claim of the same driver: its NodePrepareResources goes to the driver at once.
  KdpctlResult same_driver = Quick({"apply", "-f", Manifest("same", ClaimPod("same", "one"))});
  EXPECT_EQ(same_driver.exit_code, 0) << same_driver.out << same_driver.err;
  // The terminating pod's name stays taken, and saying so does not wait on the driver either.
  KdpctlResult again = Quick({"apply", "-f", Manifest("again", ClaimPod("claimed", "one"))});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_THAT(again.err, HasSubstr("terminating"));
  EXPECT_EQ(driver.hanging(), 1) << "the hung call is still in flight: nothing above waited on it";

  // Once the driver answers, the loop's retry completes the deletion.
  driver.Answer();
  EXPECT_TRUE(WaitUntil([&] { return !ListedPods().contains("claimed"); })) << manager_->Output();
}

TEST_F(HungPeerIsolation, PluginHungInAllocateHoldsUpOnlyPodsOfItsResource) {
  ASSERT_NO_FATAL_FAILURE(StartManager({"--call-timeout", kLongDeadline}));
  std::unique_ptr<StubPlugin> hung = StartStub("hung.sock", "example.com/hung", "hung", 2);
  std::unique_ptr<StubPlugin> gpu = StartStub("gpu.sock", "example.com/gpu", "gpu", 2);
  hung->Hold(StubPlugin::Call::kAllocate);
  absl::Cleanup release = [&] { hung->Release(StubPlugin::Call::kAllocate); };

  // kdpctl without --timeout waits as the manager waits, and says on what.
  const std::string stuck_manifest = Manifest("stuck", GpuPod("stuck", 1, "example.com/hung"));
  AsyncKdpctl stuck([&] { return Kdpctl({"apply", "-f", stuck_manifest}); });
  ASSERT_TRUE(WaitUntil([&] { return hung->waiting(StubPlugin::Call::kAllocate) == 1; }))
      << manager_->Output();

  ExpectNodeAnswers("while a plugin's Allocate hangs");
  ExpectAdmittedAndDeleted("other", "example.com/gpu");
  // A pod of the hung resource waits behind it; kdpctl gives up at its own deadline and names
  // the call the manager waits on.
  KdpctlResult queued =
      Quick({"apply", "-f", Manifest("queued", GpuPod("queued", 1, "example.com/hung"))});
  EXPECT_EQ(queued.exit_code, 1) << queued.out << queued.err;
  EXPECT_THAT(queued.err, HasSubstr("kdp-manager is waiting on example.com/hung's Allocate for "
                                    "pod default/stuck ("));
  EXPECT_THAT(queued.err, HasSubstr(" of 1m)"));
  EXPECT_THAT(queued.err, ::testing::Not(HasSubstr("no answer from kdp-manager")));

  std::move(release).Invoke();
  stuck.Join();
  EXPECT_EQ(stuck.result().exit_code, 0) << stuck.result().out << stuck.result().err;
  EXPECT_THAT(stuck.result().err,
              HasSubstr("kdp-manager is waiting on example.com/hung's Allocate for pod "
                        "default/stuck"));
  EXPECT_EQ(stuck.result().json.value("admitted", false), true) << stuck.result().out;
}

}  // namespace
}  // namespace kdp::testing
