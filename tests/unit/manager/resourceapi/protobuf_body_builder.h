// Test helper: the request body client-go sends with `Content-Type:
// application/vnd.kubernetes.protobuf` for one object, built from a generated message (for
// example k8s::io::api::resource::v1::ResourceSlice from
// "k8s/api/resource/v1/generated.pb.h"). Used by the protobuf codec's unit tests and by
// integration tests that POST or PUT ResourceSlices to a running kdp-manager as a Go driver does.
// Header-only; depends on the generated headers and the standard library only.
//
// Thread-safety: pure function; thread-safe.
#ifndef KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_PROTOBUF_BODY_BUILDER_H_
#define KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_PROTOBUF_BODY_BUILDER_H_

#include <string>
#include <string_view>

#include "google/protobuf/message_lite.h"
#include "k8s/apimachinery/pkg/runtime/generated.pb.h"

namespace kdp::testing {

// "k8s\0" followed by the runtime.Unknown envelope {typeMeta{api_version, kind},
// raw = object's encoding}, as apimachinery's protobuf.Serializer.Encode writes it. Like Go's
// generated marshaller, the empty contentEncoding and contentType are written too (as
// zero-length fields), so the bytes match a real client's. `api_version` is the full
// "resource.k8s.io/v1"; `kind` is "ResourceSlice".
inline std::string ProtobufBody(std::string_view api_version, std::string_view kind,
                                const google::protobuf::MessageLite& object) {
  ::k8s::io::apimachinery::pkg::runtime::Unknown unknown;
  unknown.mutable_typemeta()->set_apiversion(std::string(api_version));
  unknown.mutable_typemeta()->set_kind(std::string(kind));
  unknown.set_raw(object.SerializeAsString());
  unknown.set_contentencoding("");
  unknown.set_contenttype("");
  return std::string("k8s\0", 4) + unknown.SerializeAsString();
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_PROTOBUF_BODY_BUILDER_H_
