#include "manager/src/controlplane/resourceapi/openapi.h"

#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "openssl/evp.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using Json = nlohmann::json;

constexpr char kSchemas[] = "#/components/schemas/";
// kubectl 1.27's Accept for /openapi/v2, verbatim.
constexpr char kKubectlV2Accept[] = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
constexpr const char* kGroupVersions[] = {"api/v1", "apis/resource.k8s.io/v1",
                                          "apis/resource.k8s.io/v1beta1", "apis/events.k8s.io/v1"};

std::string Sha512Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha512(), nullptr);
  return absl::AsciiStrToUpper(
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size)));
}

Json Document(std::string_view group_version) {
  std::optional<Json> document = OpenApiV3Document(group_version);
  EXPECT_TRUE(document.has_value()) << group_version;
  return document.value_or(Json::object());
}

// The group-versions serving `info`: core kinds in api/v1, resource.k8s.io kinds in both.
std::vector<std::pair<std::string, std::string>> Versions(const KindInfo& info) {
  if (*info.group == '\0') return {{"api/v1", "v1"}};
  return {{"apis/resource.k8s.io/v1", "v1"}, {"apis/resource.k8s.io/v1beta1", "v1beta1"}};
}

std::string SchemaName(const KindInfo& info, const std::string& version) {
  if (*info.group == '\0') return absl::StrCat("io.k8s.api.core.v1.", info.name);
  return absl::StrCat("io.k8s.api.resource.", version, ".", info.name);
}

// The schema a property, item or reference stands for: follows allOf[0] and $ref. Lookups here
// and below copy and index non-const values, so a missing key fails an expectation instead of
// tripping nlohmann's assertion.
Json Resolve(Json document, Json schema) {
  if (schema.contains("allOf")) schema = schema["allOf"][0];
  if (!schema.contains("$ref")) return schema;
  std::string name = schema["$ref"].get<std::string>().substr(std::string(kSchemas).size());
  return document["components"]["schemas"][name];
}

// The schema at `path` ("spec.containers[].resources") under the schema named `root`.
Json At(Json document, const std::string& root, const std::string& path) {
  Json schema = document["components"]["schemas"][root];
  for (absl::string_view step : absl::StrSplit(path, '.')) {
    const bool item = absl::ConsumeSuffix(&step, "[]");
    Json properties = schema["properties"];
    if (!properties.contains(std::string(step))) {
      ADD_FAILURE() << root << ": no property " << step << " on the way to " << path;
      return Json::object();
    }
    schema = properties[std::string(step)];
    if (item) schema = schema["items"];
    schema = Resolve(document, schema);
  }
  return schema;
}

// Every "$ref" in `value`, with the path where it was found.
void CollectRefs(const Json& value, const std::string& where,
                 std::vector<std::pair<std::string, std::string>>& refs) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      if (key == "$ref" && child.is_string()) refs.emplace_back(child.get<std::string>(), where);
      CollectRefs(child, where + "/" + key, refs);
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      CollectRefs(value[i], absl::StrCat(where, "/", i), refs);
    }
  }
}

// The operations (path, method) of `document` whose GVK is `info` at `version`.
std::vector<std::pair<std::string, Json>> Operations(Json document, const KindInfo& info,
                                                     const std::string& version,
                                                     const std::string& method) {
  const Json gvk = {{"group", info.group}, {"kind", info.name}, {"version", version}};
  std::vector<std::pair<std::string, Json>> ops;
  for (auto& [path, item] : document["paths"].items()) {
    if (item.contains(method) && item[method]["x-kubernetes-group-version-kind"] == gvk) {
      ops.emplace_back(path, item[method]);
    }
  }
  return ops;
}

bool HasQueryParam(Json op, std::string_view name) {
  for (Json& param : op["parameters"]) {
    if (param.value("name", "") == name && param.value("in", "") == "query" &&
        param["schema"].value("type", "") == "string") {
      return true;
    }
  }
  return false;
}

