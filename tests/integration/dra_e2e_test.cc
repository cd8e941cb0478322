// DRA end to end (issue 5), with kdp-manager, kdp-dra-driver and kdpctl as real processes in a
// temporary kubelet root: a claim generated from a template is allocated, prepared (CDI spec
// written, container CDI devices, checkpoint) and cleaned up with its pod; a shared claim is
// prepared once and unprepared with its last pod (the PodUIDs of the kubelet's claiminfo.go);
// unsatisfiable claims and selectors outside the CEL subset are FailedScheduling; the manager
// restarting (SIGTERM or SIGKILL) keeps the pods' CDI devices (restored from dra_manager_state) and
// the driver re-registers by itself; the driver restarting still unprepares; a driver that never
// answers fails the pod with FailedPrepareDynamicResources / DeadlineExceeded (the kubelet's 45 s
// defaultClientCallTimeout) and holds nothing.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "common/unix_socket.h"
#include "dra/v1/api.grpc.pb.h"
#include "kdp/cdi.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/integration/dra_fixture.h"
#include "tests/integration/hung_dra_plugin.h"

namespace kdp::testing {
namespace {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

// The devices a pod's claim holds, as "pool/device".
std::set<std::string> ClaimDevices(const nlohmann::json& pod) {
  std::set<std::string> out;
  for (const auto& claim : pod["claims"]) {
    for (const auto& device : claim["devices"]) {
      out.insert(absl::StrCat(device["pool"].get<std::string>(), "/",
                              device["device"].get<std::string>()));
    }
  }
  return out;
}

bool Disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& x : a) {
    if (b.count(x) > 0) return false;
  }
  return true;
}

class DraE2E : public DraE2ETest {
 protected:
  // The prepared_claims entry of `claim_uid`, or null.
  nlohmann::json PreparedClaim(const std::string& claim_uid) {
    for (const auto& claim : PreparedClaims()) {
      if (claim["uid"] == claim_uid) return claim;
    }
    return nullptr;
  }

  // Scenario 4: a pod admitted, the manager stopped with `sig` and restarted on the same root.
  void RestartManagerMidway(int sig);
};

