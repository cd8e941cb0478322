// kdpctl's JSON contract (docs/kdpctl.md) and text rendering, checked message shape by message
// shape. Expected JSON is written out literally and compared for equality, so a missing, extra
// or renamed key, a number rendered as a string, or a null in place of {} / [] all fail.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/admin/v1/admin.pb.h"
#include "manager/kdpctl/render.h"
#include "nlohmann/json.hpp"

namespace kdp::kdpctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace admin = ::kdp::admin::v1;

admin::Pod GpuPod() {
  admin::Pod pod;
  pod.set_namespace_("default");
  pod.set_name("cuda");
  pod.set_uid("uid-1");
  admin::ContainerStatus* init = pod.add_containers();
  init->set_name("setup");
  init->set_kind("init");
  admin::ContainerStatus* app = pod.add_containers();
  app->set_name("main");
  app->set_kind("app");
  admin::DeviceIds& gpus = (*app->mutable_devices())["example.com/gpu"];
  gpus.add_ids("gpu-3");
  gpus.add_ids("gpu-1");
  (*app->mutable_envs())["VISIBLE_DEVICES"] = "gpu-3,gpu-1";
  admin::Mount* mount = app->add_mounts();
  mount->set_container_path("/usr/lib/driver");
  mount->set_host_path("/opt/driver");
  mount->set_read_only(true);
  admin::DeviceSpec* spec = app->add_device_specs();
  spec->set_container_path("/dev/gpu3");
  spec->set_host_path("/dev/gpu3");
  spec->set_permissions("rw");
  (*app->mutable_annotations())["example.com/owner"] = "team-a";
  app->add_cdi_devices("example.com/gpu=gpu-3");
  app->mutable_topology_hint()->add_numa_nodes(0);
  app->mutable_topology_hint()->set_preferred(true);
  return pod;
}

const char kGpuPodJson[] = R"({
  "admitted": true,
  "pod": {"namespace": "default", "name": "cuda", "uid": "uid-1"},
  "containers": [
    {"name": "setup", "kind": "init", "devices": {}, "envs": {}, "mounts": [],
     "device_specs": [], "annotations": {}, "cdi_devices": [], "numa_affinity": null,
     "allocatedResourcesStatus": []},
    {"name": "main", "kind": "app",
     "devices": {"example.com/gpu": ["gpu-3", "gpu-1"]},
     "envs": {"VISIBLE_DEVICES": "gpu-3,gpu-1"},
     "mounts": [{"container_path": "/usr/lib/driver", "host_path": "/opt/driver",
                 "read_only": true}],
     "device_specs": [{"container_path": "/dev/gpu3", "host_path": "/dev/gpu3",
                       "permissions": "rw"}],
     "annotations": {"example.com/owner": "team-a"},
     "cdi_devices": ["example.com/gpu=gpu-3"],
     "numa_affinity": {"numa_nodes": [0], "preferred": true}, "allocatedResourcesStatus": []}
  ],
  "claims": []
})";

TEST(NodeStatusJson, RendersResourcesDevicesAndNumaAsNumbers) {
  admin::NodeStatus status;
  admin::ResourceStatus* gpu = status.add_resources();
  gpu->set_name("example.com/gpu");
  gpu->set_capacity(int64_t{1} << 40);
  gpu->set_allocatable(3);
  gpu->set_allocated(1);
  gpu->set_connected(true);
  gpu->set_endpoint("/var/lib/kubelet/device-plugins/gpu.sock");
  admin::DeviceStatus* device = gpu->add_devices();
  device->set_id("gpu-0");
  device->set_health("Healthy");
  device->add_numa(1);
  device->add_numa(0);
  device->set_pod("default/train");
  admin::DeviceStatus* bare = gpu->add_devices();
  bare->set_id("gpu-1");
  bare->set_health("Unhealthy");
  status.add_resources()->set_name("example.com/idle");
  status.set_topology_policy("single-numa-node");
  status.set_topology_scope("pod");
  status.add_numa_nodes(0);
  status.add_numa_nodes(8);

  EXPECT_EQ(NodeStatusJson(status), nlohmann::json::parse(R"({
  "topology_policy": "single-numa-node", "topology_scope": "pod", "numa_nodes": [0, 8],
  "node_name": "", "dra_drivers": [], "registered_plugins": [], "prepared_claims": [],
  "resource_api": "", "kubeconfig": "", "dra_device_health": [],
  "resources": [
    {"name": "example.com/gpu", "capacity": 1099511627776, "allocatable": 3, "allocated": 1,
     "connected": true, "removed": false, "endpoint": "/var/lib/kubelet/device-plugins/gpu.sock",
     "devices": [{"id": "gpu-0", "health": "Healthy", "numa": [1, 0], "pod": "default/train"},
                 {"id": "gpu-1", "health": "Unhealthy", "numa": [], "pod": ""}]},
    {"name": "example.com/idle", "capacity": 0, "allocatable": 0, "allocated": 0,
     "connected": false, "removed": false, "endpoint": "", "devices": []}
  ]})"));
}

