// The kubelet's device-manager test scenarios (pkg/kubelet/cm/devicemanager/manager_test.go,
// 1.31-1.33) against kdp's DeviceManager: a real manager serving kubelet.sock in a temporary
// directory, third-party plugins as StubPlugin instances registering through it, and the grace
// period driven by an injected clock. Each TEST is named after the upstream test it ports; where
// upstream pokes private maps, the same facts are asserted through the public API (GetCapacity,
// Resources, Allocate, CheckpointData), and where upstream is weak the assertions go further.
// Topology-hint scenarios (upstream's topology_hints_test.go, and TestGetTopologyHintsWithUpdates)
// live with the hint provider.
// Not ported: the probe-mode variants (kdp has no plugins_registry watcher), TestFilterByAffinity
// (allocator_test.cc), TestUpdatePluginResources (no NodeInfo to sanitize),
// TestUpdateAllocatedResourcesStatus / TestFeatureGateResourceHealthStatus /
// TestAdmitPodWithDRAResources (features kdp does not have), and
// TestSameSocketRace_FastTakeoverMayResultInInfiniteRetries (an upstream livelock note).
#include "manager/src/devicemanager/manager.h"

#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/errors.h"
#include "manager/src/state/state_store.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/devicemanager/pod_test_util.h"

namespace kdp::manager {
namespace {

using devicemanager_testutil::App;
using devicemanager_testutil::Init;
using devicemanager_testutil::MakePod;
using devicemanager_testutil::Sidecar;
using ::google::protobuf::util::MessageDifferencer;
using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::IsSubsetOf;
using ::testing::Pair;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr char kRes1[] = "domain1.com/resource1";
constexpr char kRes2[] = "domain2.com/resource2";
constexpr char kRes3[] = "domain3.com/resource3";
constexpr absl::Duration kGrace = absl::Minutes(5);

// The grace period's clock, advanced by the test only.
class FakeClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'700'000'000);
};

// The kubelet's activePods / sourcesReady callbacks. `on_active_pod_uids`, when set, runs after
// ActivePodUids() has computed its answer and before it returns it (to widen a race window).
class FakePods final : public ActivePodsSource {
 public:
  bool SourcesReady() const override {
    absl::MutexLock lock(&mu_);
    return ready_;
  }
  uint64_t Generation() const override {
    absl::MutexLock lock(&mu_);
    return generation_;
  }
  std::set<std::string> ActivePodUids() const override {
    std::set<std::string> out;
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      out = active_;
      hook = on_active_pod_uids_;
    }
    if (hook) hook();
    return out;
  }
  void Add(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    active_.insert(uid);
  }
  // A pod left the active set: the generation changes.
  void Remove(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    active_.erase(uid);
    ++generation_;
  }
  void SetHook(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    on_active_pod_uids_ = std::move(hook);
  }

 private:
  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> active_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_active_pod_uids_ ABSL_GUARDED_BY(mu_);
};

v1beta1::DevicePluginOptions PluginOptions(bool pre_start, bool preferred) {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(pre_start);
  options.set_get_preferred_allocation_available(preferred);
  return options;
}

// A kubelet root with a started DeviceManager and the plugins the test serves in it.
class TestNode {
 public:
  explicit TestNode(const std::string& root, StateStore* store = nullptr,
                    absl::Duration dial_timeout = absl::Seconds(10),
                    absl::Duration call_timeout = absl::Seconds(30))
      : plugins_dir_(root + "/device-plugins") {
    manager_ = std::make_unique<DeviceManager>(DeviceManagerOptions{
        .plugins_dir = plugins_dir_,
        .endpoint = {.dial_timeout = dial_timeout,
                     .call_timeout = call_timeout,
                     .pre_start_timeout = absl::Seconds(30)},
        .endpoint_grace_period = kGrace,
        .housekeeping_interval = absl::ZeroDuration(),
        .now = [this] { return clock_.Now(); },
        .store = store,
    });
    manager_->SetActivePodsSource(&pods_);
  }
  ~TestNode() {
    // Plugins first: their streams end while the manager still handles it.
    plugins_.clear();
    manager_.reset();
  }

  void Start() { ASSERT_TRUE(manager_->Start().ok()); }

  DeviceManager& dm() { return *manager_; }
  FakeClock& clock() { return clock_; }
  FakePods& pods() { return pods_; }
  const std::string& plugins_dir() const { return plugins_dir_; }
  std::string Socket(const std::string& name) const { return plugins_dir_ + "/" + name; }

  // Serves a stub plugin on `name` (a socket in the plugins directory) with `devices`.
  StubPlugin* Serve(const std::string& name, std::vector<v1beta1::Device> devices,
                    v1beta1::DevicePluginOptions options = {}) {
    auto plugin = std::make_unique<StubPlugin>(Socket(name), options);
    plugin->SetDevices(std::move(devices));
    absl::Status started = plugin->Start();
    EXPECT_TRUE(started.ok()) << started;
    plugins_.push_back(std::move(plugin));
    return plugins_.back().get();
  }
  absl::Status Register(const std::string& name, const std::string& resource) {
    return StubPlugin::Register(Socket("kubelet.sock"), "v1beta1", name, resource);
  }

  std::optional<ResourceDevices> Resource(const std::string& resource) const {
    for (ResourceDevices& r : manager_->Resources()) {
      if (r.name == resource) return std::move(r);
    }
    return std::nullopt;
  }
  // Device ID → healthy, as the manager holds them now.
  std::map<std::string, bool> Health(const std::string& resource) const {
    std::map<std::string, bool> out;
    if (std::optional<ResourceDevices> r = Resource(resource)) {
      for (const auto& [id, info] : r->devices) out[id] = info.healthy;
    }
    return out;
  }
  // Waits until the resource's devices are exactly `expected` (ID → healthy).
  bool WaitForHealth(const std::string& resource, const std::map<std::string, bool>& expected,
                     absl::Duration timeout = absl::Seconds(20)) {
    return WaitUntil([&] { return Health(resource) == expected; }, timeout);
  }
  bool WaitForConnected(const std::string& resource, bool connected) {
    return WaitUntil([&] {
      std::optional<ResourceDevices> r = Resource(resource);
      return r.has_value() && r->connected == connected;
    });
  }
  std::optional<ResourceCapacity> Capacity(const std::string& resource) {
    std::optional<ResourceCapacity> found;
    int times = 0;
    for (const ResourceCapacity& c : manager_->GetCapacity()) {
      if (c.name != resource) continue;
      found = c;
      ++times;
    }
    EXPECT_LE(times, 1) << resource << " listed more than once";
    return found;
  }

  // Devices (pod, container) holds for `resource` (committed).
  std::set<std::string> Held(const std::string& pod_uid, const std::string& container,
                             const std::string& resource) const {
    for (const PodDevicesEntry& entry : manager_->ContainerEntries(pod_uid, container)) {
      if (entry.resource_name == resource) return DeviceIds(entry.devices);
    }
    return {};
  }

