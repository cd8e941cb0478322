#include "manager/src/controlplane/resourceapi/openapi.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "openssl/evp.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
using openapi_internal::SchemaTable;

constexpr char kSchemasPrefix[] = "#/components/schemas/";
constexpr char kMetaPrefix[] = "io.k8s.apimachinery.pkg.apis.meta.v1.";

// The served group-versions, keyed as the /openapi/v3 index names them.
struct GroupVersion {
  const char* key;
  const char* group;
  const char* version;
};
constexpr GroupVersion kGroupVersions[] = {
    {"api/v1", "", "v1"},
    {"apis/resource.k8s.io/v1", kGroup, kVersionV1},
    {"apis/resource.k8s.io/v1beta1", kGroup, kVersionV1beta1},
    {"apis/events.k8s.io/v1", kEventsGroup, kVersionV1},
};

// The kinds `gv` serves: those of AllKinds() in its group, and events.k8s.io's view of the Event.
std::vector<const KindInfo*> KindsOf(const GroupVersion& gv) {
  std::vector<const KindInfo*> kinds;
  for (const KindInfo& info : AllKinds()) {
    if (std::string_view(info.group) == gv.group) kinds.push_back(&info);
  }
  if (std::string_view(gv.group) == kEventsGroup) kinds.push_back(&EventsV1Info());
  return kinds;
}

// ---- Component schemas, expanded from the table in openapi_schemas.cc. ----

// The standard texts the table's @-descriptions stand for.
absl::string_view StandardDoc(absl::string_view doc) {
  if (doc == "@apiVersion") {
    return "APIVersion defines the versioned schema of this representation of an object. Servers "
           "should convert recognized schemas to the latest internal value, and may reject "
           "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
           "sig-architecture/api-conventions.md#resources";
  }
  if (doc == "@kind") {
    return "Kind is a string value representing the REST resource this object represents. "
           "Servers may infer this from the endpoint the client submits requests to. Cannot be "
           "updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
           "sig-architecture/api-conventions.md#types-kinds";
  }
  if (doc == "@metadata") {
    return "Standard object's metadata. More info: https://git.k8s.io/community/contributors/"
           "devel/sig-architecture/api-conventions.md#metadata";
  }
  return doc;
}

// The full name of the table's short name `name`; `version` qualifies "res." names.
std::string Qualify(absl::string_view name, absl::string_view version) {
  if (absl::ConsumePrefix(&name, "core.")) return absl::StrCat("io.k8s.api.core.v1.", name);
  if (absl::ConsumePrefix(&name, "meta.")) return absl::StrCat(kMetaPrefix, name);
  if (absl::ConsumePrefix(&name, "ev.")) return absl::StrCat("io.k8s.api.events.v1.", name);
  if (absl::ConsumePrefix(&name, "res.")) {
    return absl::StrCat("io.k8s.api.resource.", version, ".", name);
  }
  if (name == "Quantity") return "io.k8s.apimachinery.pkg.api.resource.Quantity";
  if (name == "IntOrString") return "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
  return "io.k8s.apimachinery.pkg.runtime.RawExtension";
}

Json Ref(absl::string_view full_name) {
  return {{"$ref", absl::StrCat(kSchemasPrefix, full_name)}};
}

// True for a named table type (a reference), false for primitives, lists and maps.
bool IsNamed(absl::string_view type) {
  if (absl::StartsWith(type, "[]") || absl::StartsWith(type, "{}")) return false;
  return absl::StrContains(type, '.') || type == "Quantity" || type == "IntOrString" ||
         type == "RawExtension";
}

// The schema of a value of table type `type`.
Json TypeSchema(absl::string_view type, absl::string_view version) {
  if (absl::ConsumePrefix(&type, "[]")) {
    return {{"type", "array"}, {"items", TypeSchema(type, version)}};
  }
  if (absl::ConsumePrefix(&type, "{}")) {
    return {{"type", "object"}, {"additionalProperties", TypeSchema(type, version)}};
  }
  if (IsNamed(type)) return Ref(Qualify(type, version));
  if (type == "int32" || type == "int64") {
    return {{"type", "integer"}, {"format", std::string(type)}};
  }
  return {{"type", std::string(type)}};  // string, boolean, object
}

