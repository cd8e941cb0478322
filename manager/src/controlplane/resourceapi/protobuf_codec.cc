// The envelope half of protobuf_codec.h: the "k8s\0" magic and runtime.Unknown, checked in the
// order and with the texts of apimachinery's protobuf.Serializer.Decode and the API server's
// create/update handlers (transformDecodeError, the "API version in the data" check); the object
// itself is decoded in protobuf_codec_slice.cc.
#include "manager/src/controlplane/resourceapi/protobuf_codec.h"

#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/resource_name.h"
#include "k8s/apimachinery/pkg/runtime/generated.pb.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// protobuf.Serializer's prefix: "k8s" and a zero byte.
constexpr std::string_view kMagic("k8s\0", 4);
constexpr char kBadMagic[] =
    "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]";

// summarizeData(body, 30) of the API server's handlers: text for a JSON-looking body, else hex.
std::string Summarize(std::string_view body) {
  constexpr size_t kMax = 30;
  if (body.empty()) return "<empty>";
  const bool longer = body.size() > kMax;
  std::string_view head = body.substr(0, kMax);
  std::string out = body[0] == '{'
                        ? std::string(head)
                        : absl::BytesToHexString(absl::string_view(head.data(), head.size()));
  if (longer) out += " ...";
  return out;
}

// Error texts quote bytes from the body (typeMeta, the start of the body), which need not be
// UTF-8, while the Status object that carries the text is JSON: invalid bytes become U+FFFD, as
// Go's encoding/json writes them.
std::string ValidUtf8Text(const std::string& text) {
  return Json::parse(Json(text).dump(-1, ' ', false, Json::error_handler_t::replace))
      .get<std::string>();
}

absl::Status BadRequest(const std::string& message) {
  return BadRequestError(ValidUtf8Text(message));
}

// transformDecodeError without a kind from the data: the body is not even an envelope.
absl::Status Unrecognized(const KindInfo& info, std::string_view why, std::string_view body) {
  return BadRequest(absl::StrCat("the object provided is unrecognized (must be of type ", info.name,
                                 "): ", std::string(why), " (", Summarize(body), ")"));
}

// transformDecodeError with the data's kind and version.
absl::Status CannotHandle(std::string_view data_kind, std::string_view data_version,
                          const KindInfo& info, std::string_view why) {
  return BadRequest(absl::StrCat(std::string(data_kind), " in version ", GoQuote(data_version),
                                 " cannot be handled as a ", info.name, ": ", std::string(why)));
}

// The version part of an apiVersion ("resource.k8s.io/v1" -> "v1", "v1" -> "v1").
std::string_view VersionOf(std::string_view api_version) {
  const size_t slash = api_version.rfind('/');
  return slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
}

// nlohmann::json throws on strings that are not UTF-8 when it dumps them, and the body's strings
// are bytes from the wire. Go's encoding/json writes U+FFFD for invalid bytes; do the same, once,
// and only when the object needs it.
Json ValidUtf8(Json object) {
  try {
    (void)object.dump();
    return object;
  } catch (const Json::exception&) {
    return Json::parse(object.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> DecodeProtobufBody(Kind kind, std::string_view version,
                                                  std::string_view body) {
  // Only ResourceSlice bodies are decoded: no driver sends any other kind as protobuf.
  if (kind != Kind::kResourceSlice || (version != kVersionV1 && version != kVersionV1beta1)) {
    return UnsupportedMediaTypeError(kProtobufMediaType);
  }
  const KindInfo& info = InfoOf(kind);
  const std::string expected_api_version = ApiVersion(info, version);

  // protobuf.Serializer.Decode: the prefix, then the envelope.
  if (body.empty()) return Unrecognized(info, "empty data", body);
  if (body.substr(0, kMagic.size()) != kMagic) return Unrecognized(info, kBadMagic, body);
  if (body.size() == kMagic.size()) return Unrecognized(info, "empty body", body);
  ::k8s::io::apimachinery::pkg::runtime::Unknown unknown;
  if (absl::Status parsed = internal::ParseMessage(body.substr(kMagic.size()), &unknown);
      !parsed.ok()) {
    return Unrecognized(info, std::string(parsed.message()), body);
  }

  // copyKindDefaults: what the data leaves empty comes from the URL.
  std::string data_kind = unknown.typemeta().kind();
  if (data_kind.empty()) data_kind = info.name;
  std::string data_api_version = unknown.typemeta().apiversion();
  if (data_api_version.empty()) data_api_version = expected_api_version;
  const std::string_view data_version = VersionOf(data_api_version);

  // The API server decodes into the data's kind and then fails to convert it to the URL's.
  if (data_kind != info.name) {
    return CannotHandle(data_kind, data_version, info,
                        absl::StrCat("the kind in the data (", data_kind,
                                     ") does not match the expected kind (", info.name, ")"));
  }
  // createHandler / UpdateResource: scope.AcceptsGroupVersion.
  if (data_api_version != expected_api_version) {
    return BadRequest(absl::StrCat("the API version in the data (", data_api_version,
                                   ") does not match the expected API version (",
                                   expected_api_version, ")"));
  }
  // The API server ignores contentEncoding (client-go never sets one); a compressed or otherwise
  // encoded raw would only fail below with a less helpful message, so name it. contentType is
  // not read, as the API server does not read it.
  if (!unknown.contentencoding().empty()) {
    return CannotHandle(
        data_kind, data_version, info,
        absl::StrCat("unsupported content encoding ", GoQuote(unknown.contentencoding())));
  }

  absl::StatusOr<Json> object = internal::ResourceSliceToJson(version, unknown.raw());
  if (!object.ok()) {
    return CannotHandle(data_kind, data_version, info, std::string(object.status().message()));
  }
  (*object)["apiVersion"] = data_api_version;
  (*object)["kind"] = data_kind;
  return ValidUtf8(*std::move(object));
}

}  // namespace kdp::manager::resourceapi