TEST_F(DraE2E, TemplateClaimIsPreparedAndCleanedUpWithItsPod) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  KdpctlResult applied = Apply(ExampleManifests());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err << DriverLogs();
  ASSERT_EQ(applied.json["kind"], "List") << applied.out;
  ASSERT_EQ(applied.json["items"].size(), 3u) << applied.out;
  EXPECT_EQ(applied.json["items"][0]["kind"], "DeviceClass");
  EXPECT_EQ(applied.json["items"][1]["kind"], "ResourceClaimTemplate");
  const nlohmann::json pod = PodOf(applied.json);
  ASSERT_EQ(pod["admitted"], true) << applied.out;
  const std::string pod_uid = pod["pod"]["uid"];
  ASSERT_EQ(pod["claims"].size(), 1u) << applied.out;
  const nlohmann::json& claim = pod["claims"][0];
  EXPECT_EQ(claim["pod_claim_name"], "gpus");
  const std::string claim_name = claim["claim_name"];
  const std::string claim_uid = claim["claim_uid"];
  // The resourceclaim controller's name: "<pod>-<pod claim>-<5 random>".
  EXPECT_TRUE(absl::StartsWith(claim_name, "dra-trainer-gpus-")) << claim_name;
  EXPECT_EQ(claim_name.size(), std::string("dra-trainer-gpus-").size() + 5) << claim_name;
  ASSERT_EQ(claim["devices"].size(), 2u) << applied.out;
  for (const auto& device : claim["devices"]) {
    EXPECT_EQ(device["driver"], kGpuDriver);
    EXPECT_EQ(device["pool"], kDraNode);
    EXPECT_EQ(device["cdi_device_ids"].size(), 1u) << device;
  }
  const std::vector<std::string> cdi_ids = ClaimCdiIds(pod);
  ASSERT_EQ(cdi_ids.size(), 2u);
  // The container gets exactly its claim's CDI devices (CRI ContainerConfig.cdi_devices).
  EXPECT_THAT(ContainerCdiDevices(pod, "trainer"), UnorderedElementsAreArray(cdi_ids));

  // kdpctl get pods shows the same pod.
  std::map<std::string, nlohmann::json> listed = ListedPods();
  ASSERT_EQ(listed.count("dra-trainer"), 1u);
  EXPECT_EQ(listed["dra-trainer"]["claims"], pod["claims"]);
  EXPECT_THAT(ContainerCdiDevices(listed["dra-trainer"], "trainer"),
              UnorderedElementsAreArray(cdi_ids));

  // PodResources (as a 1.34 kubelet, which monitoring agents read): the container's claim with
  // its devices and their CDI IDs, by List and by Get.
  auto podresources = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      UnixTarget(Root() + "/pod-resources/kubelet.sock"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext list_context;
  v1::ListPodResourcesResponse list;
  ASSERT_TRUE(podresources->List(&list_context, v1::ListPodResourcesRequest(), &list).ok());
  ASSERT_EQ(list.pod_resources_size(), 1);
  grpc::ClientContext get_context;
  v1::GetPodResourcesRequest get;
  get.set_pod_name("dra-trainer");
  get.set_pod_namespace("default");
  v1::GetPodResourcesResponse pod_resources_got;
  ASSERT_TRUE(podresources->Get(&get_context, get, &pod_resources_got).ok());
  for (const v1::PodResources& resources :
       {list.pod_resources(0), pod_resources_got.pod_resources()}) {
    ASSERT_EQ(resources.containers_size(), 1);
    const v1::ContainerResources& trainer = resources.containers(0);
    EXPECT_EQ(trainer.name(), "trainer");
    EXPECT_EQ(trainer.devices_size(), 0);  // no device-plugin devices
    ASSERT_EQ(trainer.dynamic_resources_size(), 1);
    const v1::DynamicResource& dynamic = trainer.dynamic_resources(0);
    EXPECT_EQ(dynamic.claim_name(), claim_name);
    EXPECT_EQ(dynamic.claim_namespace(), "default");
    std::set<std::string> devices;
    std::vector<std::string> ids;
    for (const v1::ClaimResource& resource : dynamic.claim_resources()) {
      EXPECT_EQ(resource.driver_name(), "gpu.example.com");
      devices.insert(absl::StrCat(resource.pool_name(), "/", resource.device_name()));
      for (const v1::CDIDevice& cdi : resource.cdi_devices()) ids.push_back(cdi.name());
    }
    EXPECT_EQ(devices, ClaimDevices(pod));
    EXPECT_THAT(ids, UnorderedElementsAreArray(cdi_ids));
  }

  // The DRA manager's cache: one prepared claim referencing the pod.
  nlohmann::json prepared = PreparedClaims();
  ASSERT_EQ(prepared.size(), 1u) << prepared;
  EXPECT_EQ(prepared[0]["namespace"], "default");
  EXPECT_EQ(prepared[0]["name"], claim_name);
  EXPECT_EQ(prepared[0]["uid"], claim_uid);
  EXPECT_EQ(prepared[0]["pods"], nlohmann::json({"default/dra-trainer"}));
  EXPECT_EQ(prepared[0]["prepared"], true);
  EXPECT_EQ(prepared[0]["devices"].size(), 2u);

  // The driver's CDI spec: one per claim, valid, naming exactly the claim's CDI devices.
  EXPECT_EQ(CdiSpecs(),
            std::vector<std::string>{absl::StrCat("gpu.example.com-gpu_", claim_uid, ".json")});
  absl::StatusOr<cdi::Spec> spec =
      cdi::ParseJson(ReadFile(SpecPathOf(claim_uid)), SpecPathOf(claim_uid));
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::Status valid = cdi::Validate(*spec);
  EXPECT_TRUE(valid.ok()) << valid;
  std::vector<std::string> spec_ids;
  for (const cdi::Device& device : spec->devices) {
    spec_ids.push_back(cdi::QualifiedName(spec->kind, device.name));
  }
  EXPECT_THAT(spec_ids, UnorderedElementsAreArray(cdi_ids));

  // The checkpoint (dra_manager_state in the kubelet 1.32+ layout, PR #126303) holds the claim with
  // the pod and the CDI IDs: journalled at once, the file follows within the compaction delay.
  // Before the prepare, as the kubelet's prepareResources, it holds the claim with the driver's
  // name and no devices yet; a compaction may write that state first.
  KdpctlResult inspected;
  EXPECT_TRUE(WaitUntil([&] {
    inspected = Inspect(DraCheckpointPath());
    return inspected.exit_code == 0 && inspected.json["claims"].size() == 1 &&
           !inspected.json["claims"][0]["drivers"]
                .value(kGpuDriver, nlohmann::json::array())
                .empty();
  })) << inspected.out;
  ASSERT_EQ(inspected.exit_code, 0) << inspected.out << inspected.err;
  EXPECT_EQ(inspected.json["format"], "dra");
  EXPECT_EQ(inspected.json["checksum_ok"], true) << inspected.out;
  ASSERT_EQ(inspected.json["claims"].size(), 1u) << inspected.out;
  const nlohmann::json& entry = inspected.json["claims"][0];
  EXPECT_EQ(entry["uid"], claim_uid);
  EXPECT_EQ(entry["name"], claim_name);
  EXPECT_EQ(entry["namespace"], "default");
  EXPECT_EQ(entry["pod_uids"], nlohmann::json({pod_uid}));
  std::vector<std::string> checkpointed_ids;
  for (const auto& device : entry["drivers"][kGpuDriver]) {
    for (const auto& id : device["cdi_device_ids"]) checkpointed_ids.push_back(id);
  }
  EXPECT_THAT(checkpointed_ids, UnorderedElementsAreArray(cdi_ids)) << inspected.out;

  // The claim in the API: allocated and reserved for the pod.
  HttpResponse got = GetClaim(claim_name);
  ASSERT_EQ(got.status, 200) << got.error << got.body;
  EXPECT_EQ(got.json["status"]["reservedFor"].size(), 1u) << got.body;
  EXPECT_EQ(got.json["status"]["reservedFor"][0]["uid"], pod_uid) << got.body;
  EXPECT_EQ(got.json["status"]["allocation"]["devices"]["results"].size(), 2u) << got.body;

  // Deleting the pod unprepares (spec gone), empties the cache and deletes the generated claim.
  KdpctlResult deleted = DeletePod("dra-trainer");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(claim_uid)));
  EXPECT_THAT(CdiSpecs(), IsEmpty());
  EXPECT_THAT(PreparedClaims(), IsEmpty());
  HttpResponse gone = GetClaim(claim_name);
  EXPECT_EQ(gone.status, 404) << gone.error << gone.body;
  EXPECT_THAT(ListedPods(), IsEmpty());
  EXPECT_TRUE(WaitUntil([&] {
    inspected = Inspect(DraCheckpointPath());
    return inspected.exit_code == 0 && inspected.json["claims"].empty();
  })) << inspected.out;
  EXPECT_EQ(inspected.json["checksum_ok"], true) << inspected.out;
  EXPECT_THAT(inspected.json["claims"], IsEmpty()) << inspected.out;
}

