// AdminServer::Apply (kdpctl apply -f): multi-document manifests of DeviceClasses,
// ResourceClaims, ResourceClaimTemplates (resource.k8s.io v1 and v1beta1) and Pods. Every
// document is checked before any is applied; objects are created, left "unchanged" or
// "configured" as kubectl apply does; pods are admitted through the real PodManager, claim
// controller and DRA manager (a fake driver answering CDI IDs). Called directly, without a socket.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/manager/admin/fake_dra_driver.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::TempDir;
using resourceapi::Kind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using Json = nlohmann::json;

constexpr char kDeviceClass[] = R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
)";

constexpr char kTemplate[] = R"(apiVersion: resource.k8s.io/v1
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
)";

constexpr char kPod[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: main
    image: registry.example.com/trainer:1.0
    resources:
      claims:
      - name: gpu
)";

std::string Claim(int count) {
  return absl::StrCat(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shared
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: )",
                      count, "\n");
}

std::string Documents(const std::vector<std::string>& docs) {
  std::string out;
  for (const std::string& doc : docs) {
    if (!out.empty()) out += "---\n";
    out += doc;
  }
  return out;
}

// "<kind> <namespace>/<name> <result>" per applied object.
std::vector<std::string> Results(const kdp::admin::v1::ApplyResponse& response) {
  std::vector<std::string> out;
  for (const auto& object : response.objects()) {
    out.push_back(absl::StrCat(object.kind(), " ", object.namespace_(), "/", object.name(), " ",
                               object.result()));
  }
  return out;
}