TEST(OpenApiTest, V3IndexListsEveryGroupVersionWithTheHashOfItsDocument) {
  std::optional<OpenApiAnswer> index = ServeOpenApi("/openapi/v3", "application/json, */*");
  ASSERT_TRUE(index.has_value());
  EXPECT_EQ(index->code, 200);
  EXPECT_EQ(index->content_type, "application/json");
  Json paths = Json::parse(index->body)["paths"];
  ASSERT_EQ(paths.size(), std::size(kGroupVersions));
  std::set<std::string> hashes;
  for (const std::string gv : kGroupVersions) {
    SCOPED_TRACE(gv);
    std::optional<OpenApiAnswer> document = ServeOpenApi("/openapi/v3/" + gv, "application/json");
    ASSERT_TRUE(document.has_value());
    EXPECT_EQ(document->code, 200);
    EXPECT_EQ(document->content_type, "application/json");
    const std::string hash = Sha512Hex(document->body);
    EXPECT_EQ(paths[gv]["serverRelativeURL"], "/openapi/v3/" + gv + "?hash=" + hash);
    hashes.insert(hash);
    EXPECT_EQ(Json::parse(document->body), Document(gv));
    EXPECT_EQ(Json::parse(document->body)["openapi"], "3.0.0");
  }
  EXPECT_EQ(hashes.size(), std::size(kGroupVersions));
  // The documents are immutable: a second answer is byte-identical (clients cache by hash).
  EXPECT_EQ(ServeOpenApi("/openapi/v3/api/v1", "")->body,
            ServeOpenApi("/openapi/v3/api/v1/", "application/json")->body);
}

