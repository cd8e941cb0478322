// PodManager's locking (pod_manager.h): no lock is held across a call to a device plugin or a DRA
// driver, so a peer that hangs holds up only the pods that use it. Two real device plugins (stub
// plugins on unix sockets) behind a real DeviceManager, one of which can hold its calls; the DRA
// side is a fake whose prepare and unprepare can be held the same way. Every wait on the code
// under test is bounded (absl::Notification with a deadline), so a lock held across a hung call
// fails the test instead of hanging it.
#include "manager/src/podmanager/pod_manager.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "tests/testing/example_names.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::IsEmpty;

using ::kdp::testing::kGpuResource;
constexpr char kHung[] = "example.com/hung";
// What "at once" means for a call that must not wait on a hung peer: far below the peers' own
// deadline (kCallTimeout), generous for a sanitized build on two busy cores.
constexpr absl::Duration kPrompt = absl::Seconds(5);
// The manager's deadline on plugin calls here: longer than any test, so a test that passes shows
// that nothing waited for it.
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

// The DRA side: Prepare and Unprepare of the pods named in Hold() wait until Release().
class HoldingClaims final : public PodResourceClaims {
 public:
  absl::Status Reserve(Pod*) override { return absl::OkStatus(); }
  void Release(const Pod&) override {}
  absl::Status Prepare(const Pod& pod) override { return Pass(pod.name); }
  absl::Status Unprepare(const Pod& pod) override { return Pass(pod.name); }
  absl::StatusOr<std::vector<std::string>> CdiDevices(const Pod&, const Container&) override {
    return std::vector<std::string>{};
  }

  void Hold(const std::string& pod) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    held_.insert(pod);
  }
  void ReleaseAll() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    held_.clear();
  }
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }

 private:
  absl::Status Pass(const std::string& pod) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++waiting_;
    auto released = [&] {
      mu_.AssertHeld();
      return !held_.contains(pod);
    };
    mu_.Await(absl::Condition(&released));
    --waiting_;
    return absl::OkStatus();
  }

  mutable absl::Mutex mu_;
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

Pod DevicePod(const std::string& name, const std::string& resource, int64_t count) {
  Pod pod;
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.containers = {{.name = "main",
                     .kind = ContainerKind::kApp,
                     .extended_resources = {{resource, count}},
                     .other_limits = {}}};
  return pod;
}

Pod ClaimPod(const std::string& name) {
  Pod pod = DevicePod(name, kGpuResource, 0);
  pod.containers[0].extended_resources.clear();
  pod.containers[0].claims = {{"gpu", ""}};
  pod.resource_claims = {
      {.name = "gpu", .resource_claim_name = name + "-claim", .resource_claim_template_name = ""}};
  return pod;
}

// Runs `fn` on its own thread; Wait() tells whether it returned within a deadline. The thread is
// joined on destruction (in TearDown, after the test released whatever it waits on), so what it
// writes lives here, not in the test body.
class Background {
 public:
  using Admitted = std::optional<absl::StatusOr<AdmitResult>>;
  // `fn` may write `*admitted`.
  explicit Background(std::function<void(Admitted* admitted)> fn)
      : thread_([this, fn = std::move(fn)] {
          fn(&admitted_);
          done_.Notify();
        }) {}
  ~Background() { thread_.join(); }
  bool Wait(absl::Duration deadline) { return done_.WaitForNotificationWithTimeout(deadline); }
  bool done() const { return done_.HasBeenNotified(); }
  // REQUIRES: Wait() returned true.
  const Admitted& admitted() const { return admitted_; }

 private:
  Admitted admitted_;
  absl::Notification done_;
  std::thread thread_;
};

class PodManagerLockingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string plugins_dir = dir_.Path("device-plugins");
    ASSERT_TRUE(MakeDirectories(plugins_dir).ok());
    devices_ = std::make_unique<DeviceManager>(
        DeviceManagerOptions{.plugins_dir = plugins_dir,
                             .endpoint = {.dial_timeout = absl::Seconds(10),
                                          .call_timeout = kCallTimeout,
                                          .pre_start_timeout = kCallTimeout}});
    pods_ = std::make_unique<PodManager>(devices_.get(), nullptr, nullptr, &claims_);
    devices_->SetActivePodsSource(pods_.get());
    pods_->Restore({});
    ASSERT_TRUE(devices_->Start().ok());
    gpu_ = StartPlugin(plugins_dir, "gpu.sock", kGpuResource, "g");
    hung_ = StartPlugin(plugins_dir, "hung.sock", kHung, "h");
  }
  void TearDown() override {
    claims_.ReleaseAll();
    for (StubPlugin* plugin : {gpu_.get(), hung_.get()}) {
      if (plugin == nullptr) continue;
      plugin->Release(StubPlugin::Call::kAllocate);
      plugin->Release(StubPlugin::Call::kPreStartContainer);
    }
    background_.clear();  // joins
    if (gpu_ != nullptr) gpu_->Stop();
    if (hung_ != nullptr) hung_->Stop();
    if (devices_ != nullptr) devices_->Stop();
  }

  std::unique_ptr<StubPlugin> StartPlugin(const std::string& dir, const std::string& socket,
                                          const std::string& resource, const std::string& prefix) {
    auto plugin = std::make_unique<StubPlugin>(dir + "/" + socket);
    plugin->SetDevices({MakeDevice(prefix + "0"), MakeDevice(prefix + "1")});
    EXPECT_TRUE(plugin->Start().ok());
    EXPECT_TRUE(StubPlugin::Register(dir + "/kubelet.sock", "v1beta1", socket, resource).ok());
    EXPECT_TRUE(WaitUntil([&] {
      for (const ResourceDevices& devices : devices_->Resources()) {
        if (devices.name == resource) return devices.connected && devices.allocatable() == 2;
      }
      return false;
    }));
    return plugin;
  }

  // Admits `pod` on a background thread.
  Background* AdmitInBackground(Pod pod) {
    background_.push_back(std::make_unique<Background>(
        [this, pod = std::move(pod)](Background::Admitted* admitted) mutable {
          *admitted = pods_->Admit(std::move(pod));
        }));
    return background_.back().get();
  }
  Background* InBackground(std::function<void()> fn) {
    background_.push_back(
        std::make_unique<Background>([fn = std::move(fn)](Background::Admitted*) { fn(); }));
    return background_.back().get();
  }
  // The admission's answer; REQUIRES: `admit->Wait()` returned true.
  static void ExpectAdmitted(const Background* admit) {
    const Background::Admitted& result = admit->admitted();
    ASSERT_TRUE(result.has_value());
    ASSERT_TRUE(result->ok()) << result->status();
    EXPECT_TRUE((*result)->admitted) << (*result)->reason << ": " << (*result)->message;
  }

  // Admits `pod` and expects it admitted within kPrompt.
  void ExpectAdmittedPromptly(Pod pod) {
    const std::string name = pod.name;
    Background* admit = AdmitInBackground(std::move(pod));
    ASSERT_TRUE(admit->Wait(kPrompt)) << name << " waited behind a hung peer call";
    ExpectAdmitted(admit);
  }

  TempDir dir_;
  HoldingClaims claims_;
  std::unique_ptr<DeviceManager> devices_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<StubPlugin> gpu_;
  std::unique_ptr<StubPlugin> hung_;
  std::vector<std::unique_ptr<Background>> background_;
};

