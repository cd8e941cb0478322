#include "manager/src/controlplane/resourceapi/field_validation.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/openapi.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kSchemasPrefix = "#/components/schemas/";

// The schemas whose every upstream field is in kdp's table: a key they do not list is unknown.
// (See the header for why the others are open.)
const std::set<std::string, std::less<>>& ClosedSchemas() {
  static const auto* const kClosed = new std::set<std::string, std::less<>>{
      "io.k8s.api.core.v1.Pod",
      "io.k8s.api.core.v1.ResourceRequirements",
      "io.k8s.api.core.v1.ResourceClaim",
      "io.k8s.api.core.v1.PodResourceClaim",
      "io.k8s.api.resource.v1.ResourceClaim",
      "io.k8s.api.resource.v1.ResourceClaimTemplate",
      "io.k8s.api.resource.v1.DeviceClass",
      "io.k8s.api.resource.v1.ResourceClaimSpec",
      "io.k8s.api.resource.v1.ResourceClaimTemplateSpec",
      "io.k8s.api.resource.v1.DeviceClassSpec",
      "io.k8s.api.resource.v1.DeviceClassConfiguration",
      "io.k8s.api.resource.v1.DeviceClaim",
      "io.k8s.api.resource.v1.DeviceRequest",
      "io.k8s.api.resource.v1.ExactDeviceRequest",
      "io.k8s.api.resource.v1.DeviceSubRequest",
      "io.k8s.api.resource.v1.DeviceSelector",
      "io.k8s.api.resource.v1.CELDeviceSelector",
      "io.k8s.api.resource.v1.DeviceConstraint",
      "io.k8s.api.resource.v1.DeviceClaimConfiguration",
      "io.k8s.api.resource.v1.OpaqueDeviceConfiguration",
  };
  return *kClosed;
}

// The component schemas of the two documents that have closed schemas, parsed once.
const Json& Schemas() {
  static const Json* const kSchemas = [] {
    auto* schemas = new Json(Json::object());
    for (const char* group_version : {"api/v1", "apis/resource.k8s.io/v1"}) {
      std::optional<Json> document = OpenApiV3Document(group_version);
      if (!document.has_value()) continue;
      for (auto& [name, schema] : (*document)["components"]["schemas"].items()) {
        (*schemas)[name] = std::move(schema);
      }
    }
    return schemas;
  }();
  return *kSchemas;
}

// The named schema a property schema stands for ({"$ref": ...} or {"allOf": [{"$ref": ...}]}),
// or "" for an inline one.
std::string RefName(const Json& schema) {
  const Json* ref = nullptr;
  if (schema.contains("$ref")) {
    ref = &schema["$ref"];
  } else if (schema.contains("allOf") && schema["allOf"].is_array() && !schema["allOf"].empty() &&
             schema["allOf"][0].contains("$ref")) {
    ref = &schema["allOf"][0]["$ref"];
  }
  if (ref == nullptr || !ref->is_string()) return "";
  absl::string_view name = ref->get_ref<const std::string&>();
  if (!absl::ConsumePrefix(&name, kSchemasPrefix)) return "";
  return std::string(name);
}

void Walk(const Json& value, const Json& schema, const std::string& path,
          std::vector<std::string>* unknown) {
  if (std::string name = RefName(schema); !name.empty()) {
    const Json& schemas = Schemas();
    auto named = schemas.find(name);
    if (named == schemas.end()) return;
    const Json& resolved = *named;
    if (value.is_object() && resolved.contains("properties")) {
      const Json& properties = resolved["properties"];
      const bool closed = ClosedSchemas().contains(name);
      for (const auto& [key, child] : value.items()) {
        const std::string child_path = path.empty() ? key : absl::StrCat(path, ".", key);
        auto property = properties.find(key);
        if (property == properties.end()) {
          if (closed) unknown->push_back(child_path);
          continue;
        }
        Walk(child, *property, child_path, unknown);
      }
      return;
    }
    Walk(value, resolved, path, unknown);
    return;
  }
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      Walk(value[i], schema["items"], absl::StrCat(path, "[", i, "]"), unknown);
    }
    return;
  }
  if (value.is_object() && schema.contains("additionalProperties") &&
      schema["additionalProperties"].is_object()) {
    for (const auto& [key, child] : value.items()) {
      Walk(child, schema["additionalProperties"], absl::StrCat(path, "[", key, "]"), unknown);
    }
  }
}

}  // namespace

absl::StatusOr<FieldValidation> ParseFieldValidation(std::string_view value) {
  if (value.empty() || value == "Warn") return FieldValidation::kWarn;
  if (value == "Strict") return FieldValidation::kStrict;
  if (value == "Ignore") return FieldValidation::kIgnore;
  return BadRequestError(absl::StrCat("fieldValidation must be one of \"Ignore\", \"Warn\" or ",
                                      "\"Strict\", not \"", std::string(value), "\""));
}

std::vector<std::string> UnknownFields(Kind kind, std::string_view version, const Json& object) {
  std::vector<std::string> unknown;
  if (version != "v1" || !object.is_object()) return unknown;
  const KindInfo& info = InfoOf(kind);
  const std::string root = std::string_view(info.group).empty()
                               ? absl::StrCat("io.k8s.api.core.v1.", info.name)
                               : absl::StrCat("io.k8s.api.resource.v1.", info.name);
  Walk(object, {{"$ref", absl::StrCat(kSchemasPrefix, root)}}, "", &unknown);
  return unknown;
}

std::string StrictDecodingError(const std::vector<std::string>& unknown) {
  std::vector<std::string> each;
  each.reserve(unknown.size());
  for (const std::string& field : unknown)
    each.push_back(absl::StrCat("unknown field \"", field, "\""));
  return absl::StrCat("strict decoding error: ", absl::StrJoin(each, ", "));
}

}  // namespace kdp::manager::resourceapi