// Applies one table <extra> to the schema or property `out`.
void ApplyExtra(absl::string_view extra, Json& out) {
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(extra, absl::MaxSplits(':', 1));
  const auto [key, value] = kv;
  const std::vector<std::string> keys = absl::StrSplit(value, ',', absl::SkipEmpty());
  if (key == "atomic" || key == "set") {
    out["x-kubernetes-list-type"] = std::string(key);
  } else if (key == "mapatomic") {
    out["x-kubernetes-map-type"] = "atomic";
  } else if (key == "map" || key == "merge" || key == "retain") {
    out["x-kubernetes-list-type"] = "map";
    out["x-kubernetes-list-map-keys"] = keys;
  } else if (key == "strategy") {
    out["x-kubernetes-patch-strategy"] = std::string(value);
  } else if (key == "enum") {
    out["enum"] = std::vector<std::string>(absl::StrSplit(value, '|'));
  } else if (key == "required") {
    out["required"] = keys;
  }
  if (key == "merge" || key == "retain" || key == "mergekey") {
    out["x-kubernetes-patch-merge-key"] = std::string(value);
    out["x-kubernetes-patch-strategy"] = key == "retain" ? "merge,retainKeys" : "merge";
  }
}

// The schemas of the types with custom JSON, which the table cannot express.
void AddSpecialSchemas(Json& schemas) {
  schemas[absl::StrCat(kMetaPrefix, "Time")] = {
      {"description",
       "Time is a wrapper around time.Time which supports correct marshaling to "
       "YAML and JSON."},
      {"type", "string"},
      {"format", "date-time"}};
  schemas[absl::StrCat(kMetaPrefix, "MicroTime")] = {
      {"description", "MicroTime is version of Time with microsecond level precision."},
      {"type", "string"},
      {"format", "date-time"}};
  schemas[absl::StrCat(kMetaPrefix, "Patch")] = {
      {"description",
       "Patch is provided to give a concrete name and type to the Kubernetes PATCH "
       "request body."},
      {"type", "object"}};
  schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {
      {"description",
       "Quantity is a fixed-point representation of a number, serialized as "
       "<signedNumber><suffix> (\"100m\", \"1Gi\", \"2\")."},
      {"oneOf", Json::array({Json{{"type", "string"}}, Json{{"type", "number"}}})}};
  schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
      {"description", "IntOrString is a type that can hold an int32 or a string."},
      {"format", "int-or-string"},
      {"oneOf", Json::array({Json{{"type", "integer"}}, Json{{"type", "string"}}})}};
  schemas["io.k8s.apimachinery.pkg.runtime.RawExtension"] = {
      {"description", "RawExtension holds an arbitrary JSON object of an external version."},
      {"type", "object"}};
}

// v1beta1 differs from v1 in two shapes (conversion.h): a DeviceRequest carries the
// ExactDeviceRequest fields itself, and a Device wraps its fields in `basic`.
void DeriveV1beta1(Json& schemas) {
  const std::string prefix = "io.k8s.api.resource.v1beta1.";
  Json& request = schemas[prefix + "DeviceRequest"];
  Json properties = schemas[prefix + "ExactDeviceRequest"]["properties"];
  properties["name"] = request["properties"]["name"];
  properties["firstAvailable"] = request["properties"]["firstAvailable"];
  request["properties"] = std::move(properties);
  request["description"] =
      "DeviceRequest is a request for devices required for a claim. This is typically a request "
      "for a single resource like a device, but can also ask for several identical devices.";
  schemas.erase(prefix + "ExactDeviceRequest");

  Json& device = schemas[prefix + "Device"];
  Json basic = device;
  basic["properties"].erase("name");
  basic.erase("required");
  basic["description"] = "BasicDevice defines one device instance.";
  schemas[prefix + "BasicDevice"] = std::move(basic);
  Json basic_property = {{"allOf", Json::array({Ref(prefix + "BasicDevice")})},
                         {"description", "Basic defines one device instance."}};
  device["properties"] = {{"name", device["properties"]["name"]},
                          {"basic", std::move(basic_property)}};
}

