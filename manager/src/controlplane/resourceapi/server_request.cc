#include "manager/src/controlplane/resourceapi/server_request.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/discovery.h"
#include "manager/src/controlplane/resourceapi/field_validation.h"
#include "manager/src/controlplane/resourceapi/protobuf_codec.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// The object route of `parts[i...]` (after /api/v1 or /apis/<group>/<version>): [namespaces/<ns>/]
// <resource>[/<name>[/status]]; nullopt when the path names nothing served. `group` selects the
// kinds: "" the core group's, kGroup resource.k8s.io's, kEventsGroup events.k8s.io's Event.
std::optional<Route> ResolveObject(const std::vector<std::string>& parts, size_t i,
                                   const std::string& version, std::string_view group) {
  Route route;
  route.version = version;
  // /api/v1/namespaces/<name>[/status] is the Namespace itself, not a namespace prefix.
  if (parts[i] == "namespaces" && parts.size() >= i + 3 &&
      !(parts.size() == i + 3 && parts[i + 2] == "status")) {
    route.namespace_ = parts[i + 1];
    i += 2;
  }
  std::optional<Kind> kind;
  if (group.empty()) {
    kind = CoreKindForResource(parts[i]);
  } else if (group == kGroup) {
    kind = KindForResource(parts[i]);
  } else if (parts[i] == EventsV1Info().resource) {
    kind = Kind::kEvent;
  }
  if (!kind) return std::nullopt;
  route.kind = *kind;
  const KindInfo& info = InfoOf(*kind, version);
  // A namespaced kind is served under /namespaces/<ns>/ and, for lists, across all namespaces;
  // a cluster-scoped kind never under a namespace.
  if (!route.namespace_.empty() && !info.namespaced) return std::nullopt;
  const size_t rest = parts.size() - i - 1;  // segments after the resource
  if (rest >= 1) {
    if (info.namespaced && route.namespace_.empty()) return std::nullopt;
    route.name = parts[i + 1];
  }
  if (rest == 2) {
    if (route.kind == Kind::kPod && parts[i + 2] == "log") {
      route.log = true;
      return route;
    }
    if (parts[i + 2] != "status" || !info.has_status) return std::nullopt;
    route.status = true;
  }
  if (rest > 2) return std::nullopt;
  return route;
}

// Go's url.QueryUnescape for one key or value: %XX decoded, '+' is a space; a malformed escape is
// kept as written.
std::string QueryUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() &&
               absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

Resolved Resolve(const std::string& path, const std::string& kubernetes_version) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  Resolved r;
  if (parts.size() == 1 && parts[0] == "version") {
    r.document = VersionInfo(kubernetes_version);
    return r;
  }
  if (!parts.empty() && parts[0] == "api") {
    if (parts.size() == 1) r.document = CoreApiVersions();
    if (parts.size() == 2 && parts[1] == "v1") r.document = CoreApiResourceList();
    if (parts.size() >= 3 && parts[1] == "v1") r.route = ResolveObject(parts, 2, "v1", "");
    return r;
  }
  if (parts.empty() || parts[0] != "apis") return r;
  if (parts.size() == 1) {
    r.document = ApiGroupList();
    return r;
  }
  if (parts[1] == kEventsGroup) {
    // events.k8s.io/v1: the stored core Events in that group's shape (kinds.h kEventsV1).
    if (parts.size() == 2) r.document = EventsApiGroup();
    if (parts.size() == 3 && parts[2] == kVersionV1) r.document = EventsApiResourceList();
    if (parts.size() >= 4 && parts[2] == kVersionV1) {
      r.route = ResolveObject(parts, 3, kEventsV1, kEventsGroup);
    }
    return r;
  }
  if (parts[1] != kGroup) return r;
  if (parts.size() == 2) {
    r.document = ApiGroup();
    return r;
  }
  if (!IsServedVersion(parts[2])) return r;
  if (parts.size() == 3) {
    r.document = ApiResourceList(parts[2]);
    return r;
  }
  r.route = ResolveObject(parts, 3, parts[2], kGroup);
  return r;
}

