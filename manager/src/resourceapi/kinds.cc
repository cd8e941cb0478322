#include "manager/src/resourceapi/kinds.h"

#include <array>

#include "manager/src/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

// pkg/apis/resource/v1/conversion.go registers these for ResourceSlice
// (ResourceSliceSelectorNodeName and ResourceSliceSelectorDriver); the other kinds accept only the
// generic metadata fields.
constexpr std::array<const char*, 2> kSliceFieldLabels = {"spec.nodeName", "spec.driver"};

const std::array<KindInfo, 5>& Table() {
  static const std::array<KindInfo, 5> table = {{
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
  }};
  return table;
}

}  // namespace

const KindInfo& InfoOf(Kind kind) { return Table()[static_cast<size_t>(kind)]; }

std::span<const KindInfo> AllKinds() { return Table(); }

std::optional<Kind> KindForResource(std::string_view resource) {
  for (const KindInfo& info : Table()) {
    if (info.group == std::string_view(kGroup) && resource == info.resource) return info.kind;
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
  if (*info.group == '\0') return std::string(version);
  return std::string(info.group) + "/" + std::string(version);
}

bool IsServedVersion(std::string_view version) {
  return version == kVersionV1 || version == kVersionV1beta1;
}

}  // namespace kdp::manager::resourceapi