// Every schema the table defines, for resource.k8s.io `version`, as kube-openapi writes them: a
// property of a named type is {"allOf": [{"$ref": ...}]} so its description can stand beside it.
Json AllSchemas(absl::string_view version) {
  Json schemas = Json::object();
  Json* schema = nullptr;
  const std::string_view table = SchemaTable();
  for (absl::string_view line : absl::StrSplit(absl::string_view(table.data(), table.size()), '\n',
                                               absl::SkipWhitespace())) {
    const bool property = absl::StartsWith(line, " ");
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits(" | ", 1));
    std::vector<absl::string_view> words = absl::StrSplit(parts.first, ' ', absl::SkipEmpty());
    Json doc = std::string(StandardDoc(parts.second));
    if (!property) {
      schema = &schemas[Qualify(words[0], version)];
      *schema = {{"description", doc}, {"type", "object"}, {"properties", Json::object()}};
      for (size_t i = 1; i < words.size(); ++i) ApplyExtra(words[i], *schema);
      continue;
    }
    Json value = IsNamed(words[1]) ? Json{{"allOf", Json::array({Ref(Qualify(words[1], version))})}}
                                   : TypeSchema(words[1], version);
    value["description"] = std::move(doc);
    for (size_t i = 2; i < words.size(); ++i) ApplyExtra(words[i], value);
    (*schema)["properties"][std::string(words[0])] = std::move(value);
  }
  AddSpecialSchemas(schemas);
  if (version == kVersionV1beta1) DeriveV1beta1(schemas);
  return schemas;
}

void CollectRefs(const Json& value, std::vector<std::string>& names) {
  if (value.is_object()) {
    auto ref = value.find("$ref");
    if (ref != value.end() && ref->is_string()) {
      names.push_back(std::string(absl::StripPrefix(ref->get<std::string>(), kSchemasPrefix)));
    }
  }
  if (value.is_structured()) {
    for (const Json& child : value) CollectRefs(child, names);
  }
}

std::string SchemaName(const KindInfo& info, absl::string_view version) {
  const std::string_view group = info.group;
  const char* prefix = group.empty() ? "core." : group == kEventsGroup ? "ev." : "res.";
  return Qualify(absl::StrCat(prefix, info.name), version);
}

// The components.schemas of `gv`: its kinds (marked with their group-version-kind), their lists,
// the meta types its operations use, and everything those reference.
Json ComponentSchemas(const GroupVersion& gv) {
  Json all = AllSchemas(gv.version);
  std::vector<std::string> pending;
  for (const char* meta : {"Status", "DeleteOptions", "Patch", "WatchEvent"}) {
    pending.push_back(absl::StrCat(kMetaPrefix, meta));
  }
  for (const KindInfo* kind_info : KindsOf(gv)) {
    const KindInfo& info = *kind_info;
    const std::string name = SchemaName(info, gv.version);
    Json& kind = all[name];
    kind["x-kubernetes-group-version-kind"] =
        Json::array({Json{{"group", info.group}, {"kind", info.name}, {"version", gv.version}}});
    all[name + "List"] = {
        {"description", absl::StrCat(info.list_kind, " is a list of ", info.name, " objects.")},
        {"type", "object"},
        {"required", Json::array({"items"})},
        {"properties",
         {{"apiVersion", kind["properties"]["apiVersion"]},
          {"kind", kind["properties"]["kind"]},
          {"items",
           {{"type", "array"},
            {"items", Ref(name)},
            {"description", absl::StrCat("Items is the list of ", info.name, " objects.")}}},
          {"metadata",
           {{"allOf", Json::array({Ref(absl::StrCat(kMetaPrefix, "ListMeta"))})},
            {"description", "Standard list metadata."}}}}},
        {"x-kubernetes-group-version-kind",
         Json::array(
             {Json{{"group", info.group}, {"kind", info.list_kind}, {"version", gv.version}}})}};
    pending.push_back(name);
    pending.push_back(name + "List");
  }
  // Closed under $ref; a name the table lacks stays unresolved, which the unit test reports.
  Json out = Json::object();
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    auto it = all.find(name);
    if (out.contains(name) || it == all.end()) continue;
    CollectRefs(*it, pending);
    out[name] = *it;
  }
  return out;
}