TEST(OpenApiTest, EveryKindHasItsSchemaWithItsGroupVersionKind) {
  for (const KindInfo& info : AllKinds()) {
    for (const auto& [gv, version] : Versions(info)) {
      SCOPED_TRACE(absl::StrCat(gv, " ", info.name));
      Json document = Document(gv);
      Json& schemas = document["components"]["schemas"];
      const std::string name = SchemaName(info, version);
      ASSERT_TRUE(schemas.contains(name));
      Json& schema = schemas[name];
      EXPECT_EQ(
          schema["x-kubernetes-group-version-kind"],
          Json::array({Json{{"group", info.group}, {"kind", info.name}, {"version", version}}}));
      EXPECT_EQ(schema["type"], "object");
      EXPECT_FALSE(schema.value("description", "").empty());
      EXPECT_EQ(schema["properties"]["metadata"]["allOf"][0]["$ref"],
                absl::StrCat(kSchemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
      EXPECT_EQ(schema["properties"]["apiVersion"]["type"], "string");
      EXPECT_EQ(schema["properties"]["kind"]["type"], "string");
      Json& list = schemas[name + "List"];
      EXPECT_EQ(list["x-kubernetes-group-version-kind"][0]["kind"], info.list_kind);
      EXPECT_EQ(list["properties"]["items"]["items"]["$ref"], kSchemas + name);
    }
  }
}

TEST(OpenApiTest, EveryKindHasItsOperationsAndEveryWriteTakesFieldValidation) {
  for (const KindInfo& info : AllKinds()) {
    for (const auto& [gv, version] : Versions(info)) {
      SCOPED_TRACE(absl::StrCat(gv, " ", info.name));
      Json document = Document(gv);
      std::set<std::string> actions;
      for (const char* method : {"get", "post", "put", "patch", "delete"}) {
        for (auto& [path, op] : Operations(document, info, version, method)) {
          actions.insert(op["x-kubernetes-action"].get<std::string>());
          if (std::string_view(method) == "post" || std::string_view(method) == "put" ||
              std::string_view(method) == "patch") {
            // kubectl's queryParamVerifierV3 looks at the first PATCH operation of the GVK it
            // finds, in map order: every one must carry the parameter.
            EXPECT_TRUE(HasQueryParam(op, "fieldValidation")) << method << " " << path;
            EXPECT_TRUE(HasQueryParam(op, "fieldManager")) << method << " " << path;
            EXPECT_TRUE(op["requestBody"].contains("content")) << method << " " << path;
          }
        }
      }
      EXPECT_THAT(actions, UnorderedElementsAre("get", "list", "post", "put", "patch", "delete",
                                                "deletecollection"));
      const std::string base =
          *info.group == '\0' ? "/api/v1" : absl::StrCat("/apis/", info.group, "/", version);
      const std::string collection =
          absl::StrCat(base, info.namespaced ? "/namespaces/{namespace}/" : "/", info.resource);
      EXPECT_TRUE(document["paths"].contains(collection));
      EXPECT_TRUE(document["paths"][collection + "/{name}"].contains("patch"));
      EXPECT_EQ(document["paths"].contains(collection + "/{name}/status"), info.has_status);
    }
  }
}

TEST(OpenApiTest, EveryRefResolvesWithinItsDocument) {
  for (const std::string gv : kGroupVersions) {
    SCOPED_TRACE(gv);
    Json document = Document(gv);
    std::vector<std::pair<std::string, std::string>> refs;
    CollectRefs(document, "", refs);
    // events.k8s.io/v1 serves one kind; the others several.
    EXPECT_GT(refs.size(), gv == "apis/events.k8s.io/v1" ? 30u : 100u);
    for (const auto& [ref, where] : refs) {
      ASSERT_TRUE(absl::StartsWith(ref, kSchemas)) << ref << " at " << where;
      EXPECT_TRUE(
          document["components"]["schemas"].contains(ref.substr(std::string(kSchemas).size())))
          << ref << " at " << where;
    }
  }
}

TEST(OpenApiTest, OnlyCoreKindsOfferStrategicMergePatch) {
  for (const KindInfo& info : AllKinds()) {
    for (const auto& [gv, version] : Versions(info)) {
      SCOPED_TRACE(absl::StrCat(gv, " ", info.name));
      const auto patches = Operations(Document(gv), info, version, "patch");
      ASSERT_FALSE(patches.empty());
      for (auto [path, op] : patches) {
        Json content = op["requestBody"]["content"];
        EXPECT_TRUE(content.contains("application/json-patch+json")) << path;
        EXPECT_TRUE(content.contains("application/merge-patch+json")) << path;
        EXPECT_TRUE(content.contains("application/apply-patch+yaml")) << path;
        EXPECT_EQ(content.contains("application/strategic-merge-patch+json"), *info.group == '\0')
            << path;
      }
    }
  }
}

TEST(OpenApiTest, EventsK8sIoServesItsEventShapeForKubectlExplain) {
  Json document = Document("apis/events.k8s.io/v1");
  Json& schemas = document["components"]["schemas"];
  ASSERT_TRUE(schemas.contains("io.k8s.api.events.v1.Event"));
  Json event = schemas["io.k8s.api.events.v1.Event"];
  EXPECT_EQ(event["x-kubernetes-group-version-kind"],
            Json::parse(R"([{"group": "events.k8s.io", "kind": "Event", "version": "v1"}])"));
  for (const char* field : {"regarding", "note", "reportingController", "reportingInstance",
                            "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedCount",
                            "eventTime", "series", "action", "related", "reason", "type"}) {
    EXPECT_TRUE(event["properties"].contains(field)) << field;
  }
  EXPECT_FALSE(event["properties"].contains("involvedObject"));
  EXPECT_EQ(At(document, "io.k8s.api.events.v1.Event", "series")["properties"]["count"]["type"],
            "integer");
  EXPECT_EQ(At(document, "io.k8s.api.events.v1.Event", "regarding")["properties"]["name"]["type"],
            "string");
  EXPECT_TRUE(schemas.contains("io.k8s.api.events.v1.EventList"));
  // Its paths, with kube-openapi's operation ids; a built-in group takes strategic merge patches.
  Json& paths = document["paths"];
  ASSERT_TRUE(paths.contains("/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}"));
  ASSERT_TRUE(paths.contains("/apis/events.k8s.io/v1/events"));
  Json object = paths["/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}"];
  EXPECT_EQ(object["get"]["operationId"], "readEventsV1NamespacedEvent");
  EXPECT_TRUE(HasQueryParam(object["patch"], "fieldValidation"));
  EXPECT_TRUE(
      object["patch"]["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  // The schema is in the v2 document too (kubectl explain of old clients).
  std::optional<OpenApiAnswer> v2 = ServeOpenApi("/openapi/v2", "application/json");
  ASSERT_TRUE(v2.has_value());
  EXPECT_TRUE(Json::parse(v2->body)["definitions"].contains("io.k8s.api.events.v1.Event"));
}

TEST(OpenApiTest, PodContainersCarryTheirMergeKey) {
  Json document = Document("api/v1");
  Json spec = At(document, "io.k8s.api.core.v1.Pod", "spec");
  Json containers = spec["properties"]["containers"];
  EXPECT_EQ(containers["type"], "array");
  EXPECT_EQ(containers["x-kubernetes-patch-merge-key"], "name");
  EXPECT_EQ(containers["x-kubernetes-patch-strategy"], "merge");
  EXPECT_EQ(containers["x-kubernetes-list-type"], "map");
  EXPECT_THAT(containers["x-kubernetes-list-map-keys"], ElementsAre("name"));
  EXPECT_EQ(containers["items"]["$ref"], absl::StrCat(kSchemas, "io.k8s.api.core.v1.Container"));
  EXPECT_EQ(spec["properties"]["initContainers"]["x-kubernetes-patch-merge-key"], "name");
  EXPECT_EQ(spec["properties"]["resourceClaims"]["x-kubernetes-patch-strategy"],
            "merge,retainKeys");

  Json limits = At(document, "io.k8s.api.core.v1.Pod", "spec.containers[].resources");
  EXPECT_EQ(limits["properties"]["limits"]["additionalProperties"]["$ref"],
            absl::StrCat(kSchemas, "io.k8s.apimachinery.pkg.api.resource.Quantity"));
  EXPECT_EQ(At(document, "io.k8s.api.core.v1.Pod", "spec.containers[].resources.claims[].name")
                .value("type", ""),
            "string");
  for (const char* path :
       {"spec.nodeName", "spec.restartPolicy", "spec.containers[].image", "status.phase",
        "status.conditions[].type", "status.containerStatuses[].ready",
        "status.resourceClaimStatuses[].resourceClaimName"}) {
    EXPECT_FALSE(At(document, "io.k8s.api.core.v1.Pod", path).value("description", "").empty())
        << path;
  }
  for (const char* path : {"spec.unschedulable", "spec.taints[].effect", "status.capacity",
                           "status.allocatable", "status.nodeInfo.kubeletVersion",
                           "status.addresses[].address", "status.conditions[].status"}) {
    EXPECT_FALSE(At(document, "io.k8s.api.core.v1.Node", path).value("description", "").empty())
        << path;
  }
  for (const char* path : {"involvedObject.uid", "reason", "message", "type", "count",
                           "source.component", "firstTimestamp", "lastTimestamp"}) {
    EXPECT_FALSE(At(document, "io.k8s.api.core.v1.Event", path).value("description", "").empty())
        << path;
  }
  EXPECT_EQ(At(document, "io.k8s.api.core.v1.Namespace", "status.phase")["enum"],
            Json::array({"Active", "Terminating"}));
}

TEST(OpenApiTest, ResourceSchemasFollowEachVersionsShape) {
  Json v1 = Document("apis/resource.k8s.io/v1");
  const std::string claim = "io.k8s.api.resource.v1.ResourceClaim";
  for (const char* path :
       {"spec.devices.requests[].name", "spec.devices.requests[].exactly.deviceClassName",
        "spec.devices.requests[].exactly.selectors[].cel.expression",
        "spec.devices.requests[].exactly.allocationMode", "spec.devices.requests[].exactly.count",
        "spec.devices.requests[].firstAvailable[].deviceClassName",
        "spec.devices.constraints[].matchAttribute", "spec.devices.config[].opaque.parameters",
        "status.allocation.devices.results[].device", "status.reservedFor[].uid"}) {
    EXPECT_FALSE(At(v1, claim, path).value("description", "").empty()) << path;
  }
  EXPECT_EQ(At(v1, claim, "status")["properties"]["reservedFor"]["x-kubernetes-patch-merge-key"],
            "uid");
  for (const char* path :
       {"spec.driver", "spec.pool.name", "spec.pool.generation", "spec.pool.resourceSliceCount",
        "spec.nodeName", "spec.allNodes", "spec.devices[].name", "spec.devices[].attributes",
        "spec.devices[].capacity"}) {
    EXPECT_FALSE(
        At(v1, "io.k8s.api.resource.v1.ResourceSlice", path).value("description", "").empty())
        << path;
  }
  EXPECT_FALSE(At(v1, "io.k8s.api.resource.v1.ResourceClaimTemplate", "spec.spec.devices")
                   .value("description", "")
                   .empty());
  EXPECT_TRUE(At(v1, "io.k8s.api.resource.v1.ResourceClaimTemplate", "spec.metadata.labels")
                  .contains("additionalProperties"));
  EXPECT_FALSE(At(v1, "io.k8s.api.resource.v1.DeviceClass", "spec.selectors[].cel.expression")
                   .value("description", "")
                   .empty());

  // v1beta1: the request carries ExactDeviceRequest's fields itself; a device wraps its own in
  // `basic` (conversion.h).
  Json beta = Document("apis/resource.k8s.io/v1beta1");
  Json request = At(beta, "io.k8s.api.resource.v1beta1.ResourceClaim", "spec.devices.requests[]");
  EXPECT_TRUE(request["properties"].contains("deviceClassName"));
  EXPECT_TRUE(request["properties"].contains("firstAvailable"));
  EXPECT_FALSE(request["properties"].contains("exactly"));
  EXPECT_FALSE(
      beta["components"]["schemas"].contains("io.k8s.api.resource.v1beta1.ExactDeviceRequest"));
  Json device = At(beta, "io.k8s.api.resource.v1beta1.ResourceSlice", "spec.devices[]");
  EXPECT_TRUE(device["properties"].contains("basic"));
  EXPECT_TRUE(
      At(beta, "io.k8s.api.resource.v1beta1.ResourceSlice", "spec.devices[].basic")["properties"]
          .contains("attributes"));
  EXPECT_FALSE(device["properties"].contains("attributes"));
}

TEST(OpenApiTest, V2AnswersAnEmptyProtobufDocumentOrJsonSwagger) {
  for (const char* accept :
       {kKubectlV2Accept, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, "
        "application/json"}) {
    std::optional<OpenApiAnswer> answer = ServeOpenApi("/openapi/v2", accept);
    ASSERT_TRUE(answer.has_value()) << accept;
    EXPECT_EQ(answer->code, 200);
    // Exactly this: Go's mime parser rejects the '@' form in a Content-Type.
    EXPECT_EQ(answer->content_type, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    EXPECT_EQ(answer->body, "");
  }
  for (const char* accept : {"application/json", "", "*/*",
                             "application/json, application/com.github.proto-openapi.spec.v2@v1."
                             "0+protobuf"}) {
    std::optional<OpenApiAnswer> answer = ServeOpenApi("/openapi/v2", accept);
    ASSERT_TRUE(answer.has_value()) << accept;
    EXPECT_EQ(answer->code, 200);
    EXPECT_EQ(answer->content_type, "application/json");
    Json swagger = Json::parse(answer->body);
    EXPECT_EQ(swagger["swagger"], "2.0");
    EXPECT_TRUE(swagger["paths"].is_object());
    ASSERT_TRUE(swagger["definitions"].contains("io.k8s.api.core.v1.Pod"));
    ASSERT_TRUE(swagger["definitions"].contains("io.k8s.api.resource.v1beta1.ResourceClaim"));
    std::vector<std::pair<std::string, std::string>> refs;
    CollectRefs(swagger, "", refs);
    for (const auto& [ref, where] : refs) {
      ASSERT_TRUE(absl::StartsWith(ref, "#/definitions/")) << ref << " at " << where;
      EXPECT_TRUE(swagger["definitions"].contains(ref.substr(14))) << ref << " at " << where;
    }
    EXPECT_FALSE(absl::StrContains(answer->body, "\"oneOf\""));
  }
}

TEST(OpenApiTest, UnknownGroupVersionIsNotFoundAndOtherPathsAreNotOpenApi) {
  std::optional<OpenApiAnswer> answer =
      ServeOpenApi("/openapi/v3/apis/apps/v1", "application/json");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code, 404);
  Json status = Json::parse(answer->body);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "NotFound");
  EXPECT_EQ(status["code"], 404);
  EXPECT_FALSE(OpenApiV3Document("apis/apps/v1").has_value());
  EXPECT_FALSE(OpenApiV3Document("apis/resource.k8s.io/v1alpha3").has_value());
  EXPECT_FALSE(ServeOpenApi("/api/v1", "application/json").has_value());
  EXPECT_FALSE(ServeOpenApi("/openapi", "application/json").has_value());
  EXPECT_FALSE(ServeOpenApi("/apis/resource.k8s.io/v1", "application/json").has_value());
}

}  // namespace
}  // namespace kdp::manager::resourceapi
