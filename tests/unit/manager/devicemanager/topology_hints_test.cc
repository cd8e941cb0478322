// The kubelet's device-manager topology tests (pkg/kubelet/cm/devicemanager/topology_hints_test.go,
// every scenario) against kdp's DeviceManager as a topology-manager hint provider: a
// real manager serving kubelet.sock in a temporary directory, each resource served by a StubPlugin
// whose devices carry NUMA nodes, pods and containers built directly. Where upstream writes its
// private maps (podDevices, allocatedDevices, devicesToReuse), the same states are reached through
// the public API: Allocate() with the plugin's GetPreferredAllocation answering the devices the
// case names, a finished init container for the reusable devices. Every upstream case is ported
// under its upstream description; where upstream is weak the assertions go further (nil vs empty
// lists and the resources present in the answer are checked, and the GetPreferredAllocation
// parameters assert must_include, which upstream compares against `available` by mistake).
//
// One deliberate difference from the stored upstream file: kdp enumerates masks over the NUMA
// nodes that host devices of the resource (kubernetes PR #138244, issue #131735), so a resource
// whose devices all sit on one node gets no hint naming the other node. The three common cases
// this changes say so and give the older expectation in a comment.
#include "manager/src/devicemanager/topology_hints.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "manager/src/pod/pod.h"
#include "manager/src/topologymanager/numa_mask.h"
#include "manager/src/topologymanager/policy.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/devicemanager/pod_test_util.h"