// ---- Paths and operations. ----

struct QueryParam {
  const char* name;
  const char* type;
  const char* doc;
};
// The API server's query parameters; descriptions shortened from apimachinery's.
constexpr QueryParam kQueryParams[] = {
    {"allowWatchBookmarks", "boolean",
     "allowWatchBookmarks requests watch events of type BOOKMARK."},
    {"continue", "string", "The continue token of a list call that has more results."},
    {"dryRun", "string", "When present (All), modifications are not persisted."},
    {"fieldManager", "string", "A name for the actor or entity that is making these changes."},
    {"fieldSelector", "string", "A selector on the returned objects' fields."},
    {"fieldValidation", "string",
     "fieldValidation instructs the server on how to handle objects in the request "
     "(POST/PUT/PATCH) containing unknown or duplicate fields: Ignore, Warn or Strict."},
    {"force", "boolean", "Force re-acquires conflicting fields owned by others (apply only)."},
    {"gracePeriodSeconds", "integer", "The duration in seconds before the object is deleted."},
    {"labelSelector", "string", "A selector on the returned objects' labels."},
    {"limit", "integer", "The maximum number of responses to return for a list call."},
    {"orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."},
    {"propagationPolicy", "string", "Whether and how garbage collection will be performed."},
    {"resourceVersion", "string", "A constraint on the resource versions a request may see."},
    {"resourceVersionMatch", "string", "How resourceVersion applies to list calls."},
    {"sendInitialEvents", "boolean", "Whether a watch starts with the current objects."},
    {"timeoutSeconds", "integer", "Timeout for the list/watch call."},
    {"watch", "boolean", "Watch for changes to the described resources."},
};

// The query parameters named in `names` (space-separated), in that order.
Json Params(absl::string_view names) {
  Json params = Json::array();
  for (absl::string_view name : absl::StrSplit(names, ' ', absl::SkipEmpty())) {
    for (const QueryParam& p : kQueryParams) {
      if (name != p.name) continue;
      params.push_back({{"name", p.name},
                        {"in", "query"},
                        {"description", p.doc},
                        {"schema", {{"type", p.type}, {"uniqueItems", true}}}});
    }
  }
  return params;
}

constexpr char kListParams[] =
    "allowWatchBookmarks continue fieldSelector labelSelector limit resourceVersion "
    "resourceVersionMatch sendInitialEvents timeoutSeconds watch";
constexpr char kWriteParams[] = "dryRun fieldManager fieldValidation";

