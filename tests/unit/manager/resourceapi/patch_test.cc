// The PATCH bodies kube-apiserver accepts, applied to stored objects: the bodies below are the
// ones kubectl 1.33 sends for `kubectl apply` (client-side), `kubectl patch` and `kubectl label`,
// and the expected results are the API server's (k8s.io/apimachinery strategicpatch tests).
#include "manager/src/controlplane/resourceapi/patch.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

using ::testing::HasSubstr;

Json Pod() {
  return Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web", "x": "1"},
                 "finalizers": ["a", "b"],
                 "ownerReferences": [{"uid": "u1", "kind": "Job", "name": "j"}]},
    "spec": {"containers": [{"name": "c", "image": "busybox",
                             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                             "resources": {"claims": [{"name": "gpu"}]}}],
             "tolerations": [{"key": "k1", "operator": "Exists"}, {"key": "k2", "operator": "Exists"}],
             "volumes": [{"name": "v", "emptyDir": {}}]}})");
}

absl::StatusOr<Json> Strategic(const Json& original, const std::string& patch) {
  return ApplyPatch(original, patch, PatchType::kStrategicMergePatch, PodSchema());
}

// The names of the containers, in order.
std::vector<std::string> Names(const Json& list) {
  std::vector<std::string> names;
  for (const Json& element : list) names.push_back(element.value("name", ""));
  return names;
}

Json PodWithContainers(const std::string& containers) {
  Json pod = Pod();
  pod["spec"]["containers"] = Json::parse(containers);
  return pod;
}

TEST(Patch, ContentTypeNamesThePatchType) {
  EXPECT_EQ(PatchTypeFromContentType("application/json-patch+json"), PatchType::kJsonPatch);
  EXPECT_EQ(PatchTypeFromContentType("application/merge-patch+json; charset=utf-8"),
            PatchType::kMergePatch);
  EXPECT_EQ(PatchTypeFromContentType("application/strategic-merge-patch+json"),
            PatchType::kStrategicMergePatch);
  EXPECT_EQ(PatchTypeFromContentType("application/apply-patch+yaml"), PatchType::kApplyPatch);
  EXPECT_EQ(PatchTypeFromContentType(" application/json-patch+json ;charset=utf-8"),
            PatchType::kJsonPatch);
  EXPECT_EQ(PatchTypeFromContentType("application/json"), std::nullopt);
  EXPECT_EQ(PatchTypeFromContentType("  "), std::nullopt);
  EXPECT_EQ(PatchTypeFromContentType("application/vnd.kubernetes.protobuf"), std::nullopt);
  EXPECT_EQ(PatchTypeFromContentType(""), std::nullopt);
  EXPECT_EQ(UnsupportedPatchMediaTypeMessage(),
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/strategic-merge-patch+json, application/apply-patch+yaml");
}

TEST(Patch, SchemasNameTheMergeListsOfTheirKinds) {
  EXPECT_EQ(PodSchema().MergeKey("spec.containers"), "name");
  EXPECT_EQ(PodSchema().MergeKey("spec.initContainers[].volumeMounts"), "mountPath");
  EXPECT_EQ(PodSchema().MergeKey("spec.containers[].ports"), "containerPort");
  EXPECT_EQ(PodSchema().MergeKey("metadata.finalizers"), "");
  EXPECT_EQ(PodSchema().MergeKey("spec.tolerations"), std::nullopt);
  EXPECT_EQ(PodSchema().MergeKey("spec.containers[].resources.claims"), std::nullopt);
  EXPECT_EQ(NamespaceSchema().MergeKey("status.conditions"), "type");
  EXPECT_EQ(NamespaceSchema().MergeKey("spec.finalizers"), std::nullopt);
  EXPECT_EQ(ResourceClaimSchema().MergeKey("status.reservedFor"), "uid");
  EXPECT_EQ(GenericSchema().MergeKey("metadata.ownerReferences"), "uid");
  EXPECT_EQ(GenericSchema().MergeKey("status.reservedFor"), std::nullopt);
  EXPECT_EQ(EventSchema().MergeKey("metadata.finalizers"), "");
}

TEST(Patch, MergePatchAddsReplacesDeletesAndMergesNestedObjects) {
  absl::StatusOr<Json> patched =
      ApplyPatch(Pod(),
                 R"({"metadata": {"labels": {"x": null, "new": "y", "app": "api"}},
          "spec": {"tolerations": [{"key": "k3"}], "nodeName": "n1"}})",
                 PatchType::kMergePatch, GenericSchema());
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["labels"], Json::parse(R"({"app": "api", "new": "y"})"));
  // Lists are values to a merge patch: replaced whole.
  EXPECT_EQ((*patched)["spec"]["tolerations"], Json::parse(R"([{"key": "k3"}])"));
  EXPECT_EQ((*patched)["spec"]["nodeName"], "n1");
  EXPECT_EQ((*patched)["spec"]["containers"], Pod()["spec"]["containers"]);
  EXPECT_EQ((*patched)["metadata"]["name"], "p");
}