// KEP-4680 for DRA: the driver's health stream reaches the pod status (allocatedResourcesStatus,
// "claim:<podClaimName>", each device by its CDI ID) and kdpctl status.
TEST_F(DraE2E, AnUnhealthyDeviceShowsInThePodStatusAndTheNodeStatus) {
  const std::string health_file = root_.Path("unhealthy-gpus");
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  ASSERT_NO_FATAL_FAILURE(StartDriver({"--health-file", health_file}));
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  KdpctlResult applied = Apply(ExampleManifests());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err << DriverLogs();
  const nlohmann::json pod = PodOf(applied.json);
  ASSERT_EQ(pod["claims"].size(), 1u) << applied.out;
  const nlohmann::json devices = pod["claims"][0]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  const std::string sick = devices[1]["device"];
  const std::string sick_cdi = devices[1]["cdi_device_ids"][0];

  // What the pod status says about each of the claim's devices, by resourceID.
  auto health = [&] {
    std::map<std::string, std::string> out;
    nlohmann::json listed = ListedPods()["dra-trainer"];
    for (const auto& container : listed["containers"]) {
      if (container["name"] != "trainer") continue;
      for (const auto& status : container["allocatedResourcesStatus"]) {
        if (status["name"] != "claim:gpus") continue;
        for (const auto& r : status["resources"]) out[r["resourceID"]] = r["health"];
      }
    }
    return out;
  };
  // The driver streams every device Healthy from its registration on.
  ASSERT_TRUE(WaitUntil([&] {
    std::map<std::string, std::string> now = health();
    return now.size() == 2 && now[sick_cdi] == "Healthy";
  })) << DriverLogs();

  std::ofstream(health_file) << sick << "\n";
  ASSERT_TRUE(WaitUntil([&] { return health()[sick_cdi] == "Unhealthy"; })) << DriverLogs();
  EXPECT_EQ(health()[std::string(devices[0]["cdi_device_ids"][0])], "Healthy");

  nlohmann::json status = Status();
  bool reported = false;
  for (const auto& device : status["dra_device_health"]) {
    if (device["device"] == sick) {
      EXPECT_EQ(device["driver"], kGpuDriver);
      EXPECT_EQ(device["health"], "Unhealthy");
      EXPECT_EQ(device["message"], absl::StrCat("listed in ", health_file));
      EXPECT_GT(device["last_updated"].get<int64_t>(), 0);
      reported = true;
    }
  }
  EXPECT_TRUE(reported) << status.dump();
  bool in_claims = false;
  for (const auto& claim : status["prepared_claims"]) {
    for (const auto& device : claim["devices"]) {
      if (device["device"] == sick) {
        EXPECT_EQ(device["health"], "Unhealthy");
        in_claims = true;
      }
    }
  }
  EXPECT_TRUE(in_claims) << status.dump();

  // Healthy again once the file no longer lists it.
  std::ofstream(health_file) << "";
  EXPECT_TRUE(WaitUntil([&] { return health()[sick_cdi] == "Healthy"; })) << DriverLogs();
}