class ApplyTest : public ::testing::Test {
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
    // The driver's slice: two GPUs on this node.
    Json slice = FakeDriverSlice({{{"name", "gpu-0"}}, {{"name", "gpu-1"}}});
    ASSERT_TRUE(store_.Create(Kind::kResourceSlice, slice).ok());
  }
  void TearDown() override {
    if (devices_ != nullptr) devices_->Stop();
  }

  grpc::Status Apply(AdminServer& server, const std::string& manifest,
                     kdp::admin::v1::ApplyResponse* response) {
    kdp::admin::v1::ApplyRequest request;
    request.set_manifest(manifest);
    request.set_source("all.yaml");
    return server.Apply(nullptr, &request, response);
  }
  grpc::Status Apply(const std::string& manifest, kdp::admin::v1::ApplyResponse* response) {
    return Apply(*server_, manifest, response);
  }
  // Applies and expects success; returns the per-object results.
  std::vector<std::string> MustApply(const std::string& manifest) {
    kdp::admin::v1::ApplyResponse response;
    grpc::Status status = Apply(manifest, &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
    return Results(response);
  }
  Json Get(Kind kind, const std::string& ns, const std::string& name) {
    absl::StatusOr<Json> object = store_.Get(kind, ns, name);
    EXPECT_TRUE(object.ok()) << object.status();
    return object.value_or(Json());
  }
  // Every object of the store's kinds but the Node (the store unchanged means: this is equal).
  Json Objects() {
    Json snapshot = store_.Snapshot();
    return snapshot["objects"];
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

TEST_F(ApplyTest, MultiDocumentManifestCreatesObjectsAndAdmitsThePod) {
  kdp::admin::v1::ApplyResponse response;
  grpc::Status status = Apply(Documents({kDeviceClass, kTemplate, kPod}), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  EXPECT_THAT(Results(response), ElementsAre("DeviceClass /gpu.example.com created",
                                             "ResourceClaimTemplate default/one-gpu created",
                                             "Pod default/trainer admitted"));
  EXPECT_EQ(
      Get(Kind::kDeviceClass, "", "gpu.example.com")["spec"]["selectors"][0]["cel"]["expression"],
      "device.driver == \"gpu.example.com\"");
  EXPECT_EQ(Get(Kind::kResourceClaimTemplate, "default", "one-gpu")["metadata"]["namespace"],
            "default");
  const kdp::admin::v1::ApplyPodResponse& pod = response.objects(2).pod();
  EXPECT_TRUE(pod.admitted()) << pod.reason() << ": " << pod.message();
  ASSERT_EQ(pod.pod().containers_size(), 1);
  EXPECT_THAT(pod.pod().containers(0).cdi_devices(), ElementsAre("gpu.example.com/gpu=gpu-0"));
  ASSERT_EQ(pod.pod().claims_size(), 1);
  EXPECT_EQ(pod.pod().claims(0).pod_claim_name(), "gpu");
  EXPECT_THAT(pod.pod().claims(0).claim_name(), StartsWith("trainer-gpu-"));
  ASSERT_EQ(pod.pod().claims(0).devices_size(), 1);
  EXPECT_EQ(pod.pod().claims(0).devices(0).device(), "gpu-0");
  // The generated claim is in the store, reserved for the pod.
  std::optional<AdmittedPod> admitted = pods_->Get("default", "trainer");
  ASSERT_TRUE(admitted.has_value());
  Json claim = Get(Kind::kResourceClaim, "default", pod.pod().claims(0).claim_name());
  EXPECT_EQ(claim["status"]["reservedFor"][0]["uid"], admitted->pod.uid);
}

// A deletion is recorded before resources.json is flushed: when only the flush fails, the answer
// is success with a warning, never an error that reads as "not deleted".
TEST_F(ApplyTest, DeletionWhoseResourceFileCannotBeWrittenSucceedsWithAWarning) {
  kdp::admin::v1::DeletePodRequest request;
  request.set_name("trainer");  // namespace "" is "default"
  // Without a failure there is no warning.
  kdp::admin::v1::ApplyResponse applied;
  ASSERT_TRUE(Apply(Documents({kDeviceClass, kTemplate, kPod}), &applied).ok());
  ASSERT_TRUE(applied.objects(2).pod().admitted());
  kdp::admin::v1::DeletePodResponse clean;
  ASSERT_TRUE(server_->DeletePod(nullptr, &request, &clean).ok());
  EXPECT_TRUE(clean.warning().empty()) << clean.warning();

  kdp::admin::v1::ApplyResponse again;
  ASSERT_TRUE(Apply(kPod, &again).ok());
  ASSERT_TRUE(again.objects(0).pod().admitted()) << again.DebugString();
  // From now on resources.json is in a directory that does not exist: every write fails.
  resourceapi::StorePersister persister(dir_.Path("missing/resources.json"), &store_);
  AdminServer server(pods_.get(), devices_.get(),
                     AdminDraSources{.resources = &store_,
                                     .claims = controller_.get(),
                                     .dra = dra_.get(),
                                     .persister = &persister});
  kdp::admin::v1::DeletePodResponse response;
  grpc::Status status = server.DeletePod(nullptr, &request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.uid(), again.objects(0).pod().pod().uid());
  EXPECT_THAT(response.warning(),
              StartsWith("the pod is deleted, but the resource API's state could not be written"));
  EXPECT_THAT(response.warning(), HasSubstr(dir_.Path("missing/resources.json")));
  EXPECT_FALSE(pods_->Get("default", "trainer").has_value());
}

TEST_F(ApplyTest, SameObjectAgainIsUnchangedAndAChangedSpecIsConfigured) {
  EXPECT_THAT(MustApply(kDeviceClass), ElementsAre("DeviceClass /gpu.example.com created"));
  const Json created = Get(Kind::kDeviceClass, "", "gpu.example.com");

  EXPECT_THAT(MustApply(kDeviceClass), ElementsAre("DeviceClass /gpu.example.com unchanged"));
  EXPECT_EQ(Get(Kind::kDeviceClass, "", "gpu.example.com"), created);

  std::string changed = kDeviceClass;
  changed.replace(changed.find("device.driver =="), 16, "device.driver !=");
  EXPECT_THAT(MustApply(changed), ElementsAre("DeviceClass /gpu.example.com configured"));
  const Json configured = Get(Kind::kDeviceClass, "", "gpu.example.com");
  EXPECT_EQ(configured["spec"]["selectors"][0]["cel"]["expression"],
            "device.driver != \"gpu.example.com\"");
  EXPECT_EQ(configured["metadata"]["uid"], created["metadata"]["uid"]);
  EXPECT_EQ(configured["metadata"]["generation"], 2);
}

TEST_F(ApplyTest, ClaimWithAChangedSpecIsRefusedAsImmutable) {
  EXPECT_THAT(MustApply(Claim(1)), ElementsAre("ResourceClaim default/shared created"));
  EXPECT_THAT(MustApply(Claim(1)), ElementsAre("ResourceClaim default/shared unchanged"));

  kdp::admin::v1::ApplyResponse response;
  grpc::Status status = Apply(Claim(2), &response);

  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("field is immutable"));
  EXPECT_THAT(status.error_message(), HasSubstr("shared"));
  EXPECT_EQ(Get(Kind::kResourceClaim, "default",
                "shared")["spec"]["devices"]["requests"][0]["exactly"]["count"],
            1);
}

// An invalid third document: nothing of the first two is applied and no pod admitted.
class ApplyInvalidDocumentTest
    : public ApplyTest,
      public ::testing::WithParamInterface<std::pair<const char*, const char*>> {};

TEST_P(ApplyInvalidDocumentTest, NothingIsAppliedAndTheDocumentIsNamed) {
  const auto& [document, expected] = GetParam();
  const Json before = Objects();
  const int64_t version = store_.ResourceVersion();
  kdp::admin::v1::ApplyResponse response;

  grpc::Status status = Apply(Documents({kDeviceClass, kTemplate, document, kPod}), &response);

  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("all.yaml (document 3): "));
  EXPECT_THAT(status.error_message(), HasSubstr(expected));
  EXPECT_EQ(store_.ResourceVersion(), version);
  EXPECT_EQ(Objects(), before);
  EXPECT_THAT(pods_->List(), IsEmpty());
  EXPECT_EQ(response.objects_size(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Documents, ApplyInvalidDocumentTest,
    ::testing::Values(
        // Misspelt fields are refused as kubectl's default (Strict) refuses them: `limts` would
        // ask for no device, `selector` would drop the CEL filter.
        std::make_pair("apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n"
                       "  containers:\n  - name: main\n    resources:\n      limts:\n"
                       "        example.com/gpu: 1\n",
                       "strict decoding error: unknown field "
                       "\"spec.containers[0].resources.limts\""),
        std::make_pair("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                       "metadata:\n  name: typo\nspec:\n  spec:\n    devices:\n      requests:\n"
                       "      - name: gpu\n        exactly:\n          deviceClassName: gpu\n"
                       "          selector:\n          - cel:\n              expression: 'true'\n",
                       "strict decoding error: unknown field "
                       "\"spec.spec.devices.requests[0].exactly.selector\""),
        // A kind Apply does not take (slices are the drivers').
        std::make_pair("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n"
                       "  name: s\nspec:\n  driver: d\n",
                       "kind ResourceSlice of resource.k8s.io/v1 is not supported"),
        // A version the resource API does not serve.
        std::make_pair("apiVersion: resource.k8s.io/v2\nkind: DeviceClass\nmetadata:\n"
                       "  name: other\n",
                       "kind DeviceClass of resource.k8s.io/v2 is not supported"),
        // A claim field the API server's validation refuses.
        std::make_pair("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n"
                       "  name: bad\nspec:\n  devices:\n    requests:\n    - name: gpu\n"
                       "      exactly:\n        deviceClassName: gpu.example.com\n"
                       "        allocationMode: Sometimes\n",
                       "allocationMode"),
        // A pod the manifest parser refuses.
        std::make_pair("apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec: {}\n",
                       "containers")));

TEST_F(ApplyTest, ResourceKindsWithoutAResourceStoreAreRefused) {
  AdminServer without(pods_.get(), devices_.get());
  kdp::admin::v1::ApplyResponse response;

  grpc::Status status = Apply(without, Documents({kDeviceClass, kTemplate}), &response);

  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("all.yaml (document 1): "));
  EXPECT_THAT(status.error_message(), HasSubstr("without the local resource API"));
  EXPECT_FALSE(store_.Get(Kind::kDeviceClass, "", "gpu.example.com").ok());
  // A pod without claims is still admitted by such a manager.
  kdp::admin::v1::ApplyResponse pod_response;
  grpc::Status pod_status =
      Apply(without,
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: plain\nspec:\n  containers:\n"
            "  - name: main\n    image: busybox\n",
            &pod_response);
  ASSERT_TRUE(pod_status.ok()) << pod_status.error_message();
  EXPECT_THAT(Results(pod_response), ElementsAre("Pod default/plain admitted"));
}

TEST_F(ApplyTest, V1beta1DocumentsAreStoredInV1Form) {
  const std::string v1beta1 = R"(apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata:
  name: two-gpus
spec:
  spec:
    devices:
      requests:
      - name: gpus
        deviceClassName: gpu.example.com
        count: 2
)";
  EXPECT_THAT(MustApply(v1beta1), ElementsAre("ResourceClaimTemplate default/two-gpus created"));

  const Json stored = Get(Kind::kResourceClaimTemplate, "default", "two-gpus");
  EXPECT_EQ(stored["apiVersion"], "resource.k8s.io/v1");
  const Json& request = stored["spec"]["spec"]["devices"]["requests"][0];
  EXPECT_EQ(request["name"], "gpus");
  EXPECT_FALSE(request.contains("deviceClassName")) << request.dump();
  EXPECT_FALSE(request.contains("count")) << request.dump();
  EXPECT_EQ(request["exactly"]["deviceClassName"], "gpu.example.com");
  EXPECT_EQ(request["exactly"]["allocationMode"], "ExactCount");
  EXPECT_EQ(request["exactly"]["count"], 2);
  // The same template written in v1 is the same object.
  const std::string v1 = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: two-gpus
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.example.com
          count: 2
)";
  EXPECT_THAT(MustApply(v1), ElementsAre("ResourceClaimTemplate default/two-gpus unchanged"));
}

