#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sdk/src/dra/slice_publisher.h"
#include "tests/testing/example_names.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"
#include "tests/unit/sdk/test_names.h"

namespace kdp::internal {
namespace {

using kdp::testing::FakeKubeClient;
using nlohmann::json;
using ::testing::ElementsAre;

using ::kdp::testing::kGpuDriver;
using ::kdp::testing::kNode;

const SliceTarget kTarget{.driver = kGpuDriver, .node_name = kNode, .node_uid = "node-uid"};

std::vector<DraDevice> Devices(int count, const std::string& model = "A100") {
  std::vector<DraDevice> devices;
  for (int i = 0; i < count; ++i) {
    devices.push_back(DraDevice{
        .name = "gpu-" + std::to_string(i), .attributes = {{"model", model}}, .capacity = {}});
  }
  return devices;
}

// The node's pool (an empty name: the node's) holding `devices`.
std::vector<DraPool> Pool(std::vector<DraDevice> devices) {
  return {DraPool{.name = {}, .devices = std::move(devices)}};
}

std::vector<json> Slices(const FakeKubeClient& client) {
  std::vector<json> out;
  for (const auto& [name, slice] : client.slices()) out.push_back(slice);
  return out;
}

TEST(ReconcileResourceSlices, CreatesOneSliceOwnedByTheNode) {
  FakeKubeClient client;
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(2)).ok());
  std::vector<json> slices = Slices(client);
  ASSERT_EQ(slices.size(), 1u);
  const json& slice = slices[0];
  EXPECT_EQ(slice["metadata"]["ownerReferences"],
            json::parse(R"([{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                             "uid": "node-uid", "controller": true}])"));
  EXPECT_EQ(slice["spec"]["driver"], kGpuDriver);
  EXPECT_EQ(slice["spec"]["nodeName"], kNode);
  EXPECT_EQ(slice["spec"]["pool"],
            json::parse(R"({"name": "node-1", "generation": 1, "resourceSliceCount": 1})"));
  EXPECT_EQ(slice["spec"]["devices"].size(), 2u);
  EXPECT_THAT(client.requests(), ElementsAre("GET " + ResourceSliceListPath(kNode, kGpuDriver),
                                             "POST /apis/resource.k8s.io/v1/resourceslices"));
}

TEST(ReconcileResourceSlices, UnchangedDevicesWriteNothing) {
  FakeKubeClient client;
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(2)).ok());
  client.ClearRequests();
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(2)).ok());
  EXPECT_THAT(client.requests(), ElementsAre("GET " + ResourceSliceListPath(kNode, kGpuDriver)));
  EXPECT_EQ(Slices(client)[0]["spec"]["pool"]["generation"], 1);
}

TEST(ReconcileResourceSlices, EveryChangeBumpsTheGeneration) {
  FakeKubeClient client;
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(2)).ok());
  const std::string name = client.slices().begin()->first;
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(2, "H100")).ok());
  std::vector<json> slices = Slices(client);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["metadata"]["name"], name);  // Updated in place.
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(slices[0]["spec"]["devices"][0]["attributes"]["model"]["string"], "H100");
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(3, "H100")).ok());
  EXPECT_EQ(Slices(client)[0]["spec"]["pool"]["generation"], 3);
}

TEST(ReconcileResourceSlices, SplitsAndShrinksThePool) {
  FakeKubeClient client;
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(200)).ok());
  std::vector<json> slices = Slices(client);
  ASSERT_EQ(slices.size(), 2u);
  size_t total = 0;
  for (const json& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 1);
    total += slice["spec"]["devices"].size();
  }
  EXPECT_EQ(total, 200u);

  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(10)).ok());
  slices = Slices(client);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["pool"],
            json::parse(R"({"name": "node-1", "generation": 2, "resourceSliceCount": 1})"));
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 10u);
}