  // Allocates every container of `pod` in admission order (init containers first), as the pod
  // manager does; the first error ends it.
  absl::Status AllocatePod(const Pod& pod) {
    pods_.Add(pod.uid);
    for (const Container& c : pod.init_containers) {
      if (absl::Status s = manager_->Allocate(pod, c); !s.ok()) return s;
    }
    for (const Container& c : pod.containers) {
      if (absl::Status s = manager_->Allocate(pod, c); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  const std::string plugins_dir_;
  FakeClock clock_;
  FakePods pods_;
  std::unique_ptr<DeviceManager> manager_;
  std::vector<std::unique_ptr<StubPlugin>> plugins_;
};

void ExpectSameOptions(const RunContainerOptions& a, const RunContainerOptions& b) {
  EXPECT_EQ(a.envs, b.envs);
  EXPECT_EQ(a.annotations, b.annotations);
  EXPECT_EQ(a.cdi_devices, b.cdi_devices);
  ASSERT_EQ(a.mounts.size(), b.mounts.size());
  for (size_t i = 0; i < a.mounts.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(a.mounts[i], b.mounts[i])) << i;
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(a.devices[i], b.devices[i])) << i;
  }
}

void AddDeviceSpec(v1beta1::ContainerAllocateResponse* out, const std::string& path,
                   const std::string& permissions = "mrw") {
  v1beta1::DeviceSpec* spec = out->add_devices();
  spec->set_container_path(path);
  spec->set_host_path(path);
  spec->set_permissions(permissions);
}
void AddMount(v1beta1::ContainerAllocateResponse* out, const std::string& container_path,
              const std::string& host_path) {
  v1beta1::Mount* mount = out->add_mounts();
  mount->set_container_path(container_path);
  mount->set_host_path(host_path);
  mount->set_read_only(true);
}

// The upstream tests' allocateStubFunc: what each device contributes to the answer.
grpc::Status UpstreamAllocate(const v1beta1::AllocateRequest& request,
                              v1beta1::AllocateResponse* response) {
  for (const auto& container : request.container_requests()) {
    v1beta1::ContainerAllocateResponse* out = response->add_container_responses();
    for (const std::string& id : container.devices_ids()) {
      if (id == "dev1") {
        AddDeviceSpec(out, "/dev/aaa");
        AddDeviceSpec(out, "/dev/bbb");
        AddMount(out, "/container_dir1/file1", "host_dir1/file1");
      } else if (id == "dev2") {
        AddDeviceSpec(out, "/dev/ccc");
        AddMount(out, "/container_dir1/file2", "host_dir1/file2");
        (*out->mutable_envs())["key1"] = "val1";
      } else if (id == "dev3") {
        (*out->mutable_envs())["key2"] = "val2";
      } else if (id == "dev4") {
        (*out->mutable_envs())["key2"] = "val3";
      }
    }
  }
  return grpc::Status::OK;
}

// Healthy device IDs per resource: the kubelet's GetAllocatableDevices.
std::map<std::string, std::set<std::string>> AllocatableDevices(const DeviceManager& dm) {
  std::map<std::string, std::set<std::string>> out;
  for (const ResourceDevices& r : dm.Resources()) out[r.name] = r.Healthy();
  return out;
}

// TestNewManagerImpl: a manager on a socket directory in a temporary root serves kubelet.sock once
// started and removes it when stopped; nothing is registered yet.
TEST(DeviceManager, TestNewManagerImpl) {
  TempDir root;
  TestNode node(root.path());
  EXPECT_FALSE(IsSocket(node.Socket("kubelet.sock")));
  node.Start();
  EXPECT_TRUE(IsSocket(node.Socket("kubelet.sock")));
  EXPECT_THAT(node.dm().GetCapacity(), IsEmpty());
  EXPECT_THAT(node.dm().Resources(), IsEmpty());
  node.dm().Stop();
  EXPECT_FALSE(IsSocket(node.Socket("kubelet.sock")));
}

// TestNewManagerImplStart: started with a registered plugin, Stop() may be called twice (and on a
// manager never started); a stopped manager refuses registrations. (The probe-mode variants are not
// ported: kdp registers plugins through kubelet.sock only, not the plugins_registry watcher.)
TEST(DeviceManager, TestNewManagerImplStart) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  node.Serve("p.sock", {MakeDevice("dev1")});
  ASSERT_TRUE(node.Register("p.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}}));
  node.dm().Stop();
  node.dm().Stop();
  EXPECT_FALSE(IsSocket(node.Socket("kubelet.sock")));
  absl::Status late = node.dm().RegisterPlugin(kRes2, node.Socket("p.sock"));
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable);

  TempDir other;
  TestNode never_started(other.path());
  never_started.dm().Stop();
  never_started.dm().Stop();
}

// TestDevicePluginReRegistration: for every combination of the two options, a second instance
// on a new socket with the same devices keeps capacity 2; a third with one different device
// replaces the device list whole. Beyond upstream: the newest instance is the one the manager
// calls (Allocate, GetPreferredAllocation and PreStartContainer as ITS options say).
TEST(DeviceManager, TestDevicePluginReRegistration) {
  for (bool pre_start : {false, true}) {
    for (bool preferred : {false, true}) {
      SCOPED_TRACE(absl::StrCat("preStartRequired=", pre_start, " getPreferred=", preferred));
      TempDir root;
      TestNode node(root.path());
      node.Start();
      const v1beta1::DevicePluginOptions options = PluginOptions(pre_start, preferred);
      StubPlugin* p1 = node.Serve("p1.sock", {MakeDevice("dev1"), MakeDevice("dev2")}, options);
      ASSERT_TRUE(node.Register("p1.sock", kRes1).ok());
      ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
      std::optional<ResourceCapacity> capacity = node.Capacity(kRes1);
      ASSERT_TRUE(capacity.has_value());
      EXPECT_EQ(capacity->capacity, 2);
      EXPECT_EQ(capacity->allocatable, 2);

      StubPlugin* p2 = node.Serve("p2.sock", {MakeDevice("dev1"), MakeDevice("dev2")}, options);
      ASSERT_TRUE(node.Register("p2.sock", kRes1).ok());
      ASSERT_TRUE(WaitUntil([&] { return p2->messages_sent() >= 1; }));
      ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
      EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("p2.sock"));
      capacity = node.Capacity(kRes1);
      EXPECT_EQ(capacity->capacity, 2);
      EXPECT_EQ(capacity->allocatable, 2);

      StubPlugin* p3 = node.Serve("p3.sock", {MakeDevice("dev3")}, options);
      ASSERT_TRUE(node.Register("p3.sock", kRes1).ok());
      ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev3", true}}));
      EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("p3.sock"));
      capacity = node.Capacity(kRes1);
      EXPECT_EQ(capacity->capacity, 1);
      EXPECT_EQ(capacity->allocatable, 1);
      EXPECT_FALSE(capacity->removed);

      Pod pod = MakePod("pod", {}, {App("ctr", {{kRes1, 1}})});
      ASSERT_TRUE(node.AllocatePod(pod).ok());
      EXPECT_THAT(node.Held("pod", "ctr", kRes1), ElementsAre("dev3"));
      ASSERT_TRUE(node.dm().GetDeviceRunContainerOptions(pod, pod.containers[0]).ok());
      EXPECT_EQ(p3->allocate_calls(), 1);
      EXPECT_EQ(p3->preferred_calls(), preferred ? 1 : 0);
      EXPECT_THAT(p3->pre_start_calls(), SizeIs(pre_start ? 1 : 0));
      for (StubPlugin* old : {p1, p2}) {
        EXPECT_EQ(old->allocate_calls(), 0);
        EXPECT_EQ(old->preferred_calls(), 0);
        EXPECT_THAT(old->pre_start_calls(), IsEmpty());
      }
    }
  }
}