Json PathParam(const std::string& name, const std::string& doc) {
  return {{"name", name},
          {"in", "path"},
          {"required", true},
          {"description", doc},
          {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

Json Body(const std::string& schema_name, absl::string_view type = "*/*") {
  return {{"content", {{std::string(type), {{"schema", Ref(schema_name)}}}}}};
}

// Answers `codes` (200: OK, 201: Created, 202: Accepted) with `schema_name`, and 401.
Json Responses(std::initializer_list<int> codes, const std::string& schema_name,
               bool watchable = false) {
  Json responses = {{"401", {{"description", "Unauthorized"}}}};
  for (int code : codes) {
    Json content = Body(schema_name, kJsonMediaType)["content"];
    if (watchable) {
      content["application/json;stream=watch"] = {
          {"schema", Ref(absl::StrCat(kMetaPrefix, "WatchEvent"))}};
    }
    const char* text = code == 200 ? "OK" : code == 201 ? "Created" : "Accepted";
    responses[std::to_string(code)] = {{"description", text}, {"content", std::move(content)}};
  }
  return responses;
}

// "core", "resource": the group's first label, from which kube-openapi derives operation ids and
// tags.
absl::string_view GroupLabel(const GroupVersion& gv) {
  const absl::string_view group = *gv.group == '\0' ? "core" : gv.group;
  return group.substr(0, group.find('.'));
}

// "CoreV1", "ResourceV1beta1": the operation-id infix.
std::string OperationInfix(const GroupVersion& gv) {
  std::string infix = absl::StrCat(GroupLabel(gv), gv.version);
  infix[0] = absl::ascii_toupper(infix[0]);
  infix[GroupLabel(gv).size()] = absl::ascii_toupper(infix[GroupLabel(gv).size()]);
  return infix;
}

// The paths of `info` in `gv`, as the API server's installer names them: the collection, the
// object, its status subresource and, for namespaced kinds, the list across namespaces.
void AddKindPaths(const GroupVersion& gv, const KindInfo& info, Json& paths) {
  const std::string base =
      *gv.group == '\0' ? "/api/v1" : absl::StrCat("/apis/", gv.group, "/", gv.version);
  const std::string collection =
      absl::StrCat(base, info.namespaced ? "/namespaces/{namespace}/" : "/", info.resource);
  const std::string kind = SchemaName(info, gv.version);
  const std::string status = absl::StrCat(kMetaPrefix, "Status");
  const std::string infix = OperationInfix(gv);
  const std::string scope = absl::StrCat(infix, info.namespaced ? "Namespaced" : "");
  const Json gvk = {{"group", info.group}, {"kind", info.name}, {"version", gv.version}};
  auto op = [&](const char* action, const std::string& id, const std::string& description,
                Json params, Json responses, Json body = nullptr) {
    Json operation = {{"description", description},
                      {"operationId", id},
                      {"parameters", std::move(params)},
                      {"responses", std::move(responses)},
                      {"tags", Json::array({absl::StrCat(GroupLabel(gv), "_", gv.version)})},
                      {"x-kubernetes-action", action},
                      {"x-kubernetes-group-version-kind", gvk}};
    if (!body.is_null()) operation["requestBody"] = std::move(body);
    return operation;
  };
  Json body = Body(kind);
  body["required"] = true;
  const Json delete_body = Body(absl::StrCat(kMetaPrefix, "DeleteOptions"));
  // kubectl (1.30+) builds a strategic merge patch from these schemas exactly where the PATCH
  // operation lists that type. resource.k8s.io leaves it out, so kubectl falls back to its
  // compiled-in types there: merge patches for versions it does not know (v1), strategic ones
  // built from its own structs for v1beta1 from kubectl 1.32 on.
  Json patch_body = {{"required", true}, {"content", Json::object()}};
  std::vector<std::string> patch_types = {"application/json-patch+json",
                                          "application/merge-patch+json",
                                          "application/apply-patch+yaml"};
  // events.k8s.io is a built-in group with Go types, so the API server takes strategic merge
  // patches there too (client-go's event recorder patches series updates with them).
  if (*gv.group == '\0' || std::string_view(gv.group) == kEventsGroup) {
    patch_types.push_back("application/strategic-merge-patch+json");
  }
  for (const std::string& type : patch_types) {
    patch_body["content"][type] = {{"schema", Ref(absl::StrCat(kMetaPrefix, "Patch"))}};
  }
  const Json pretty = {{"name", "pretty"},
                       {"in", "query"},
                       {"description", "If 'true', then the output is pretty printed."},
                       {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
  Json scope_params = Json::array();
  if (info.namespaced) {
    scope_params.push_back(
        PathParam("namespace", "object name and auth scope, such as for teams and projects"));
  }
  scope_params.push_back(pretty);

  Json& c = paths[collection];
  c["parameters"] = scope_params;
  const std::string list_doc = absl::StrCat("list or watch objects of kind ", info.name);
  c["get"] = op("list", absl::StrCat("list", scope, info.name), list_doc, Params(kListParams),
                Responses({200}, kind + "List", true));
  c["post"] =
      op("post", absl::StrCat("create", scope, info.name), absl::StrCat("create a ", info.name),
         Params(kWriteParams), Responses({200, 201, 202}, kind), body);
  c["delete"] =
      op("deletecollection",
         absl::StrCat("delete", infix, "Collection", scope.substr(infix.size()), info.name),
         absl::StrCat("delete collection of ", info.name),
         Params("continue dryRun fieldSelector gracePeriodSeconds labelSelector limit "
                "orphanDependents propagationPolicy resourceVersion "
                "resourceVersionMatch sendInitialEvents timeoutSeconds"),
         Responses({200}, status), delete_body);

  // The object and, where the kind has one, its status subresource: both take PATCH, and every
  // PATCH of the kind must carry fieldValidation (kubectl checks whichever it meets first).
  Json object_params = scope_params;
  object_params.insert(object_params.begin(),
                       PathParam("name", absl::StrCat("name of the ", info.name)));
  for (const bool sub : {false, true}) {
    if (sub && !info.has_status) continue;
    const std::string suffix = absl::StrCat(info.name, sub ? "Status" : "");
    const std::string of = absl::StrCat(sub ? "status of " : "", "the specified ", info.name);
    Json& o = paths[absl::StrCat(collection, "/{name}", sub ? "/status" : "")];
    o["parameters"] = object_params;
    o["get"] = op("get", absl::StrCat("read", scope, suffix), absl::StrCat("read ", of),
                  Json::array(), Responses({200}, kind));
    o["put"] = op("put", absl::StrCat("replace", scope, suffix), absl::StrCat("replace ", of),
                  Params(kWriteParams), Responses({200, 201}, kind), body);
    o["patch"] =
        op("patch", absl::StrCat("patch", scope, suffix), absl::StrCat("partially update ", of),
           Params("dryRun fieldManager "
                  "fieldValidation force"),
           Responses({200, 201}, kind), patch_body);
    if (sub) continue;
    o["delete"] =
        op("delete", absl::StrCat("delete", scope, suffix), absl::StrCat("delete a ", info.name),
           Params("dryRun gracePeriodSeconds orphanDependents propagationPolicy"),
           Responses({200, 202}, status), delete_body);
  }
  if (info.namespaced) {
    Json& all = paths[absl::StrCat(base, "/", info.resource)];
    all["parameters"] = Json::array({pretty});
    all["get"] = op("list", absl::StrCat("list", infix, info.name, "ForAllNamespaces"), list_doc,
                    Params(kListParams), Responses({200}, kind + "List", true));
  }
}

Json BuildDocument(const GroupVersion& gv) {
  Json paths = Json::object();
  for (const KindInfo* info : KindsOf(gv)) AddKindPaths(gv, *info, paths);
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "unversioned"}}},
          {"paths", std::move(paths)},
          {"components", {{"schemas", ComponentSchemas(gv)}}}};
}

// ---- Serving. ----

// kube-openapi's hash of a served document: the uppercase hex SHA-512 of its bytes.
std::string Sha512Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha512(), nullptr);
  return absl::AsciiStrToUpper(
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size)));
}