TEST(NodeStatusJson, EmptyStatusIsAnEmptyArray) {
  EXPECT_EQ(NodeStatusJson(admin::NodeStatus()),
            nlohmann::json::parse(R"({"resources": [], "topology_policy": "",
                                      "topology_scope": "", "numa_nodes": [], "node_name": "",
                                      "dra_drivers": [], "registered_plugins": [],
                                      "prepared_claims": [], "resource_api": "",
                                      "kubeconfig": "", "dra_device_health": []})"));
}

TEST(ContainerJson, EmptyContainerHasEveryKeyWithEmptyObjectsAndArrays) {
  admin::ContainerStatus container;
  container.set_name("c");
  EXPECT_EQ(ContainerJson(container), nlohmann::json::parse(R"(
    {"name": "c", "kind": "", "devices": {}, "envs": {}, "mounts": [], "device_specs": [],
     "annotations": {}, "cdi_devices": [], "numa_affinity": null,
     "allocatedResourcesStatus": []})"));
}

TEST(AdmittedPodJson, RendersPodAndContainersInOrderWithDeviceIdOrderKept) {
  EXPECT_EQ(AdmittedPodJson(GpuPod()), nlohmann::json::parse(kGpuPodJson));
}

TEST(ApplyPodJson, AdmittedIsTheAdmittedPodRendering) {
  admin::ApplyPodResponse response;
  response.set_admitted(true);
  *response.mutable_pod() = GpuPod();
  EXPECT_EQ(ApplyPodJson(response), nlohmann::json::parse(kGpuPodJson));
}

TEST(ApplyPodJson, RejectedHasOnlyAdmittedReasonAndMessage) {
  admin::ApplyPodResponse response;
  response.set_admitted(false);
  response.set_reason("UnexpectedAdmissionError");
  response.set_message("Allocate failed");
  *response.mutable_pod() = GpuPod();  // Ignored for a rejection.
  EXPECT_EQ(ApplyPodJson(response), nlohmann::json::parse(R"(
    {"admitted": false, "reason": "UnexpectedAdmissionError", "message": "Allocate failed"})"));
}

TEST(PodListJson, EachPodIsTheAdmittedPodRendering) {
  admin::ListPodsResponse response;
  *response.add_pods() = GpuPod();
  admin::Pod* bare = response.add_pods();
  bare->set_namespace_("ns");
  bare->set_name("idle");
  bare->set_uid("uid-2");

  nlohmann::json expected = {{"pods", nlohmann::json::array()}};
  expected["pods"].push_back(nlohmann::json::parse(kGpuPodJson));
  expected["pods"].push_back(nlohmann::json::parse(R"(
    {"admitted": true, "pod": {"namespace": "ns", "name": "idle", "uid": "uid-2"},
     "containers": [], "claims": []})"));
  EXPECT_EQ(PodListJson(response), expected);
}

TEST(PodListJson, NoPodsIsAnEmptyArray) {
  EXPECT_EQ(PodListJson(admin::ListPodsResponse()), nlohmann::json::parse(R"({"pods": []})"));
}

TEST(DeletedPodJson, RendersThePodIdentity) {
  EXPECT_EQ(DeletedPodJson("ns", "p", "uid-9"), nlohmann::json::parse(R"(
    {"deleted": true, "pod": {"namespace": "ns", "name": "p", "uid": "uid-9"}})"));
}

TEST(DumpJson, IsIndentedByTwoSpacesAndEndsWithANewline) {
  EXPECT_EQ(DumpJson(nlohmann::json::parse(R"({"a": [1]})")), "{\n  \"a\": [\n    1\n  ]\n}\n");
}

TEST(DumpJson, ReplacesInvalidUtf8InsteadOfThrowing) {
  admin::Pod pod;
  pod.set_name(std::string("bad\xff", 4));
  std::string out = DumpJson(AdmittedPodJson(pod));
  EXPECT_THAT(out, HasSubstr("bad\xEF\xBF\xBD"));  // U+FFFD.
  EXPECT_THAT(out, Not(HasSubstr("null")));
}

TEST(FormatTable, AlignsColumnsWithThreeSpacesAndLeavesTheLastUnpadded) {
  EXPECT_EQ(FormatTable({{"A", "BB", "C"}, {"long", "x", "yyyy"}}),
            "A      BB   C\n"
            "long   x    yyyy\n");
}

TEST(NodeStatusText, ListsResourcesThenDevices) {
  admin::NodeStatus status;
  admin::ResourceStatus* gpu = status.add_resources();
  gpu->set_name("example.com/gpu");
  gpu->set_capacity(2);
  gpu->set_allocatable(1);
  gpu->set_allocated(1);
  gpu->set_connected(true);
  gpu->set_endpoint("/e.sock");
  admin::DeviceStatus* device = gpu->add_devices();
  device->set_id("gpu-0");
  device->set_health("Healthy");
  device->add_numa(0);
  device->add_numa(1);
  device->set_pod("ns/p");
  admin::DeviceStatus* bare = gpu->add_devices();
  bare->set_id("gpu-1");
  bare->set_health("Unhealthy");

  EXPECT_EQ(NodeStatusText(status),
            "RESOURCE          CAPACITY   ALLOCATABLE   ALLOCATED   CONNECTED   ENDPOINT\n"
            "example.com/gpu   2          1             1           yes         /e.sock\n"
            "\n"
            "RESOURCE          DEVICE   HEALTH      NUMA   POD\n"
            "example.com/gpu   gpu-0    Healthy     0,1    ns/p\n"
            "example.com/gpu   gpu-1    Unhealthy   -      -\n");
}

TEST(NodeStatusText, EndsWithTheTopologyManagerLineWhenTheManagerSentOne) {
  admin::NodeStatus status;
  status.set_topology_policy("best-effort");
  status.set_topology_scope("container");
  status.add_numa_nodes(0);
  status.add_numa_nodes(1);
  EXPECT_EQ(NodeStatusText(status),
            "no device-plugin resources registered\n"
            "\n"
            "topology manager: policy best-effort, scope container, NUMA nodes 0,1\n");
}

TEST(TopologyHintText, NamesTheNodesOrAnyAndWhetherPreferred) {
  admin::TopologyHint hint;
  EXPECT_EQ(TopologyHintText(hint), "any (not preferred)");
  hint.add_numa_nodes(0);
  hint.add_numa_nodes(2);
  hint.set_preferred(true);
  EXPECT_EQ(TopologyHintText(hint), "0,2 (preferred)");
}

TEST(NodeStatusText, SaysSoWhenNoResourceIsRegistered) {
  EXPECT_EQ(NodeStatusText(admin::NodeStatus()), "no device-plugin resources registered\n");
}

TEST(ApplyPodText, AdmittedShowsPodThenEachContainersDevicesAndEnv) {
  admin::ApplyPodResponse response;
  response.set_admitted(true);
  *response.mutable_pod() = GpuPod();
  std::string text = ApplyPodText(response);
  EXPECT_THAT(text, StartsWith("pod default/cuda admitted (uid uid-1)\n"
                               "  container setup (init)\n"
                               "    no devices\n"
                               "  container main (app)\n"
                               "    device example.com/gpu=gpu-3,gpu-1\n"
                               "    numa-affinity 0 (preferred)\n"
                               "    env VISIBLE_DEVICES=gpu-3,gpu-1\n"));
  EXPECT_THAT(text, HasSubstr("    mount /opt/driver -> /usr/lib/driver (ro)\n"));
  EXPECT_THAT(text, HasSubstr("    cdi example.com/gpu=gpu-3\n"));
}

TEST(ApplyPodText, RejectedNamesReasonAndMessage) {
  admin::ApplyPodResponse response;
  response.set_reason("UnexpectedAdmissionError");
  response.set_message("Allocate failed");
  EXPECT_EQ(ApplyPodText(response), "pod rejected: UnexpectedAdmissionError: Allocate failed\n");
  response.clear_reason();
  EXPECT_EQ(ApplyPodText(response), "pod rejected: Allocate failed\n");
}

TEST(PodListText, OneRowPerPodWithContainerDevices) {
  admin::ListPodsResponse response;
  *response.add_pods() = GpuPod();
  admin::Pod* bare = response.add_pods();
  bare->set_namespace_("ns");
  bare->set_name("idle");
  bare->set_uid("uid-2");
  EXPECT_EQ(PodListText(response),
            "NAMESPACE   NAME   UID     DEVICES                            HEALTH   STATUS\n"
            "default     cuda   uid-1   main:example.com/gpu=gpu-3,gpu-1   -        Running\n"
            "ns          idle   uid-2   -                                  -        Running\n");
}

TEST(PodListText, TerminatingPodsSaySo) {
  admin::ListPodsResponse response;
  *response.add_pods() = GpuPod();
  response.mutable_pods(0)->set_terminating(true);
  EXPECT_THAT(PodListText(response), ::testing::HasSubstr("   -        Terminating\n"));
  // JSON: the key only when set, so that a running pod's rendering is unchanged.
  EXPECT_EQ(AdmittedPodJson(response.pods(0))["terminating"], true);
  EXPECT_FALSE(AdmittedPodJson(GpuPod()).contains("terminating"));
}

TEST(PodListText, HealthColumnNamesDevicesThatAreNotHealthy) {
  admin::ListPodsResponse response;
  admin::Pod* pod = response.add_pods();
  *pod = GpuPod();
  auto* status = pod->mutable_containers(0)->add_allocated_resources_status();
  status->set_name("example.com/gpu");
  auto* healthy = status->add_resources();
  healthy->set_resource_id("gpu-3");
  healthy->set_health("Healthy");
  EXPECT_THAT(PodListText(response), ::testing::HasSubstr("   ok       Running\n"));
  auto* sick = status->add_resources();
  sick->set_resource_id("gpu-1");
  sick->set_health("Unhealthy");
  EXPECT_THAT(PodListText(response), ::testing::HasSubstr("   gpu-1=Unhealthy   Running\n"));

  nlohmann::json json = AdmittedPodJson(*pod);
  EXPECT_EQ(json["containers"][0]["allocatedResourcesStatus"],
            nlohmann::json::parse(R"([{"name":"example.com/gpu","resources":[
                {"resourceID":"gpu-3","health":"Healthy"},
                {"resourceID":"gpu-1","health":"Unhealthy"}]}])"));
  EXPECT_THAT(ApplyPodText([&] {
                admin::ApplyPodResponse r;
                r.set_admitted(true);
                *r.mutable_pod() = *pod;
                return r;
              }()),
              ::testing::HasSubstr("    health example.com/gpu gpu-1 Unhealthy\n"));
}

TEST(PodListText, SaysSoWhenThereAreNoPods) {
  EXPECT_EQ(PodListText(admin::ListPodsResponse()), "no pods\n");
}

}  // namespace
}  // namespace kdp::kdpctl