std::map<std::string, std::string> QueryParams(const httplib::Request& request) {
  std::map<std::string, std::string> params;
  const std::size_t mark = request.target.find('?');
  if (mark == std::string::npos) return params;
  const std::string query = request.target.substr(mark + 1);
  for (absl::string_view piece : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const std::string_view pair(piece.data(), piece.size());
    const std::size_t eq = pair.find('=');
    std::string key = QueryUnescape(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : QueryUnescape(pair.substr(eq + 1));
    params.emplace(std::move(key), std::move(value));
  }
  return params;
}

Preconditions DeletePreconditions(const httplib::Request& request) {
  Preconditions preconditions;
  if (request.body.empty()) return preconditions;
  Json options = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (options.is_object() && options.contains("preconditions") &&
      options["preconditions"].is_object()) {
    preconditions.uid = options["preconditions"].value("uid", std::string());
    preconditions.resource_version =
        options["preconditions"].value("resourceVersion", std::string());
  }
  return preconditions;
}

absl::Status CheckPodUpdate(const Json& stored, const Json& updated) {
  if (stored.value("spec", Json()) == updated.value("spec", Json())) return absl::OkStatus();
  return InvalidError(
      InfoOf(Kind::kPod), stored["metadata"].value("name", ""),
      {Forbidden("spec",
                 "pod updates may not change fields other than `spec.containers[*].image`,"
                 "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                 "`spec.tolerations` (only additions to existing tolerations),"
                 "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                 "previously negative)")});
}

absl::Status CheckFields(const httplib::Request& request, const Route& route, const Json& object,
                         httplib::Response& response) {
  std::map<std::string, std::string> params = QueryParams(request);
  KDP_ASSIGN_OR_RETURN(FieldValidation validation, ParseFieldValidation(params["fieldValidation"]));
  if (validation == FieldValidation::kIgnore) return absl::OkStatus();
  std::vector<std::string> unknown = UnknownFields(route.kind, route.version, object);
  if (unknown.empty()) return absl::OkStatus();
  const KindInfo& info = InfoOf(route.kind, route.version);
  if (validation == FieldValidation::kStrict) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name, ": ",
                                        StrictDecodingError(unknown)));
  }
  for (const std::string& field : unknown) {
    // RFC 7234 warn-code 299, as the API server sends it.
    response.set_header("Warning", absl::StrCat("299 - \"unknown field \\\"", field, "\\\"\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> Incoming(const httplib::Request& request, const Route& route) {
  const KindInfo& info = InfoOf(route.kind, route.version);
  std::string content_type = request.get_header_value("Content-Type");
  content_type =
      std::string(absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';'))));
  Json body;
  if (content_type == kProtobufMediaType) {
    // client-go's default for generated clients (gentype.PrefersProtobuf), whatever the
    // kubeconfig says: ResourceSlice bodies arrive this way from every Go driver.
    absl::StatusOr<Json> decoded = DecodeProtobufBody(route.kind, route.version, request.body);
    if (!decoded.ok()) return decoded.status();
    body = *std::move(decoded);
  } else if (content_type.empty() || content_type == kJsonMediaType) {
    body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  } else {
    return UnsupportedMediaTypeError(content_type);
  }
  if (body.is_discarded() || !body.is_object()) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name,
                                        ": the request body is not a JSON object"));
  }
  const std::string expected = ApiVersion(info, route.version);
  if (body.contains("apiVersion") && body["apiVersion"] != expected) {
    return BadRequestError(
        absl::StrCat("the API version in the data (",
                     body["apiVersion"].is_string() ? body["apiVersion"].get<std::string>()
                                                    : body["apiVersion"].dump(),
                     ") does not match the expected API version (", expected, ")"));
  }
  if (body.contains("kind") && body["kind"] != info.name) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name, ": kind ",
                                        body["kind"].dump(), " does not match"));
  }
  Json& meta = body["metadata"];
  if (meta.is_null()) meta = Json::object();
  if (!meta.is_object()) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name,
                                        ": metadata must be an object"));
  }
  if (info.namespaced) {
    // rest.BeforeCreate / checkName: a body namespace must match the URL's.
    if (meta.contains("namespace") && meta["namespace"] != "" &&
        meta["namespace"] != route.namespace_) {
      return BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    meta["namespace"] = route.namespace_;
  }
  return ToV1(route.kind, route.version, std::move(body));
}

}  // namespace kdp::manager::resourceapi
