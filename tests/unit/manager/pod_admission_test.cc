// PodAdmission (pod_admission.h): the local API's Pods and kdpctl take one admission path. A real
// device manager with a stub plugin of two GPUs, the real PodManager, store, status manager and
// event recorder; the pods are created as an API client sends them (PodWriter) and as kdpctl
// applies them.
#include "manager/src/lifecycle/pod_admission.h"

#include <memory>
#include <string>

#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
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
using ::testing::HasSubstr;
using Json = nlohmann::json;
using resourceapi::Kind;

using ::kdp::testing::kGpuResource;

// A v1 Pod as kubectl sends it: one container asking for `gpus` GPUs.
Json PodJson(const std::string& name, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"labels", {{"app", "train"}}},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{...}"}}}}},
          {"spec",
           {{"containers",
             {{{"name", "main"},
               {"image", "registry.example.com/train:1"},
               {"resources", {{"limits", {{kGpuResource, std::to_string(gpus)}}}}}}}}}}};
}

class PodAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string plugins_dir = dir_.Path("device-plugins");
    ASSERT_TRUE(MakeDirectories(plugins_dir).ok());
    devices_ = std::make_unique<DeviceManager>(DeviceManagerOptions{.plugins_dir = plugins_dir});
    pods_ = std::make_unique<PodManager>(devices_.get());
    devices_->SetActivePodsSource(pods_.get());
    pods_->Restore({});
    ASSERT_TRUE(devices_->Start().ok());
    plugin_ = std::make_unique<StubPlugin>(plugins_dir + "/gpu.sock");
    plugin_->SetDevices({MakeDevice("g0"), MakeDevice("g1")});
    ASSERT_TRUE(plugin_->Start().ok());
    ASSERT_TRUE(
        StubPlugin::Register(plugins_dir + "/kubelet.sock", "v1beta1", "gpu.sock", kGpuResource)
            .ok());
    ASSERT_TRUE(WaitUntil([&] {
      for (const ResourceDevices& resource : devices_->Resources()) {
        if (resource.name == kGpuResource) return resource.connected && resource.allocatable() == 2;
      }
      return false;
    }));
    status_ = std::make_unique<StatusManager>(
        &store_, &events_,
        StatusManagerOptions{.node_name = "node-a", .pods = [this] { return pods_->List(); }});
    admission_ =
        std::make_unique<PodAdmission>(pods_.get(), PodAdmissionOptions{.node_name = "node-a",
                                                                        .status = status_.get(),
                                                                        .events = &events_,
                                                                        .persister = nullptr});
  }
  void TearDown() override {
    if (plugin_ != nullptr) plugin_->Stop();
    if (devices_ != nullptr) devices_->Stop();
  }

  std::vector<Json> WarningsAbout(const std::string& pod) {
    std::vector<Json> out;
    for (const Json& event : store_.List(Kind::kEvent, "").items) {
      if (event["involvedObject"]["name"] == pod && event["type"] == "Warning") {
        out.push_back(event);
      }
    }
    return out;
  }

  TempDir dir_;
  resourceapi::ObjectStore store_{resourceapi::StoreOptions{.node_name = "node-a"}};
  EventRecorder events_{&store_};
  std::unique_ptr<DeviceManager> devices_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<StubPlugin> plugin_;
  std::unique_ptr<StatusManager> status_;
  std::unique_ptr<PodAdmission> admission_;
};

TEST_F(PodAdmissionTest, APodCreatedThroughTheApiRunsWithItsDevicesAndDeletingItFreesThem) {
  Json sent = PodJson("train", 2);
  sent["metadata"]["uid"] = "chosen-by-the-client";  // the API server makes its own
  absl::StatusOr<Json> created = admission_->CreatePod(sent);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["status"]["phase"], "Running");
  EXPECT_EQ((*created)["spec"]["nodeName"], "node-a");
  EXPECT_EQ((*created)["metadata"]["labels"]["app"], "train");
  EXPECT_EQ((*created)["spec"]["containers"][0]["image"], "registry.example.com/train:1");
  const std::string uid = (*created)["metadata"]["uid"];
  EXPECT_NE(uid, "chosen-by-the-client");
  // The same pod kdpctl sees, holding both GPUs.
  std::optional<AdmittedPod> admitted = pods_->Get("default", "train");
  ASSERT_TRUE(admitted.has_value());
  EXPECT_EQ(admitted->pod.uid, uid);
  EXPECT_EQ(admitted->containers[0].devices[kGpuResource].size(), 2u);
  // The client's object is kept with the pod (and recorded with it): a restarted manager's API,
  // a new store and status manager over the same pods, shows the same labels and spec.
  EXPECT_THAT(admitted->pod.api_object, HasSubstr(R"("app":"train")"));
  {
    resourceapi::ObjectStore restarted{resourceapi::StoreOptions{.node_name = "node-a"}};
    StatusManager status(&restarted, nullptr,
                         {.node_name = "node-a", .pods = [this] { return pods_->List(); }});
    status.Sync();
    absl::StatusOr<Json> shown = status.Get("default", "train");
    ASSERT_TRUE(shown.ok()) << shown.status();
    EXPECT_EQ((*shown)["metadata"]["labels"]["app"], "train");
    EXPECT_EQ((*shown)["metadata"]["uid"], uid);
    EXPECT_EQ((*shown)["spec"]["containers"][0]["image"], "registry.example.com/train:1");
  }

  // A second pod of that name: 409 as the API server words it, nothing admitted.
  absl::StatusOr<Json> again = admission_->CreatePod(PodJson("train", 1));
  EXPECT_EQ(resourceapi::HttpCode(again.status()), 409);
  EXPECT_EQ(again.status().message(), "pods \"train\" already exists");

  // A precondition on another UID is a conflict; the right one deletes it and frees the GPUs.
  EXPECT_EQ(resourceapi::HttpCode(admission_->DeletePod("default", "train", "other").status()),
            409);
  absl::StatusOr<Json> deleted = admission_->DeletePod("default", "train", uid);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ((*deleted)["metadata"]["uid"], uid);
  EXPECT_FALSE(pods_->Get("default", "train").has_value());
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "train").ok());
  absl::StatusOr<Json> next = admission_->CreatePod(PodJson("next", 2));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)["status"]["phase"], "Running");
  EXPECT_EQ(admission_->DeletePod("default", "missing", "").status().message(),
            "pods \"missing\" not found");
}