TEST(Patch, MergePatchMustBeAnObject) {
  for (const char* body : {"[1]", "null", "{\"a\":", "\"text\""}) {
    absl::StatusOr<Json> patched = ApplyPatch(Pod(), body, PatchType::kMergePatch, PodSchema());
    ASSERT_FALSE(patched.ok()) << body;
    EXPECT_EQ(patched.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(patched.status().message(), "Invalid JSON Patch") << body;
  }
}

TEST(Patch, JsonPatchAppliesOperationsInOrder) {
  absl::StatusOr<Json> patched = ApplyPatch(Pod(), R"([
      {"op": "test", "path": "/metadata/labels/app", "value": "web"},
      {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
      {"op": "remove", "path": "/metadata/labels/x"},
      {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx"},
      {"op": "add", "path": "/metadata/finalizers/-", "value": "c"}])",
                                            PatchType::kJsonPatch, PodSchema());
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["labels"], Json::parse(R"({"app": "web", "tier": "front"})"));
  EXPECT_EQ((*patched)["spec"]["containers"][0]["image"], "nginx");
  EXPECT_EQ((*patched)["metadata"]["finalizers"], Json::parse(R"(["a", "b", "c"])"));
}

TEST(Patch, JsonPatchFailuresNameTheOperation) {
  struct Case {
    const char* body;
    const char* message;
  };
  for (const Case& c : {
           Case{R"([{"op": "add", "path": "/metadata/labels/y", "value": "z"},
                    {"op": "test", "path": "/metadata/labels/app", "value": "api"}])",
                "testing value /metadata/labels/app failed: test failed"},
           Case{R"([{"op": "remove", "path": "/metadata/labels/missing"}])",
                "remove operation does not apply: path \"/metadata/labels/missing\""},
           Case{R"([{"op": "add", "path": "/spec/nothing/here", "value": 1}])",
                "add operation does not apply: path \"/spec/nothing/here\""},
           Case{R"([{"op": "replace", "path": "/spec/containers/5/image", "value": "x"}])",
                "replace operation does not apply"},
           Case{R"([{"op": "frob", "path": "/a"}])", "Unexpected kind: frob"},
           Case{R"({"op": "add", "path": "/a", "value": 1})",
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
           Case{R"([1])",
                "json: cannot unmarshal number into Go value of type jsonpatch.Operation"},
           Case{R"([{"op": "add")", "error decoding patch: "},
       }) {
    absl::StatusOr<Json> patched = ApplyPatch(Pod(), c.body, PatchType::kJsonPatch, PodSchema());
    ASSERT_FALSE(patched.ok()) << c.body;
    EXPECT_EQ(patched.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(std::string(patched.status().message()), HasSubstr(c.message)) << c.body;
  }
}