// TestUpdateCapacityAllocatable: capacity counts every device, allocatable the healthy ones,
// through every kind of snapshot change; a second resource; an endpoint that stays stopped past
// the grace period is removed (listed once, as removed) and no longer a device-plugin resource;
// a disconnected endpoint keeps capacity with allocatable 0 and its calls fail as stopped; a
// checkpoint read back brings the resource back as stopped with 0/0, still a device-plugin
// resource.
TEST(DeviceManager, TestUpdateCapacityAllocatable) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  EXPECT_THAT(node.dm().GetCapacity(), IsEmpty());

  StubPlugin* p1 = node.Serve("p1.sock", {MakeDevice("Device1"), MakeDevice("Device2"),
                                          MakeDevice("Device3", "Unhealthy")});
  ASSERT_TRUE(node.Register("p1.sock", kRes1).ok());
  auto expect_capacity = [&](const std::string& resource, int64_t capacity, int64_t allocatable) {
    std::optional<ResourceCapacity> c = node.Capacity(resource);
    ASSERT_TRUE(c.has_value()) << resource;
    EXPECT_EQ(c->capacity, capacity) << resource;
    EXPECT_EQ(c->allocatable, allocatable) << resource;
    EXPECT_FALSE(c->removed) << resource;
  };
  ASSERT_TRUE(
      node.WaitForHealth(kRes1, {{"Device1", true}, {"Device2", true}, {"Device3", false}}));
  expect_capacity(kRes1, 3, 2);

  // Deleting an unhealthy device changes capacity, not allocatable.
  p1->SetDevices({MakeDevice("Device1"), MakeDevice("Device2")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"Device1", true}, {"Device2", true}}));
  expect_capacity(kRes1, 2, 2);

  // A healthy device turning unhealthy lowers allocatable by one.
  p1->SetDevices({MakeDevice("Device1"), MakeDevice("Device2", "Unhealthy"),
                  MakeDevice("Device3", "Unhealthy")});
  ASSERT_TRUE(
      node.WaitForHealth(kRes1, {{"Device1", true}, {"Device2", false}, {"Device3", false}}));
  expect_capacity(kRes1, 3, 1);

  // Deleting a healthy device lowers both.
  p1->SetDevices({MakeDevice("Device2", "Unhealthy"), MakeDevice("Device3", "Unhealthy")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"Device2", false}, {"Device3", false}}));
  expect_capacity(kRes1, 2, 0);

  // A second resource appears next to the first.
  v1beta1::DevicePluginOptions pre_start = PluginOptions(true, false);
  StubPlugin* p2 = node.Serve(
      "p2.sock", {MakeDevice("Device1"), MakeDevice("Device2"), MakeDevice("Device3")}, pre_start);
  ASSERT_TRUE(node.Register("p2.sock", kRes2).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"Device1", true}, {"Device2", true}, {"Device3", true}}));
  expect_capacity(kRes2, 3, 3);
  expect_capacity(kRes1, 2, 0);
  EXPECT_THAT(node.dm().GetCapacity(), SizeIs(2));

  // resource1's endpoint stops; once its grace period expired it is removed, reported once.
  p1->Stop();
  ASSERT_TRUE(node.WaitForConnected(kRes1, false));
  node.clock().Advance(kGrace);
  expect_capacity(kRes1, 2, 0);  // Not yet: the grace period is not over.
  node.clock().Advance(absl::Minutes(1));
  std::vector<ResourceCapacity> capacity = node.dm().GetCapacity();
  ASSERT_THAT(capacity, SizeIs(2));
  EXPECT_EQ(capacity[0].name, kRes1);
  EXPECT_TRUE(capacity[0].removed);
  EXPECT_EQ(capacity[0].capacity, 0);
  EXPECT_EQ(capacity[0].allocatable, 0);
  EXPECT_FALSE(node.Resource(kRes1).has_value());
  EXPECT_FALSE(node.dm().CheckpointData().registered_devices.contains(kRes1));
  // No longer a device-plugin resource: a pod asking for it is admitted without devices.
  Pod ignores = MakePod("ignores", {}, {App("ctr", {{kRes1, 1}})});
  EXPECT_TRUE(node.AllocatePod(ignores).ok());
  EXPECT_THAT(node.dm().ContainerEntries("ignores", "ctr"), IsEmpty());

  // resource2 holds an allocation, then its plugin disconnects: capacity stays, allocatable is 0,
  // and the stopped endpoint's calls fail with the kubelet's text.
  Pod holder = MakePod("holder", {}, {App("ctr", {{kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(holder).ok());
  ASSERT_TRUE(node.dm().GetDeviceRunContainerOptions(holder, holder.containers[0]).ok());
  p2->Stop();
  ASSERT_TRUE(node.WaitForConnected(kRes2, false));
  ASSERT_TRUE(
      node.WaitForHealth(kRes2, {{"Device1", false}, {"Device2", false}, {"Device3", false}}));
  expect_capacity(kRes2, 3, 0);
  absl::StatusOr<RunContainerOptions> options =
      node.dm().GetDeviceRunContainerOptions(holder, holder.containers[0]);
  EXPECT_EQ(options.status().message(), errors::EndpointStopped(node.Socket("p2.sock")));
  Pod late = MakePod("late", {}, {App("ctr", {{kRes2, 1}})});
  absl::Status allocated = node.AllocatePod(late);
  EXPECT_EQ(allocated.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(allocated.message(), errors::NoHealthyDevices(kRes2));

  // The checkpoint read back by a restarted manager: resource2 is a stopped endpoint with 0/0
  // and still a device-plugin resource (a pod asking for it is refused, not ignored).
  checkpoint::Data data = node.dm().CheckpointData();
  EXPECT_THAT(data.registered_devices, ElementsAre(Pair(kRes2, IsEmpty())));
  TempDir root2;
  TestNode restarted(root2.path());
  restarted.dm().Restore(data);
  restarted.Start();
  EXPECT_THAT(restarted.dm().GetCapacity(),
              ElementsAre(::testing::Field(&ResourceCapacity::name, kRes2)));
  std::optional<ResourceCapacity> restored = restarted.Capacity(kRes2);
  EXPECT_EQ(restored->capacity, 0);
  EXPECT_EQ(restored->allocatable, 0);
  EXPECT_FALSE(restored->removed);
  EXPECT_FALSE(restarted.Resource(kRes2)->connected);
  absl::Status refused = restarted.AllocatePod(late);
  EXPECT_EQ(refused.message(), errors::NoHealthyDevices(kRes2));
}

// TestGetAllocatableDevicesMultipleResources: only healthy devices, per resource.
TEST(DeviceManager, TestGetAllocatableDevicesMultipleResources) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  node.Serve("r1.sock", {MakeDevice("R1Device1"), MakeDevice("R1Device2"),
                         MakeDevice("R1Device3", "Unhealthy")});
  node.Serve("r2.sock", {MakeDevice("R2Device1"), MakeDevice("R2Device2", "Unhealthy")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(
      node.WaitForHealth(kRes1, {{"R1Device1", true}, {"R1Device2", true}, {"R1Device3", false}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"R2Device1", true}, {"R2Device2", false}}));
  EXPECT_THAT(AllocatableDevices(node.dm()),
              ElementsAre(Pair(kRes1, ElementsAre("R1Device1", "R1Device2")),
                          Pair(kRes2, ElementsAre("R2Device1"))));
}

// TestGetAllocatableDevicesHealthTransition: an unhealthy device that becomes healthy is
// allocatable from the next snapshot on (and back).
TEST(DeviceManager, TestGetAllocatableDevicesHealthTransition) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin =
      node.Serve("r1.sock", {MakeDevice("R1Device1"), MakeDevice("R1Device2", "Unhealthy")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"R1Device1", true}, {"R1Device2", false}}));
  EXPECT_THAT(AllocatableDevices(node.dm()), ElementsAre(Pair(kRes1, ElementsAre("R1Device1"))));

  plugin->SetDevices({MakeDevice("R1Device1"), MakeDevice("R1Device2")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"R1Device1", true}, {"R1Device2", true}}));
  EXPECT_THAT(AllocatableDevices(node.dm()),
              ElementsAre(Pair(kRes1, ElementsAre("R1Device1", "R1Device2"))));
  EXPECT_EQ(node.Capacity(kRes1)->allocatable, 2);

  plugin->SetDevices({MakeDevice("R1Device1", "Unhealthy"), MakeDevice("R1Device2")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"R1Device1", false}, {"R1Device2", true}}));
  EXPECT_THAT(AllocatableDevices(node.dm()), ElementsAre(Pair(kRes1, ElementsAre("R1Device2"))));
}

// The state files of one kubelet root, as kdp-manager lays them out.
StateStoreOptions ManualCompactionStoreOptions(const std::string& root) {
  return {.checkpoint_path = root + "/device-plugins/" + checkpoint::kFileName,
          .pods_path = root + "/kdp/pods.json",
          .journal_path = root + "/kdp/journal",
          .compaction_delay = absl::Hours(1),  // Only the test's Compact() and Close() write.
          .strict = true};
}

// A kubelet (Go) may serialise an answer's map entries in any order; a restored checkpoint is
// written back with the answer's bytes as read, not re-encoded, so replaying a node changes
// nothing.
TEST(DeviceManager, RestoredAllocRespBytesAreWrittenBackAsRead) {
  TempDir root;
  // envs {"B": "2", "A": "1"} in that order: deterministic serialisation would put A first.
  const std::string go_order(
      "\x0a\x06\x0a\x01"
      "B"
      "\x12\x01"
      "2"
      "\x0a\x06\x0a\x01"
      "A"
      "\x12\x01"
      "1",
      16);
  v1beta1::ContainerAllocateResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(go_order));
  ASSERT_NE(SerializeResponse(parsed), go_order) << "the test needs non-canonical bytes";
  DeviceManager manager({.plugins_dir = root.path()});
  manager.Restore({.entries = {{.pod_uid = "pod1",
                                .container_name = "ctr",
                                .resource_name = kRes1,
                                .devices = {{0, {"dev1"}}},
                                .alloc_resp = go_order}},
                   .registered_devices = {{kRes1, {"dev1"}}}});
  checkpoint::Data data = manager.CheckpointData();
  ASSERT_THAT(data.entries, SizeIs(1));
  EXPECT_EQ(data.entries[0].alloc_resp, go_order);
  EXPECT_EQ(manager.CachedRunContainerOptions("pod1", "ctr").envs.size(), 2u);
}