TEST_F(DraE2E, ASharedClaimIsPreparedOnceAndUnpreparedWithItsLastPod) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  KdpctlResult objects =
      Apply(absl::StrCat(ExampleManifests(/*with_pod=*/false), "---\n", Claim("shared-gpu", 1)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  nlohmann::json first = ApplyPod(ClaimPod("first", "shared-gpu", /*from_template=*/false));
  ASSERT_EQ(first["admitted"], true) << first;
  nlohmann::json second = ApplyPod(ClaimPod("second", "shared-gpu", /*from_template=*/false));
  ASSERT_EQ(second["admitted"], true) << second;
  const std::string first_uid = first["pod"]["uid"], second_uid = second["pod"]["uid"];
  const std::string claim_uid = first["claims"][0]["claim_uid"];
  EXPECT_EQ(second["claims"][0]["claim_name"], "shared-gpu");
  EXPECT_EQ(second["claims"][0]["claim_uid"], claim_uid);
  const std::vector<std::string> ids = ClaimCdiIds(first);
  ASSERT_EQ(ids.size(), 1u) << first;
  EXPECT_EQ(ClaimCdiIds(second), ids);
  EXPECT_EQ(ContainerCdiDevices(first, "main"), ids);
  EXPECT_EQ(ContainerCdiDevices(second, "main"), ids);

  // Prepared once: one spec, one cache entry with both pods, the claim reserved for both.
  EXPECT_EQ(CdiSpecs(),
            std::vector<std::string>{absl::StrCat("gpu.example.com-gpu_", claim_uid, ".json")});
  nlohmann::json prepared = PreparedClaims();
  ASSERT_EQ(prepared.size(), 1u) << prepared;
  EXPECT_THAT(prepared[0]["pods"].get<std::vector<std::string>>(),
              UnorderedElementsAre("default/first", "default/second"));
  HttpResponse claim = GetClaim("shared-gpu");
  ASSERT_EQ(claim.status, 200) << claim.error << claim.body;
  std::vector<std::string> reserved_for;
  for (const auto& ref : claim.json["status"]["reservedFor"]) reserved_for.push_back(ref["uid"]);
  EXPECT_THAT(reserved_for, UnorderedElementsAre(first_uid, second_uid)) << claim.body;

  // The first pod going only drops its reference.
  KdpctlResult deleted = DeletePod("first");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_TRUE(std::filesystem::exists(SpecPathOf(claim_uid)));
  prepared = PreparedClaims();
  ASSERT_EQ(prepared.size(), 1u) << prepared;
  EXPECT_EQ(prepared[0]["pods"], nlohmann::json({"default/second"}));
  EXPECT_EQ(prepared[0]["prepared"], true);

  // The last one unprepares; the claim (not generated) stays, deallocated.
  deleted = DeletePod("second");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(claim_uid)));
  EXPECT_THAT(PreparedClaims(), IsEmpty());
  claim = GetClaim("shared-gpu");
  ASSERT_EQ(claim.status, 200) << claim.error << claim.body;
  const nlohmann::json status = claim.json.value("status", nlohmann::json::object());
  EXPECT_FALSE(status.contains("allocation")) << claim.body;
  EXPECT_TRUE(!status.contains("reservedFor") || status["reservedFor"].empty()) << claim.body;
}