namespace kdp::manager {

// GoogleTest's printer for hints (found by argument-dependent lookup, hence outside the anonymous
// namespace): "{[0,1] false}", "{<nil> true}".
void PrintTo(const TopologyHint& hint, std::ostream* os) {
  *os << "{"
      << (hint.numa_affinity.has_value() ? absl::StrCat("[", hint.numa_affinity->ToString(), "]")
                                         : std::string("<nil>"))
      << (hint.preferred ? " true}" : " false}");
}

namespace {

using devicemanager_testutil::App;
using devicemanager_testutil::Init;
using devicemanager_testutil::kGpu;
using devicemanager_testutil::kNic;
using devicemanager_testutil::MakePod;
using devicemanager_testutil::Sidecar;
using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::UnorderedElementsAreArray;

constexpr char kTestDevice[] = "example.com/testdevice";
constexpr char kTestDevice1[] = "example.com/testdevice1";
constexpr char kTestDevice2[] = "example.com/testdevice2";
constexpr char kNotRegistered[] = "example.com/notRegistered";
constexpr char kResource[] = "example.com/resource";

// --- Building blocks -------------------------------------------------------------------------

// upstream makeNUMADevice: a healthy device on one NUMA node.
v1beta1::Device NumaDevice(const std::string& id, int64_t node) {
  return MakeDevice(id, "Healthy", {node});
}
// A healthy device without topology (upstream's {ID: "DevN"}).
v1beta1::Device PlainDevice(const std::string& id) { return MakeDevice(id); }
// A healthy device whose topology is present but names no node.
v1beta1::Device EmptyTopologyDevice(const std::string& id) {
  v1beta1::Device device = MakeDevice(id);
  device.mutable_topology();
  return device;
}
// Devices <prefix><from> .. <prefix><to - 1>, all on `node`.
std::vector<v1beta1::Device> NumaRange(int from, int to, int64_t node) {
  std::vector<v1beta1::Device> out;
  for (int i = from; i < to; ++i) out.push_back(NumaDevice(absl::StrCat("Dev", i), node));
  return out;
}
std::vector<v1beta1::Device> Concat(std::vector<v1beta1::Device> a,
                                    const std::vector<v1beta1::Device>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// upstream makeSocketMask + TopologyHint.
TopologyHint Hint(std::initializer_list<int> nodes, bool preferred) {
  return TopologyHint{.numa_affinity = NumaMask::Of(nodes), .preferred = preferred};
}

// A GetPreferredAllocation answer naming `ids` (upstream's getPreferredAllocationFunc); with no
// IDs, a response without container responses (upstream's `return nil, nil`).
StubPlugin::PreferredAllocationHandler AnswerWith(std::vector<std::string> ids) {
  return [ids = std::move(ids)](const v1beta1::PreferredAllocationRequest&,
                                v1beta1::PreferredAllocationResponse* response) {
    if (ids.empty()) return grpc::Status::OK;
    v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    for (const std::string& id : ids) out->add_deviceids(id);
    return grpc::Status::OK;
  };
}

std::set<std::string> AsSet(const std::vector<std::string>& ids) {
  return {ids.begin(), ids.end()};
}
template <typename Repeated>
std::set<std::string> AsSet(const Repeated& ids) {
  return {ids.begin(), ids.end()};
}

// The kubelet's activePods / sourcesReady: a fixed set of pods, sources ready.
class FixedActivePods final : public ActivePodsSource {
 public:
  explicit FixedActivePods(std::set<std::string> uids) : uids_(std::move(uids)) {}
  bool SourcesReady() const override { return true; }
  uint64_t Generation() const override { return 0; }
  std::set<std::string> ActivePodUids() const override { return uids_; }

 private:
  const std::set<std::string> uids_;
};

// A kubelet root with a started DeviceManager on a machine with `numa_nodes`, `active_pods`
// running, and the stub plugins the test serves in it (one per resource).
class HintNode {
 public:
  HintNode(std::vector<int> numa_nodes, std::set<std::string> active_pods)
      : plugins_dir_(root_.path() + "/device-plugins"), pods_(std::move(active_pods)) {
    manager_ = std::make_unique<DeviceManager>(DeviceManagerOptions{
        .plugins_dir = plugins_dir_,
        .endpoint = {.dial_timeout = absl::Seconds(10),
                     .call_timeout = absl::Seconds(30),
                     .pre_start_timeout = absl::Seconds(30)},
        .numa_nodes = std::move(numa_nodes),
    });
    manager_->SetActivePodsSource(&pods_);
    started_ = manager_->Start();
  }
  ~HintNode() {
    // Plugins first: their streams end while the manager still handles it.
    plugins_.clear();
    manager_.reset();
  }
  HintNode(const HintNode&) = delete;
  HintNode& operator=(const HintNode&) = delete;

  const absl::Status& started() const { return started_; }
  DeviceManager& dm() { return *manager_; }

  // Serves `resource` from a new stub plugin with `devices` (advertising GetPreferredAllocation
  // when `preferred`), registers it and waits until the manager lists exactly those devices.
  // nullptr (with a test failure) when that does not happen.
  StubPlugin* AddResource(const std::string& resource, std::vector<v1beta1::Device> devices,
                          bool preferred = true) {
    std::set<std::string> ids;
    for (const v1beta1::Device& d : devices) ids.insert(d.id());
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(preferred);
    const std::string name = absl::StrCat("p", plugins_.size(), ".sock");
    auto plugin = std::make_unique<StubPlugin>(plugins_dir_ + "/" + name, options);
    plugin->SetDevices(std::move(devices));
    if (absl::Status s = plugin->Start(); !s.ok()) {
      ADD_FAILURE() << "stub plugin for " << resource << ": " << s;
      return nullptr;
    }
    plugins_.push_back(std::move(plugin));
    if (absl::Status s =
            StubPlugin::Register(plugins_dir_ + "/kubelet.sock", "v1beta1", name, resource);
        !s.ok()) {
      ADD_FAILURE() << "register " << resource << ": " << s;
      return nullptr;
    }
    const bool listed = WaitUntil([&] {
      for (const ResourceDevices& r : manager_->Resources()) {
        if (r.name != resource || !r.connected) continue;
        std::set<std::string> have;
        for (const auto& [id, info] : r.devices) have.insert(id);
        return have == ids;
      }
      return false;
    });
    if (!listed) {
      ADD_FAILURE() << "the manager never listed the devices of " << resource;
      return nullptr;
    }
    return plugins_.back().get();
  }

  // Devices (pod, container) holds for `resource` (committed).
  std::set<std::string> Held(const std::string& pod_uid, const std::string& container,
                             const std::string& resource) const {
    for (const PodDevicesEntry& entry : manager_->ContainerEntries(pod_uid, container)) {
      if (entry.resource_name == resource) return DeviceIds(entry.devices);
    }
    return {};
  }

  // Gives `container` of `pod` exactly the devices named per resource (upstream's
  // podDevices.insert + allocatedDevices), through Allocate(): each resource's plugin answers
  // GetPreferredAllocation with them. False (with a test failure) when that does not happen.
  // REQUIRES: every resource was added with AddGivable().
  bool Give(const Pod& pod, const Container& container,
            const std::map<std::string, std::vector<std::string>>& devices) {
    for (const auto& [resource, ids] : devices) {
      auto it = plugins_by_resource_.find(resource);
      if (it == plugins_by_resource_.end()) {
        ADD_FAILURE() << "no plugin serves " << resource;
        return false;
      }
      it->second->SetPreferredAllocationHandler(AnswerWith(ids));
    }
    if (absl::Status s = manager_->Allocate(pod, container, std::nullopt); !s.ok()) {
      ADD_FAILURE() << "Allocate " << pod.uid << "/" << container.name << ": " << s;
      return false;
    }
    bool ok = true;
    for (const auto& [resource, ids] : devices) {
      const std::set<std::string> held = Held(pod.uid, container.name, resource);
      if (held != AsSet(ids)) {
        ADD_FAILURE() << pod.uid << "/" << container.name << " holds "
                      << ::testing::PrintToString(held) << " of " << resource << ", not "
                      << ::testing::PrintToString(ids);
        ok = false;
      }
    }
    return ok;
  }
  // AddResource, remembering the plugin for Give(). False (with a test failure) on failure.
  bool AddGivable(const std::string& resource, std::vector<v1beta1::Device> devices) {
    StubPlugin* plugin = AddResource(resource, std::move(devices), /*preferred=*/true);
    if (plugin == nullptr) return false;
    plugins_by_resource_[resource] = plugin;
    return true;
  }

 private:
  TempDir root_;
  const std::string plugins_dir_;
  FixedActivePods pods_;
  std::unique_ptr<DeviceManager> manager_;
  absl::Status started_;
  std::vector<std::unique_ptr<StubPlugin>> plugins_;
  std::map<std::string, StubPlugin*> plugins_by_resource_;
};

// Compares a provider's answer with the expected one: the same resources, nil where nil is
// expected (no preference), otherwise the same hints in any order (upstream sorts both sides).
void ExpectHints(const ProviderHints& got, const ProviderHints& want) {
  std::set<std::string> got_resources, want_resources;
  for (const auto& [resource, hints] : got) got_resources.insert(resource);
  for (const auto& [resource, hints] : want) want_resources.insert(resource);
  EXPECT_EQ(got_resources, want_resources);
  for (const auto& [resource, hints] : want) {
    SCOPED_TRACE(resource);
    auto it = got.find(resource);
    if (it == got.end()) continue;  // Reported above.
    if (!hints.has_value()) {
      EXPECT_FALSE(it->second.has_value()) << "expected nil (no preference)";
      continue;
    }
    ASSERT_TRUE(it->second.has_value()) << "expected a hint list, got nil";
    EXPECT_THAT(*it->second, UnorderedElementsAreArray(*hints));
  }
}

// --- TestGetTopologyHints / TestGetPodTopologyHints ------------------------------------------

// Devices a container holds before the hints are asked for.
struct HeldDevices {
  std::string pod_uid;
  std::string container;
  std::map<std::string, std::vector<std::string>> devices;
};

// upstream topologyHintTestCase.
struct HintCase {
  std::string description;
  Pod pod;
  std::map<std::string, std::vector<v1beta1::Device>> devices;
  std::vector<HeldDevices> allocated = {};
  ProviderHints expected;
};

std::vector<v1beta1::Device> TwoPerSocket() {
  return {NumaDevice("Dev1", 0), NumaDevice("Dev2", 1), NumaDevice("Dev3", 0),
          NumaDevice("Dev4", 1)};
}
std::vector<v1beta1::Device> TwoPerSocketGrouped() {
  return {NumaDevice("Dev1", 0), NumaDevice("Dev2", 0), NumaDevice("Dev3", 1),
          NumaDevice("Dev4", 1)};
}
std::vector<TopologyHint> EitherSocket() {
  return {Hint({0}, true), Hint({1}, true), Hint({0, 1}, false)};
}
Pod FakePod(std::map<std::string, int64_t> resources) {
  return MakePod("fakePod", {}, {App("fakeContainer", std::move(resources))});
}

// upstream getCommonTestCases (plus kdp's empty-node-list variant of the first).
std::vector<HintCase> CommonCases() {
  return {
      {.description = "Single Request, no alignment",
       .pod = FakePod({{kTestDevice, 1}}),
       .devices = {{kTestDevice, {PlainDevice("Dev1"), PlainDevice("Dev2")}}},
       .expected = {{kTestDevice, std::nullopt}}},
      {.description = "(kdp) Single Request, no alignment, topology with an empty node list",
       .pod = FakePod({{kTestDevice, 1}}),
       .devices = {{kTestDevice, {EmptyTopologyDevice("Dev1"), EmptyTopologyDevice("Dev2")}}},
       .expected = {{kTestDevice, std::nullopt}}},
      // Before PR #138244 upstream also expected {0,1} not preferred: node 0 hosts no device.
      {.description = "Single Request, only one with alignment",
       .pod = FakePod({{kTestDevice, 1}}),
       .devices = {{kTestDevice, {PlainDevice("Dev1"), NumaDevice("Dev2", 1)}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{Hint({1}, true)}}}},
      {.description = "Single Request, one device per socket",
       .pod = FakePod({{kTestDevice, 1}}),
       .devices = {{kTestDevice, {NumaDevice("Dev1", 0), NumaDevice("Dev2", 1)}}},
       .expected = {{kTestDevice, EitherSocket()}}},
      {.description = "Request for 2, one device per socket",
       .pod = FakePod({{kTestDevice, 2}}),
       .devices = {{kTestDevice, {NumaDevice("Dev1", 0), NumaDevice("Dev2", 1)}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{Hint({0, 1}, true)}}}},
      {.description = "Request for 2, 2 devices per socket",
       .pod = FakePod({{kTestDevice, 2}}),
       .devices = {{kTestDevice, TwoPerSocket()}},
       .expected = {{kTestDevice, EitherSocket()}}},
      {.description = "Request for 2, optimal on 1 NUMA node, forced cross-NUMA",
       .pod = FakePod({{kTestDevice, 2}}),
       .devices = {{kTestDevice, TwoPerSocket()}},
       .allocated = {{"fakePod", "fakeOtherContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{Hint({0, 1}, false)}}}},
      // Before PR #138244 upstream also expected {0,1} not preferred for testdevice2.
      {.description = "2 device types, mixed configuration",
       .pod = FakePod({{kTestDevice1, 2}, {kTestDevice2, 1}}),
       .devices = {{kTestDevice1, TwoPerSocket()}, {kTestDevice2, {NumaDevice("Dev1", 0)}}},
       .expected = {{kTestDevice1, EitherSocket()},
                    {kTestDevice2, std::vector<TopologyHint>{Hint({0}, true)}}}},
      {.description = "Single device type, more requested than available",
       .pod = FakePod({{kTestDevice, 6}}),
       .devices = {{kTestDevice, TwoPerSocketGrouped()}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{}}}},
      // Before PR #138244 upstream also expected {0,1} not preferred: node 1 hosts no device.
      {.description = "Single device type, all already allocated to container",
       .pod = FakePod({{kTestDevice, 2}}),
       .devices = {{kTestDevice, {NumaDevice("Dev1", 0), NumaDevice("Dev2", 0)}}},
       .allocated = {{"fakePod", "fakeContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{Hint({0}, true)}}}},
      {.description = "Single device type, less already allocated to container than requested",
       .pod = FakePod({{kTestDevice, 4}}),
       .devices = {{kTestDevice, TwoPerSocketGrouped()}},
       .allocated = {{"fakePod", "fakeContainer", {{kTestDevice, {"Dev1", "Dev2"}}}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{}}}},
      {.description = "Single device type, more already allocated to container than requested",
       .pod = FakePod({{kTestDevice, 2}}),
       .devices = {{kTestDevice, TwoPerSocketGrouped()}},
       .allocated = {{"fakePod",
                      "fakeContainer",
                      {{kTestDevice, {"Dev1", "Dev2", "Dev3", "Dev4"}}}}},
       .expected = {{kTestDevice, std::vector<TopologyHint>{}}}},
  };
}

// upstream getPodScopeTestCases: unregistered resources ignored, init and app containers
// aggregated, forced cross-NUMA at pod level.
std::vector<HintCase> PodScopeCases() {
  const std::map<std::string, std::vector<v1beta1::Device>> two_types = {
      {kTestDevice1, TwoPerSocketGrouped()}, {kTestDevice2, TwoPerSocketGrouped()}};
  return {
      {.description = "2 device types, user container only",
       .pod = MakePod(
           "fakePod", {},
           {App("fakeContainer1", {{kTestDevice1, 2}}), App("fakeContainer2", {{kTestDevice2, 2}}),
            App("fakeContainer3", {{kNotRegistered, 2}})}),
       .devices = two_types,
       .expected = {{kTestDevice1, EitherSocket()}, {kTestDevice2, EitherSocket()}}},
      {.description = "2 device types, request resources for init containers and user container",
       .pod = MakePod("fakePod",
                      {Init("", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                       Init("", {{kTestDevice1, 1}, {kTestDevice2, 2}})},
                      {App("fakeContainer1", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                       App("fakeContainer2", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                       App("fakeContainer3", {{kNotRegistered, 1}})}),
       .devices = two_types,
       .expected = {{kTestDevice1, EitherSocket()}, {kTestDevice2, EitherSocket()}}},
      {.description =
           "2 device types, user container only, optimal on 1 NUMA node, forced cross-NUMA",
       .pod = MakePod("fakePod", {},
                      {App("fakeContainer1", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                       App("fakeContainer2", {{kTestDevice1, 1}, {kTestDevice2, 1}}),
                       App("fakeContainer3", {{kNotRegistered, 1}})}),
       .devices = two_types,
       .allocated = {{"fakeOtherPod",
                      "fakeOtherContainer",
                      {{kTestDevice1, {"Dev1", "Dev3"}}, {kTestDevice2, {"Dev1", "Dev3"}}}}},
       .expected = {{kTestDevice1, std::vector<TopologyHint>{Hint({0, 1}, false)}},
                    {kTestDevice2, std::vector<TopologyHint>{Hint({0, 1}, false)}}}},
  };
}

enum class Scope { kContainer, kPod };

// Runs one case on a fresh two-NUMA-node machine (upstream's numaNodes: []int{0, 1}).
void RunHintCase(const HintCase& c, Scope scope) {
  SCOPED_TRACE(c.description);
  // Upstream's activePods: the pod, and in pod scope also "fakeOtherPod". Garbage collection runs
  // before the hints, so the held devices below must survive it.
  std::set<std::string> active = {c.pod.uid};
  if (scope == Scope::kPod) active.insert("fakeOtherPod");
  HintNode node({0, 1}, active);
  ASSERT_TRUE(node.started().ok()) << node.started();
  for (const auto& [resource, devices] : c.devices) {
    ASSERT_TRUE(node.AddGivable(resource, devices));
  }
  for (const HeldDevices& held : c.allocated) {
    std::map<std::string, int64_t> counts;
    for (const auto& [resource, ids] : held.devices) {
      counts[resource] = static_cast<int64_t>(ids.size());
    }
    const Pod owner = held.pod_uid == c.pod.uid ? c.pod : MakePod(held.pod_uid, {}, {});
    ASSERT_TRUE(node.Give(owner, App(held.container, counts), held.devices));
  }
  const ProviderHints hints = scope == Scope::kContainer
                                  ? node.dm().GetTopologyHints(c.pod, c.pod.containers[0])
                                  : node.dm().GetPodTopologyHints(c.pod);
  ExpectHints(hints, c.expected);
}

TEST(TopologyHints, TestGetTopologyHints) {
  for (const HintCase& c : CommonCases()) RunHintCase(c, Scope::kContainer);
}

TEST(TopologyHints, TestGetPodTopologyHints) {
  for (const HintCase& c : CommonCases()) RunHintCase(c, Scope::kPod);
  for (const HintCase& c : PodScopeCases()) RunHintCase(c, Scope::kPod);
}

// --- TestTopologyAlignedAllocation -----------------------------------------------------------

struct AlignedCase {
  std::string description;
  int64_t request;
  std::vector<v1beta1::Device> devices;
  NumaMask hint;
  // The plugin's GetPreferredAllocation answer; nullopt: the plugin does not advertise it.
  std::optional<std::vector<std::string>> preferred_answer = std::nullopt;
  std::vector<std::string> expected_preferred = {};
  // NUMA node (first of the device's) → devices allocated there; empty for a resource without
  // topology.
  std::map<int64_t, int> expected_alignment;
};

std::vector<AlignedCase> AlignedCases() {
  const std::vector<v1beta1::Device> one_per_socket = {NumaDevice("Dev1", 0),
                                                       NumaDevice("Dev2", 1)};
  const std::vector<v1beta1::Device> three_per_socket = {
      NumaDevice("Dev1", 0), NumaDevice("Dev2", 1), NumaDevice("Dev3", 0),
      NumaDevice("Dev4", 1), NumaDevice("Dev5", 0), NumaDevice("Dev6", 1)};
  const std::vector<v1beta1::Device> hundred_per_socket =
      Concat(NumaRange(0, 100, 0), NumaRange(100, 200, 1));
  const std::vector<v1beta1::Device> three_and_ninety_seven =
      Concat(NumaRange(0, 3, 0), NumaRange(3, 100, 1));
  return {
      {.description = "Single Request, no alignment",
       .request = 1,
       .devices = {PlainDevice("Dev1"), PlainDevice("Dev2")},
       .hint = NumaMask::Of({0, 1}),
       .expected_alignment = {}},
      {.description = "Request for 1, partial alignment",
       .request = 1,
       .devices = {PlainDevice("Dev1"), NumaDevice("Dev2", 1)},
       .hint = NumaMask::Of({1}),
       .expected_alignment = {{1, 1}}},
      {.description = "Single Request, socket 0",
       .request = 1,
       .devices = one_per_socket,
       .hint = NumaMask::Of({0}),
       .expected_alignment = {{0, 1}}},
      {.description = "Single Request, socket 1",
       .request = 1,
       .devices = one_per_socket,
       .hint = NumaMask::Of({1}),
       .expected_alignment = {{1, 1}}},
      {.description = "Request for 2, socket 0",
       .request = 2,
       .devices = TwoPerSocket(),
       .hint = NumaMask::Of({0}),
       .expected_alignment = {{0, 2}}},
      {.description = "Request for 2, socket 1",
       .request = 2,
       .devices = TwoPerSocket(),
       .hint = NumaMask::Of({1}),
       .expected_alignment = {{1, 2}}},
      {.description = "Request for 4, unsatisfiable, prefer socket 0",
       .request = 4,
       .devices = three_per_socket,
       .hint = NumaMask::Of({0}),
       .expected_alignment = {{0, 3}, {1, 1}}},
      {.description = "Request for 4, unsatisfiable, prefer socket 1",
       .request = 4,
       .devices = three_per_socket,
       .hint = NumaMask::Of({1}),
       .expected_alignment = {{0, 1}, {1, 3}}},
      {.description = "Request for 4, multisocket",
       .request = 4,
       .devices = {NumaDevice("Dev1", 0), NumaDevice("Dev2", 1), NumaDevice("Dev3", 2),
                   NumaDevice("Dev4", 3), NumaDevice("Dev5", 0), NumaDevice("Dev6", 1),
                   NumaDevice("Dev7", 2), NumaDevice("Dev8", 3)},
       .hint = NumaMask::Of({1, 3}),
       .expected_alignment = {{1, 2}, {3, 2}}},
      {.description = "Request for 5, socket 0, preferred aligned accepted",
       .request = 5,
       .devices = hundred_per_socket,
       .hint = NumaMask::Of({0}),
       .preferred_answer = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "Dev42", "Dev77"},
       .expected_preferred = {"Dev0", "Dev19", "Dev83", "Dev42", "Dev77"},
       .expected_alignment = {{0, 5}}},
      {.description = "Request for 5, socket 0, preferred aligned accepted, unaligned ignored",
       .request = 5,
       .devices = hundred_per_socket,
       .hint = NumaMask::Of({0}),
       .preferred_answer = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "Dev150", "Dev186"},
       .expected_preferred = {"Dev0", "Dev19", "Dev83"},
       .expected_alignment = {{0, 5}}},
      {.description = "Request for 5, socket 1, preferred aligned accepted, bogus ignored",
       .request = 5,
       .devices = NumaRange(0, 100, 1),
       .hint = NumaMask::Of({1}),
       .preferred_answer = std::vector<std::string>{"Dev0", "Dev19", "Dev83", "bogus0", "bogus1"},
       .expected_preferred = {"Dev0", "Dev19", "Dev83"},
       .expected_alignment = {{1, 5}}},
      {.description = "Request for 5, multisocket, preferred accepted",
       .request = 5,
       .devices = three_and_ninety_seven,
       .hint = NumaMask::Of({0}),
       .preferred_answer = std::vector<std::string>{"Dev0", "Dev1", "Dev2", "Dev42", "Dev83"},
       .expected_preferred = {"Dev0", "Dev1", "Dev2", "Dev42", "Dev83"},
       .expected_alignment = {{0, 3}, {1, 2}}},
      {.description = "Request for 5, multisocket, preferred unaligned accepted, bogus ignored",
       .request = 5,
       .devices = three_and_ninety_seven,
       .hint = NumaMask::Of({0}),
       .preferred_answer = std::vector<std::string>{"Dev0", "Dev1", "Dev2", "Dev42", "bogus0"},
       .expected_preferred = {"Dev0", "Dev1", "Dev2", "Dev42"},
       .expected_alignment = {{0, 3}, {1, 2}}},
  };
}

// The container's devices through Allocate(pod, container, hint) on a plugin that answers
// GetPreferredAllocation as the case says; the count per NUMA node as upstream counts it (the
// first node of each allocated device with topology, nothing for a resource without topology).
TEST(TopologyHints, TestTopologyAlignedAllocation) {
  for (const AlignedCase& c : AlignedCases()) {
    SCOPED_TRACE(c.description);
    HintNode node({}, {"podUID"});
    ASSERT_TRUE(node.started().ok()) << node.started();
    StubPlugin* plugin =
        node.AddResource(kResource, c.devices, /*preferred=*/c.preferred_answer.has_value());
    ASSERT_NE(plugin, nullptr);
    if (c.preferred_answer.has_value()) {
      plugin->SetPreferredAllocationHandler(AnswerWith(*c.preferred_answer));
    }
    const Pod pod = MakePod("podUID", {}, {App("containerName", {{kResource, c.request}})});
    absl::Status allocated = node.dm().Allocate(pod, pod.containers[0], c.hint);
    ASSERT_TRUE(allocated.ok()) << allocated;

    const std::set<std::string> held = node.Held("podUID", "containerName", kResource);
    EXPECT_EQ(static_cast<int64_t>(held.size()), c.request);
    EXPECT_THAT(held, IsSupersetOf(c.expected_preferred));
    EXPECT_EQ(plugin->preferred_calls(), c.preferred_answer.has_value() ? 1 : 0);

    std::map<std::string, int64_t> first_node;
    for (const v1beta1::Device& d : c.devices) {
      if (d.has_topology() && d.topology().nodes_size() > 0) {
        first_node[d.id()] = d.topology().nodes(0).id();
      }
    }
    std::map<int64_t, int> alignment;
    if (!first_node.empty()) {
      for (const std::string& id : held) {
        if (auto it = first_node.find(id); it != first_node.end()) ++alignment[it->second];
      }
    }
    EXPECT_EQ(alignment, c.expected_alignment);
  }
}

// --- TestGetPreferredAllocationParameters ----------------------------------------------------

struct ParamCase {
  std::string description;
  int64_t request;
  std::vector<v1beta1::Device> devices;
  // Devices held by any container before the request (upstream's allocatedDevices); those also in
  // `reusable` are held by a finished init container of the pod, the rest by another pod.
  std::vector<std::string> allocated;
  // Devices of the pod's finished init containers (upstream's reusable set).
  std::vector<std::string> reusable;
  NumaMask hint;
  std::vector<std::string> expected_available;
  std::vector<std::string> expected_must_include;
  int expected_size;
};

std::vector<ParamCase> ParamCases() {
  const std::vector<v1beta1::Device> eight_on_zero = NumaRange(0, 8, 0);
  const std::vector<v1beta1::Device> four_and_four = Concat(NumaRange(0, 4, 0), NumaRange(4, 8, 1));
  const std::vector<std::string> all_eight = {"Dev0", "Dev1", "Dev2", "Dev3",
                                              "Dev4", "Dev5", "Dev6", "Dev7"};
  return {
      {.description = "Request for 1, socket 0, 0 already allocated, 0 reusable",
       .request = 1,
       .devices = NumaRange(0, 4, 0),
       .allocated = {},
       .reusable = {},
       .hint = NumaMask::Of({0}),
       .expected_available = {"Dev0", "Dev1", "Dev2", "Dev3"},
       .expected_must_include = {},
       .expected_size = 1},
      {.description = "Request for 4, socket 0, 2 already allocated, 2 reusable",
       .request = 4,
       .devices = eight_on_zero,
       .allocated = {"Dev0", "Dev5"},
       .reusable = {"Dev0", "Dev5"},
       .hint = NumaMask::Of({0}),
       .expected_available = all_eight,
       .expected_must_include = {"Dev0", "Dev5"},
       .expected_size = 4},
      {.description = "Request for 4, socket 0, 4 already allocated, 2 reusable",
       .request = 4,
       .devices = eight_on_zero,
       .allocated = {"Dev0", "Dev5", "Dev4", "Dev1"},
       .reusable = {"Dev0", "Dev5"},
       .hint = NumaMask::Of({0}),
       .expected_available = {"Dev0", "Dev2", "Dev3", "Dev5", "Dev6", "Dev7"},
       .expected_must_include = {"Dev0", "Dev5"},
       .expected_size = 4},
      {.description = "Request for 6, multisocket, 2 already allocated, 2 reusable",
       .request = 6,
       .devices = four_and_four,
       .allocated = {"Dev1", "Dev6"},
       .reusable = {"Dev1", "Dev6"},
       .hint = NumaMask::Of({0}),
       .expected_available = all_eight,
       .expected_must_include = {"Dev0", "Dev1", "Dev2", "Dev3", "Dev6"},
       .expected_size = 6},
      {.description = "Request for 6, multisocket, 4 already allocated, 2 reusable",
       .request = 6,
       .devices = four_and_four,
       .allocated = {"Dev0", "Dev1", "Dev6", "Dev7"},
       .reusable = {"Dev1", "Dev6"},
       .hint = NumaMask::Of({0}),
       .expected_available = {"Dev1", "Dev2", "Dev3", "Dev4", "Dev5", "Dev6"},
       .expected_must_include = {"Dev1", "Dev2", "Dev3", "Dev6"},
       .expected_size = 6},
  };
}

// The (available, must_include, size) the plugin receives for the container's request, with the
// "allocated" devices held first by another pod and the "reusable" ones by a finished init
// container of the same pod. All three are asserted (upstream never checks must_include).
TEST(TopologyHints, TestGetPreferredAllocationParameters) {
  for (const ParamCase& c : ParamCases()) {
    SCOPED_TRACE(c.description);
    HintNode node({}, {"podUID", "otherPod"});
    ASSERT_TRUE(node.started().ok()) << node.started();
    StubPlugin* plugin = node.AddResource(kResource, c.devices, /*preferred=*/true);
    ASSERT_NE(plugin, nullptr);

    const std::set<std::string> reusable = AsSet(c.reusable);
    std::vector<std::string> elsewhere;
    for (const std::string& id : c.allocated) {
      if (!reusable.contains(id)) elsewhere.push_back(id);
    }
    const Container init = Init("init", {{kResource, static_cast<int64_t>(c.reusable.size())}});
    const Container app = App("containerName", {{kResource, c.request}});
    const Pod pod = MakePod("podUID", {init}, {app});
    // Another pod's devices first: admitting a pod drops the reusable devices of every other pod.
    if (!elsewhere.empty()) {
      const Pod other = MakePod(
          "otherPod", {}, {App("other", {{kResource, static_cast<int64_t>(elsewhere.size())}})});
      plugin->SetPreferredAllocationHandler(AnswerWith(elsewhere));
      ASSERT_TRUE(node.dm().Allocate(other, other.containers[0], std::nullopt).ok());
      ASSERT_EQ(node.Held("otherPod", "other", kResource), AsSet(elsewhere));
    }
    if (!c.reusable.empty()) {
      plugin->SetPreferredAllocationHandler(AnswerWith(c.reusable));
      ASSERT_TRUE(node.dm().Allocate(pod, init, std::nullopt).ok());
      ASSERT_EQ(node.Held("podUID", "init", kResource), reusable);
    }

    plugin->SetPreferredAllocationHandler(AnswerWith({}));  // upstream: return nil, nil
    const int calls_before = plugin->preferred_calls();
    absl::Status allocated = node.dm().Allocate(pod, app, c.hint);
    ASSERT_TRUE(allocated.ok()) << allocated;
    ASSERT_EQ(plugin->preferred_calls(), calls_before + 1);
    const std::vector<v1beta1::PreferredAllocationRequest> requests = plugin->preferred_requests();
    ASSERT_FALSE(requests.empty());
    ASSERT_EQ(requests.back().container_requests_size(), 1);
    const v1beta1::ContainerPreferredAllocationRequest& asked =
        requests.back().container_requests(0);
    EXPECT_EQ(AsSet(asked.available_deviceids()), AsSet(c.expected_available));
    EXPECT_EQ(AsSet(asked.must_include_deviceids()), AsSet(c.expected_must_include));
    EXPECT_EQ(asked.must_include_deviceids_size(),
              static_cast<int>(c.expected_must_include.size()));  // No device twice.
    EXPECT_EQ(asked.allocation_size(), c.expected_size);

    // What the container got: the requested count, every must-include device among them.
    const std::set<std::string> held = node.Held("podUID", "containerName", kResource);
    EXPECT_EQ(static_cast<int64_t>(held.size()), c.request);
    EXPECT_THAT(held, IsSupersetOf(c.expected_must_include));
  }
}

// --- TestGetPodDeviceRequest -----------------------------------------------------------------

struct PodRequestCase {
  std::string description;
  Pod pod;
  // Resource → PodDeviceRequest(); every other resource asked below must give 0.
  std::map<std::string, int64_t> expected;
};

// cpu and memory limits next to the devices, as upstream writes them: not extended resources.
std::map<std::string, std::string> CpuMem(const std::string& cpu) {
  return {{"cpu", cpu}, {"memory", "1G"}};
}

// upstream checks getPodDeviceRequest, which also drops resources no plugin registered; kdp's
// PodDeviceRequest() is per resource and the registration filter is GetPodTopologyHints' (see the
// pod-scope cases with "notRegistered" above).
TEST(TopologyHints, TestGetPodDeviceRequest) {
  const std::vector<PodRequestCase> cases = {
      {.description = "empty pod", .pod = MakePod("pod", {}, {}), .expected = {}},
      {.description = "Init container requests device plugin resource",
       .pod = MakePod("pod", {Init("", {{kGpu, 2}}, CpuMem("2"))}, {}),
       .expected = {{kGpu, 2}}},
      {.description = "Init containers request device plugin resource",
       .pod = MakePod("pod",
                      {Init("", {{kGpu, 2}}, CpuMem("2")), Init("", {{kGpu, 4}}, CpuMem("2"))}, {}),
       .expected = {{kGpu, 4}}},
      {.description = "User container requests device plugin resource",
       .pod = MakePod("pod", {}, {App("", {{kGpu, 2}}, CpuMem("2"))}),
       .expected = {{kGpu, 2}}},
      {.description =
           "Init containers and user containers request the same amount of device plugin "
           "resources",
       .pod = MakePod("pod",
                      {Init("", {{kGpu, 2}, {kNic, 2}}, CpuMem("2")),
                       Init("", {{kGpu, 2}, {kNic, 2}}, CpuMem("2"))},
                      {App("", {{kGpu, 1}, {kNic, 1}}, CpuMem("2")),
                       App("", {{kGpu, 1}, {kNic, 1}}, CpuMem("2"))}),
       .expected = {{kGpu, 2}, {kNic, 2}}},
      {.description = "Init containers request more device plugin resources than user containers",
       .pod = MakePod(
           "pod",
           {Init("", {{kGpu, 2}, {kNic, 1}}, CpuMem("2")),
            Init("", {{kGpu, 3}, {kNic, 2}}, CpuMem("2"))},
           {App("", {{kGpu, 1}, {kNic, 1}}, CpuMem("1")), App("", {{kGpu, 1}}, CpuMem("1"))}),
       .expected = {{kGpu, 3}, {kNic, 2}}},
      {.description = "User containers request more device plugin resources than init containers",
       .pod = MakePod("pod",
                      {Init("", {{kGpu, 2}, {kNic, 1}}, CpuMem("2")),
                       Init("", {{kGpu, 2}, {kNic, 1}}, CpuMem("2"))},
                      {App("", {{kGpu, 3}, {kNic, 2}}, CpuMem("1")),
                       App("", {{kGpu, 3}, {kNic, 2}}, CpuMem("1"))}),
       .expected = {{kGpu, 6}, {kNic, 4}}},
      // kdp: restartable init containers (sidecars) count with the app containers and with every
      // regular init container started after them (resource.PodLimits).
      {.description = "(kdp) sidecar before a regular init container adds to its peak",
       .pod = MakePod("pod", {Sidecar("", {{kGpu, 2}}), Init("", {{kGpu, 3}})},
                      {App("", {{kGpu, 2}})}),
       .expected = {{kGpu, 5}}},
      {.description = "(kdp) sidecar after a regular init container adds to the app containers",
       .pod = MakePod("pod", {Init("", {{kGpu, 3}}), Sidecar("", {{kGpu, 2}})},
                      {App("", {{kGpu, 2}})}),
       .expected = {{kGpu, 4}}},
  };
  for (const PodRequestCase& c : cases) {
    SCOPED_TRACE(c.description);
    for (const std::string& resource : std::vector<std::string>{kGpu, kNic, "cpu", "memory"}) {
      auto it = c.expected.find(resource);
      EXPECT_EQ(PodDeviceRequest(c.pod, resource), it == c.expected.end() ? 0 : it->second)
          << resource;
    }
  }
}

// --- Hints restricted to the NUMA nodes hosting devices (PR #138244, issue #131735) -----------

// An 8-node machine whose devices sit on nodes 0 and 5: the hints name subsets of {0, 5} only
// (3 masks instead of the kubelet's 255), in enumeration order, preferred as upstream marks them.
TEST(TopologyHints, HintsNameOnlySubsetsOfNodesHostingDevices) {
  HintNode node({0, 1, 2, 3, 4, 5, 6, 7}, {"pod"});
  ASSERT_TRUE(node.started().ok()) << node.started();
  ASSERT_NE(node.AddResource(kTestDevice, {NumaDevice("Dev0", 0), NumaDevice("Dev1", 0),
                                           NumaDevice("Dev2", 5), NumaDevice("Dev3", 5)}),
            nullptr);
  auto hints_for = [&](int64_t request) {
    const Pod pod = MakePod("pod", {}, {App("ctr", {{kTestDevice, request}})});
    ProviderHints hints = node.dm().GetTopologyHints(pod, pod.containers[0]);
    EXPECT_EQ(hints, node.dm().GetPodTopologyHints(pod)) << "pod and container scope differ";
    return hints[kTestDevice];
  };
  EXPECT_THAT(hints_for(1), ::testing::Optional(ElementsAre(Hint({0}, true), Hint({5}, true),
                                                            Hint({0, 5}, false))));
  EXPECT_THAT(hints_for(2), ::testing::Optional(ElementsAre(Hint({0}, true), Hint({5}, true),
                                                            Hint({0, 5}, false))));
  EXPECT_THAT(hints_for(3), ::testing::Optional(ElementsAre(Hint({0, 5}, true))));
  EXPECT_THAT(hints_for(4), ::testing::Optional(ElementsAre(Hint({0, 5}, true))));
  EXPECT_THAT(hints_for(5), ::testing::Optional(IsEmpty()));
}

// The subset guard: a device node the machine does not have (a plugin's bogus topology) is never
// enumerated, and the device counts in no mask.
TEST(TopologyHints, MachineNodesGuardDropsDeviceNodesNotOnTheMachine) {
  HintNode node({0, 1}, {"pod"});
  ASSERT_TRUE(node.started().ok()) << node.started();
  ASSERT_NE(node.AddResource(kTestDevice,
                             {NumaDevice("Dev1", 0), NumaDevice("Dev2", 1), NumaDevice("Dev3", 5)}),
            nullptr);
  auto hints_for = [&](int64_t request) {
    const Pod pod = MakePod("pod", {}, {App("ctr", {{kTestDevice, request}})});
    return node.dm().GetTopologyHints(pod, pod.containers[0])[kTestDevice];
  };
  EXPECT_THAT(hints_for(1), ::testing::Optional(UnorderedElementsAreArray(EitherSocket())));
  EXPECT_THAT(hints_for(2), ::testing::Optional(ElementsAre(Hint({0, 1}, true))));
  // Three devices are free, but only two lie on the machine's nodes.
  EXPECT_THAT(hints_for(3), ::testing::Optional(IsEmpty()));
}

// The same rules on GenerateDeviceTopologyHints itself: the machine's nodes bound what a plugin
// reports; without them the devices' own nodes are enumerated; devices on every node of an 8-node
// machine still give every one of the 255 masks (the restriction never drops a hosting node).
TEST(TopologyHints, GenerateDeviceTopologyHintsEnumeratesDeviceNodes) {
  ResourceDevices devices;
  devices.name = kTestDevice;
  devices.devices["Dev0"] = DeviceInfo{.healthy = true, .numa_nodes = {0}};
  devices.devices["Dev1"] = DeviceInfo{.healthy = true, .numa_nodes = {5}};
  devices.devices["Dev2"] = DeviceInfo{.healthy = true, .numa_nodes = {9}};
  const std::set<std::string> all = {"Dev0", "Dev1", "Dev2"};

  EXPECT_EQ(DeviceNumaNodes(devices, {0, 1, 2, 3, 4, 5, 6, 7}), (std::vector<int>{0, 5}));
  EXPECT_EQ(DeviceNumaNodes(devices, {}), (std::vector<int>{0, 5, 9}));
  EXPECT_THAT(GenerateDeviceTopologyHints(devices, {0, 1, 2, 3, 4, 5, 6, 7}, all, {}, 1),
              ElementsAre(Hint({0}, true), Hint({5}, true), Hint({0, 5}, false)));
  EXPECT_THAT(GenerateDeviceTopologyHints(devices, {}, all, {}, 3),
              ElementsAre(Hint({0, 5, 9}, true)));

  ResourceDevices everywhere;
  everywhere.name = kTestDevice;
  std::set<std::string> ids;
  for (int n = 0; n < 8; ++n) {
    everywhere.devices[absl::StrCat("Dev", n)] = DeviceInfo{.healthy = true, .numa_nodes = {n}};
    ids.insert(absl::StrCat("Dev", n));
  }
  const std::vector<TopologyHint> hints =
      GenerateDeviceTopologyHints(everywhere, {0, 1, 2, 3, 4, 5, 6, 7}, ids, {}, 1);
  EXPECT_EQ(hints.size(), 255u);
  int preferred = 0;
  for (const TopologyHint& h : hints) preferred += h.preferred ? 1 : 0;
  EXPECT_EQ(preferred, 8);
}

}  // namespace
}  // namespace kdp::manager