namespace kdp::kdpctl {
namespace {

namespace dra_admin = ::kdp::admin::v1;

dra_admin::Pod PodWithClaim() {
  dra_admin::Pod pod;
  pod.set_namespace_("default");
  pod.set_name("trainer");
  pod.set_uid("uid-7");
  dra_admin::PodClaim* claim = pod.add_claims();
  claim->set_pod_claim_name("gpus");
  claim->set_claim_name("trainer-gpus-x7k2p");
  claim->set_claim_uid("claim-uid");
  dra_admin::ClaimDevice* device = claim->add_devices();
  device->set_driver("gpu.example.com");
  device->set_pool("node-a");
  device->set_device("gpu0");
  device->add_requests("gpus");
  device->add_cdi_device_ids("gpu.example.com/gpu=claim-uid-gpu0");
  return pod;
}

TEST(PodClaimJson, RendersEveryClaimWithItsDevicesAndCdiIds) {
  EXPECT_EQ(AdmittedPodJson(PodWithClaim())["claims"], nlohmann::json::parse(R"([
    {"pod_claim_name": "gpus", "claim_name": "trainer-gpus-x7k2p", "claim_uid": "claim-uid",
     "devices": [{"driver": "gpu.example.com", "pool": "node-a", "device": "gpu0",
                  "requests": ["gpus"],
                  "cdi_device_ids": ["gpu.example.com/gpu=claim-uid-gpu0"]}]}])"));
}

TEST(ApplyText, ShowsClaimsAndCreatedObjectsAsKubectlDoes) {
  dra_admin::ApplyResponse response;
  dra_admin::AppliedObject* klass = response.add_objects();
  klass->set_kind("DeviceClass");
  klass->set_name("gpu.example.com");
  klass->set_result("created");
  dra_admin::AppliedObject* pod = response.add_objects();
  pod->set_kind("Pod");
  pod->mutable_pod()->set_admitted(true);
  *pod->mutable_pod()->mutable_pod() = PodWithClaim();
  const std::string text = ApplyText(response);
  EXPECT_THAT(text, ::testing::StartsWith("deviceclass.resource.k8s.io/gpu.example.com created\n"
                                          "pod default/trainer admitted (uid uid-7)\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "  claim gpus -> resourceclaim trainer-gpus-x7k2p (uid claim-uid)\n"
                        "    device gpu.example.com/node-a/gpu0 for gpus\n"
                        "      cdi gpu.example.com/gpu=claim-uid-gpu0\n"));
}

TEST(ApplyJson, OneObjectIsItselfSeveralAreAList) {
  dra_admin::ApplyResponse response;
  dra_admin::AppliedObject* klass = response.add_objects();
  klass->set_kind("ResourceClaimTemplate");
  klass->set_namespace_("default");
  klass->set_name("two-gpus");
  klass->set_result("created");
  EXPECT_EQ(ApplyJson(response), nlohmann::json::parse(R"(
    {"kind": "ResourceClaimTemplate", "namespace": "default", "name": "two-gpus",
     "result": "created"})"));
  dra_admin::AppliedObject* pod = response.add_objects();
  pod->set_kind("Pod");
  pod->mutable_pod()->set_admitted(false);
  pod->mutable_pod()->set_reason("FailedScheduling");
  pod->mutable_pod()->set_message("no");
  const nlohmann::json list = ApplyJson(response);
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][1], nlohmann::json::parse(R"(
    {"admitted": false, "reason": "FailedScheduling", "message": "no"})"));
}

TEST(DraStatusText, ListsDriversAndPreparedClaims) {
  dra_admin::NodeStatus status;
  status.set_node_name("node-a");
  status.set_resource_api("https://127.0.0.1:4321");
  status.set_kubeconfig("/root/kdp/kubeconfig");
  dra_admin::DraDriverStatus* driver = status.add_dra_drivers();
  driver->set_name("gpu.example.com");
  dra_admin::DraPluginEndpoint* endpoint = driver->add_endpoints();
  endpoint->set_endpoint("/root/plugins/gpu.example.com/dra.sock");
  endpoint->set_service("v1.DRAPlugin");
  endpoint->set_connected(true);
  dra_admin::PreparedClaim* claim = status.add_prepared_claims();
  claim->set_namespace_("default");
  claim->set_name("c");
  claim->set_uid("u");
  claim->add_pods("default/p");
  claim->set_prepared(true);
  const std::string text = NodeStatusText(status);
  EXPECT_THAT(text, ::testing::HasSubstr("no device-plugin resources registered\n"));
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "gpu.example.com   /root/plugins/gpu.example.com/dra.sock   v1.DRAPlugin   yes"));
  EXPECT_THAT(text, ::testing::HasSubstr("default     c       u     default/p   yes        -"));
  EXPECT_THAT(text,
              ::testing::HasSubstr("node node-a; resource API https://127.0.0.1:4321 (kubeconfig "
                                   "/root/kdp/kubeconfig)"));
}

}  // namespace
}  // namespace kdp::kdpctl