TEST_F(PodAdmissionTest, APodThatCannotFitIsFailedWithTheKubeletsReasonAndAnEvent) {
  absl::StatusOr<Json> created = admission_->CreatePod(PodJson("big", 3));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["status"]["phase"], "Failed");
  const std::string reason = (*created)["status"]["reason"];
  EXPECT_EQ(reason, "UnexpectedAdmissionError");
  EXPECT_THAT((*created)["status"]["message"].get<std::string>(), HasSubstr("Pod was rejected: "));
  EXPECT_EQ((*created)["metadata"]["labels"]["app"], "train");  // what the client sent
  // Never half-admitted: no pod runs, both GPUs are free.
  EXPECT_FALSE(pods_->Get("default", "big").has_value());
  ASSERT_TRUE(admission_->CreatePod(PodJson("fits", 2)).ok());
  EXPECT_TRUE(pods_->Get("default", "fits").has_value());
  // The kubelet's Warning event, with the reason.
  std::vector<Json> warnings = WarningsAbout("big");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0]["reason"], reason);
  EXPECT_EQ(warnings[0]["source"]["component"], "kubelet");

  // The refused pod stays, so its name is taken (as on a cluster), until it is deleted.
  EXPECT_EQ(resourceapi::HttpCode(admission_->CreatePod(PodJson("big", 1)).status()), 409);
  EXPECT_TRUE(status_->Sync() >= 0 && store_.Get(Kind::kPod, "default", "big").ok());
  ASSERT_TRUE(admission_->DeletePod("default", "big", "").ok());
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "big").ok());
}

TEST_F(PodAdmissionTest, KdpctlRetriesARefusedPodAndDeletesOneAsTheApiDoes) {
  Pod pod;
  pod.name = "big";
  pod.uid = "uid-big-1";
  pod.containers = {{.name = "main",
                     .kind = ContainerKind::kApp,
                     .extended_resources = {{kGpuResource, 3}},
                     .other_limits = {}}};
  absl::StatusOr<AdmitResult> refused = admission_->Admit(pod);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->admitted);
  // Shown in the API as any refused pod.
  EXPECT_EQ((*store_.Get(Kind::kPod, "default", "big"))["status"]["phase"], "Failed");
  // Without retry: the name is taken; with it (kdpctl apply), the new spec is admitted.
  pod.uid = "uid-big-2";
  pod.containers[0].extended_resources[kGpuResource] = 1;
  EXPECT_TRUE(absl::IsAlreadyExists(admission_->Admit(pod).status()));
  absl::StatusOr<AdmitResult> retried = admission_->Admit(pod, nullptr, /*retry_refused=*/true);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->admitted) << retried->reason << ": " << retried->message;
  EXPECT_EQ((*store_.Get(Kind::kPod, "default", "big"))["status"]["phase"], "Running");
  absl::StatusOr<PodDeletion> deleted = admission_->Delete("default", "big");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->uid, "uid-big-2");
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "big").ok());
}

TEST_F(PodAdmissionTest, AnInvalidPodIsRefusedWithTheApiServersStatusAndChangesNothing) {
  Json bad = PodJson("bad", 1);
  bad["spec"]["containers"][0]["resources"]["limits"][kGpuResource] = "1.5";
  absl::StatusOr<Json> created = admission_->CreatePod(bad);
  EXPECT_EQ(resourceapi::HttpCode(created.status()), 422) << created.status();
  EXPECT_THAT(created.status().message(), HasSubstr("Pod \"bad\" is invalid: "));
  EXPECT_THAT(created.status().message(), HasSubstr("must be an integer"));

  Json not_a_pod = PodJson("worse", 1);
  not_a_pod["spec"]["containers"] = "main";
  EXPECT_EQ(resourceapi::HttpCode(admission_->CreatePod(not_a_pod).status()), 400);

  EXPECT_TRUE(pods_->List().empty());
  EXPECT_TRUE(store_.List(Kind::kPod, "").items.empty());
}

}  // namespace
}  // namespace kdp::manager
