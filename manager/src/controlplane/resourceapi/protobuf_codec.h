// Decoding of Kubernetes protobuf request bodies for the local resource API. Go DRA drivers
// (client-go >= 0.32) POST and PUT ResourceSlices as `application/vnd.kubernetes.protobuf`: the
// 4 magic bytes "k8s\0", then a runtime.Unknown envelope {typeMeta{apiVersion, kind}, raw,
// contentEncoding, contentType} whose `raw` is the encoded object (messages of
// proto/k8s/api/resource/{v1,v1beta1}/generated.proto, upstream field numbers). The REST server
// turns such a body into the very JSON a JSON client would have sent in the same version, and from
// there takes the JSON path unchanged (conversion.h ToV1, then the codec's defaulting and
// validation). Only ResourceSlice is decoded: the drivers send protobuf for nothing else.
//
// JSON conventions, as client-go's JSON encoding writes the same Go object: int64 as numbers,
// quantities as their string form, metav1.Time as RFC 3339 UTC with whole seconds
// ("2026-01-02T03:04:05Z"), maps as objects, v1beta1 devices as {"name", "basic": {...}}. A field
// is present exactly when encoding/json would write it: optional (pointer) fields when present on
// the wire, even when false or zero (v1's `allNodes: false`, an attribute `{"int": 0}`);
// `omitempty` value fields only when not zero (Go's generated marshaller writes zero values, so
// they carry no presence); required value fields always (`driver`, `pool`, device `name`,
// capacity `value`).
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PROTOBUF_CODEC_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PROTOBUF_CODEC_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace kdp::manager::resourceapi {

// The media type client-go sends.
inline constexpr char kProtobufMediaType[] = "application/vnd.kubernetes.protobuf";

// Decodes a protobuf request body for `kind` in URL version `version` ("v1" or "v1beta1") into
// the JSON object a JSON client would send in that version: {apiVersion, kind, metadata, spec}.
// `body` is borrowed for the call only.
//
// Errors, as the API server words them (BadRequest, 400, INVALID_ARGUMENT, from api_errors.h):
//   - no body, no "k8s\0" magic, or an envelope that does not parse (the object's type is not
//     known yet): `the object provided is unrecognized (must be of type ResourceSlice): <why>
//     (<summary>)`, the summary being the first 30 bytes in hex, or as text when the body
//     starts with '{';
//   - typeMeta.kind other than ResourceSlice: `<kind> in version "<v>" cannot be handled as a
//     ResourceSlice: the kind in the data (<kind>) does not match the expected kind
//     (ResourceSlice)`;
//   - typeMeta.apiVersion other than the URL's: `the API version in the data
//     (resource.k8s.io/v1beta1) does not match the expected API version (resource.k8s.io/v1)`;
//   - a contentEncoding, a raw object that does not parse, a field sent with the wrong wire type
//     or a time outside years 0-9999: `ResourceSlice in version "v1" cannot be handled as a
//     ResourceSlice: <why>`.
// An empty typeMeta.kind or apiVersion defaults to the URL's, as the API server defaults them.
// Kinds other than ResourceSlice, and versions other than v1 and v1beta1, answer
// UnsupportedMediaTypeError(kProtobufMediaType) (415). Fields this decoder does not declare are
// skipped, as the API server's generated unmarshallers skip unknown fields; they never turn into
// other fields. What the decoded JSON contains is not validated here: the caller's JSON path does
// that.
[[nodiscard]] absl::StatusOr<nlohmann::json> DecodeProtobufBody(Kind kind, std::string_view version,
                                                                std::string_view body);

namespace internal {

// Parses `bytes` into `message` (proto2 rules) and fails with INVALID_ARGUMENT `<why>` when the
// bytes are not a well-formed encoding, or when a declared field arrives with another wire type
// (the C++ parser would keep such a field as unknown and drop its value silently; Go's
// unmarshaller fails with "proto: wrong wireType"). Defined in protobuf_codec_slice.cc.
[[nodiscard]] absl::Status ParseMessage(std::string_view bytes, google::protobuf::Message* message);

// The ResourceSlice encoded in `raw` (runtime.Unknown.raw) as the JSON {metadata, spec} of
// `version` ("v1" or "v1beta1"); INVALID_ARGUMENT `<why>` when it does not decode. Defined in
// protobuf_codec_slice.cc.
[[nodiscard]] absl::StatusOr<nlohmann::json> ResourceSliceToJson(std::string_view version,
                                                                 std::string_view raw);

}  // namespace internal
}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_PROTOBUF_CODEC_H_
