// AdminServer::GetTopology (kdpctl topology): DRA devices from the node's ResourceSlices with the
// NUMA node of their "numaNode" attribute (bare or domain-qualified), health, and holders from
// the pods' prepared claims as "namespace/pod/container" (only the containers naming the claim).
// The real PodManager, claim controller and DRA manager, with a fake driver; called directly.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/admin/topology_render.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/admin/fake_dra_driver.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::TempDir;
using resourceapi::Kind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kManifest[] = R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].numaNode == 1
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: main
    resources:
      claims:
      - name: gpu
  - name: logger
)";

class GetTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<dra::DraManager>> dra = dra::DraManager::Create(
        {.state_dir = dir_.path(), .claims = &getter_, .plugins = &drivers_});
    ASSERT_TRUE(dra.ok()) << dra.status();
    dra_ = *std::move(dra);
    controller_ = std::make_unique<resourceclaim::PodClaimController>(&store_, dra_.get());
    devices_ = std::make_unique<DeviceManager>(
        DeviceManagerOptions{.plugins_dir = dir_.Path("device-plugins")});
    pods_ = std::make_unique<PodManager>(devices_.get(), nullptr, nullptr, controller_.get());
    devices_->SetActivePodsSource(pods_.get());
    pods_->Restore({});
    server_ = std::make_unique<AdminServer>(
        pods_.get(), devices_.get(),
        AdminDraSources{.resources = &store_, .claims = controller_.get(), .dra = dra_.get()});
    // Four GPUs: on node 0 (bare attribute name), on node 1 (qualified), without NUMA
    // attribute, with a NUMA attribute that is not an integer.
    Json slice = FakeDriverSlice(
        {{{"name", "gpu-0"}, {"attributes", {{"numaNode", {{"int", 0}}}}}},
         {{"name", "gpu-1"}, {"attributes", {{"gpu.example.com/numaNode", {{"int", 1}}}}}},
         {{"name", "gpu-2"}},
         {{"name", "gpu-10"}, {"attributes", {{"numaNode", {{"string", "1"}}}}}}});
    absl::StatusOr<Json> created = store_.Create(Kind::kResourceSlice, slice);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void TearDown() override {
    if (devices_ != nullptr) devices_->Stop();
  }

  kdp::admin::v1::NodeTopology Topology() {
    kdp::admin::v1::NodeTopology topology;
    grpc::Status status = server_->GetTopology(nullptr, nullptr, &topology);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return topology;
  }

  TempDir dir_;
  resourceapi::ObjectStore store_{{.node_name = kFakeDriverNode}};
  resourceclaim::StoreClaimGetter getter_{&store_};
  FakeDrivers drivers_{&store_};
  std::unique_ptr<dra::DraManager> dra_;
  std::unique_ptr<resourceclaim::PodClaimController> controller_;
  std::unique_ptr<DeviceManager> devices_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<AdminServer> server_;
};

// "id numa=N,M health holders" per device of the only resource.
std::vector<std::string> Devices(const kdp::admin::v1::NodeTopology& topology) {
  std::vector<std::string> out;
  EXPECT_EQ(topology.resources_size(), 1);
  if (topology.resources_size() != 1) return out;
  EXPECT_EQ(topology.resources(0).name(), kFakeDriverName);
  EXPECT_EQ(topology.resources(0).kind(), "dra");
  EXPECT_EQ(topology.resources(0).devices_omitted(), 0);
  for (const auto& device : topology.resources(0).devices()) {
    out.push_back(absl::StrCat(device.id(), " numa=", absl::StrJoin(device.numa(), ","), " ",
                               device.health(), " [", absl::StrJoin(device.holders(), ";"), "]"));
  }
  return out;
}

TEST_F(GetTopologyTest, ListsSliceDevicesWithNumaAttributeInNaturalOrder) {
  const kdp::admin::v1::NodeTopology topology = Topology();
  EXPECT_EQ(topology.node_name(), kFakeDriverNode);
  EXPECT_THAT(Devices(topology),
              ElementsAre("node-a/gpu-0 numa=0 Unknown []", "node-a/gpu-1 numa=1 Unknown []",
                          "node-a/gpu-2 numa= Unknown []", "node-a/gpu-10 numa= Unknown []"));
}

TEST_F(GetTopologyTest, HoldersAreTheContainersThatNameTheClaim) {
  kdp::admin::v1::ApplyRequest request;
  request.set_manifest(kManifest);
  request.set_source("all.yaml");
  kdp::admin::v1::ApplyResponse response;
  grpc::Status status = server_->Apply(nullptr, &request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.objects(2).result(), "admitted") << response.DebugString();
  // The class selects the device on NUMA node 1; "logger" does not use the claim.
  const kdp::admin::v1::NodeTopology topology = Topology();
  EXPECT_THAT(Devices(topology),
              ElementsAre("node-a/gpu-0 numa=0 Unknown []",
                          "node-a/gpu-1 numa=1 Unknown [default/trainer/main]",
                          "node-a/gpu-2 numa= Unknown []", "node-a/gpu-10 numa= Unknown []"));
  const std::string tree = TopologyTree(topology, {.ascii = true});
  EXPECT_THAT(tree, HasSubstr("|-- NUMA node 1: CPUs unknown\n"
                              "|   `-- gpu.example.com (DRA)\n"
                              "|       `-- node-a/gpu-1  Unknown  default/trainer/main\n"))
      << tree;
}

TEST_F(GetTopologyTest, APreparedDeviceWhoseSliceIsGoneIsStillShownHeld) {
  kdp::admin::v1::ApplyRequest request;
  request.set_manifest(kManifest);
  kdp::admin::v1::ApplyResponse response;
  ASSERT_TRUE(server_->Apply(nullptr, &request, &response).ok());
  store_.DeleteSlices(kFakeDriverNode);
  EXPECT_THAT(Devices(Topology()),
              ElementsAre("node-a/gpu-1 numa= Unknown [default/trainer/main]"));
}

}  // namespace
}  // namespace kdp::manager