TEST_F(DraE2E, UnsatisfiableClaimsAndUnsupportedSelectorsAreFailedScheduling) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  const std::string no_match = "device.attributes[\"gpu.example.com\"].model == \"no-such-gpu\"";
  const std::string unsupported = "device.driver == 1.5";
  KdpctlResult objects = Apply(absl::StrCat(
      ExampleManifests(/*with_pod=*/false), "---\n", ClaimTemplate("nine-gpus", 9), "---\n",
      ClaimTemplate("no-match", 1, no_match), "---\n", ClaimTemplate("double", 1, unsupported),
      "---\n", ClaimTemplate("eight-gpus", kFixtureGpus)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;

  for (const char* name : {"nine-gpus", "no-match", "double"}) {
    SCOPED_TRACE(name);
    const std::string pod_name = absl::StrCat("pod-", name);
    nlohmann::json pod = ApplyPod(ClaimPod(pod_name, name));
    EXPECT_EQ(pod["admitted"], false) << pod;
    EXPECT_EQ(pod["reason"], "FailedScheduling") << pod;
    const std::string message = pod.value("message", "");
    // Names the pod claim and the claim generated for the pod.
    EXPECT_THAT(message, HasSubstr("pod claim \"gpus\"")) << message;
    EXPECT_THAT(message, HasSubstr(absl::StrCat("ResourceClaim default/", pod_name, "-gpus-")))
        << message;
    if (std::string(name) == "double") {
      EXPECT_THAT(message, HasSubstr(unsupported)) << message;
      EXPECT_THAT(message, HasSubstr("unsupported double literal")) << message;
    }
  }
  // Nothing was left behind: no pod, no prepared claim, no spec, no generated claim, and all
  // eight GPUs can still be allocated at once.
  EXPECT_THAT(ListedPods(), IsEmpty());
  EXPECT_THAT(PreparedClaims(), IsEmpty());
  EXPECT_THAT(CdiSpecs(), IsEmpty());
  HttpResponse claims = Api("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims");
  ASSERT_EQ(claims.status, 200) << claims.error << claims.body;
  EXPECT_THAT(claims.json["items"], IsEmpty()) << claims.body;
  nlohmann::json all = ApplyPod(ClaimPod("all-eight", "eight-gpus"));
  ASSERT_EQ(all["admitted"], true) << all << DriverLogs();
  EXPECT_EQ(ClaimCdiIds(all).size(), static_cast<size_t>(kFixtureGpus));
}

void DraE2E::RestartManagerMidway(int sig) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  nlohmann::json first = ApplyPod(ExampleManifests());
  ASSERT_EQ(first["admitted"], true) << first << DriverLogs();
  const std::string first_claim_uid = first["claims"][0]["claim_uid"];
  const std::vector<std::string> first_cdi = ContainerCdiDevices(first, "trainer");
  ASSERT_EQ(first_cdi.size(), 2u) << first;

  ASSERT_NO_FATAL_FAILURE(StopManager(sig));
  ASSERT_NO_FATAL_FAILURE(StartDraManager());

  // The pod and its CDI devices come back from the manager's own state (no driver call).
  std::map<std::string, nlohmann::json> listed = ListedPods();
  ASSERT_EQ(listed.count("dra-trainer"), 1u) << manager_->Output();
  EXPECT_EQ(ContainerCdiDevices(listed["dra-trainer"], "trainer"), first_cdi);
  EXPECT_EQ(ClaimCdiIds(listed["dra-trainer"]), ClaimCdiIds(first));
  // The claim cache comes back from dra_manager_state with its pod, but not as prepared: the
  // kubelet does not persist `prepared` (newClaimInfoFromState in pkg/kubelet/cm/dra/claiminfo.go).
  const nlohmann::json restored = PreparedClaim(first_claim_uid);
  ASSERT_TRUE(restored.is_object()) << PreparedClaims();
  EXPECT_EQ(restored["pods"], nlohmann::json({"default/dra-trainer"}));
  EXPECT_EQ(restored["prepared"], false);
  EXPECT_EQ(restored["devices"].size(), 2u);

  // The driver, still running, re-registers through plugins_registry (the watcher's walk of the
  // directory at start).
  ASSERT_TRUE(WaitUntil([&] { return DriverConnected(kGpuDriver); })) << DriverLogs();
  bool listed_plugin = false;
  const nlohmann::json status = Status();
  for (const auto& plugin : status["registered_plugins"]) {
    if (plugin["type"] == "DRAPlugin" && plugin["name"] == kGpuDriver) listed_plugin = true;
  }
  EXPECT_TRUE(listed_plugin) << status.dump();

  // ... and publishes its slices again after the start-up wipe (the kubelet's wipeResourceSlices):
  // the manager serves the resource API on the kubeconfig's port and token again, which the driver
  // read once.
  ASSERT_TRUE(WaitForDriver()) << "the driver did not publish its ResourceSlices again\n"
                               << DriverLogs();
  // A new pod is admitted on GPUs the first one does not hold.
  nlohmann::json second = ApplyPod(ClaimPod("after-restart", "two-gpus"));
  ASSERT_EQ(second["admitted"], true) << second << DriverLogs();
  EXPECT_TRUE(Disjoint(ClaimDevices(first), ClaimDevices(second)))
      << first["claims"] << second["claims"];
  const std::string second_claim_uid = second["claims"][0]["claim_uid"];

  // Deleting the first pod unprepares its claim through the re-registered driver.
  KdpctlResult deleted = DeletePod("dra-trainer");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err << DriverLogs();
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(first_claim_uid)));
  EXPECT_TRUE(PreparedClaim(first_claim_uid).is_null()) << PreparedClaims();
  EXPECT_TRUE(std::filesystem::exists(SpecPathOf(second_claim_uid)));
  deleted = DeletePod("after-restart");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_THAT(CdiSpecs(), IsEmpty());
  EXPECT_THAT(PreparedClaims(), IsEmpty());
}

