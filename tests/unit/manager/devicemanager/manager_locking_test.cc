// DeviceManager's locking (manager.h): the Allocate RPC runs outside every lock, on devices
// reserved before it, so a plugin that hangs in Allocate holds up no other allocation, not even
// of its own resource; a plugin that hangs in GetPreferredAllocation holds up only its own
// resource's picks. Real stub plugins on unix sockets; every wait on the code under test is
// bounded, so a lock held across a hung call fails the test instead of hanging it.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/devicemanager/pod_test_util.h"

namespace kdp::manager {
namespace {

using devicemanager_testutil::kGpu;
using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::IsEmpty;

constexpr char kHung[] = "example.com/hung";
constexpr absl::Duration kPrompt = absl::Seconds(5);
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

Pod OnePod(const std::string& name, const std::string& resource, int64_t count) {
  Pod pod;
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.containers = {{.name = "main",
                     .kind = ContainerKind::kApp,
                     .extended_resources = {{resource, count}},
                     .other_limits = {}}};
  return pod;
}

// Allocate of one pod's container on its own thread.
class AsyncAllocate {
 public:
  AsyncAllocate(DeviceManager* devices, Pod pod)
      : pod_(std::move(pod)), thread_([this, devices] {
          status_ = devices->Allocate(pod_, pod_.containers[0]);
          done_.Notify();
        }) {}
  ~AsyncAllocate() { thread_.join(); }
  bool Wait(absl::Duration deadline) { return done_.WaitForNotificationWithTimeout(deadline); }
  // REQUIRES: Wait() returned true.
  const absl::Status& status() const { return status_; }

