// kdp-manager and kdp-gpu-plugin as separate processes over real sockets in a temporary kubelet
// root: registration, health, admission with the kubelet's rules and texts, restarts, PodResources.
#include <grpcpp/grpcpp.h>

#include <set>

#include "absl/strings/str_replace.h"
#include "common/unix_socket.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/integration/e2e_fixture.h"
#include "tests/testing/example_names.h"

namespace kdp::testing {
namespace {

class GpuPluginE2E : public E2ETest {
 protected:
  void SetUp() override {
    StartManager();
    StartGpuPlugin();
    ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << Status().dump() << plugin_->Output();
  }

  // NUMA node of each device, from kdpctl status.
  std::map<std::string, int> NumaOf() {
    std::map<std::string, int> out;
    nlohmann::json devices = Resource(kGpuResource)["devices"];
    for (const auto& d : devices) out[d["id"]] = d["numa"][0];
    return out;
  }
};

TEST_F(GpuPluginE2E, ListsEightHealthyGpusFourPerNumaNode) {
  nlohmann::json r = Resource(kGpuResource);
  ASSERT_EQ(r["devices"].size(), 8u);
  std::map<int, int> per_node;
  for (const auto& d : r["devices"]) {
    EXPECT_EQ(d["health"], "Healthy");
    ASSERT_EQ(d["numa"].size(), 1u);
    ++per_node[d["numa"][0].get<int>()];
  }
  EXPECT_EQ(per_node, (std::map<int, int>{{0, 4}, {1, 4}}));
}

TEST_F(GpuPluginE2E, AdmitsPodWithThePluginsAllocateAnswerOnOneNumaNode) {
  KdpctlResult result = Apply(GpuPod("two", 2));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  ASSERT_TRUE(result.json["admitted"]);
  const auto& container = result.json["containers"][0];
  std::vector<std::string> ids = container["devices"][kGpuResource];
  ASSERT_EQ(ids.size(), 2u);
  auto numa = NumaOf();
  EXPECT_EQ(numa[ids[0]], numa[ids[1]]) << "GetPreferredAllocation keeps the pair on one node";
  EXPECT_FALSE(container["envs"].empty());
  EXPECT_FALSE(container["device_specs"].empty());
  EXPECT_EQ(container["cdi_devices"].size(), 2u);
  EXPECT_TRUE(
      WaitForAllocatable(kGpuResource, 8));  // Allocatable counts healthy devices, as upstream.
  nlohmann::json status = Resource(kGpuResource);
  EXPECT_EQ(status["allocated"], 2);
  for (const auto& d : status["devices"]) {
    bool held = d["id"] == ids[0] || d["id"] == ids[1];
    EXPECT_EQ(d["pod"], held ? "default/two" : "") << d.dump();
  }
}

TEST_F(GpuPluginE2E, RejectsARequestLargerThanTheFreeDevicesWithTheKubeletsText) {
  KdpctlResult result = Apply(GpuPod("too-many", 9));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_FALSE(result.json["admitted"]);
  EXPECT_EQ(result.json["reason"], "UnexpectedAdmissionError");
  EXPECT_EQ(result.json["message"],
            "Allocate failed due to requested number of devices unavailable for example.com/gpu. "
            "Requested: 9, Available: 8, which is unexpected");
}

TEST_F(GpuPluginE2E, AResourceNoPluginServesRejectsThePodAsTheKubeletsPredicateDoes) {
  // Never admitted without the devices it asked for (kubernetes #109595's symptom).
  KdpctlResult result = Apply(GpuPod("nic", 2, "example.com/nic"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_FALSE(result.json["admitted"]);
  EXPECT_EQ(result.json["reason"], "OutOfexample.com/nic");
  EXPECT_EQ(result.json["message"],
            "Node didn't have enough resource: example.com/nic, requested: 2, used: 0, "
            "capacity: 0");
  EXPECT_EQ(Apply(GpuPod("zero", 0, "example.com/nic")).exit_code, 0) << "a zero count is fine";
}

TEST_F(GpuPluginE2E, DeletingAPodFreesItsDevices) {
  ASSERT_EQ(Apply(GpuPod("all", 8)).exit_code, 0);
  KdpctlResult second = Apply(GpuPod("one", 1));
  EXPECT_EQ(second.json["message"],
            "Allocate failed due to requested number of devices unavailable for example.com/gpu. "
            "Requested: 1, Available: 0, which is unexpected");
  ASSERT_EQ(Kdpctl({"delete", "pod", "all"}).exit_code, 0);
  EXPECT_EQ(Apply(GpuPod("one", 1)).exit_code, 0);
  EXPECT_EQ(Kdpctl({"get", "pods"}).json["pods"].size(), 1u);
}

TEST_F(GpuPluginE2E, RefusesASecondPodWithTheSameNameOrUid) {
  ASSERT_EQ(Apply(GpuPod("same", 1)).exit_code, 0);
  // Applied again as it runs: unchanged, as kubectl apply says; changed: refused.
  KdpctlResult unchanged = Apply(GpuPod("same", 1));
  EXPECT_EQ(unchanged.exit_code, 0) << unchanged.err;
  EXPECT_THAT(unchanged.out, ::testing::HasSubstr("\"unchanged\"")) << unchanged.out;
  KdpctlResult again = Apply(GpuPod("same", 2));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, ::testing::HasSubstr("pod default/same already exists"));

  const std::string with_uid =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME, uid: u-1}\n"
      "spec: {containers: [{name: c}]}\n";
  ASSERT_EQ(Apply(absl::StrReplaceAll(with_uid, {{"NAME", "first"}})).exit_code, 0);
  KdpctlResult clash = Apply(absl::StrReplaceAll(with_uid, {{"NAME", "second"}}));
  EXPECT_EQ(clash.exit_code, 1);
  EXPECT_THAT(clash.err,
              ::testing::HasSubstr("metadata.uid u-1 is already used by pod default/first"));
}

TEST_F(GpuPluginE2E, KeepsTheKubeletsCheckpointFile) {
  KdpctlResult applied = Apply(GpuPod("ckpt", 2));
  ASSERT_EQ(applied.exit_code, 0);
  const std::string uid = applied.json["pod"]["uid"];
  std::vector<std::string> ids = applied.json["containers"][0]["devices"][kGpuResource];
  auto inspect = [&] {
    absl::StatusOr<CommandResult> run =
        RunCommand({KDP_KDPCTL_BIN, "checkpoint", "inspect",
                    PluginsDir() + "/kubelet_internal_checkpoint", "-o", "json"});
    if (!run.ok() || run->exit_code != 0) return nlohmann::json();
    return nlohmann::json::parse(run->out, nullptr, /*allow_exceptions=*/false);
  };
  // The admission is durable in the journal at once; the checkpoint follows within the
  // compaction delay.
  nlohmann::json checkpoint;
  ASSERT_TRUE(WaitUntil([&] {
    checkpoint = inspect();
    return checkpoint.is_object() && checkpoint["entries"].size() == 1;
  })) << checkpoint.dump();
  EXPECT_EQ(checkpoint["format"], "v2");
  EXPECT_EQ(checkpoint["checksum_ok"], true);
  ASSERT_EQ(checkpoint["entries"].size(), 1u);
  const nlohmann::json& entry = checkpoint["entries"][0];
  EXPECT_EQ(entry["pod_uid"], uid);
  EXPECT_EQ(entry["container"], "main");
  EXPECT_EQ(entry["resource"], kGpuResource);
  auto numa = NumaOf();
  EXPECT_EQ(entry["devices"][std::to_string(numa[ids[0]])].size(), 2u) << entry.dump();
  EXPECT_EQ(entry["alloc_response"]["envs"]["KDP_VISIBLE_DEVICES"],
            applied.json["containers"][0]["envs"]["KDP_VISIBLE_DEVICES"]);
  EXPECT_EQ(checkpoint["registered_devices"][kGpuResource].size(), 8u);

  ASSERT_EQ(Kdpctl({"delete", "pod", "ckpt"}).exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] {
    nlohmann::json after = inspect();
    return after.is_object() && after["entries"].empty();
  }));
}

