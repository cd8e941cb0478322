// Server-side printing for the local resource API: the meta.k8s.io Table that kube-apiserver
// returns when a client asks for `as=Table` (kubectl get always does), built with the columns and
// cell rules of kube-apiserver's printers (pkg/printers/internalversion, always in wide mode, as
// the API server's TableConvertor prints) so `kubectl get` shows the same columns and values
// against kdp-manager as against a real cluster. The REST server negotiates with
// TableVersionFromAccept, reads the includeObject query parameter with ParseIncludeObject and
// converts what it would have returned with ToTable; a resource without a printer gets the API
// server's default table (Name, Created At).
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TABLE_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TABLE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// The Table group and the versions of it that exist (meta.k8s.io/v1 and v1beta1).
inline constexpr char kTableGroup[] = "meta.k8s.io";

// The Table version ("v1" or "v1beta1") that `accept` (an HTTP Accept header) negotiates, as the
// API server's negotiation.NegotiateMediaTypeOptions does: clauses are ordered by q (highest
// first, wildcards after concrete types at equal q) and the first clause this server can answer
// wins. A clause asking for `application/json;as=Table;g=meta.k8s.io;v=<version>` (or `*/*`,
// `application/*` with those parameters) wins with its version. A plain clause this server
// answers (application/json, application/*, */*) wins with nullopt: the client gets the object
// itself. Clauses that cannot be answered are skipped: other transforms
// (as=PartialObjectMetadata), other Table groups or versions, a Table in protobuf or YAML, and
// media types this server does not write. nullopt also for an empty header or one with no
// acceptable clause (the REST server decides between plain JSON and 406).
std::optional<std::string> TableVersionFromAccept(std::string_view accept);

struct TableOptions {
  // What each row's "object" carries (metav1.IncludeObjectPolicy).
  enum class IncludeObject {
    kNone,      // "None": no object in the row
    kMetadata,  // "Metadata" (the default): a PartialObjectMetadata with the object's metadata
    kObject,    // "Object": the whole object as stored
  };
  IncludeObject include_object = IncludeObject::kMetadata;
  // The instant ages (AGE, LAST SEEN, ...) are measured from; callers pass absl::Now().
  absl::Time now = absl::UnixEpoch();
  // Leave out the column definitions ("columnDefinitions": null), as the API server does for
  // every watch event after the first (TableOptions.NoHeaders).
  bool no_headers = false;
};

// The includeObject query parameter: "" and "Metadata" are kMetadata, "None" kNone, "Object"
// kObject (exact case). Anything else is INVALID_ARGUMENT, a 400 BadRequest with the API
// server's message: `Unable to convert to Table as requested: includeObject: Invalid value:
// "x": must be 'Metadata', 'Object', 'None', or empty`.
[[nodiscard]] absl::StatusOr<TableOptions::IncludeObject> ParseIncludeObject(
    std::string_view value);

// The Table (kind Table, apiVersion meta.k8s.io/<table_version>) for `objects` of `resource`
// (the plural name: "nodes", "pods", "namespaces", "events" (core/v1), "events.events.k8s.io"
// (events.k8s.io/v1 objects, printed with the core Event's columns), "resourceslices",
// "deviceclasses", "resourceclaims", "resourceclaimtemplates"; any other resource gets the
// default Name / Created At table). One row per object, in order, with the wide columns
// included (priority 1 columns are the ones `kubectl get -o wide` shows). `list_metadata`
// supplies the Table's metadata: resourceVersion, continue and remainingItemCount are copied when
// present (for a single GET pass {"resourceVersion": <the object's>}, as the API server does).
// REQUIRES: table_version is "v1" or "v1beta1"; every object is a JSON object.
nlohmann::json ToTable(std::string_view resource, const std::vector<nlohmann::json>& objects,
                       const nlohmann::json& list_metadata, std::string_view table_version,
                       const TableOptions& options);

// k8s.io/apimachinery/pkg/util/duration.HumanDuration, the AGE format: "<invalid>" for more than
// a second in the future, then "0s", "59s", "119s", "2m", "9m59s", "10m", "179m", "3h", "7h59m",
// "8h", "47h", "2d", "7d23h", "8d", "729d", "2y", "7y364d", "8y", ... (2-3 significant figures).
std::string HumanDuration(absl::Duration d);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TABLE_H_