// TestCheckpoint: allocations (a device without topology under NUMA -1, one on two nodes, CDI
// devices) survive a write and a read with their cached answers, so the run options are equal;
// the allocated devices stay allocated. Beyond upstream: through kdp's real StateStore (journal,
// compaction, reopen); the restored resources are stopped endpoints with capacity 0 that are
// removed once the grace period expires, while the allocations stay.
TEST(DeviceManager, TestCheckpoint) {
  TempDir root;
  ASSERT_TRUE(MakeDirectories(root.Path("device-plugins")).ok());
  ASSERT_TRUE(MakeDirectories(root.Path("kdp")).ok());

  auto cdi_allocate = [](const v1beta1::AllocateRequest& request,
                         v1beta1::AllocateResponse* response) {
    for (const auto& container : request.container_requests()) {
      v1beta1::ContainerAllocateResponse* out = response->add_container_responses();
      for (const std::string& id : container.devices_ids()) {
        AddDeviceSpec(out, "/dev/" + id);
        AddMount(out, "/mnt/" + id, "/host/" + id);
        (*out->mutable_envs())["ENV_" + id] = id;
        (*out->mutable_annotations())["vendor.com/" + id] = "1";
        out->add_cdi_devices()->set_name("vendor.com/dev=" + id);
      }
    }
    return grpc::Status::OK;
  };

  std::vector<PodDevicesEntry> before;
  std::map<std::pair<std::string, std::string>, RunContainerOptions> options_before;
  checkpoint::Data data_before;
  const std::vector<std::pair<std::string, std::string>> containers = {
      {"pod1", "ctr1"}, {"pod1", "ctr2"}, {"pod2", "ctr1"}};
  {
    RestoredState restored;
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(ManualCompactionStoreOptions(root.path()), &restored);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_THAT(restored.devices.entries, IsEmpty());
    TestNode node(root.path(), store->get());
    (*store)->StartCompaction(
        [&node] { return StateSnapshot{.devices = node.dm().CheckpointData()}; });
    absl::Cleanup close_store = [&] { (*store)->Close(); };  // Before `node` goes.
    node.Start();
    StubPlugin* gpus = node.Serve(
        "gpu.sock", {MakeDevice("dev1", "Healthy", {0}), MakeDevice("dev2", "Healthy", {0, 1}),
                     MakeDevice("dev3"), MakeDevice("dev4", "Healthy", {1})});
    StubPlugin* nics = node.Serve("nic.sock", {MakeDevice("nic1"), MakeDevice("nic2")});
    gpus->SetAllocateHandler(cdi_allocate);
    nics->SetAllocateHandler(cdi_allocate);
    ASSERT_TRUE(node.Register("gpu.sock", kRes1).ok());
    ASSERT_TRUE(node.Register("nic.sock", kRes2).ok());
    ASSERT_TRUE(node.WaitForHealth(
        kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", true}, {"dev4", true}}));
    ASSERT_TRUE(node.WaitForHealth(kRes2, {{"nic1", true}, {"nic2", true}}));

    ASSERT_TRUE(node.AllocatePod(
                        MakePod("pod1", {},
                                {App("ctr1", {{kRes1, 3}, {kRes2, 1}}), App("ctr2", {{kRes2, 1}})}))
                    .ok());
    ASSERT_TRUE(node.AllocatePod(MakePod("pod2", {}, {App("ctr1", {{kRes1, 1}})})).ok());
    // The shapes the checkpoint must carry: NUMA -1, a device under two nodes.
    std::vector<PodDevicesEntry> pod1 = node.dm().ContainerEntries("pod1", "ctr1");
    ASSERT_THAT(pod1, SizeIs(2));
    EXPECT_THAT(pod1[0].devices,
                ElementsAre(Pair(-1, ElementsAre("dev3")), Pair(0, ElementsAre("dev1", "dev2")),
                            Pair(1, ElementsAre("dev2"))));
    EXPECT_THAT(pod1[1].devices, ElementsAre(Pair(-1, ElementsAre("nic1"))));

    for (const auto& [pod, ctr] : containers) {
      for (PodDevicesEntry& e : node.dm().ContainerEntries(pod, ctr)) before.push_back(e);
      options_before[{pod, ctr}] = node.dm().CachedRunContainerOptions(pod, ctr);
    }
    EXPECT_THAT(options_before[std::make_pair("pod1", "ctr1")].cdi_devices,
                ElementsAre("vendor.com/dev=dev1", "vendor.com/dev=dev2", "vendor.com/dev=dev3",
                            "vendor.com/dev=nic1"));
    data_before = node.dm().CheckpointData();
    ASSERT_TRUE((*store)->Compact().ok());
  }

  // A new manager reads it all back.
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      StateStore::Open(ManualCompactionStoreOptions(root.path()), &restored);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(restored.devices, data_before);
  TestNode node(root.path(), store->get());
  node.dm().Restore(restored.devices);
  (*store)->StartCompaction(
      [&node] { return StateSnapshot{.devices = node.dm().CheckpointData()}; });
  absl::Cleanup close_store = [&] { (*store)->Close(); };
  node.Start();
  std::vector<PodDevicesEntry> after;
  for (const auto& [pod, ctr] : containers) {
    for (PodDevicesEntry& e : node.dm().ContainerEntries(pod, ctr)) after.push_back(e);
    SCOPED_TRACE(pod + "/" + ctr);
    ExpectSameOptions(node.dm().CachedRunContainerOptions(pod, ctr), options_before[{pod, ctr}]);
  }
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].pod_uid, before[i].pod_uid);
    EXPECT_EQ(after[i].container_name, before[i].container_name);
    EXPECT_EQ(after[i].resource_name, before[i].resource_name);
    EXPECT_EQ(after[i].devices, before[i].devices);
    EXPECT_TRUE(MessageDifferencer::Equals(after[i].response, before[i].response)) << i;
  }
  EXPECT_EQ(node.dm().CheckpointData().entries, data_before.entries);

  node.pods().Add("pod1");
  node.pods().Add("pod2");
  // Restored resources are stopped endpoints: capacity 0 until their plugin registers again.
  std::vector<ResourceCapacity> capacity = node.dm().GetCapacity();
  ASSERT_THAT(capacity, SizeIs(2));
  for (const ResourceCapacity& c : capacity) {
    EXPECT_EQ(c.capacity, 0) << c.name;
    EXPECT_EQ(c.allocatable, 0) << c.name;
    EXPECT_FALSE(c.removed) << c.name;
    EXPECT_FALSE(node.Resource(c.name)->connected);
  }
  // The allocated devices are still allocated: resource1's plugin comes back within the grace
  // period with the same four devices; only dev4 is free.
  node.clock().Advance(kGrace);
  StubPlugin* gpus = node.Serve(
      "gpu.sock", {MakeDevice("dev1", "Healthy", {0}), MakeDevice("dev2", "Healthy", {0, 1}),
                   MakeDevice("dev3"), MakeDevice("dev4", "Healthy", {1})});
  ASSERT_TRUE(node.Register("gpu.sock", kRes1).ok());
  ASSERT_TRUE(
      node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", true}, {"dev4", true}}));
  absl::Status full = node.AllocatePod(MakePod("pod3", {}, {App("ctr", {{kRes1, 1}})}));
  EXPECT_EQ(full.message(), errors::DevicesUnavailable(kRes1, 1, 0));
  EXPECT_EQ(gpus->allocate_calls(), 0);

  // resource2's plugin never comes back: removed after the grace period; the allocations of the
  // pods that hold its devices stay.
  node.clock().Advance(absl::Seconds(1));
  std::optional<ResourceCapacity> nic = node.Capacity(kRes2);
  ASSERT_TRUE(nic.has_value());
  EXPECT_TRUE(nic->removed);
  EXPECT_EQ(nic->capacity, 0);
  EXPECT_FALSE(node.Capacity(kRes1)->removed);
  EXPECT_FALSE(node.Resource(kRes2).has_value());
  EXPECT_THAT(node.Held("pod1", "ctr2", kRes2), ElementsAre("nic2"));
  EXPECT_THAT(node.dm().CheckpointData().registered_devices,
              ElementsAre(Pair(kRes1, ElementsAre("dev1", "dev2", "dev3", "dev4"))));
}