TEST_F(GpuPluginE2E, HealthFlipsReachAllocatable) {
  nlohmann::json devices = Resource(kGpuResource)["devices"];
  std::string first = devices[0]["id"], second = devices[1]["id"];
  WriteHealthFile(first + "\n" + second + "\n");
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 6, 8));
  WriteHealthFile("");
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8));
}

// KEP-4680: a device going unhealthy shows in the pod status of the container holding it
// (containerStatuses[].allocatedResourcesStatus), resource by resource.
TEST_F(GpuPluginE2E, HealthOfHeldDevicesShowsInThePodsStatus) {
  KdpctlResult applied = Apply(GpuPod("held", 2));
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  std::vector<std::string> ids = applied.json["containers"][0]["devices"][kGpuResource];
  ASSERT_EQ(ids.size(), 2u);
  auto statuses = [&] {
    nlohmann::json pods = Kdpctl({"get", "pods"}).json;
    return pods.is_object() && pods["pods"].size() == 1
               ? pods["pods"][0]["containers"][0]["allocatedResourcesStatus"]
               : nlohmann::json();
  };
  nlohmann::json status = statuses();
  ASSERT_EQ(status.size(), 1u) << status.dump();
  EXPECT_EQ(status[0]["name"], kGpuResource);
  ASSERT_EQ(status[0]["resources"].size(), 2u);
  for (const auto& r : status[0]["resources"]) EXPECT_EQ(r["health"], "Healthy");

  // The GPU plugin's health file names physical GPUs ("gpu3"); IDs are gpuN or gpuN::K.
  const std::string sick = ids[1].substr(0, ids[1].find("::"));
  WriteHealthFile(sick + "\n");
  ASSERT_TRUE(WaitUntil([&] {
    const nlohmann::json now = statuses();
    if (!now.is_array() || now.empty()) return false;
    for (const auto& r : now[0]["resources"]) {
      if (r["resourceID"] == ids[1]) return r["health"] == "Unhealthy";
    }
    return false;
  })) << statuses().dump();
  const nlohmann::json after = statuses();
  ASSERT_EQ(after.size(), 1u);
  for (const auto& r : after[0]["resources"]) {
    if (r["resourceID"] == ids[0]) {
      EXPECT_EQ(r["health"], "Healthy");
    }
  }
  absl::StatusOr<CommandResult> text =
      RunCommand({KDP_KDPCTL_BIN, "--kubelet-root", Root(), "get", "pods"});
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(text->out, ::testing::HasSubstr(absl::StrCat(ids[1], "=Unhealthy")));
}

