// Defaulting half of codec.h: the API server's SetDefaults_* for resource.k8s.io/v1 and the
// canonical quantity form, applied to the JSON the store keeps.
#include <string>

#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

void NormalizeExact(Json* req) {
  if (!req->is_object()) return;
  auto mode = req->find("allocationMode");
  if (mode == req->end() || mode->is_null() ||
      (mode->is_string() && mode->get<std::string>().empty())) {
    (*req)["allocationMode"] = kAllocationModeExactCount;
  }
  if ((*req)["allocationMode"] == kAllocationModeExactCount) {
    auto count = req->find("count");
    if (count == req->end() || count->is_null() || (count->is_number_integer() && *count == 0)) {
      (*req)["count"] = 1;
    }
  }
}

void NormalizeClaimSpec(Json* spec) {
  if (!spec->is_object()) return;
  auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_object()) return;
  auto requests = devices->find("requests");
  if (requests == devices->end() || !requests->is_array()) return;
  for (Json& req : *requests) {
    if (!req.is_object()) continue;
    if (auto exactly = req.find("exactly"); exactly != req.end()) NormalizeExact(&*exactly);
    if (auto first = req.find("firstAvailable"); first != req.end() && first->is_array()) {
      for (Json& sub : *first) NormalizeExact(&sub);
    }
  }
}

}  // namespace

void Normalize(Kind kind, nlohmann::json* object) {
  if (!object->is_object()) return;
  auto spec = object->find("spec");
  if (spec == object->end() || !spec->is_object()) return;
  switch (kind) {
    case Kind::kResourceClaim:
      NormalizeClaimSpec(&*spec);
      break;
    case Kind::kResourceClaimTemplate:
      if (auto inner = spec->find("spec"); inner != spec->end()) NormalizeClaimSpec(&*inner);
      break;
    case Kind::kResourceSlice: {
      auto devices = spec->find("devices");
      if (devices == spec->end() || !devices->is_array()) break;
      for (Json& device : *devices) {
        if (!device.is_object() || !device.contains("capacity") ||
            !device["capacity"].is_object()) {
          continue;
        }
        for (auto& [name, cap] : device["capacity"].items()) {
          if (!cap.is_object() || !cap.contains("value")) continue;
          Json& value = cap["value"];
          std::string text = value.is_string()   ? value.get<std::string>()
                             : value.is_number() ? value.dump()
                                                 : std::string();
          absl::StatusOr<Quantity> q = Quantity::Parse(text);
          if (!text.empty() && q.ok()) value = q->ToString();
        }
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace kdp::manager::resourceapi