// A v3 schema as Swagger 2.0 writes it: references under #/definitions/ and no oneOf (the
// Quantity and IntOrString unions are strings there, as in the API server's v2 document).
Json ToSwagger(Json schema) {
  if (schema.is_object()) {
    auto ref = schema.find("$ref");
    if (ref != schema.end() && ref->is_string()) {
      *ref = absl::StrCat("#/definitions/",
                          absl::StripPrefix(ref->get<std::string>(), kSchemasPrefix));
    }
    if (schema.contains("oneOf")) {
      schema.erase("oneOf");
      schema["type"] = "string";
    }
  }
  if (schema.is_structured()) {
    for (Json& child : schema) child = ToSwagger(std::move(child));
  }
  return schema;
}

// The served bodies. Only the serialized forms are kept (the JSON trees would take several times
// the memory), built on the first OpenAPI request.
struct Documents {
  std::map<std::string, std::string, std::less<>> v3;  // by group-version key
  std::string index;
  std::string swagger;
};

const Documents& Served() {
  static const Documents* const kDocuments = [] {
    auto* d = new Documents;
    Json index = {{"paths", Json::object()}};
    Json definitions = Json::object();
    for (const GroupVersion& gv : kGroupVersions) {
      Json document = BuildDocument(gv);
      std::string body = document.dump();
      index["paths"][gv.key] = {
          {"serverRelativeURL", absl::StrCat("/openapi/v3/", gv.key, "?hash=", Sha512Hex(body))}};
      for (const auto& [name, schema] : document["components"]["schemas"].items()) {
        definitions[name] = ToSwagger(schema);
      }
      d->v3[gv.key] = std::move(body);
    }
    d->index = index.dump();
    d->swagger = Json{{"swagger", "2.0"},
                      {"info", {{"title", "Kubernetes"}, {"version", "unversioned"}}},
                      {"paths", Json::object()},
                      {"definitions", std::move(definitions)}}
                     .dump();
    return d;
  }();
  return *kDocuments;
}

