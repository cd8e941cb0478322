// Pools of several slices (sdk/src/dra/slice_publisher.h, resource_slice.h): counters in slices of
// their own, the 64-device limit, pool.generation and pool.resourceSliceCount kept consistent while
// a pool changes, taint times, several pools; and kdp::ResourceSlicePublisher's slices for pools
// not tied to a node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kdp/resource_slice_publisher.h"
#include "sdk/src/dra/cluster_publisher.h"
#include "sdk/src/dra/slice_publisher.h"
#include "tests/testing/example_names.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"

namespace kdp::internal {
namespace {

using kdp::testing::FakeKubeClient;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::kdp::testing::kGpuDriver;
const SliceTarget kNode{.driver = kGpuDriver, .node_name = "node-1", .node_uid = "node-uid"};
const absl::Time kNow = absl::FromUnixSeconds(1764441819);  // 2025-11-29T18:43:39Z

DraDevice Device(const std::string& name) { return DraDevice{.name = name}; }

// `count` devices "<prefix>-<i>", each consuming one "memory" of counter set "set-<i % 4>".
std::vector<DraDevice> Partitions(int count, const std::string& prefix = "part") {
  std::vector<DraDevice> devices;
  for (int i = 0; i < count; ++i) {
    DraDevice device = Device(prefix + "-" + std::to_string(i));
    device.consumes_counters = {
        {.counter_set = "set-" + std::to_string(i % 4), .counters = {{"memory", "1"}}}};
    devices.push_back(std::move(device));
  }
  return devices;
}

DraPool CounterPool(std::vector<DraDevice> devices, int sets = 4) {
  DraPool pool{.name = "node-1", .devices = std::move(devices)};
  for (int i = 0; i < sets; ++i) {
    pool.shared_counters.push_back(
        {.name = "set-" + std::to_string(i), .counters = {{"memory", "64"}}});
  }
  return pool;
}

std::vector<json> Slices(const FakeKubeClient& client) {
  std::vector<json> out;
  for (const auto& [name, slice] : client.slices()) out.push_back(slice);
  return out;
}

TEST(PoolSliceContents, CountersInSlicesOfTheirOwn) {
  std::vector<json> parts = PoolSliceContents(CounterPool(Partitions(3), 10));
  ASSERT_EQ(parts.size(), 3u);  // 8 + 2 counter sets, then the devices
  EXPECT_EQ(parts[0]["sharedCounters"].size(), 8u);
  EXPECT_FALSE(parts[0].contains("devices"));
  EXPECT_EQ(parts[1]["sharedCounters"].size(), 2u);
  EXPECT_FALSE(parts[1].contains("devices"));
  EXPECT_EQ(parts[2]["devices"].size(), 3u);
  EXPECT_FALSE(parts[2].contains("sharedCounters"));
}

TEST(PoolSliceContents, SixtyFourDevicesWhenTaintsOrCountersElse128) {
  std::vector<DraDevice> plain;
  for (int i = 0; i < 130; ++i) plain.push_back(Device("d-" + std::to_string(i)));
  std::vector<json> parts = PoolSliceContents(DraPool{.name = "p", .devices = plain});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]["devices"].size(), 128u);

  parts = PoolSliceContents(CounterPool(Partitions(130), 4));
  ASSERT_EQ(parts.size(), 4u);  // counters, 64, 64, 2
  EXPECT_EQ(parts[1]["devices"].size(), 64u);
  EXPECT_EQ(parts[2]["devices"].size(), 64u);
  EXPECT_EQ(parts[3]["devices"].size(), 2u);

  // 100 plain devices, then a tainted one: it opens a slice of its own kind.
  plain.resize(100);
  plain.push_back(Device("tainted"));
  plain.back().taints = {{.key = "k", .value = "v", .effect = TaintEffect::kNoSchedule}};
  parts = PoolSliceContents(DraPool{.name = "p", .devices = plain});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]["devices"].size(), 100u);
  EXPECT_EQ(parts[1]["devices"].size(), 1u);
}

TEST(PoolSliceContents, EmptyPoolIsOneSliceWithoutDevices) {
  std::vector<json> parts = PoolSliceContents(DraPool{.name = "p"});
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0], json::parse(R"({"devices": []})"));
}

