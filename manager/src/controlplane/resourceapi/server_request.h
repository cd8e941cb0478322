// A request to the local API as ResourceApiServer (server.h) reads it before it touches the
// store: what its path names (Resolve: a discovery document, or a Route to objects of a kind),
// its query (QueryParams), and its body (Incoming: decoded, checked and converted to the v1 form
// the store takes; CheckFields, CheckPodUpdate, DeletePreconditions). Each function follows the
// kube-apiserver code it names, with that code's error texts.
//
// Thread-safety: every function is thread-safe (no state).
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_REQUEST_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_REQUEST_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceapi/table.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// A request for an object or a collection, resolved from the URL.
struct Route {
  Kind kind = Kind::kResourceSlice;
  std::string version;     // "v1", "v1beta1"; kEventsV1 under /apis/events.k8s.io/v1
  std::string namespace_;  // from /namespaces/<ns>/; empty otherwise
  std::string name;        // empty: the collection
  bool status = false;     // the /status subresource
  bool log = false;        // a Pod's /log subresource
  // A GET's answer as a meta.k8s.io Table of this version (kubectl's `as=Table` Accept) instead
  // of the object or list; nullopt: the object or list itself.
  std::optional<std::string> table_version = std::nullopt;
  TableOptions::IncludeObject include_object = TableOptions::IncludeObject::kMetadata;
};

// What a path names: a discovery document, an object route, or nothing (404).
struct Resolved {
  std::optional<nlohmann::json> document;
  std::optional<Route> route;
};

// /version, /api[/v1[/...]], /apis[/<group>[/<version>[/...]]]; `kubernetes_version` is what
// /version reports.
Resolved Resolve(const std::string& path, const std::string& kubernetes_version);

// The request's query parameters as url.ParseQuery reads them: each `key=value` split at its
// FIRST '=' (httplib's own parser splits at every '=', which garbles an unescaped
// fieldSelector=spec.nodeName=a,spec.driver=b), first occurrence of a key wins.
std::map<std::string, std::string> QueryParams(const httplib::Request& request);

// The preconditions (uid, resourceVersion) of the DeleteOptions in a DELETE's body; none when
// there is no body or it does not parse.
Preconditions DeletePreconditions(const httplib::Request& request);

// ValidatePodUpdate's rule: a Pod's spec does not change once created (the few mutable fields,
// images and tolerations, mean nothing without a container runtime). Labels and annotations do.
absl::Status CheckPodUpdate(const nlohmann::json& stored, const nlohmann::json& updated);

// Server-side field validation of a written object (field_validation.h): with Strict an unknown
// field refuses the request (the strict decoder's BadRequest), with Warn (the default) each is a
// Warning header on `response`, which kubectl and client-go print; Ignore accepts it silently.
absl::Status CheckFields(const httplib::Request& request, const Route& route,
                         const nlohmann::json& object, httplib::Response& response);

// The request's body (JSON, or Kubernetes protobuf where protobuf_codec.h decodes the kind) as
// the v1 object the store takes: 400 for a body that is not an object of the route's kind and
// version or names another namespace, 415 for another media type.
absl::StatusOr<nlohmann::json> Incoming(const httplib::Request& request, const Route& route);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_REQUEST_H_