TEST(Patch, JsonPatchThatDecodesButDoesNotApplyIs422AsTheApiServerAnswers) {
  // patch.go: DecodePatch failures are BadRequest, Apply failures
  // NewGenericServerResponse(422, ...), whose Status carries none of the patch library's text.
  const Json unprocessable = Json::parse(R"({"kind": "Status", "apiVersion": "v1",
      "metadata": {}, "status": "Failure", "reason": "Invalid", "code": 422, "details": {},
      "message": "the server rejected our request due to an error in our request"})");
  for (const char* body : {R"([{"op": "test", "path": "/metadata/labels/app", "value": "api"}])",
                           R"([{"op": "remove", "path": "/metadata/labels/missing"}])",
                           R"([{"op": "frob", "path": "/a"}])"}) {
    absl::StatusOr<Json> patched = ApplyPatch(Pod(), body, PatchType::kJsonPatch, PodSchema());
    ASSERT_FALSE(patched.ok()) << body;
    EXPECT_EQ(ToStatusObject(patched.status()), unprocessable) << body;
  }
  for (const char* body : {R"({"op": "add"})", R"([1])", R"([{"op": "add")"}) {
    absl::StatusOr<Json> patched = ApplyPatch(Pod(), body, PatchType::kJsonPatch, PodSchema());
    ASSERT_FALSE(patched.ok()) << body;
    EXPECT_EQ(HttpCode(patched.status()), 400) << body;
    EXPECT_EQ(Reason(patched.status()), "BadRequest") << body;
  }
  // More than 10000 operations: RequestEntityTooLarge.
  std::string many = "[";
  for (int i = 0; i <= 10000; ++i) {
    many += std::string(i == 0 ? "" : ",") + R"({"op": "test", "path": "/kind", "value": "Pod"})";
  }
  many += "]";
  absl::StatusOr<Json> patched = ApplyPatch(Pod(), many, PatchType::kJsonPatch, PodSchema());
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(HttpCode(patched.status()), 413);
  EXPECT_EQ(ToStatusObject(patched.status())["message"],
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
            "got 10001");
}

