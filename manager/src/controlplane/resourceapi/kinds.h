// The kinds the local resource API serves, described once so the store, the REST server and
// (next) watches and protobuf decoding agree on names, scope and versions: the descriptor says
// what the API server's registry says for the kind (its plural resource, list kind, whether it
// is namespaced, whether it has a status subresource, which field selectors it supports).
//
// Thread-safety: immutable tables; every function is thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KINDS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KINDS_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kdp::manager::resourceapi {

enum class Kind {
  kResourceSlice,
  kDeviceClass,
  kResourceClaim,
  kResourceClaimTemplate,
  kNode,
  // The core v1 kinds a kubelet's node shows besides its Node.
  kNamespace,
  kPod,
  kEvent,
};
// How many kinds there are (the store keeps one map per kind).
inline constexpr size_t kKindCount = 8;

struct KindInfo {
  Kind kind = Kind::kResourceSlice;
  const char* name = "";       // "ResourceSlice"
  const char* list_kind = "";  // "ResourceSliceList"
  const char* resource = "";   // plural, "resourceslices"
  const char* singular = "";   // "resourceslice"
  const char* group = "";      // "resource.k8s.io", or "" for the core group (Node)
  bool namespaced = false;
  bool has_status = false;  // a /status subresource exists
  // Field selector labels beyond metadata.name (and metadata.namespace for namespaced kinds).
  std::span<const char* const> field_labels = {};
};

// The descriptor of `kind`; valid for the life of the program.
const KindInfo& InfoOf(Kind kind);
// The descriptor a request in `version` of `kind` sees: EventsV1Info() for an Event in
// kEventsV1, InfoOf(kind) otherwise.
const KindInfo& InfoOf(Kind kind, std::string_view version);
// All served kinds, in a stable order.
std::span<const KindInfo> AllKinds();
// The resource.k8s.io kind whose plural is `resource` ("resourceslices"); nullopt when none.
std::optional<Kind> KindForResource(std::string_view resource);
// The core (v1) kind whose plural is `resource` ("pods", "nodes"); nullopt when none.
std::optional<Kind> CoreKindForResource(std::string_view resource);

// "resourceclaims.resource.k8s.io" (or "nodes" for the core group), as apimachinery's
// GroupResource.String writes it in NotFound/AlreadyExists/Conflict messages.
std::string QualifiedResource(const KindInfo& info);
// "ResourceClaim.resource.k8s.io" (or "Node"), as GroupKind.String writes it in Invalid messages.
std::string QualifiedKind(const KindInfo& info);
// "resource.k8s.io/v1" for `version` of a resource.k8s.io kind, "v1" for Node; a `version` that
// names its group already (kEventsV1) as it is.
std::string ApiVersion(const KindInfo& info, std::string_view version);

// True when `version` ("v1", "v1beta1") of resource.k8s.io is served.
bool IsServedVersion(std::string_view version);

// events.k8s.io serves the stored core Events in its own shape, as kube-apiserver serves one
// storage under two group-versions (the internal core.Event converts to both). A request there is
// a request for Kind::kEvent whose version is kEventsV1: every function that takes a kind's
// version (conversion.h, FieldSelector::Parse, ApiVersion, watches, tables) treats it as the
// Event's second external version, so an event written through one API reads through the other.
inline constexpr char kEventsGroup[] = "events.k8s.io";
inline constexpr char kEventsV1[] = "events.k8s.io/v1";
// events.k8s.io's Event: group events.k8s.io, the events.k8s.io field labels (regarding.*,
// reportingController, ...). Not one of AllKinds(): it stores nothing of its own.
const KindInfo& EventsV1Info();

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KINDS_H_