TEST_F(DraE2E, ManagerSigtermMidwayKeepsPreparedPodsAndTheDriverComesBack) {
  RestartManagerMidway(SIGTERM);
}

TEST_F(DraE2E, ManagerSigkillMidwayKeepsPreparedPodsAndTheDriverComesBack) {
  RestartManagerMidway(SIGKILL);
}

TEST_F(DraE2E, ADriverRestartStillUnpreparesEarlierClaimsAndPreparesNewOnes) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  nlohmann::json first = ApplyPod(ExampleManifests());
  ASSERT_EQ(first["admitted"], true) << first << DriverLogs();
  const std::string first_claim_uid = first["claims"][0]["claim_uid"];

  ASSERT_NO_FATAL_FAILURE(StopDriver(SIGKILL));
  // The manager notices the connection is gone before the new instance comes.
  EXPECT_TRUE(WaitUntil([&] { return !DriverConnected(kGpuDriver); })) << DriverLogs();
  ASSERT_NO_FATAL_FAILURE(StartDriver());
  // The old connection may come back to the new process's socket before the plugin watcher has
  // handled its re-created registration socket (deregister, register): wait for the new instance
  // to be told it is registered (the SDK's log line), so no admission falls in between.
  ASSERT_TRUE(WaitUntil([&] {
    return absl::StrContains(driver_->Output(), "Registered with the kubelet");
  })) << DriverLogs();
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();

  // The new instance knows which GPUs are in use (its specs on disk) and prepares new claims.
  nlohmann::json second = ApplyPod(ClaimPod("after-driver-restart", "two-gpus"));
  ASSERT_EQ(second["admitted"], true) << second << DriverLogs();
  EXPECT_TRUE(Disjoint(ClaimDevices(first), ClaimDevices(second)))
      << first["claims"] << second["claims"];
  const std::string second_claim_uid = second["claims"][0]["claim_uid"];

  // The pod admitted before the restart still deletes cleanly.
  KdpctlResult deleted = DeletePod("dra-trainer");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err << DriverLogs();
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(first_claim_uid)));
  EXPECT_TRUE(PreparedClaim(first_claim_uid).is_null()) << PreparedClaims();
  deleted = DeletePod("after-driver-restart");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(second_claim_uid)));
  EXPECT_THAT(CdiSpecs(), IsEmpty());
  EXPECT_THAT(PreparedClaims(), IsEmpty());
}