// TestPodContainerDeviceAllocation: a pod needing 2 x resource1 + 1 x resource2 gets them, with
// the merged answers (3 device specs, 2 mounts, 2 envs); the next pod needing resource1 fails
// with the kubelet's text and has no run options; a third pod gets the last resource2 device.
TEST(DeviceManager, TestPodContainerDeviceAllocation) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* p1 = node.Serve(
      "r1.sock", {MakeDevice("dev1", "Healthy", {0}), MakeDevice("dev2", "Healthy", {0})});
  StubPlugin* p2 = node.Serve("r2.sock", {MakeDevice("dev3"), MakeDevice("dev4")});
  p1->SetAllocateHandler(UpstreamAllocate);
  p2->SetAllocateHandler(UpstreamAllocate);
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"dev3", true}, {"dev4", true}}));

  Pod pod = MakePod("pod", {}, {App("ctr", {{kRes1, 2}, {kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(pod).ok());
  absl::StatusOr<RunContainerOptions> options =
      node.dm().GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(options->devices, SizeIs(3));
  EXPECT_THAT(options->mounts, SizeIs(2));
  EXPECT_THAT(options->envs, ElementsAre(Pair("key1", "val1"), Pair("key2", "val2")));
  EXPECT_THAT(node.Held("pod", "ctr", kRes1), ElementsAre("dev1", "dev2"));
  EXPECT_THAT(node.Held("pod", "ctr", kRes2), ElementsAre("dev3"));

  Pod second = MakePod("second", {}, {App("ctr", {{kRes1, 1}})});
  absl::Status failed = node.AllocatePod(second);
  EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(failed.message(), errors::DevicesUnavailable(kRes1, 1, 0));
  absl::StatusOr<RunContainerOptions> none =
      node.dm().GetDeviceRunContainerOptions(second, second.containers[0]);
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->envs, IsEmpty());
  EXPECT_THAT(none->devices, IsEmpty());
  EXPECT_THAT(none->mounts, IsEmpty());
  EXPECT_THAT(node.dm().ContainerEntries("second", "ctr"), IsEmpty());
  EXPECT_EQ(p1->allocate_calls(), 1);  // The failure happened before any RPC.

  Pod third = MakePod("third", {}, {App("ctr", {{kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(third).ok());
  EXPECT_THAT(node.Held("third", "ctr", kRes2), ElementsAre("dev4"));
  options = node.dm().GetDeviceRunContainerOptions(third, third.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_THAT(options->envs, ElementsAre(Pair("key2", "val3")));

  absl::Status exhausted = node.AllocatePod(MakePod("fourth", {}, {App("ctr", {{kRes2, 1}})}));
  EXPECT_EQ(exhausted.message(), errors::DevicesUnavailable(kRes2, 1, 0));
}

// TestPodContainerDeviceToAllocate: the three admission errors of devicesToAllocate — no healthy
// devices, an unregistered resource, previously allocated devices no longer healthy — with the
// kubelet's texts. Beyond upstream: a changed request, a restart with healthy devices (no new
// RPC), and a resource nobody ever registered (ignored).
TEST(DeviceManager, TestPodContainerDeviceToAllocate) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* p1 =
      node.Serve("r1.sock", {MakeDevice("dev1"), MakeDevice("dev2"), MakeDevice("dev3")});
  node.Serve("r2.sock", {MakeDevice("dev4", "Unhealthy"), MakeDevice("dev5", "Unhealthy")});
  StubPlugin* p3 = node.Serve("r3.sock", {MakeDevice("dev6")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(node.Register("r3.sock", kRes3).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", true}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"dev4", false}, {"dev5", false}}));
  ASSERT_TRUE(node.WaitForHealth(kRes3, {{"dev6", true}}));

  // Registered, but every device is unhealthy.
  absl::Status status = node.AllocatePod(MakePod("pod1", {}, {App("ctr", {{kRes2, 1}})}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), errors::NoHealthyDevices(kRes2));

  // Unregistered: resource3's plugin went away past its grace period while a pod holds a device
  // of it, so it is still a device-plugin resource without devices.
  ASSERT_TRUE(node.AllocatePod(MakePod("holder", {}, {App("ctr", {{kRes3, 1}})})).ok());
  p3->Stop();
  ASSERT_TRUE(node.WaitForConnected(kRes3, false));
  node.clock().Advance(kGrace + absl::Seconds(1));
  ASSERT_TRUE(node.Capacity(kRes3)->removed);
  status = node.AllocatePod(MakePod("pod2", {}, {App("ctr", {{kRes3, 1}})}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), errors::UnregisteredDevice(kRes3));

  // A resource nobody registered is not a device-plugin resource: ignored.
  EXPECT_TRUE(node.AllocatePod(MakePod("pod3", {}, {App("ctr", {{"vendor.com/other", 1}})})).ok());
  EXPECT_THAT(node.dm().ContainerEntries("pod3", "ctr"), IsEmpty());

  // Previously allocated devices no longer healthy: the container restarts after its device
  // turned unhealthy (the check runs before the nothing-to-do shortcut, kubernetes #109595).
  Pod pod4 = MakePod("pod4", {}, {App("ctr", {{kRes1, 1}})});
  ASSERT_TRUE(node.AllocatePod(pod4).ok());
  ASSERT_THAT(node.Held("pod4", "ctr", kRes1), ElementsAre("dev1"));
  EXPECT_TRUE(node.dm().Allocate(pod4, pod4.containers[0]).ok()) << "restart, device healthy";
  EXPECT_EQ(p1->allocate_calls(), 1) << "nothing new to allocate: no RPC";
  status = node.dm().Allocate(pod4, App("ctr", {{kRes1, 2}}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), errors::ChangedRequest("pod4", "ctr", kRes1, 1, 2));
  p1->SetDevices({MakeDevice("dev1", "Unhealthy"), MakeDevice("dev2"), MakeDevice("dev3")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", false}, {"dev2", true}, {"dev3", true}}));
  status = node.dm().Allocate(pod4, pod4.containers[0]);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), errors::PreviouslyAllocatedUnhealthy(kRes1));
  EXPECT_THAT(node.Held("pod4", "ctr", kRes1), ElementsAre("dev1")) << "kept, not replaced";
}

// TestDevicesToAllocateConflictWithUpdateAllocatedDevices: garbage collection running while the
// GetPreferredAllocation RPC is in flight must not break the allocation. Beyond upstream: the
// collected pod's device is freed, and the in-flight allocation keeps its pick.
TEST(DeviceManager, TestDevicesToAllocateConflictWithUpdateAllocatedDevices) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin = node.Serve("r.sock", {MakeDevice("deviceID"), MakeDevice("other")},
                                  PluginOptions(false, true));
  plugin->SetPreferredAllocationHandler(
      [](const v1beta1::PreferredAllocationRequest&, v1beta1::PreferredAllocationResponse* out) {
        out->add_container_responses()->add_deviceids("deviceID");
        return grpc::Status::OK;
      });
  ASSERT_TRUE(node.Register("r.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"deviceID", true}, {"other", true}}));
  // podToRemove holds deviceID (natural order).
  ASSERT_TRUE(
      node.AllocatePod(MakePod("podToRemove", {}, {App("containerToRemove", {{kRes1, 1}})})).ok());
  ASSERT_THAT(node.Held("podToRemove", "containerToRemove", kRes1), ElementsAre("deviceID"));
  node.dm().UpdateAllocatedDevices();  // Nothing to collect yet.

  plugin->Hold(StubPlugin::Call::kGetPreferredAllocation);
  Pod pod = MakePod("podToAllocate", {}, {App("containerToAllocate", {{kRes1, 1}})});
  node.pods().Add(pod.uid);
  absl::Status allocated;
  std::thread admission([&] { allocated = node.dm().Allocate(pod, pod.containers[0]); });
  ASSERT_TRUE(
      WaitUntil([&] { return plugin->waiting(StubPlugin::Call::kGetPreferredAllocation) == 1; }));
  node.pods().Remove("podToRemove");
  node.dm().UpdateAllocatedDevices();
  EXPECT_THAT(node.dm().ContainerEntries("podToRemove", "containerToRemove"), IsEmpty());
  plugin->Release(StubPlugin::Call::kGetPreferredAllocation);
  admission.join();
  ASSERT_TRUE(allocated.ok()) << allocated;
  // The plugin preferred deviceID, but it was not offered (held by podToRemove when the choice
  // began): the pick is `other`.
  EXPECT_THAT(node.Held("podToAllocate", "containerToAllocate", kRes1), ElementsAre("other"));
  // The second question (the first was podToRemove's) offered only what was free then.
  ASSERT_THAT(plugin->preferred_requests(), SizeIs(2));
  EXPECT_THAT(plugin->preferred_requests()[1].container_requests(0).available_deviceids(),
              ElementsAre("other"));
  EXPECT_THAT(node.dm().CheckpointData().entries, SizeIs(1));
}

// TestGetDeviceRunContainerOptions: once the pod has left the active set and garbage collection
// ran, its run options are empty (the kubelet's nil), with no error and no new allocation.
TEST(DeviceManager, TestGetDeviceRunContainerOptions) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* p1 = node.Serve("r1.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  StubPlugin* p2 = node.Serve("r2.sock", {MakeDevice("dev3"), MakeDevice("dev4")});
  p1->SetAllocateHandler(UpstreamAllocate);
  p2->SetAllocateHandler(UpstreamAllocate);
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"dev3", true}, {"dev4", true}}));

  Pod pod1 = MakePod("pod1", {}, {App("ctr", {{kRes1, 2}, {kRes2, 1}})});
  Pod pod2 = MakePod("pod2", {}, {App("ctr", {{kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(pod1).ok());
  ASSERT_TRUE(node.AllocatePod(pod2).ok());
  absl::StatusOr<RunContainerOptions> options =
      node.dm().GetDeviceRunContainerOptions(pod1, pod1.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_THAT(options->devices, SizeIs(3));
  RunContainerOptions pod2_options = node.dm().CachedRunContainerOptions("pod2", "ctr");

  node.pods().Remove("pod1");
  node.dm().UpdateAllocatedDevices();
  const int calls = p1->allocate_calls() + p2->allocate_calls();
  options = node.dm().GetDeviceRunContainerOptions(pod1, pod1.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(options->envs, IsEmpty());
  EXPECT_THAT(options->devices, IsEmpty());
  EXPECT_THAT(options->mounts, IsEmpty());
  EXPECT_THAT(options->cdi_devices, IsEmpty());
  EXPECT_EQ(p1->allocate_calls() + p2->allocate_calls(), calls) << "no re-allocation";
  EXPECT_THAT(node.dm().ContainerEntries("pod1", "ctr"), IsEmpty());
  ExpectSameOptions(node.dm().CachedRunContainerOptions("pod2", "ctr"), pod2_options);
  // pod1's devices are free again.
  ASSERT_TRUE(node.AllocatePod(MakePod("pod3", {}, {App("ctr", {{kRes1, 2}})})).ok());
  EXPECT_THAT(node.Held("pod3", "ctr", kRes1), ElementsAre("dev1", "dev2"));
}

// TestInitContainerDeviceAllocation: the second init container (2 devices) reuses the first's
// (1); the app containers (1 each) reuse the init containers' devices and never share one.
TEST(DeviceManager, TestInitContainerDeviceAllocation) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  node.Serve("r1.sock",
             {MakeDevice("dev1"), MakeDevice("dev2"), MakeDevice("dev3"), MakeDevice("dev4")});
  node.Serve("r2.sock", {MakeDevice("dev5"), MakeDevice("dev6")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(
      node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", true}, {"dev4", true}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"dev5", true}, {"dev6", true}}));

  Pod pod = MakePod("pod", {Init("init1", {{kRes1, 1}}), Init("init2", {{kRes1, 2}})},
                    {App("app1", {{kRes1, 1}, {kRes2, 1}}), App("app2", {{kRes1, 1}, {kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(pod).ok());
  std::set<std::string> init1 = node.Held("pod", "init1", kRes1);
  std::set<std::string> init2 = node.Held("pod", "init2", kRes1);
  std::set<std::string> app1 = node.Held("pod", "app1", kRes1);
  std::set<std::string> app2 = node.Held("pod", "app2", kRes1);
  EXPECT_THAT(init1, SizeIs(1));
  EXPECT_THAT(init2, SizeIs(2));
  EXPECT_THAT(app1, SizeIs(1));
  EXPECT_THAT(app2, SizeIs(1));
  EXPECT_THAT(init1, IsSubsetOf(init2));
  EXPECT_THAT(app1, IsSubsetOf(init2));
  EXPECT_THAT(app2, IsSubsetOf(init2));
  EXPECT_NE(app1, app2);
  EXPECT_NE(node.Held("pod", "app1", kRes2), node.Held("pod", "app2", kRes2));
  // Reuse kept the pod at two devices of resource1: two are left for another pod.
  ASSERT_TRUE(node.AllocatePod(MakePod("other", {}, {App("ctr", {{kRes1, 2}})})).ok());
  EXPECT_THAT(node.Held("other", "ctr", kRes1), UnorderedElementsAre("dev3", "dev4"));
}

// TestRestartableInitContainerDeviceAllocation: sidecars (restartable init containers) keep their
// devices for the pod's lifetime; only the regular init container's devices are reused; no two
// of the sidecars and app containers share a device.
TEST(DeviceManager, TestRestartableInitContainerDeviceAllocation) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  std::vector<v1beta1::Device> devices;
  for (int i = 1; i <= 8; ++i) devices.push_back(MakeDevice(absl::StrCat("dev", i)));
  node.Serve("r1.sock", devices);
  node.Serve("r2.sock", {MakeDevice("nic1"), MakeDevice("nic2")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("r2.sock", kRes2).ok());
  ASSERT_TRUE(WaitUntil([&] { return node.Health(kRes1).size() == 8; }));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"nic1", true}, {"nic2", true}}));

  Pod pod = MakePod("pod",
                    {Init("init", {{kRes1, 2}}), Sidecar("sidecar1", {{kRes1, 1}}),
                     Sidecar("sidecar2", {{kRes1, 2}})},
                    {App("app1", {{kRes1, 1}, {kRes2, 1}}), App("app2", {{kRes1, 1}, {kRes2, 1}})});
  ASSERT_TRUE(node.AllocatePod(pod).ok());
  std::set<std::string> init = node.Held("pod", "init", kRes1);
  std::set<std::string> sidecar1 = node.Held("pod", "sidecar1", kRes1);
  std::set<std::string> sidecar2 = node.Held("pod", "sidecar2", kRes1);
  std::set<std::string> app1 = node.Held("pod", "app1", kRes1);
  std::set<std::string> app2 = node.Held("pod", "app2", kRes1);
  ASSERT_THAT(init, SizeIs(2));
  ASSERT_THAT(sidecar1, SizeIs(1));
  ASSERT_THAT(sidecar2, SizeIs(2));
  ASSERT_THAT(app1, SizeIs(1));
  ASSERT_THAT(app2, SizeIs(1));
  // sidecar1 reuses one of init's devices; sidecar2 takes the other one, plus a fresh device.
  EXPECT_THAT(sidecar1, IsSubsetOf(init));
  std::set<std::string> init_left = init;
  init_left.erase(*sidecar1.begin());
  EXPECT_THAT(init_left, IsSubsetOf(sidecar2));
  // Pairwise disjoint: sidecars and app containers run together.
  const std::vector<const std::set<std::string>*> running = {&sidecar1, &sidecar2, &app1, &app2};
  std::set<std::string> all;
  size_t total = 0;
  for (const auto* held : running) {
    all.insert(held->begin(), held->end());
    total += held->size();
  }
  EXPECT_EQ(all.size(), total) << "a device is shared by two running containers";
  // Nothing of init's is left for the app containers.
  for (const auto* app : {&app1, &app2}) {
    for (const std::string& id : *app) EXPECT_FALSE(init.contains(id)) << id;
  }
  EXPECT_NE(node.Held("pod", "app1", kRes2), node.Held("pod", "app2", kRes2));
}

// TestDevicePreStartContainer: with pre_start_required, PreStartContainer gets exactly the
// allocated IDs, and the run options are the Allocate answer; a zero-quantity request allocates
// nothing and calls nothing.
TEST(DeviceManager, TestDevicePreStartContainer) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin =
      node.Serve("r1.sock", {MakeDevice("dev1"), MakeDevice("dev2"), MakeDevice("dev3")},
                 PluginOptions(true, false));
  v1beta1::ContainerAllocateResponse answer;
  AddDeviceSpec(&answer, "/dev/dev1");
  AddMount(&answer, "/mnt/data", "/host/data");
  (*answer.mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = "dev1,dev2";
  (*answer.mutable_annotations())["vendor.com/a"] = "b";
  answer.add_cdi_devices()->set_name("vendor.com/dev=1");
  plugin->SetAllocateHandler(
      [answer](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse* response) {
        *response->add_container_responses() = answer;
        return grpc::Status::OK;
      });
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", true}}));

  Pod pod = MakePod("pod", {}, {App("ctr", {{kRes1, 2}})});
  ASSERT_TRUE(node.AllocatePod(pod).ok());
  EXPECT_THAT(plugin->pre_start_calls(), IsEmpty()) << "not at allocation";
  absl::StatusOr<RunContainerOptions> options =
      node.dm().GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_TRUE(options.ok()) << options.status();
  std::set<std::string> held = node.Held("pod", "ctr", kRes1);
  ASSERT_THAT(plugin->pre_start_calls(), SizeIs(1));
  EXPECT_EQ(plugin->pre_start_calls()[0], std::vector<std::string>(held.begin(), held.end()));
  ASSERT_THAT(plugin->allocate_requests(), SizeIs(1));
  EXPECT_THAT(plugin->allocate_requests()[0].container_requests(0).devices_ids(),
              UnorderedElementsAre("dev1", "dev2"));
  ExpectSameOptions(*options, MergeRunContainerOptions({&answer}));

  // Every container start calls it again.
  ASSERT_TRUE(node.dm().GetDeviceRunContainerOptions(pod, pod.containers[0]).ok());
  EXPECT_THAT(plugin->pre_start_calls(), SizeIs(2));

  Pod zero = MakePod("zero", {}, {App("ctr", {{kRes1, 0}})});
  ASSERT_TRUE(node.AllocatePod(zero).ok());
  options = node.dm().GetDeviceRunContainerOptions(zero, zero.containers[0]);
  ASSERT_TRUE(options.ok());
  EXPECT_THAT(options->envs, IsEmpty());
  EXPECT_THAT(plugin->pre_start_calls(), SizeIs(2));
  EXPECT_EQ(plugin->allocate_calls(), 1);

  // A failing PreStartContainer fails the container start with the kubelet's text.
  plugin->FailPreStart(grpc::Status(grpc::StatusCode::INTERNAL, "reset failed"));
  options = node.dm().GetDeviceRunContainerOptions(pod, pod.containers[0]);
  EXPECT_EQ(options.status().message(), errors::PreStartFailed("reset failed"));
}

// TestResetExtendedResource: the kubelet zeroes extended resources when no checkpoint exists
// (ShouldResetExtendedResourceCapacity). kdp has no Node object; the equivalent question is
// whether a restarted manager restores any state: none on a fresh root, the registered resource
// when the state exists, none again once the checkpoint (written on a clean close) is deleted.
TEST(DeviceManager, TestResetExtendedResource) {
  TempDir root;
  ASSERT_TRUE(MakeDirectories(root.Path("device-plugins")).ok());
  ASSERT_TRUE(MakeDirectories(root.Path("kdp")).ok());
  auto open = [&](RestoredState* restored) {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(ManualCompactionStoreOptions(root.path()), restored);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  };
  {
    RestoredState restored;
    std::unique_ptr<StateStore> store = open(&restored);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(restored.devices, checkpoint::Data{}) << "fresh root: reset";
    TestNode node(root.path(), store.get());
    store->StartCompaction(
        [&node] { return StateSnapshot{.devices = node.dm().CheckpointData()}; });
    absl::Cleanup close_store = [&] { store->Close(); };  // Writes the checkpoint.
    node.Start();
    node.Serve("r1.sock", {MakeDevice("dev1")});
    ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
    ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}}));
  }
  {
    RestoredState restored;
    std::unique_ptr<StateStore> store = open(&restored);
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(restored.devices.registered_devices, ElementsAre(Pair(kRes1, ElementsAre("dev1"))))
        << "checkpoint present: no reset";
    store->Close();
  }
  ASSERT_EQ(::unlink(root.Path("device-plugins/kubelet_internal_checkpoint").c_str()), 0);
  RestoredState restored;
  std::unique_ptr<StateStore> store = open(&restored);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(restored.devices, checkpoint::Data{}) << "checkpoint removed: reset";
}

// TestEndpointSyncOnDisconnect (kubernetes #133702): a disconnect makes every device unhealthy;
// once the grace period expired (strictly more than it), GetCapacity forgets the resource
// entirely: no devices, no endpoint, not in the checkpoint, not a device-plugin resource.
TEST(DeviceManager, TestEndpointSyncOnDisconnect) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin = node.Serve(
      "r1.sock", {MakeDevice("dev1"), MakeDevice("dev2"), MakeDevice("dev3", "Unhealthy")});
  ASSERT_TRUE(node.Register("r1.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}, {"dev3", false}}));

  plugin->Stop();
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", false}, {"dev2", false}, {"dev3", false}}));
  EXPECT_FALSE(node.Resource(kRes1)->connected);
  EXPECT_THAT(node.dm().CheckpointData().registered_devices, ElementsAre(Pair(kRes1, IsEmpty())));
  std::optional<ResourceCapacity> c = node.Capacity(kRes1);
  EXPECT_EQ(c->capacity, 3);
  EXPECT_EQ(c->allocatable, 0);

  node.clock().Advance(kGrace);  // Exactly the grace period: kept.
  EXPECT_FALSE(node.Capacity(kRes1)->removed);
  EXPECT_TRUE(node.Resource(kRes1).has_value());
  node.clock().Advance(absl::Nanoseconds(1));
  c = node.Capacity(kRes1);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->removed);
  EXPECT_EQ(c->capacity, 0);
  EXPECT_EQ(c->allocatable, 0);
  EXPECT_FALSE(node.Resource(kRes1).has_value());
  EXPECT_THAT(node.dm().CheckpointData().registered_devices, IsEmpty());
  EXPECT_TRUE(node.AllocatePod(MakePod("pod", {}, {App("ctr", {{kRes1, 1}})})).ok());
  EXPECT_THAT(node.dm().ContainerEntries("pod", "ctr"), IsEmpty());
}

// --- kubernetes PR #135437 / #139338: endpoints keyed by (resource, socket). ---

// A second registration of a (resource, socket) that is still connected is refused with the
// kubelet's text; the connected endpoint is untouched (no new stream, same devices).
TEST(DeviceManager, TestPluginConnected_SameResourceSameSocketRejected) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin = node.Serve("a.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("a.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  const int sent = plugin->messages_sent();

  absl::Status again = node.Register("a.sock", kRes1);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(), errors::AlreadyConnected(node.Socket("a.sock")));
  EXPECT_EQ(plugin->messages_sent(), sent) << "no second stream was opened";
  EXPECT_TRUE(node.Resource(kRes1)->connected);
  EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("a.sock"));
  // The original stream still feeds the resource.
  plugin->SetDevices({MakeDevice("dev1")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}}));
  EXPECT_EQ(node.Capacity(kRes1)->allocatable, 1);
}

// Two instances of one resource on different sockets are both connected; the newer serves (its
// devices are the resource's, it gets the calls), the older streams on as a standby.
TEST(DeviceManager, TestPluginConnected_SameResourceDifferentSocketsCoexist) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* a = node.Serve("a.sock", {MakeDevice("a1"), MakeDevice("a2")});
  ASSERT_TRUE(node.Register("a.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"a1", true}, {"a2", true}}));
  StubPlugin* b = node.Serve("b.sock", {MakeDevice("b1")});
  ASSERT_TRUE(node.Register("b.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}}));
  EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("b.sock"));

  // The standby's snapshots do not change the resource.
  const int sent = a->messages_sent();
  a->SetDevices({MakeDevice("a1"), MakeDevice("a2"), MakeDevice("a3")});
  ASSERT_TRUE(WaitUntil([&] { return a->messages_sent() > sent; }));
  b->Resend();
  ASSERT_TRUE(WaitUntil([&] { return b->messages_sent() >= 2; }));
  EXPECT_EQ(node.Health(kRes1), (std::map<std::string, bool>{{"b1", true}}));

  ASSERT_TRUE(node.AllocatePod(MakePod("pod", {}, {App("ctr", {{kRes1, 1}})})).ok());
  EXPECT_THAT(node.Held("pod", "ctr", kRes1), ElementsAre("b1"));
  EXPECT_EQ(b->allocate_calls(), 1);
  EXPECT_EQ(a->allocate_calls(), 0);
  // Both are still connected: a third registration of either socket is refused.
  EXPECT_EQ(node.Register("a.sock", kRes1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(node.Register("b.sock", kRes1).code(), absl::StatusCode::kAlreadyExists);
}

// A disconnect from an endpoint that is not one of the resource's is a no-op for it: another
// resource's plugin going away, and a refused duplicate registration, leave it as it was.
TEST(DeviceManager, TestPluginDisconnected_WrongSocketIsNoop) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  node.Serve("a.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  StubPlugin* other = node.Serve("x.sock", {MakeDevice("x1")});
  ASSERT_TRUE(node.Register("a.sock", kRes1).ok());
  ASSERT_TRUE(node.Register("x.sock", kRes2).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"x1", true}}));
  // A refused duplicate registration (its endpoint is never connected) leaves nothing behind.
  EXPECT_EQ(node.Register("x.sock", kRes2).code(), absl::StatusCode::kAlreadyExists);

  other->Stop();
  ASSERT_TRUE(node.WaitForHealth(kRes2, {{"x1", false}}));
  node.clock().Advance(kGrace + absl::Seconds(1));
  EXPECT_TRUE(node.Capacity(kRes2)->removed);
  std::optional<ResourceDevices> r1 = node.Resource(kRes1);
  ASSERT_TRUE(r1.has_value());
  EXPECT_TRUE(r1->connected);
  EXPECT_EQ(r1->endpoint, node.Socket("a.sock"));
  EXPECT_EQ(node.Health(kRes1), (std::map<std::string, bool>{{"dev1", true}, {"dev2", true}}));
  std::optional<ResourceCapacity> c = node.Capacity(kRes1);
  EXPECT_EQ(c->allocatable, 2);
  EXPECT_FALSE(c->removed);
}

// When the serving endpoint of several disconnects, the newest survivor takes over with its
// latest snapshot (sent while it was a standby); nothing is marked unhealthy or stopped.
TEST(DeviceManager, TestPluginDisconnected_PromotesSurvivor) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* a = node.Serve("a.sock", {MakeDevice("a1")});
  ASSERT_TRUE(node.Register("a.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"a1", true}}));
  StubPlugin* b = node.Serve("b.sock", {MakeDevice("b1")});
  ASSERT_TRUE(node.Register("b.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}}));
  StubPlugin* c = node.Serve("c.sock", {MakeDevice("c1")});
  ASSERT_TRUE(node.Register("c.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"c1", true}}));
  // b's latest snapshot, sent as a standby.
  const int sent = b->messages_sent();
  b->SetDevices({MakeDevice("b1"), MakeDevice("b2"), MakeDevice("b3", "Unhealthy")});
  ASSERT_TRUE(WaitUntil([&] { return b->messages_sent() > sent; }));

  c->Stop();
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}, {"b2", true}, {"b3", false}}));
  std::optional<ResourceDevices> r = node.Resource(kRes1);
  EXPECT_TRUE(r->connected);
  EXPECT_EQ(r->endpoint, node.Socket("b.sock"));
  // Not stopped: no grace period runs.
  node.clock().Advance(kGrace + absl::Minutes(1));
  std::optional<ResourceCapacity> capacity = node.Capacity(kRes1);
  EXPECT_FALSE(capacity->removed);
  EXPECT_EQ(capacity->capacity, 3);
  EXPECT_EQ(capacity->allocatable, 2);
  ASSERT_TRUE(node.AllocatePod(MakePod("pod", {}, {App("ctr", {{kRes1, 2}})})).ok());
  EXPECT_THAT(node.Held("pod", "ctr", kRes1), ElementsAre("b1", "b2"));
  EXPECT_EQ(b->allocate_calls(), 1);
  EXPECT_EQ(a->allocate_calls(), 0);
  // b keeps feeding the resource.
  b->SetDevices({MakeDevice("b1"), MakeDevice("b2"), MakeDevice("b3")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}, {"b2", true}, {"b3", true}}));
}

// Only the last endpoint's disconnect marks the resource unhealthy (and starts its grace
// period); a standby's disconnect changes nothing.
TEST(DeviceManager, TestPluginDisconnected_LastEndpointMarksUnhealthy) {
  TempDir root;
  // A short dial: re-registering a.sock is how the test learns that a's end was handled.
  TestNode node(root.path(), nullptr, absl::Milliseconds(200));
  node.Start();
  StubPlugin* a = node.Serve("a.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("a.sock", kRes1).ok());
  StubPlugin* b = node.Serve("b.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("b.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  ASSERT_EQ(node.Resource(kRes1)->endpoint, node.Socket("b.sock"));

  a->Stop();  // The standby.
  // Once a's end is handled, registering a.sock again is no longer "already connected" (it fails
  // to dial instead).
  ASSERT_TRUE(WaitUntil(
      [&] { return node.Register("a.sock", kRes1).code() != absl::StatusCode::kAlreadyExists; }));
  EXPECT_EQ(node.Health(kRes1), (std::map<std::string, bool>{{"dev1", true}, {"dev2", true}}));
  EXPECT_TRUE(node.Resource(kRes1)->connected);
  EXPECT_EQ(node.Capacity(kRes1)->allocatable, 2);

  b->Stop();  // The last one.
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", false}, {"dev2", false}}));
  EXPECT_FALSE(node.Resource(kRes1)->connected);
  std::optional<ResourceCapacity> c = node.Capacity(kRes1);
  EXPECT_EQ(c->capacity, 2);
  EXPECT_EQ(c->allocatable, 0);
  node.clock().Advance(kGrace + absl::Seconds(1));
  EXPECT_TRUE(node.Capacity(kRes1)->removed);
}

// Same-socket takeover. The kubelet's PR #139338 documents that a late disconnect for a reused
// socket still evicts the new endpoint, because it keys disconnects by (resource, socket). kdp
// keys a stream's end by the Endpoint object, so the late end of the old stream can never touch
// the new endpoint; and a new instance cannot take a socket whose old stream is still open (it is
// refused until that stream's end is handled), so no second endpoint on the socket exists to be
// confused with it. This test asserts kdp's behaviour, which is better than upstream's:
//  1. A serves on S; B replaces S's socket file while A's stream is still open and registers:
//     refused (already connected), A's devices stay;
//  2. A's stream ends late: the resource is unhealthy (B never connected);
//  3. B registers again: accepted, serving; the old endpoint's teardown (after B is published)
//     does not evict B; B's snapshots and calls keep working, past the grace period too.
// Step 3 also needs the new registration to dial the socket afresh: A's connection is still up
// (its process runs, only its stream ended), and an endpoint that reused it (gRPC's global
// subchannel pool shares one connection per target among channels) would talk to A, not B.
TEST(DeviceManager, TestSameSocketRace_LateDisconnectAfterReconnect) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* a = node.Serve("s.sock", {MakeDevice("a1"), MakeDevice("a2")});
  ASSERT_TRUE(node.Register("s.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"a1", true}, {"a2", true}}));

  StubPlugin* b = node.Serve("s.sock", {MakeDevice("b1")});  // Replaces the socket file.
  absl::Status refused = node.Register("s.sock", kRes1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(refused.message(), errors::AlreadyConnected(node.Socket("s.sock")));
  EXPECT_EQ(node.Health(kRes1), (std::map<std::string, bool>{{"a1", true}, {"a2", true}}));
  EXPECT_EQ(b->messages_sent(), 0);

  a->EndStreams();  // The late disconnect.
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"a1", false}, {"a2", false}}));
  EXPECT_FALSE(node.Resource(kRes1)->connected);

  ASSERT_TRUE(node.Register("s.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}}, absl::Seconds(5)))
      << ::testing::PrintToString(node.Health(kRes1)) << " a sent " << a->messages_sent()
      << ", b sent " << b->messages_sent();
  EXPECT_TRUE(node.Resource(kRes1)->connected);
  b->SetDevices({MakeDevice("b1"), MakeDevice("b2")});
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"b1", true}, {"b2", true}}));
  node.clock().Advance(kGrace + absl::Minutes(1));
  std::optional<ResourceCapacity> c = node.Capacity(kRes1);
  EXPECT_FALSE(c->removed);
  EXPECT_EQ(c->allocatable, 2);
  ASSERT_TRUE(node.AllocatePod(MakePod("pod", {}, {App("ctr", {{kRes1, 1}})})).ok());
  EXPECT_EQ(b->allocate_calls(), 1);
  EXPECT_EQ(a->allocate_calls(), 0);
  // A's process goes away entirely: still nothing happens to B.
  a->Stop();
  b->Resend();
  ASSERT_TRUE(WaitUntil([&] { return b->messages_sent() >= 3; }));
  EXPECT_TRUE(node.Resource(kRes1)->connected);
  EXPECT_EQ(node.Health(kRes1), (std::map<std::string, bool>{{"b1", true}, {"b2", true}}));
}

// The plugin restarts on the same socket after its old stream's end was handled: the new
// instance is accepted and serves; its registration ends the grace period the disconnect began;
// the allocation made through the old instance is kept.
TEST(DeviceManager, TestSameSocketRace_DisconnectBeforeReconnectAttempt) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* a = node.Serve("s.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("s.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  ASSERT_TRUE(node.AllocatePod(MakePod("pod1", {}, {App("ctr", {{kRes1, 1}})})).ok());
  ASSERT_THAT(node.Held("pod1", "ctr", kRes1), ElementsAre("dev1"));

  a->Stop();
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", false}, {"dev2", false}}));
  node.clock().Advance(kGrace / 2);

  StubPlugin* b = node.Serve("s.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("s.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  EXPECT_TRUE(node.Resource(kRes1)->connected);
  node.clock().Advance(kGrace);  // Past the disconnect's grace period: no longer running.
  std::optional<ResourceCapacity> c = node.Capacity(kRes1);
  EXPECT_FALSE(c->removed);
  EXPECT_EQ(c->capacity, 2);
  EXPECT_EQ(c->allocatable, 2);
  ASSERT_TRUE(node.AllocatePod(MakePod("pod2", {}, {App("ctr", {{kRes1, 1}})})).ok());
  EXPECT_THAT(node.Held("pod2", "ctr", kRes1), ElementsAre("dev2"));
  EXPECT_THAT(node.Held("pod1", "ctr", kRes1), ElementsAre("dev1"));
  EXPECT_EQ(b->allocate_calls(), 1);
  EXPECT_EQ(a->allocate_calls(), 1);
}

// --- Beyond upstream: races the kubelet's serial design hides. ---

// Garbage collection that read the active pods before a pod became active must not drop that
// pod's allocation while its Allocate RPC is in flight: the reservation is the pod's, and
// Allocate must not report success for devices it no longer records.
TEST(DeviceManager, GarbageCollectionKeepsAnAllocationInFlight) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  StubPlugin* plugin = node.Serve("r.sock", {MakeDevice("dev1"), MakeDevice("dev2")});
  ASSERT_TRUE(node.Register("r.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  node.dm().UpdateAllocatedDevices();  // Collected at the current generation.

  absl::Notification gc_read_active, gc_may_go_on;
  node.pods().SetHook([&] {
    if (gc_read_active.HasBeenNotified()) return;
    gc_read_active.Notify();
    gc_may_go_on.WaitForNotification();
  });
  std::thread gc([&] { node.dm().UpdateAllocatedDevices(); });
  ASSERT_TRUE(gc_read_active.WaitForNotificationWithTimeout(absl::Seconds(20)));

  plugin->Hold(StubPlugin::Call::kAllocate);
  Pod pod = MakePod("pod", {}, {App("ctr", {{kRes1, 1}})});
  absl::Status allocated;
  std::thread admission([&] { allocated = node.AllocatePod(pod); });
  ASSERT_TRUE(WaitUntil([&] { return plugin->waiting(StubPlugin::Call::kAllocate) == 1; }));
  gc_may_go_on.Notify();
  gc.join();
  plugin->Release(StubPlugin::Call::kAllocate);
  admission.join();
  if (allocated.ok()) {
    EXPECT_THAT(node.Held("pod", "ctr", kRes1), ElementsAre("dev1"))
        << "Allocate succeeded but the pod holds no device";
    EXPECT_THAT(node.dm().CheckpointData().entries, SizeIs(1));
  }
}

// Allocations of two different pods running at once (the pod manager serialises admissions, but
// DeviceManager::Allocate is public) must never hand out one device twice, even when the choice
// of one is held up in GetPreferredAllocation while the other is asked for. Allocate is serial
// (as admission is on a kubelet), so the second waits until the first's call times out (the
// endpoint's call deadline, 2 s here instead of 30 s) and then gets a device; the first holds
// none, or one the second does not.
TEST(DeviceManager, ConcurrentAllocationsForDistinctPodsNeverShareADevice) {
  // Declared before the node: the plugin's handler may still be returning from the wait when the
  // test ends, and the node (which stops the plugin and its handlers) must go first.
  absl::Notification first_asked, first_may_answer;
  std::atomic<int> asked{0};
  TempDir root;
  TestNode node(root.path(), nullptr, absl::Seconds(10), absl::Seconds(2));
  node.Start();
  StubPlugin* plugin =
      node.Serve("r.sock", {MakeDevice("dev1"), MakeDevice("dev2")}, PluginOptions(false, true));
  plugin->SetPreferredAllocationHandler(
      [&](const v1beta1::PreferredAllocationRequest&, v1beta1::PreferredAllocationResponse* out) {
        if (asked.fetch_add(1) == 0) {
          first_asked.Notify();
          first_may_answer.WaitForNotification();
        }
        out->add_container_responses()->add_deviceids("dev1");
        return grpc::Status::OK;
      });
  ASSERT_TRUE(node.Register("r.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}, {"dev2", true}}));
  node.pods().Add("podA");
  node.pods().Add("podB");
  node.dm().UpdateAllocatedDevices();

  Pod a = MakePod("podA", {}, {App("ctr", {{kRes1, 1}})});
  Pod b = MakePod("podB", {}, {App("ctr", {{kRes1, 1}})});
  absl::Status a_status;
  std::thread a_thread([&] { a_status = node.dm().Allocate(a, a.containers[0]); });
  // A failed assertion below must neither leave the handler waiting nor the thread unjoined.
  absl::Cleanup release = [&] {
    if (!first_may_answer.HasBeenNotified()) first_may_answer.Notify();
    if (a_thread.joinable()) a_thread.join();
  };
  ASSERT_TRUE(first_asked.WaitForNotificationWithTimeout(absl::Seconds(20)));
  absl::Status b_status = node.dm().Allocate(b, b.containers[0]);
  first_may_answer.Notify();
  a_thread.join();
  ASSERT_TRUE(b_status.ok()) << b_status;
  std::set<std::string> held_a = node.Held("podA", "ctr", kRes1);
  std::set<std::string> held_b = node.Held("podB", "ctr", kRes1);
  if (a_status.ok()) {
    EXPECT_THAT(held_a, SizeIs(1));
    EXPECT_NE(held_a, held_b) << "one device allocated to two pods";
  } else {
    EXPECT_THAT(held_a, IsEmpty());
  }
}

}  // namespace
}  // namespace kdp::manager

namespace kdp::manager {
namespace {

// A device plugin registered through plugins_registry whose registration socket goes away is
// deregistered (DeRegisterPlugin): the newest other instance takes over, and when none is left
// the devices turn unhealthy; an unknown (resource, socket) changes nothing.
TEST(DeviceManager, DeregisterPluginDropsOnlyThatEndpoint) {
  TempDir root;
  TestNode node(root.path());
  node.Start();
  node.Serve("p1.sock", {MakeDevice("dev1")}, PluginOptions(false, false));
  ASSERT_TRUE(node.Register("p1.sock", kRes1).ok());
  node.Serve("p2.sock", {MakeDevice("dev2")}, PluginOptions(false, false));
  ASSERT_TRUE(node.Register("p2.sock", kRes1).ok());
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev2", true}}));

  node.dm().DeregisterPlugin(kRes1, node.Socket("unknown.sock"));
  node.dm().DeregisterPlugin("example.com/other", node.Socket("p2.sock"));
  EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("p2.sock"));

  node.dm().DeregisterPlugin(kRes1, node.Socket("p2.sock"));
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", true}}));
  EXPECT_EQ(node.Resource(kRes1)->endpoint, node.Socket("p1.sock"));

  node.dm().DeregisterPlugin(kRes1, node.Socket("p1.sock"));
  ASSERT_TRUE(node.WaitForHealth(kRes1, {{"dev1", false}}));
  EXPECT_EQ(node.Capacity(kRes1)->allocatable, 0);
}

}  // namespace
}  // namespace kdp::manager