TEST(Patch, StrategicApplyUpdatesAndAddsContainersInSetElementOrder) {
  // kubectl apply after changing c's image and adding d.
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({
      "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
      "spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "d"}],
               "containers": [{"image": "busybox:2", "name": "c"}, {"image": "nginx", "name": "d"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  const Json& containers = (*patched)["spec"]["containers"];
  EXPECT_EQ(Names(containers), (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(containers[0]["image"], "busybox:2");
  // Fields the patch does not mention are kept: a merge, not a replacement.
  EXPECT_EQ(containers[0]["env"], Pod()["spec"]["containers"][0]["env"]);
  EXPECT_EQ(containers[1], Json::parse(R"({"image": "nginx", "name": "d"})"));
  EXPECT_EQ((*patched)["metadata"]["annotations"].size(), 1u);
  EXPECT_FALSE((*patched)["spec"].contains("$setElementOrder/containers"));
}

TEST(Patch, StrategicDeleteDirectiveRemovesAContainer) {
  const Json pod = PodWithContainers(
      R"([{"name": "c", "image": "busybox:2"}, {"name": "d", "image": "nginx"}])");
  absl::StatusOr<Json> patched = Strategic(pod, R"({
      "metadata": {"annotations": {"a": "b"}},
      "spec": {"$setElementOrder/containers": [{"name": "c"}],
               "containers": [{"image": "busybox", "name": "c"}, {"$patch": "delete", "name": "d"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["containers"],
            Json::parse(R"([{"name": "c", "image": "busybox"}])"));
}

TEST(Patch, StrategicSetElementOrderReordersWithoutContentChanges) {
  const Json pod = PodWithContainers(R"([{"name": "a"}, {"name": "b"}, {"name": "c"}])");
  absl::StatusOr<Json> patched =
      Strategic(pod, R"({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"},
                                                          {"name": "b"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(Names((*patched)["spec"]["containers"]), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(Patch, StrategicListOrderFollowsThePatchWithoutADirective) {
  // strategicpatch's "preserve the order from the patch in a merging list 2": server-only items
  // keep their place ahead of the patch items they preceded.
  const Json pod =
      PodWithContainers(R"([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}])");
  absl::StatusOr<Json> patched = Strategic(
      pod,
      R"({"spec": {"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["containers"],
            Json::parse(R"([{"name": "2", "image": "b"}, {"name": "3", "image": "c"},
                            {"name": "1", "image": "a"}])"));
  // `kubectl patch` adding a container: the API server puts it first (the kubectl patch docs
  // show the same).
  patched = Strategic(PodWithContainers(R"([{"name": "a"}])"),
                      R"({"spec": {"containers": [{"name": "new", "image": "redis"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(Names((*patched)["spec"]["containers"]), (std::vector<std::string>{"new", "a"}));
}

TEST(Patch, StrategicMergesEnvByName) {
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({"spec": {"containers": [
      {"name": "c", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  const Json& container = (*patched)["spec"]["containers"][0];
  EXPECT_EQ(container["env"], Json::parse(R"([{"name": "A", "value": "1"},
                                              {"name": "B", "value": "3"},
                                              {"name": "C", "value": "4"}])"));
  EXPECT_EQ(container["image"], "busybox");
}

TEST(Patch, StrategicNullRemovesALabel) {
  // `kubectl label pod p x-` and `kubectl annotate pod p k=v`.
  absl::StatusOr<Json> patched =
      Strategic(Pod(), R"({"metadata": {"labels": {"x": null}, "annotations": {"k": "v"}}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["labels"], Json::parse(R"({"app": "web"})"));
  EXPECT_EQ((*patched)["metadata"]["annotations"], Json::parse(R"({"k": "v"})"));
  // A null for a field the object lacks is dropped, not stored.
  patched = Strategic(Pod(), R"({"spec": {"nodeSelector": {"zone": null, "disk": "ssd"}}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["nodeSelector"], Json::parse(R"({"disk": "ssd"})"));
}

TEST(Patch, StrategicFinalizersMergeAsASet) {
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({"metadata": {"finalizers": ["b", "c"]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["finalizers"], Json::parse(R"(["a", "b", "c"])"));
  // kubectl apply removing a finalizer sends a parallel deletion list.
  patched = Strategic(Pod(), R"({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["finalizers"], Json::parse(R"(["b"])"));
}

TEST(Patch, StrategicMergesOwnerReferencesByUid) {
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({"metadata": {"ownerReferences": [
      {"uid": "u1", "controller": true}, {"uid": "u2", "kind": "Node", "name": "n"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["ownerReferences"],
            Json::parse(R"([{"uid": "u1", "kind": "Job", "name": "j", "controller": true},
                            {"uid": "u2", "kind": "Node", "name": "n"}])"));
}

TEST(Patch, StrategicRetainKeysClearsUnlistedKeys) {
  // kubectl apply switching a volume from emptyDir to hostPath.
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({"spec": {"volumes": [
      {"$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/data"}, "name": "v"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["volumes"],
            Json::parse(R"([{"name": "v", "hostPath": {"path": "/data"}}])"));
  // The patch may not set a key the directive does not keep.
  patched = Strategic(Pod(), R"({"spec": {"volumes": [
      {"$retainKeys": ["name"], "hostPath": {"path": "/data"}, "name": "v"}]}})");
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(patched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(patched.status().message(), "invalid patch format of retainKeys");
}

TEST(Patch, StrategicReplacesListsWithoutAMergeStrategy) {
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({"spec": {
      "tolerations": [{"key": "k3", "operator": "Exists"}],
      "containers": [{"name": "c", "resources": {"claims": [{"name": "nic"}]}}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["tolerations"],
            Json::parse(R"([{"key": "k3", "operator": "Exists"}])"));
  // Container resources.claims is listType=map but has no patchStrategy tag: atomic.
  EXPECT_EQ((*patched)["spec"]["containers"][0]["resources"]["claims"],
            Json::parse(R"([{"name": "nic"}])"));
}

TEST(Patch, StrategicReplaceDirectives) {
  absl::StatusOr<Json> patched = Strategic(Pod(), R"({
      "metadata": {"labels": {"$patch": "replace", "only": "this"}},
      "spec": {"containers": [{"$patch": "replace"}, {"name": "x", "image": "y"}]}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["metadata"]["labels"], Json::parse(R"({"only": "this"})"));
  EXPECT_EQ((*patched)["spec"]["containers"], Json::parse(R"([{"name": "x", "image": "y"}])"));
}

TEST(Patch, StrategicMergesResourceClaimReservationsByUid) {
  const Json claim = Json::parse(R"({"metadata": {"name": "c"},
      "status": {"reservedFor": [{"resource": "pods", "name": "a", "uid": "1"}]}})");
  absl::StatusOr<Json> patched = ApplyPatch(
      claim, R"({"status": {"reservedFor": [{"resource": "pods", "name": "b", "uid": "2"}]}})",
      PatchType::kStrategicMergePatch, ResourceClaimSchema());
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(Names((*patched)["status"]["reservedFor"]), (std::vector<std::string>{"b", "a"}));
  // The same body against the generic schema replaces the list.
  patched = ApplyPatch(claim, R"({"status": {"reservedFor": [{"name": "b", "uid": "2"}]}})",
                       PatchType::kStrategicMergePatch, GenericSchema());
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(Names((*patched)["status"]["reservedFor"]), (std::vector<std::string>{"b"}));
}

TEST(Patch, StrategicRejectsPatchesTheMergeCannotApply) {
  struct Case {
    const char* body;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"spec": {"containers": [{"image": "x"}]}})",
                "does not contain declared merge key: name"},
           Case{R"({"spec": {"$setElementOrder/containers": [{"name": "a"}],
                             "containers": [{"name": "b"}]}})",
                "doesn't match $setElementOrder list"},
           Case{R"({"spec": {"containers": [{"$patch": "frob", "name": "c"}]}})",
                "unknown patch type: frob in map: "},
           Case{R"({"spec": {"containers": [{"$patch": "merge", "name": "c"}]}})",
                "merging lists cannot yet be specified in the patch"},
           Case{R"({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}})",
                "invalid patch format of primitive list"},
           Case{R"({"spec": {"$setElementOrder": []}})",
                "invalid patch format of setElementOrder list"},
           Case{R"({"metadata": {"finalizers": [["a"]]}})", "lists of lists are not supported"},
           Case{R"([{"op": "add"}])",
                "json: cannot unmarshal array into Go value of type map[string]interface {}"},
           Case{R"({"metadata": )", "error decoding patch: "},
       }) {
    absl::StatusOr<Json> patched = Strategic(Pod(), c.body);
    ASSERT_FALSE(patched.ok()) << c.body;
    EXPECT_EQ(patched.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(std::string(patched.status().message()), HasSubstr(c.message)) << c.body;
  }
}

TEST(Patch, DeeplyNestedBodiesAreRejectedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (PatchType type :
       {PatchType::kJsonPatch, PatchType::kMergePatch, PatchType::kStrategicMergePatch}) {
    absl::StatusOr<Json> patched = ApplyPatch(Pod(), deep, type, PodSchema());
    ASSERT_FALSE(patched.ok());
    EXPECT_EQ(patched.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(patched.status().message()), HasSubstr("exceeded max depth"));
  }
}

TEST(Patch, NullStrategicPatchChangesNothing) {
  absl::StatusOr<Json> patched = Strategic(Pod(), "null");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(*patched, Pod());
}

TEST(Patch, ServerSideApplyIsUnimplemented) {
  absl::StatusOr<Json> patched =
      ApplyPatch(Pod(), "metadata:\n  labels:\n    a: b\n", PatchType::kApplyPatch, PodSchema());
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(patched.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(patched.status().message()), HasSubstr("application/apply-patch+yaml"));
}

}  // namespace
}  // namespace kdp::manager::resourceapi