// The kubelet keeps a pod terminating until NodeUnprepareResources succeeds. With the driver
// down, the deletion fails, the pod is listed terminating and its name stays taken; once the
// driver is back the reconcile loop completes the deletion without anyone asking again.
TEST_F(DraE2E, ADeletionWhileTheDriverIsDownCompletesOnceItIsBack) {
  ASSERT_NO_FATAL_FAILURE(StartAll({"--dra-reconcile-period", "200ms"}));
  nlohmann::json pod = ApplyPod(ExampleManifests());
  ASSERT_EQ(pod["admitted"], true) << pod << DriverLogs();
  const std::string claim_uid = pod["claims"][0]["claim_uid"];
  ASSERT_NO_FATAL_FAILURE(StopDriver(SIGKILL));
  ASSERT_TRUE(WaitUntil([&] { return !DriverConnected(kGpuDriver); })) << DriverLogs();

  KdpctlResult deleted = DeletePod("dra-trainer");
  EXPECT_EQ(deleted.exit_code, 1) << deleted.out << deleted.err;
  EXPECT_THAT(deleted.err, HasSubstr("pod default/dra-trainer is terminating; its deletion is "
                                     "retried: "));
  std::map<std::string, nlohmann::json> listed = ListedPods();
  ASSERT_TRUE(listed.contains("dra-trainer")) << DriverLogs();
  EXPECT_EQ(listed["dra-trainer"]["terminating"], true) << listed["dra-trainer"];
  KdpctlResult reused = Apply(ExampleManifests());
  EXPECT_NE(reused.exit_code, 0) << reused.out;
  EXPECT_THAT(reused.err, HasSubstr("is terminating")) << reused.out;
  EXPECT_TRUE(std::filesystem::exists(SpecPathOf(claim_uid)));  // nobody unprepared it yet

  ASSERT_NO_FATAL_FAILURE(StartDriver());
  EXPECT_TRUE(WaitUntil([&] { return !ListedPods().contains("dra-trainer"); })) << DriverLogs();
  EXPECT_FALSE(std::filesystem::exists(SpecPathOf(claim_uid)));
  EXPECT_TRUE(PreparedClaim(claim_uid).is_null()) << PreparedClaims();
  // The name is free again.
  nlohmann::json again = ApplyPod(ExampleManifests());
  EXPECT_EQ(again["admitted"], true) << again << DriverLogs();
}

