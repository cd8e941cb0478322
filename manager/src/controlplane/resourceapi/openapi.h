// The OpenAPI documents of the local resource API, shaped like kube-apiserver's so that real
// kubectl (1.27 and later) can `apply`, `create` and `explain` against it: kubectl refuses to
// create or patch an object whose group-version has no OpenAPI v3 PATCH operation carrying the
// fieldValidation parameter (it then wants a v2 document to validate on the client), it builds
// strategic merge patches from the v3 schemas' x-kubernetes-patch-* extensions, and `explain`
// renders the v3 component schemas. kubectl 1.27 also insists on a 200 from /openapi/v2, which
// gets an empty (valid) protobuf document. The REST server asks ServeOpenApi before routing.
//
// What is served: /openapi/v2 (an empty gnostic protobuf Document, or JSON Swagger 2.0 with the
// definitions and no paths), /openapi/v3 (the index of group-versions, each URL carrying the
// uppercase hex SHA-512 of its document as kube-openapi does, so client caches keyed by URL stay
// correct), and /openapi/v3/<api/v1 | apis/resource.k8s.io/v1 | apis/resource.k8s.io/v1beta1 |
// apis/events.k8s.io/v1>.
//
// Thread-safety: the documents are built once, on first use, and immutable afterwards; every
// function is thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_OPENAPI_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_OPENAPI_H_

#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// kube-openapi's protobuf media type for the v2 document. kubectl asks with the deprecated
// `...spec.v2@v1.0+protobuf` form but Go's mime parser rejects an '@' in a Content-Type, so the
// answer must use this one.
inline constexpr char kOpenApiV2ProtobufType[] =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

// What a GET of an /openapi/... path answers.
struct OpenApiAnswer {
  int code = 200;
  std::string content_type;
  std::string body;
};

// The answer to GET `path` (without the query; the `?hash=` clients send is not checked, as
// kube-openapi serves the current document whatever hash is asked for) given the request's
// `accept` header. nullopt when `path` is not an OpenAPI path, so the server goes on routing.
// /openapi/v3/<unknown group-version> answers 404 with a NotFound Status. /openapi/v2 answers
// protobuf when the first media type of `accept` that names a served form is the protobuf one,
// JSON otherwise (never 406). Both `path` and `accept` are borrowed for the call only.
std::optional<OpenApiAnswer> ServeOpenApi(std::string_view path, std::string_view accept);

// The OpenAPI 3.0 document of `group_version` as the /openapi/v3 index names it ("api/v1",
// "apis/resource.k8s.io/v1", "apis/resource.k8s.io/v1beta1", "apis/events.k8s.io/v1"); nullopt
// for any other. Every
// $ref in it resolves within it.
std::optional<nlohmann::json> OpenApiV3Document(std::string_view group_version);

namespace openapi_internal {

// The schema table openapi.cc expands (its format is described in openapi_schemas.cc). An
// implementation detail shared by the two files; not for other callers.
std::string_view SchemaTable();

}  // namespace openapi_internal

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_OPENAPI_H_