TEST_F(GpuPluginE2E, NoHealthyDevicesRejectsWithTheKubeletsText) {
  std::string all;
  nlohmann::json devices = Resource(kGpuResource)["devices"];
  for (const auto& d : devices) all += d["id"].get<std::string>() + "\n";
  WriteHealthFile(all);
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 0, 8));
  KdpctlResult result = Apply(GpuPod("sick", 1));
  EXPECT_EQ(result.json["message"],
            "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
            "example.com/gpu, which is unexpected");
}

TEST_F(GpuPluginE2E, InitContainerDevicesAreReusedAndSidecarsKeepTheirs) {
  KdpctlResult result = Apply(R"(apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  initContainers:
  - name: check
    resources: {limits: {example.com/gpu: 2}}
  - name: sidecar
    restartPolicy: Always
    resources: {limits: {example.com/gpu: 1}}
  containers:
  - name: train
    resources: {limits: {example.com/gpu: 2}}
  - name: eval
    resources: {limits: {example.com/gpu: 1}}
)");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::map<std::string, std::set<std::string>> by_container;
  for (const auto& c : result.json["containers"]) {
    std::vector<std::string> ids = c["devices"][kGpuResource];
    by_container[c["name"]] = {ids.begin(), ids.end()};
  }
  ASSERT_EQ(by_container["check"].size(), 2u);
  ASSERT_EQ(by_container["sidecar"].size(), 1u);
  // As in the kubelet, every later container takes from the finished init container's devices
  // first: the sidecar takes one of them and keeps it, train takes the other and one more...
  const std::string taken_by_sidecar = *by_container["sidecar"].begin();
  EXPECT_TRUE(by_container["check"].contains(taken_by_sidecar));
  for (const auto& id : by_container["check"]) {
    if (id != taken_by_sidecar) {
      EXPECT_TRUE(by_container["train"].contains(id)) << id;
    }
  }
  // ...and nothing else overlaps: eval gets a fresh device.
  std::set<std::string> all;
  for (const char* name : {"sidecar", "train", "eval"}) {
    for (const auto& id : by_container[name]) EXPECT_TRUE(all.insert(id).second) << id;
  }
}

TEST_F(GpuPluginE2E, ManagerRestartMakesThePluginRegisterAgainByItself) {
  StopManager(SIGTERM);
  StartManager();
  EXPECT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
}

