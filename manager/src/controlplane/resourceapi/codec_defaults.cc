// Defaulting half of codec.h: the API server's SetDefaults_* for resource.k8s.io/v1 and the
// canonical quantity form, applied to the JSON the store keeps.
#include <string>

#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// A quantity in canonical form (Quantity.String), as the API server stores every quantity it
// decoded; a value that is not a quantity is left for Decode* to report.
void CanonicalQuantity(Json* value) {
  if (value == nullptr) return;
  std::string text = value->is_string()   ? value->get<std::string>()
                     : value->is_number() ? value->dump()
                                          : std::string();
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!text.empty() && q.ok()) *value = q->ToString();
}

Json* Member(Json* obj, const char* key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() || it->is_null() ? nullptr : &*it;
}

// Every value of a {name: quantity} map, or of a {name: {value: quantity}} map (counters).
void CanonicalQuantityMap(Json* map, bool wrapped) {
  if (map == nullptr || !map->is_object()) return;
  for (auto& [name, entry] : map->items()) {
    CanonicalQuantity(wrapped ? Member(&entry, "value") : &entry);
  }
}

void NormalizeDevice(Json* device) {
  if (Json* caps = Member(device, "capacity"); caps != nullptr && caps->is_object()) {
    for (auto& [name, cap] : caps->items()) {
      CanonicalQuantity(Member(&cap, "value"));
      Json* policy = Member(&cap, "requestPolicy");
      CanonicalQuantity(Member(policy, "default"));
      if (Json* values = Member(policy, "validValues"); values != nullptr && values->is_array()) {
        for (Json& v : *values) CanonicalQuantity(&v);
      }
      Json* range = Member(policy, "validRange");
      for (const char* key : {"min", "max", "step"}) CanonicalQuantity(Member(range, key));
    }
  }
  if (Json* consumes = Member(device, "consumesCounters"); consumes && consumes->is_array()) {
    for (Json& c : *consumes) CanonicalQuantityMap(Member(&c, "counters"), /*wrapped=*/true);
  }
}

void NormalizeExact(Json* req) {
  if (!req->is_object()) return;
  // SetDefaults_DeviceToleration: an empty operator is Equal.
  if (Json* tolerations = Member(req, "tolerations"); tolerations && tolerations->is_array()) {
    for (Json& t : *tolerations) {
      if (!t.is_object()) continue;
      Json* op = Member(&t, "operator");
      if (op == nullptr || (op->is_string() && op->get<std::string>().empty())) {
        t["operator"] = kTolerationOpEqual;
      }
    }
  }
  CanonicalQuantityMap(Member(Member(req, "capacity"), "requests"), /*wrapped=*/false);
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
      if (Json* devices = Member(&*spec, "devices"); devices && devices->is_array()) {
        for (Json& device : *devices) NormalizeDevice(&device);
      }
      if (Json* sets = Member(&*spec, "sharedCounters"); sets && sets->is_array()) {
        for (Json& set : *sets) CanonicalQuantityMap(Member(&set, "counters"), /*wrapped=*/true);
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace kdp::manager::resourceapi