// Forwards to a FakeKubeClient and, after every write, checks what a reader of the pool sees: the
// slices of its highest generation, once as many as their resourceSliceCount, must be exactly the
// old pool's devices or the new one's, never a mix.
class CheckingClient final : public KubeClient {
 public:
  CheckingClient(FakeKubeClient& fake, std::set<std::string> before, std::set<std::string> after)
      : fake_(fake), before_(std::move(before)), after_(std::move(after)) {}
  absl::StatusOr<json> Get(const std::string& path) override { return fake_.Get(path); }
  absl::StatusOr<json> Post(const std::string& path, const json& body) override {
    return Check(fake_.Post(path, body));
  }
  absl::StatusOr<json> Put(const std::string& path, const json& body) override {
    return Check(fake_.Put(path, body));
  }
  absl::StatusOr<json> Delete(const std::string& path) override {
    return Check(fake_.Delete(path));
  }
  int complete_views = 0;

 private:
  absl::StatusOr<json> Check(absl::StatusOr<json> result) {
    int64_t generation = -1;
    for (const json& slice : Slices(fake_)) {
      generation = std::max<int64_t>(generation, slice["spec"]["pool"]["generation"]);
    }
    std::set<std::string> devices;
    int64_t seen = 0, count = 0;
    for (const json& slice : Slices(fake_)) {
      if (slice["spec"]["pool"]["generation"] != generation) continue;
      ++seen;
      count = slice["spec"]["pool"]["resourceSliceCount"];
      for (const json& d : slice["spec"].value("devices", json::array())) devices.insert(d["name"]);
    }
    if (seen == count) {
      ++complete_views;
      EXPECT_TRUE(devices == before_ || devices == after_) << "a complete pool mixes generations";
    }
    return result;
  }
  FakeKubeClient& fake_;
  const std::set<std::string> before_, after_;
};

std::set<std::string> Names(const std::vector<DraDevice>& devices) {
  std::set<std::string> names;
  for (const DraDevice& d : devices) names.insert(d.name);
  return names;
}

TEST(ReconcilePools, GenerationAndSliceCountStayConsistentAcrossAChange) {
  FakeKubeClient fake;
  ASSERT_TRUE(ReconcilePools(fake, kNode, {CounterPool(Partitions(100, "old"))}, kNow).ok());
  std::vector<json> slices = Slices(fake);
  ASSERT_EQ(slices.size(), 3u);  // counters, 64, 36
  for (const json& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"],
              json::parse(R"({"name": "node-1", "generation": 1, "resourceSliceCount": 3})"));
    EXPECT_EQ(slice["spec"]["nodeName"], "node-1");
    EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
  }

  // Grow to 4 slices with other devices: every write is checked by the reader's view.
  CheckingClient checking(fake, Names(Partitions(100, "old")), Names(Partitions(150, "new")));
  ASSERT_TRUE(ReconcilePools(checking, kNode, {CounterPool(Partitions(150, "new"))}, kNow).ok());
  EXPECT_GT(checking.complete_views, 0);
  slices = Slices(fake);
  ASSERT_EQ(slices.size(), 4u);  // counters, 64, 64, 22
  for (const json& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 2);
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 4);
  }

  // Shrink to 2: the surplus slices go last.
  CheckingClient shrinking(fake, Names(Partitions(150, "new")), Names(Partitions(10, "few")));
  ASSERT_TRUE(ReconcilePools(shrinking, kNode, {CounterPool(Partitions(10, "few"))}, kNow).ok());
  slices = Slices(fake);
  ASSERT_EQ(slices.size(), 2u);
  for (const json& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"],
              json::parse(R"({"name": "node-1", "generation": 3, "resourceSliceCount": 2})"));
  }
  // Unchanged: nothing written, the generation stays.
  fake.ClearRequests();
  ASSERT_TRUE(ReconcilePools(fake, kNode, {CounterPool(Partitions(10, "few"))}, kNow).ok());
  EXPECT_EQ(fake.requests().size(), 1u);
}