TEST_F(DraE2E, ADriverThatNeverAnswersFailsThePodWithDeadlineExceededAndHoldsNothing) {
  ASSERT_NO_FATAL_FAILURE(
      StartDraManager({"--dra-call-timeout", "1", "--dra-reconcile-period", "1s"}));
  const std::string driver = "hung.example.com";
  const std::string dra_socket = root_.Path("plugins/hung.example.com/dra.sock");
  HungDraPlugin dra(kDraNode);
  FakeRegistration registration(
      FakeRegistration::Info("DRAPlugin", driver, dra_socket, {"v1.DRAPlugin"}));
  std::unique_ptr<grpc::Server> dra_server = ServeUnix(dra_socket, {&dra});
  ASSERT_NE(dra_server, nullptr);
  std::unique_ptr<grpc::Server> registration_server =
      ServeUnix(RegistryDir() + "/hung.example.com-reg.sock", {&registration});
  ASSERT_NE(registration_server, nullptr);
  absl::Cleanup shutdown = [&] {
    dra.Answer();
    ShutdownServer(registration_server);
    ShutdownServer(dra_server);
  };
  ASSERT_TRUE(WaitUntil([&] { return registration.registered(); })) << manager_->Output();

  // The driver's slice, published as a Go driver publishes it (client-go with the kubeconfig).
  nlohmann::json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "node-a-hung.example.com"}}},
      {"spec",
       {{"driver", driver},
        {"nodeName", kDraNode},
        {"pool", {{"name", kDraNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices", {{{"name", "dev0"}}}}}}};
  HttpResponse posted = Api("POST", "/apis/resource.k8s.io/v1/resourceslices", slice.dump());
  ASSERT_EQ(posted.status, 201) << posted.error << posted.body;
  KdpctlResult objects =
      Apply(absl::StrCat(DeviceClass(driver, driver), "---\n", Claim("hung-claim", 1, "", driver)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;

  const absl::Time start = absl::Now();
  nlohmann::json pod = ApplyPod(ClaimPod("stuck", "hung-claim", /*from_template=*/false));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(pod["admitted"], false) << pod;
  EXPECT_EQ(pod["reason"], "FailedPrepareDynamicResources") << pod;
  const std::string message = pod.value("message", "");
  EXPECT_THAT(message, HasSubstr("Failed to prepare dynamic resources")) << message;
  EXPECT_THAT(message, HasSubstr("DeadlineExceeded")) << message;
  EXPECT_EQ(dra.prepare_calls(), 1);
  // The 1 s deadline, not a fast failure and not the kubelet's 45 s.
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Seconds(15));

  // Nothing stays reserved: the claim is deallocated, the cache is empty (at once or after the
  // reconcile loop), no pod is listed.
  HttpResponse claim = GetClaim("hung-claim");
  ASSERT_EQ(claim.status, 200) << claim.error << claim.body;
  const nlohmann::json status = claim.json.value("status", nlohmann::json::object());
  EXPECT_FALSE(status.contains("allocation")) << claim.body;
  EXPECT_TRUE(!status.contains("reservedFor") || status["reservedFor"].empty()) << claim.body;
  EXPECT_TRUE(WaitUntil([&] { return PreparedClaims().empty(); })) << PreparedClaims();
  EXPECT_THAT(ListedPods(), IsEmpty());

  // Once the driver answers, the same device goes to the next pod.
  dra.Answer();
  nlohmann::json next = ApplyPod(ClaimPod("unstuck", "hung-claim", /*from_template=*/false));
  ASSERT_EQ(next["admitted"], true) << next << manager_->Output();
  EXPECT_EQ(ContainerCdiDevices(next, "main"), std::vector<std::string>{HungDraPlugin::kCdiId});
}

}  // namespace
}  // namespace kdp::testing