TEST(ReconcileResourceSlices, DeletesOtherPoolsButNotOtherDriversSlices) {
  FakeKubeClient client;
  client.AddSlice(
      "wrong-owner",
      SliceJson({.driver = kGpuDriver, .node_name = kNode, .node_uid = "x"}, 7, 1, json::array()));
  client.AddSlice("stale", [] {
    json slice = SliceJson(kTarget, 7, 1, json::array());
    slice["spec"]["pool"]["name"] = "old-pool";
    return slice;
  }());
  client.AddSlice("other-driver",
                  SliceJson({.driver = "net.example.com", .node_name = kNode, .node_uid = "x"}, 1,
                            1, json::array()));
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(1)).ok());
  std::map<std::string, json> slices = client.slices();
  EXPECT_EQ(slices.count("stale"), 0u);
  EXPECT_EQ(slices.count("other-driver"), 1u);
  EXPECT_EQ(slices.count("wrong-owner"), 1u);  // The pool's slice, updated in place.
  ASSERT_EQ(slices.size(), 2u);
}

TEST(ReconcileResourceSlices, AdoptsAnExistingSliceWithAWrongOwner) {
  FakeKubeClient client;
  client.AddSlice("mine", SliceJson({.driver = kGpuDriver, .node_name = kNode, .node_uid = "old"},
                                    4, 1, json::array({DeviceJson(Devices(1)[0])})));
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, Devices(1)).ok());
  json slice = client.slices().at("mine");
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], "node-uid");
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 5);
}

TEST(ReconcileResourceSlices, ReturnsTheApiError) {
  FakeKubeClient client;
  client.FailNext(1, absl::UnavailableError("connection refused"));
  absl::Status status = ReconcileResourceSlices(client, kTarget, Devices(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(client.slices().empty());
}

class PublisherTest : public ::testing::Test {
 protected:
  PublisherTest() : client_(std::make_shared<FakeKubeClient>()) {
    client_->SetObject("/api/v1/nodes/node-1",
                       json::parse(R"({"metadata": {"name": "node-1", "uid": "node-uid"}})"));
  }
  SlicePublisher::Options Options() const {
    return {.driver = kGpuDriver,
            .node_name = kNode,
            .initial_backoff = absl::Milliseconds(5),
            .max_backoff = absl::Milliseconds(20)};
  }
  std::shared_ptr<FakeKubeClient> client_;
};

TEST_F(PublisherTest, PublishesAtStartAndOnEveryPublish) {
  SlicePublisher publisher(Options(), client_);
  publisher.Start(Pool(Devices(1)));
  ASSERT_TRUE(publisher.WaitUntilPublished(absl::Seconds(20)));
  std::vector<json> slices = Slices(*client_);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["metadata"]["ownerReferences"][0]["uid"], "node-uid");
  publisher.Publish(Pool(Devices(4)));
  ASSERT_TRUE(publisher.WaitUntilPublished(absl::Seconds(20)));
  slices = Slices(*client_);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 4u);
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 2);
  // The Node is looked up once.
  EXPECT_EQ(client_->CountRequests("GET /api/v1/nodes/node-1"), 1);
  publisher.Stop();
  publisher.Stop();
}

TEST_F(PublisherTest, RetriesFailuresWithBackoff) {
  client_->FailNext(3, absl::UnavailableError("apiserver down"));
  SlicePublisher publisher(Options(), client_);
  publisher.Start(Pool(Devices(2)));
  ASSERT_TRUE(publisher.WaitUntilPublished(absl::Seconds(20)));
  EXPECT_EQ(Slices(*client_).size(), 1u);
  EXPECT_GE(client_->requests().size(), 5u);
}

TEST_F(PublisherTest, WaitsForTheNode) {
  client_->RemoveObject("/api/v1/nodes/node-1");
  SlicePublisher publisher(Options(), client_);
  publisher.Start(Pool(Devices(1)));
  EXPECT_FALSE(publisher.WaitUntilPublished(absl::Milliseconds(50)));
  EXPECT_TRUE(client_->slices().empty());
  client_->SetObject("/api/v1/nodes/node-1",
                     json::parse(R"({"metadata": {"name": "node-1", "uid": "late-uid"}})"));
  ASSERT_TRUE(publisher.WaitUntilPublished(absl::Seconds(20)));
  EXPECT_EQ(Slices(*client_)[0]["metadata"]["ownerReferences"][0]["uid"], "late-uid");
}

TEST_F(PublisherTest, PublishAfterStopIsIgnored) {
  SlicePublisher publisher(Options(), client_);
  publisher.Stop();
  publisher.Publish(Pool(Devices(1)));
  publisher.Start(Pool(Devices(1)));
  EXPECT_TRUE(client_->requests().empty());
}

}  // namespace
}  // namespace kdp::internal