// True when the first media type of `accept` that names a form of the v2 document asks for
// protobuf (kubectl sends only the deprecated "...spec.v2@v1.0+protobuf"); JSON otherwise.
bool WantsProtobuf(absl::string_view accept) {
  for (absl::string_view range : absl::StrSplit(accept, ',')) {
    absl::string_view type = absl::StripAsciiWhitespace(range.substr(0, range.find(';')));
    if (absl::StartsWithIgnoreCase(type, "application/com.github.proto-openapi.spec.v2")) {
      return true;
    }
    if (type == kJsonMediaType || type == "*/*" || type == "application/*") return false;
  }
  return false;
}

}  // namespace

std::optional<OpenApiAnswer> ServeOpenApi(std::string_view request_path, std::string_view accept) {
  absl::string_view path(request_path.data(), request_path.size());
  if (path.size() > 1) absl::ConsumeSuffix(&path, "/");
  if (path == "/openapi/v2") {
    // An empty protobuf message is a valid, empty gnostic Document: all kubectl 1.27 needs.
    if (WantsProtobuf(absl::string_view(accept.data(), accept.size()))) {
      return OpenApiAnswer{.content_type = kOpenApiV2ProtobufType, .body = ""};
    }
    return OpenApiAnswer{.content_type = kJsonMediaType, .body = Served().swagger};
  }
  if (path == "/openapi/v3")
    return OpenApiAnswer{.content_type = kJsonMediaType, .body = Served().index};
  if (!absl::ConsumePrefix(&path, "/openapi/v3/")) return std::nullopt;
  auto it = Served().v3.find(std::string_view(path.data(), path.size()));
  if (it == Served().v3.end()) {
    return OpenApiAnswer{
        .code = 404,
        .content_type = kJsonMediaType,
        .body = StatusObject(404, "NotFound", "the server could not find the requested resource")
                    .dump()};
  }
  return OpenApiAnswer{.content_type = kJsonMediaType, .body = it->second};
}

std::optional<nlohmann::json> OpenApiV3Document(std::string_view group_version) {
  auto it = Served().v3.find(group_version);
  if (it == Served().v3.end()) return std::nullopt;
  return Json::parse(it->second);
}

}  // namespace kdp::manager::resourceapi