TEST_F(GpuPluginE2E, KilledPluginLeavesItsDevicesUnhealthyUntilARestartedOneRegisters) {
  ASSERT_TRUE(plugin_->Signal(SIGKILL).ok());
  ASSERT_TRUE(plugin_->Wait(absl::Seconds(10)).ok());
  EXPECT_TRUE(WaitForAllocatable(kGpuResource, 0, 8));
  nlohmann::json r = Resource(kGpuResource);
  EXPECT_FALSE(r["connected"]);
  for (const auto& d : r["devices"]) EXPECT_EQ(d["health"], "Unhealthy");

  // A new plugin process (its predecessor's socket file is still there) takes over.
  StartGpuPlugin();
  EXPECT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  EXPECT_TRUE(Resource(kGpuResource)["connected"]);
}

TEST_F(GpuPluginE2E, PluginExitsCleanlyOnSigtermAndRemovesItsSocket) {
  ASSERT_TRUE(plugin_->Signal(SIGTERM).ok());
  auto code = plugin_->Wait(absl::Seconds(10));
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
  EXPECT_FALSE(IsSocket(PluginsDir() + "/example.com_gpu.sock"));
}

TEST_F(GpuPluginE2E, PodResourcesListsSidecarsAndAppContainersButNotFinishedInitContainers) {
  ASSERT_EQ(Apply(R"(apiVersion: v1
kind: Pod
metadata: {name: mixed}
spec:
  initContainers:
  - name: setup
    resources: {limits: {example.com/gpu: 1}}
  - name: sidecar
    restartPolicy: Always
    resources: {limits: {example.com/gpu: 1}}
  containers:
  - name: app
    resources: {limits: {example.com/gpu: 1}}
)")
                .exit_code,
            0);
  auto stub = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      UnixTarget(Root() + "/pod-resources/kubelet.sock"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::ListPodResourcesResponse list;
  ASSERT_TRUE(stub->List(&context, v1::ListPodResourcesRequest(), &list).ok());
  ASSERT_EQ(list.pod_resources_size(), 1);
  std::vector<std::string> names;
  for (const auto& container : list.pod_resources(0).containers()) {
    names.push_back(container.name());
    EXPECT_EQ(container.devices_size(), 1) << container.name();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"sidecar", "app"}));
}

TEST_F(GpuPluginE2E, PodResourcesMatchesKdpctl) {
  KdpctlResult applied = Apply(GpuPod("pr", 3));
  ASSERT_EQ(applied.exit_code, 0);
  auto stub = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      UnixTarget(Root() + "/pod-resources/kubelet.sock"), grpc::InsecureChannelCredentials()));

  grpc::ClientContext list_context;
  v1::ListPodResourcesResponse list;
  ASSERT_TRUE(stub->List(&list_context, v1::ListPodResourcesRequest(), &list).ok());
  ASSERT_EQ(list.pod_resources_size(), 1);
  const auto& pod = list.pod_resources(0);
  EXPECT_EQ(pod.name(), "pr");
  EXPECT_EQ(pod.namespace_(), "default");
  ASSERT_EQ(pod.containers_size(), 1);
  std::set<std::string> listed;
  auto numa = NumaOf();
  for (const auto& devices : pod.containers(0).devices()) {
    EXPECT_EQ(devices.resource_name(), kGpuResource);
    ASSERT_EQ(devices.device_ids_size(), 1);  // One entry per (device, NUMA node).
    listed.insert(devices.device_ids(0));
    ASSERT_EQ(devices.topology().nodes_size(), 1);
    EXPECT_EQ(devices.topology().nodes(0).id(), numa[devices.device_ids(0)]);
  }
  std::vector<std::string> ids = applied.json["containers"][0]["devices"][kGpuResource];
  EXPECT_EQ(listed, std::set<std::string>(ids.begin(), ids.end()));

  grpc::ClientContext alloc_context;
  v1::AllocatableResourcesResponse allocatable;
  ASSERT_TRUE(
      stub->GetAllocatableResources(&alloc_context, v1::AllocatableResourcesRequest(), &allocatable)
          .ok());
  std::set<std::string> healthy;
  nlohmann::json devices = Resource(kGpuResource)["devices"];
  for (const auto& d : devices) healthy.insert(d["id"]);
  std::set<std::string> reported;
  for (const auto& devices : allocatable.devices()) reported.insert(devices.device_ids(0));
  EXPECT_EQ(reported, healthy);

  grpc::ClientContext get_context;
  v1::GetPodResourcesRequest get;
  get.set_pod_name("missing");
  get.set_pod_namespace("default");
  v1::GetPodResourcesResponse got;
  grpc::Status status = stub->Get(&get_context, get, &got);
  EXPECT_EQ(status.error_message(), "pod missing in namespace default not found");
}

}  // namespace
}  // namespace kdp::testing