// The report: a plugin that never answers Allocate stalled every admission on the node.
TEST_F(PodManagerLockingTest, PodOfAnotherResourceIsAdmittedWhileAPluginHangsInAllocate) {
  hung_->Hold(StubPlugin::Call::kAllocate);
  Background* stuck_admit = AdmitInBackground(DevicePod("stuck", kHung, 1));
  ASSERT_TRUE(WaitUntil([&] { return hung_->waiting(StubPlugin::Call::kAllocate) == 1; }));

  ExpectAdmittedPromptly(DevicePod("other", kGpuResource, 2));
  // Reads, deletions and the pod source answer too.
  EXPECT_TRUE(pods_->Get("default", "other").has_value());
  EXPECT_EQ(pods_->List().size(), 1u);
  EXPECT_TRUE(pods_->ActivePodUids().contains("uid-stuck")) << "being admitted is active";
  Background* deleted = InBackground([&] { EXPECT_TRUE(pods_->Delete("default", "other").ok()); });
  EXPECT_TRUE(deleted->Wait(kPrompt)) << "a deletion waited behind a hung Allocate";
  // The manager names what it waits on.
  const std::vector<PeerCall> calls = devices_->peer_calls().InFlight();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].peer, kHung);
  EXPECT_EQ(calls[0].method, "Allocate");
  EXPECT_EQ(calls[0].pod, "default/stuck");
  EXPECT_EQ(calls[0].timeout, kCallTimeout);

  hung_->Release(StubPlugin::Call::kAllocate);
  ASSERT_TRUE(stuck_admit->Wait(kPrompt));
  ExpectAdmitted(stuck_admit);
  EXPECT_THAT(devices_->peer_calls().InFlight(), IsEmpty());
}

// Pods that share a resource are admitted one at a time, as on a kubelet: the second one's hints
// and pick see the devices the first one holds, and no device is given twice.
TEST_F(PodManagerLockingTest, PodsOfOneResourceAreAdmittedOneAtATime) {
  hung_->Hold(StubPlugin::Call::kAllocate);
  Background* first_admit = AdmitInBackground(DevicePod("first", kHung, 1));
  ASSERT_TRUE(WaitUntil([&] { return hung_->waiting(StubPlugin::Call::kAllocate) == 1; }));
  Background* second_admit = AdmitInBackground(DevicePod("second", kHung, 1));
  EXPECT_FALSE(second_admit->Wait(absl::Milliseconds(200)));
  EXPECT_EQ(hung_->allocate_calls(), 1) << "the second admission ran beside the first";
  // A second pod of that name is refused at once, not queued.
  absl::StatusOr<AdmitResult> again = pods_->Admit(DevicePod("first", kGpuResource, 1));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();

  hung_->Release(StubPlugin::Call::kAllocate);
  ASSERT_TRUE(first_admit->Wait(kPrompt));
  ASSERT_TRUE(second_admit->Wait(kPrompt));
  ASSERT_NO_FATAL_FAILURE(ExpectAdmitted(first_admit));
  ASSERT_NO_FATAL_FAILURE(ExpectAdmitted(second_admit));
  EXPECT_NE((*first_admit->admitted())->pod.containers[0].devices.at(kHung),
            (*second_admit->admitted())->pod.containers[0].devices.at(kHung));
}

// A DRA driver that hangs in NodeUnprepareResources during a deletion (or the reconcile loop's
// FinishTerminating) holds up neither admissions nor other deletions.
TEST_F(PodManagerLockingTest, DeletionHungInUnprepareHoldsUpNoOtherPod) {
  ExpectAdmittedPromptly(ClaimPod("claimed"));
  ExpectAdmittedPromptly(DevicePod("plain", kGpuResource, 1));
  claims_.Hold("claimed");
  Background* hung_delete =
      InBackground([&] { EXPECT_TRUE(pods_->Delete("default", "claimed").ok()); });
  ASSERT_TRUE(WaitUntil([&] { return claims_.waiting() == 1; }));

  ExpectAdmittedPromptly(DevicePod("new", kGpuResource, 1));
  ExpectAdmittedPromptly(ClaimPod("new-claimed"));
  Background* other_delete =
      InBackground([&] { EXPECT_TRUE(pods_->Delete("default", "plain").ok()); });
  EXPECT_TRUE(other_delete->Wait(kPrompt));
  // The reconcile loop's retry skips the pod a deletion is working on instead of queueing.
  Background* finish = InBackground([&] { EXPECT_EQ(pods_->FinishTerminating(), 0); });
  EXPECT_TRUE(finish->Wait(kPrompt));
  EXPECT_TRUE(pods_->Get("default", "claimed")->pod.terminating);

  claims_.ReleaseAll();
  ASSERT_TRUE(hung_delete->Wait(kPrompt));
  EXPECT_FALSE(pods_->Get("default", "claimed").has_value());
}