TEST_F(ApplyTest, UnschedulablePodIsRejectedAndTheObjectsBeforeItStay) {
  std::string three = kTemplate;
  three.replace(three.find("deviceClassName: gpu.example.com"),
                std::string("deviceClassName: gpu.example.com").size(),
                "deviceClassName: gpu.example.com\n          count: 3");
  kdp::admin::v1::ApplyResponse response;
  grpc::Status status = Apply(Documents({kDeviceClass, three, kPod}), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  EXPECT_THAT(Results(response), ElementsAre("DeviceClass /gpu.example.com created",
                                             "ResourceClaimTemplate default/one-gpu created",
                                             "Pod default/trainer rejected"));
  const kdp::admin::v1::ApplyPodResponse& pod = response.objects(2).pod();
  EXPECT_FALSE(pod.admitted());
  EXPECT_EQ(pod.reason(), "FailedScheduling");
  EXPECT_THAT(pod.message(), StartsWith("0/1 nodes are available: pod claim \"gpu\""));
  EXPECT_THAT(pods_->List(), IsEmpty());
  EXPECT_TRUE(store_.List(Kind::kResourceClaim, "default").items.empty());
  EXPECT_TRUE(store_.Get(Kind::kResourceClaimTemplate, "default", "one-gpu").ok());
}

}  // namespace
}  // namespace kdp::manager