 private:
  const Pod pod_;
  absl::Status status_;
  absl::Notification done_;
  std::thread thread_;
};

class DeviceManagerLockingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeDirectories(Dir()).ok());
    devices_ = std::make_unique<DeviceManager>(
        DeviceManagerOptions{.plugins_dir = Dir(),
                             .endpoint = {.dial_timeout = absl::Seconds(10),
                                          .call_timeout = kCallTimeout,
                                          .pre_start_timeout = kCallTimeout}});
    ASSERT_TRUE(devices_->Start().ok());
    v1beta1::DevicePluginOptions preferred;
    preferred.set_get_preferred_allocation_available(true);
    gpu_ = StartPlugin("gpu.sock", kGpu, "g", {});
    hung_ = StartPlugin("hung.sock", kHung, "h", preferred);
  }
  void TearDown() override {
    for (StubPlugin* plugin : {gpu_.get(), hung_.get()}) {
      if (plugin == nullptr) continue;
      plugin->Release(StubPlugin::Call::kAllocate);
      plugin->Release(StubPlugin::Call::kGetPreferredAllocation);
    }
    allocations_.clear();  // joins
    if (gpu_ != nullptr) gpu_->Stop();
    if (hung_ != nullptr) hung_->Stop();
    if (devices_ != nullptr) devices_->Stop();
  }

  std::string Dir() const { return dir_.Path("device-plugins"); }

  std::unique_ptr<StubPlugin> StartPlugin(const std::string& socket, const std::string& resource,
                                          const std::string& prefix,
                                          v1beta1::DevicePluginOptions options) {
    auto plugin = std::make_unique<StubPlugin>(Dir() + "/" + socket, options);
    plugin->SetDevices({MakeDevice(prefix + "0"), MakeDevice(prefix + "1"),
                        MakeDevice(prefix + "2"), MakeDevice(prefix + "3")});
    EXPECT_TRUE(plugin->Start().ok());
    EXPECT_TRUE(StubPlugin::Register(Dir() + "/kubelet.sock", "v1beta1", socket, resource).ok());
    EXPECT_TRUE(WaitUntil([&] {
      for (const ResourceDevices& devices : devices_->Resources()) {
        if (devices.name == resource) return devices.connected && devices.allocatable() == 4;
      }
      return false;
    }));
    return plugin;
  }

  AsyncAllocate* Allocate(Pod pod) {
    allocations_.push_back(std::make_unique<AsyncAllocate>(devices_.get(), std::move(pod)));
    return allocations_.back().get();
  }

  std::set<std::string> Held(const std::string& pod, const std::string& resource) const {
    std::set<std::string> out;
    for (const PodDevicesEntry& entry : devices_->ContainerEntries("uid-" + pod, "main")) {
      if (entry.resource_name != resource) continue;
      for (const std::string& id : DeviceIds(entry.devices)) out.insert(id);
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<DeviceManager> devices_;
  std::unique_ptr<StubPlugin> gpu_;
  std::unique_ptr<StubPlugin> hung_;
  std::vector<std::unique_ptr<AsyncAllocate>> allocations_;
};

TEST_F(DeviceManagerLockingTest, HungAllocateHoldsUpNoOtherAllocation) {
  hung_->Hold(StubPlugin::Call::kAllocate);
  AsyncAllocate* stuck = Allocate(OnePod("stuck", kHung, 2));
  ASSERT_TRUE(WaitUntil([&] { return hung_->waiting(StubPlugin::Call::kAllocate) == 1; }));

  // Another resource, and the hung resource itself: the RPC in flight holds no lock.
  AsyncAllocate* other = Allocate(OnePod("other", kGpu, 1));
  ASSERT_TRUE(other->Wait(kPrompt)) << "an Allocate of another resource waited";
  EXPECT_TRUE(other->status().ok()) << other->status();
  hung_->Release(StubPlugin::Call::kAllocate);  // later calls answer
  AsyncAllocate* same = Allocate(OnePod("same", kHung, 2));
  ASSERT_TRUE(same->Wait(kPrompt)) << "an Allocate of the same resource waited";
  EXPECT_TRUE(same->status().ok()) << same->status();
  ASSERT_TRUE(stuck->Wait(kPrompt));
  ASSERT_TRUE(stuck->status().ok()) << stuck->status();

  // The reservation kept the devices of the call in flight from being picked again.
  std::set<std::string> stuck_devices = Held("stuck", kHung);
  std::set<std::string> same_devices = Held("same", kHung);
  EXPECT_EQ(stuck_devices.size(), 2u);
  EXPECT_EQ(same_devices.size(), 2u);
  for (const std::string& id : stuck_devices) EXPECT_FALSE(same_devices.contains(id)) << id;
  EXPECT_THAT(devices_->peer_calls().InFlight(), IsEmpty());
}

TEST_F(DeviceManagerLockingTest, CallsInFlightAreListedWithTheirPodAndDeadline) {
  hung_->Hold(StubPlugin::Call::kGetPreferredAllocation);
  AsyncAllocate* stuck = Allocate(OnePod("stuck", kHung, 1));
  ASSERT_TRUE(
      WaitUntil([&] { return hung_->waiting(StubPlugin::Call::kGetPreferredAllocation) == 1; }));
  std::vector<PeerCall> calls = devices_->peer_calls().InFlight();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].kind, PeerKind::kDevicePlugin);
  EXPECT_EQ(calls[0].peer, kHung);
  EXPECT_EQ(calls[0].method, "GetPreferredAllocation");
  EXPECT_EQ(calls[0].pod, "default/stuck");
  EXPECT_EQ(calls[0].endpoint, Dir() + "/hung.sock");
  EXPECT_EQ(calls[0].timeout, kCallTimeout);

  // A hung GetPreferredAllocation holds up only its own resource's picks.
  AsyncAllocate* other = Allocate(OnePod("other", kGpu, 1));
  ASSERT_TRUE(other->Wait(kPrompt)) << "an Allocate of another resource waited";
  EXPECT_TRUE(other->status().ok()) << other->status();

  hung_->Release(StubPlugin::Call::kGetPreferredAllocation);
  ASSERT_TRUE(stuck->Wait(kPrompt));
  EXPECT_TRUE(stuck->status().ok()) << stuck->status();
}

}  // namespace
}  // namespace kdp::manager