// The reconcile loop's body runs without any PodManager lock: admissions and deletions go on
// while a driver hangs in it.
TEST_F(PodManagerLockingTest, ReconcileLoopHoldsNoLockAcrossItsDriverCalls) {
  ExpectAdmittedPromptly(DevicePod("running", kGpuResource, 1));
  absl::Notification in_reconcile, release_reconcile;
  Background* reconcile = InBackground([&] {
    pods_->WithActivePodsSettled([&](const std::set<std::string>& active) {
      EXPECT_TRUE(active.contains("uid-running"));
      in_reconcile.Notify();
      // A driver call that hangs (bounded, should the test fail).
      release_reconcile.WaitForNotificationWithTimeout(kCallTimeout);
    });
  });
  absl::Cleanup release = [&] {
    if (!release_reconcile.HasBeenNotified()) release_reconcile.Notify();
    background_.clear();  // joins: the threads use this test's notifications
  };
  ASSERT_TRUE(in_reconcile.WaitForNotificationWithTimeout(kPrompt));

  ExpectAdmittedPromptly(ClaimPod("claimed"));
  ExpectAdmittedPromptly(DevicePod("plain", kHung, 2));
  Background* deleted =
      InBackground([&] { EXPECT_TRUE(pods_->Delete("default", "running").ok()); });
  EXPECT_TRUE(deleted->Wait(kPrompt)) << "a deletion waited for the reconcile loop";
  EXPECT_FALSE(reconcile->done());
  release_reconcile.Notify();
  EXPECT_TRUE(reconcile->Wait(kPrompt));
}

// PreStartContainer runs after the pod's devices are allocated: a plugin hanging in it holds up
// no admission of its own resource either.
TEST_F(PodManagerLockingTest, HungPreStartContainerHoldsUpNoOtherAdmission) {
  // A plugin that requires PreStartContainer.
  const std::string dir = dir_.Path("device-plugins");
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  auto prestart = std::make_unique<StubPlugin>(dir + "/prestart.sock", options);
  prestart->SetDevices({MakeDevice("p0"), MakeDevice("p1")});
  ASSERT_TRUE(prestart->Start().ok());
  absl::Cleanup stop = [&] {
    prestart->Release(StubPlugin::Call::kPreStartContainer);
    background_.clear();
    prestart->Stop();
  };
  ASSERT_TRUE(StubPlugin::Register(dir + "/kubelet.sock", "v1beta1", "prestart.sock",
                                   "example.com/prestart")
                  .ok());
  ASSERT_TRUE(WaitUntil([&] {
    for (const ResourceDevices& devices : devices_->Resources()) {
      if (devices.name == "example.com/prestart") return devices.allocatable() == 2;
    }
    return false;
  }));
  prestart->Hold(StubPlugin::Call::kPreStartContainer);
  AdmitInBackground(DevicePod("stuck", "example.com/prestart", 1));
  ASSERT_TRUE(
      WaitUntil([&] { return prestart->waiting(StubPlugin::Call::kPreStartContainer) == 1; }));
  ASSERT_EQ(devices_->peer_calls().InFlight().size(), 1u);
  EXPECT_EQ(devices_->peer_calls().InFlight()[0].method, "PreStartContainer");

  ExpectAdmittedPromptly(DevicePod("gpu", kGpuResource, 1));
  // Same resource: its devices are allocated at once; only its own PreStartContainer waits.
  AdmitInBackground(DevicePod("same", "example.com/prestart", 1));
  EXPECT_TRUE(WaitUntil([&] {
    return prestart->waiting(StubPlugin::Call::kPreStartContainer) == 2;
  })) << "the second admission of the resource waited for the first one's PreStartContainer";
}

}  // namespace
}  // namespace kdp::manager