TEST(ReconcilePools, SeveralPoolsAndTheRemovalOfOne) {
  FakeKubeClient fake;
  std::vector<DraPool> pools = {DraPool{.name = {}, .devices = {Device("gpu-0")}},
                                DraPool{.name = "node-1-nics", .devices = {Device("nic-0")}}};
  ASSERT_TRUE(ReconcilePools(fake, kNode, pools, kNow).ok());
  std::set<std::string> names;
  for (const json& slice : Slices(fake)) names.insert(slice["spec"]["pool"]["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"node-1", "node-1-nics"}));
  pools.pop_back();
  ASSERT_TRUE(ReconcilePools(fake, kNode, pools, kNow).ok());
  ASSERT_EQ(Slices(fake).size(), 1u);
  EXPECT_EQ(Slices(fake)[0]["spec"]["pool"]["name"], "node-1");
}

TEST(ReconcilePools, TaintTimeIsSetOnceAndKept) {
  FakeKubeClient fake;
  DraDevice gpu = Device("gpu-0");
  gpu.taints = {{.key = "gpu.example.com/xid", .value = "79", .effect = TaintEffect::kNoExecute}};
  DraPool pool{.name = {}, .devices = {gpu}};
  ASSERT_TRUE(ReconcilePools(fake, kNode, {pool}, kNow).ok());
  const json taint = Slices(fake)[0]["spec"]["devices"][0]["taints"][0];
  EXPECT_EQ(taint, json::parse(R"({"key": "gpu.example.com/xid", "value": "79",
                                   "effect": "NoExecute", "timeAdded": "2025-11-29T18:43:39Z"})"));
  // Later, with another device added: the taint keeps its first time.
  pool.devices.push_back(Device("gpu-1"));
  ASSERT_TRUE(ReconcilePools(fake, kNode, {pool}, kNow + absl::Hours(1)).ok());
  EXPECT_EQ(Slices(fake)[0]["spec"]["devices"][0]["taints"][0]["timeAdded"],
            "2025-11-29T18:43:39Z");
  EXPECT_EQ(Slices(fake)[0]["spec"]["pool"]["generation"], 2);
  // Unchanged taints write nothing.
  fake.ClearRequests();
  ASSERT_TRUE(ReconcilePools(fake, kNode, {pool}, kNow + absl::Hours(2)).ok());
  EXPECT_EQ(fake.requests().size(), 1u);
}

ResourceSlicePublisherOptions ClusterOptions() {
  return {.driver = "net.example.com",
          .kubeconfig = {},
          .api_timeout = absl::Seconds(10),
          .owner = SliceOwner{.api_version = "example.com/v1",
                              .kind = "Fabric",
                              .name = "fabric-a",
                              .uid = "fabric-uid"},
          .initial_backoff = absl::Milliseconds(5),
          .max_backoff = absl::Milliseconds(20)};
}

TEST(ResourceSlicePublisher, PublishesPoolsWithoutANode) {
  auto fake = std::make_shared<FakeKubeClient>();
  absl::StatusOr<std::unique_ptr<ResourceSlicePublisher>> publisher =
      ResourceSlicePublisherFactory::Make(ClusterOptions(), fake, [] { return kNow; });
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  EXPECT_FALSE((*publisher)->WaitUntilPublished(absl::ZeroDuration()));

  DraPool everywhere{.name = "fabric-a", .devices = {Device("nic-0")}, .all_nodes = true};
  DraPool racks{.name = "fabric-a/racks", .devices = {Device("switch-0")}};
  racks.node_selector = NodeSelector{
      .terms = {{.match_expressions = {{.key = "rack", .op = "In", .values = {"r1"}}}}}};
  DraPool per_device{.name = "fabric-a/ports", .per_device_node_selection = true};
  per_device.devices = {Device("port-0"), Device("port-1")};
  per_device.devices[0].node_name = "node-1";
  per_device.devices[1].all_nodes = true;
  ASSERT_TRUE((*publisher)->Publish({everywhere, racks, per_device}).ok());
  ASSERT_TRUE((*publisher)->WaitUntilPublished(absl::Seconds(20)));

  std::map<std::string, json> by_pool;
  for (const json& slice : Slices(*fake)) by_pool[slice["spec"]["pool"]["name"]] = slice;
  ASSERT_EQ(by_pool.size(), 3u);
  for (const auto& [name, slice] : by_pool) {
    EXPECT_FALSE(slice["spec"].contains("nodeName")) << name;
    EXPECT_EQ(slice["metadata"]["ownerReferences"], json::parse(R"([{
      "apiVersion": "example.com/v1", "kind": "Fabric", "name": "fabric-a", "uid": "fabric-uid",
      "controller": true}])"));
    EXPECT_THAT(slice["metadata"]["name"].get<std::string>(),
                ::testing::StartsWith("fabric-a-net.example.com-"));
  }
  EXPECT_EQ(by_pool["fabric-a"]["spec"]["allNodes"], true);
  EXPECT_EQ(by_pool["fabric-a/racks"]["spec"]["nodeSelector"], json::parse(R"({
    "nodeSelectorTerms": [{"matchExpressions": [
      {"key": "rack", "operator": "In", "values": ["r1"]}]}]})"));
  const json& ports = by_pool["fabric-a/ports"]["spec"];
  EXPECT_EQ(ports["perDeviceNodeSelection"], true);
  EXPECT_FALSE(ports.contains("allNodes"));
  EXPECT_EQ(ports["devices"][0]["nodeName"], "node-1");
  EXPECT_EQ(ports["devices"][1]["allNodes"], true);
  // Listed as the Go controller lists them: the driver's slices without a nodeName.
  EXPECT_EQ(fake->CountRequests("GET " + ResourceSliceListPath("", "net.example.com")), 1);
  EXPECT_EQ(fake->CountRequests("GET /api/v1/nodes"), 0);

  // A pool dropped is deleted; a node plugin's slice of the same driver is left alone.
  fake->AddSlice("node-local",
                 SliceJson({.driver = "net.example.com", .node_name = "node-1", .node_uid = "u"}, 1,
                           1, json::array()));
  ASSERT_TRUE((*publisher)->Publish({everywhere}).ok());
  ASSERT_TRUE((*publisher)->WaitUntilPublished(absl::Seconds(20)));
  std::set<std::string> pools;
  for (const json& slice : Slices(*fake)) pools.insert(slice["spec"]["pool"]["name"]);
  EXPECT_EQ(pools, (std::set<std::string>{"fabric-a", "node-1"}));
  (*publisher)->Stop();
  EXPECT_EQ((*publisher)->Publish({everywhere}).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ResourceSlicePublisher, WithoutOwnerNoReferenceAndTheDriversName) {
  auto fake = std::make_shared<FakeKubeClient>();
  ResourceSlicePublisherOptions options = ClusterOptions();
  options.owner.reset();
  auto publisher = ResourceSlicePublisherFactory::Make(options, fake);
  ASSERT_TRUE(publisher.ok());
  ASSERT_TRUE((*publisher)->Publish({DraPool{.name = "p", .all_nodes = true}}).ok());
  ASSERT_TRUE((*publisher)->WaitUntilPublished(absl::Seconds(20)));
  const json slice = Slices(*fake).at(0);
  EXPECT_FALSE(slice["metadata"].contains("ownerReferences"));
  EXPECT_THAT(slice["metadata"]["name"].get<std::string>(),
              ::testing::StartsWith("net.example.com-"));
}

TEST(ResourceSlicePublisher, RejectsInvalidPoolsAndOptions) {
  auto fake = std::make_shared<FakeKubeClient>();
  auto publisher = ResourceSlicePublisherFactory::Make(ClusterOptions(), fake);
  ASSERT_TRUE(publisher.ok());
  absl::Status status = (*publisher)->Publish({DraPool{.name = "p", .devices = {Device("n")}}});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("pool \"p\": spec: Required value: exactly one of"));
  EXPECT_TRUE(fake->requests().empty());

  ResourceSlicePublisherOptions options = ClusterOptions();
  options.owner = SliceOwner{.api_version = "v1", .kind = "Node", .name = "n", .uid = "u"};
  EXPECT_THAT(ResourceSlicePublisherFactory::Make(options, fake).status().message(),
              HasSubstr("a Node owns a node plugin's slices"));
  options = ClusterOptions();
  options.driver = "Not A Driver";
  EXPECT_EQ(ResourceSlicePublisherFactory::Make(options, fake).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A node plugin overriding DiscoverPools(): validated, named after the node, Devices() is the
// node's pool.
class PoolsDriver final : public DraDriver {
 public:
  PoolsDriver() : DraDriver("gpu.example.com") {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override { return {}; }
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
    return {};
  }
  absl::StatusOr<std::vector<DraPool>> DiscoverPools() override { return pools; }
  std::vector<DraPool> pools;
};

TEST(DraDriver, PublishValidatesDiscoverPools) {
  PoolsDriver driver;
  driver.pools = {CounterPool(Partitions(2), 2)};
  driver.pools[0].name = {};
  ASSERT_TRUE(driver.Publish().ok());
  EXPECT_EQ(driver.Devices().size(), 2u);
  EXPECT_EQ(driver.Pools().at(0).shared_counters.size(), 2u);
  driver.pools[0].devices[0].consumes_counters[0].counter_set = "set-7";
  EXPECT_THAT(driver.Publish().message(), HasSubstr("\"set-7\" is not a counter set of this pool"));
  EXPECT_EQ(driver.Devices().size(), 2u);  // the previous pools stay
  driver.pools = {DraPool{.name = "x", .all_nodes = true}};
  EXPECT_THAT(driver.Publish().message(), HasSubstr("a node plugin's pool gets the node's"));
}

TEST(DraDriver, NeitherDiscoverNorDiscoverPoolsIsUnimplemented) {
  class Bare final : public DraDriver {
   public:
    Bare() : DraDriver("gpu.example.com") {}
    std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override { return {}; }
    std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
      return {};
    }
  } bare;
  EXPECT_EQ(bare.Publish().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kdp::internal
