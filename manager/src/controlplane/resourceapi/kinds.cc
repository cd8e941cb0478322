#include "manager/src/controlplane/resourceapi/kinds.h"

#include <array>

#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

// pkg/apis/resource/v1/conversion.go registers these for ResourceSlice
// (ResourceSliceSelectorNodeName and ResourceSliceSelectorDriver); the other kinds accept only the
// generic metadata fields.
constexpr std::array<const char*, 2> kSliceFieldLabels = {"spec.nodeName", "spec.driver"};
// pkg/apis/core/v1/conversion.go: the Pod's and the Event's field label conversion functions.
constexpr std::array<const char*, 9> kPodFieldLabels = {
    "metadata.namespace",      "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName",
    "spec.serviceAccountName", "spec.hostNetwork", "status.phase",       "status.podIP",
    "status.nominatedNodeName"};
constexpr std::array<const char*, 12> kEventFieldLabels = {"metadata.namespace",
                                                           "involvedObject.kind",
                                                           "involvedObject.namespace",
                                                           "involvedObject.name",
                                                           "involvedObject.uid",
                                                           "involvedObject.apiVersion",
                                                           "involvedObject.resourceVersion",
                                                           "involvedObject.fieldPath",
                                                           "reason",
                                                           "reportingComponent",
                                                           "source",
                                                           "type"};
// pkg/apis/events/v1/conversion.go (AddFieldLabelConversionsForEvent): the same selectable fields
// under events.k8s.io's names; selectors.cc maps them to the stored core fields.
constexpr std::array<const char*, 12> kEventsV1FieldLabels = {"metadata.namespace",
                                                              "regarding.kind",
                                                              "regarding.namespace",
                                                              "regarding.name",
                                                              "regarding.uid",
                                                              "regarding.apiVersion",
                                                              "regarding.resourceVersion",
                                                              "regarding.fieldPath",
                                                              "reason",
                                                              "reportingController",
                                                              "source",
                                                              "type"};
constexpr std::array<const char*, 1> kNamespaceFieldLabels = {"status.phase"};

const std::array<KindInfo, kKindCount>& Table() {
  static const std::array<KindInfo, kKindCount> table = {{
      {.kind = Kind::kResourceSlice,
       .name = "ResourceSlice",
       .list_kind = "ResourceSliceList",
       .resource = "resourceslices",
       .singular = "resourceslice",
       .group = kGroup,
       .namespaced = false,
       .has_status = false,
       .field_labels = kSliceFieldLabels},
      {.kind = Kind::kDeviceClass,
       .name = "DeviceClass",
       .list_kind = "DeviceClassList",
       .resource = "deviceclasses",
       .singular = "deviceclass",
       .group = kGroup,
       .namespaced = false,
       .has_status = false,
       .field_labels = {}},
      {.kind = Kind::kResourceClaim,
       .name = "ResourceClaim",
       .list_kind = "ResourceClaimList",
       .resource = "resourceclaims",
       .singular = "resourceclaim",
       .group = kGroup,
       .namespaced = true,
       .has_status = true,
       .field_labels = {}},
      {.kind = Kind::kResourceClaimTemplate,
       .name = "ResourceClaimTemplate",
       .list_kind = "ResourceClaimTemplateList",
       .resource = "resourceclaimtemplates",
       .singular = "resourceclaimtemplate",
       .group = kGroup,
       .namespaced = true,
       .has_status = false,
       .field_labels = {}},
      {.kind = Kind::kNode,
       .name = "Node",
       .list_kind = "NodeList",
       .resource = "nodes",
       .singular = "node",
       .group = "",
       .namespaced = false,
       .has_status = true,
       .field_labels = {}},
      {.kind = Kind::kNamespace,
       .name = "Namespace",
       .list_kind = "NamespaceList",
       .resource = "namespaces",
       .singular = "namespace",
       .group = "",
       .namespaced = false,
       .has_status = true,
       .field_labels = kNamespaceFieldLabels},
      {.kind = Kind::kPod,
       .name = "Pod",
       .list_kind = "PodList",
       .resource = "pods",
       .singular = "pod",
       .group = "",
       .namespaced = true,
       .has_status = true,
       .field_labels = kPodFieldLabels},
      {.kind = Kind::kEvent,
       .name = "Event",
       .list_kind = "EventList",
       .resource = "events",
       .singular = "event",
       .group = "",
       .namespaced = true,
       .has_status = false,
       .field_labels = kEventFieldLabels},
  }};
  return table;
}

}  // namespace

const KindInfo& InfoOf(Kind kind) { return Table()[static_cast<size_t>(kind)]; }

const KindInfo& InfoOf(Kind kind, std::string_view version) {
  return kind == Kind::kEvent && version == kEventsV1 ? EventsV1Info() : InfoOf(kind);
}

const KindInfo& EventsV1Info() {
  static const KindInfo info = {.kind = Kind::kEvent,
                                .name = "Event",
                                .list_kind = "EventList",
                                .resource = "events",
                                .singular = "event",
                                .group = kEventsGroup,
                                .namespaced = true,
                                .has_status = false,
                                .field_labels = kEventsV1FieldLabels};
  return info;
}

std::span<const KindInfo> AllKinds() { return Table(); }

std::optional<Kind> KindForResource(std::string_view resource) {
  for (const KindInfo& info : Table()) {
    if (info.group == std::string_view(kGroup) && resource == info.resource) return info.kind;
  }
  return std::nullopt;
}

std::optional<Kind> CoreKindForResource(std::string_view resource) {
  for (const KindInfo& info : Table()) {
    if (*info.group == '\0' && resource == info.resource) return info.kind;
  }
  return std::nullopt;
}

std::string QualifiedResource(const KindInfo& info) {
  std::string out = info.resource;
  if (*info.group != '\0') out += std::string(".") + info.group;
  return out;
}

std::string QualifiedKind(const KindInfo& info) {
  std::string out = info.name;
  if (*info.group != '\0') out += std::string(".") + info.group;
  return out;
}

std::string ApiVersion(const KindInfo& info, std::string_view version) {
  if (*info.group == '\0' || version.find('/') != std::string_view::npos) {
    return std::string(version);
  }
  return std::string(info.group) + "/" + std::string(version);
}

bool IsServedVersion(std::string_view version) {
  return version == kVersionV1 || version == kVersionV1beta1;
}

}  // namespace kdp::manager::resourceapi
