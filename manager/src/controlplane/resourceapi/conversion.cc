#include "manager/src/controlplane/resourceapi/conversion.h"

#include <string>
#include <utility>

#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// Applies `fn` to every request of the DeviceClaim at `spec` (a claim's spec, or a template's
// spec.spec).
template <typename Fn>
void ForEachRequest(Json* spec, Fn fn) {
  if (!spec->is_object()) return;
  auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_object()) return;
  auto requests = devices->find("requests");
  if (requests == devices->end() || !requests->is_array()) return;
  for (Json& request : *requests) {
    if (request.is_object()) fn(&request);
  }
}

// Convert_v1beta1_DeviceRequest_To_resource_DeviceRequest: the flat fields become `exactly`
// unless the request lists alternatives. A request with both keeps both, so validation rejects
// it as the API server does ("exactly one of `exactly` or `firstAvailable`").
void RequestToV1(Json* request) {
  Json exactly = Json::object();
  for (const char* field : kExactRequestFields) {
    auto it = request->find(field);
    if (it == request->end()) continue;
    exactly[field] = std::move(*it);
    request->erase(it);
  }
  auto first = request->find("firstAvailable");
  const bool has_first = first != request->end() && first->is_array() && !first->empty();
  if (!exactly.empty() || !has_first) (*request)["exactly"] = std::move(exactly);
}

void RequestFromV1(Json* request) {
  auto exactly = request->find("exactly");
  if (exactly == request->end()) return;
  Json fields = std::move(*exactly);
  request->erase("exactly");
  if (!fields.is_object()) return;
  for (auto& [key, value] : fields.items()) (*request)[key] = std::move(value);
}

template <typename Fn>
void ForEachClaimSpec(Kind kind, Json* object, Fn fn) {
  auto spec = object->find("spec");
  if (spec == object->end() || !spec->is_object()) return;
  if (kind == Kind::kResourceClaim) {
    ForEachRequest(&*spec, fn);
  } else if (kind == Kind::kResourceClaimTemplate) {
    if (auto inner = spec->find("spec"); inner != spec->end()) ForEachRequest(&*inner, fn);
  }
}

template <typename Fn>
void ForEachDevice(Json* object, Fn fn) {
  auto spec = object->find("spec");
  if (spec == object->end() || !spec->is_object()) return;
  auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_array()) return;
  for (Json& device : *devices) {
    if (device.is_object()) fn(&device);
  }
}

void SetApiVersion(Kind kind, std::string_view version, Json* object) {
  const KindInfo& info = InfoOf(kind, version);
  if (*info.group == '\0' || !object->is_object()) return;
  (*object)["apiVersion"] = ApiVersion(info, version);
}

// pkg/apis/events/v1/conversion.go: the core/v1 Event fields events.k8s.io/v1 names otherwise
// (ObjectReference, EventSource, the timestamps and count copy as they are). The rest (reason,
// type, eventTime, series, action, related, reportingInstance, metadata) is the same field.
constexpr std::pair<const char*, const char*> kEventRenames[] = {
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
    {"reportingComponent", "reportingController"},  // ReportingController's core/v1 JSON name
};

// Moves `object[from]` to `object[to]` for each pair (a field absent stays absent).
void RenameEventFields(Json* object, bool core_to_events) {
  Json moved = Json::object();
  for (const auto& [core, events] : kEventRenames) {
    const char* from = core_to_events ? core : events;
    const char* to = core_to_events ? events : core;
    auto it = object->find(from);
    if (it == object->end()) continue;
    moved[to] = std::move(*it);
    object->erase(it);
  }
  for (auto& [key, value] : moved.items()) (*object)[key] = std::move(value);
}

// The fields Go's encoding/json always writes for the target type (structs and metav1 times
// without omitempty's effect): core/v1 involvedObject, source, reportingComponent and
// reportingInstance; events.k8s.io/v1 regarding, deprecatedSource and eventTime. An event written
// through the other API reads back as the API server writes it.
void AddEventFieldsGoWrites(Json* object, bool events) {
  auto set = [&](const char* key, Json value) {
    if (!object->contains(key)) (*object)[key] = std::move(value);
  };
  if (events) {
    set("regarding", Json::object());
    set("deprecatedSource", Json::object());
    set("eventTime", nullptr);
  } else {
    set("involvedObject", Json::object());
    set("source", Json::object());
    set("reportingComponent", "");
    set("reportingInstance", "");
  }
}

}  // namespace

nlohmann::json ToV1(Kind kind, std::string_view from_version, nlohmann::json object) {
  if (!object.is_object()) return object;
  if (from_version == kVersionV1beta1) {
    if (kind == Kind::kResourceSlice) {
      // Convert_v1beta1_Device_To_resource_Device: basic's fields move onto the device.
      ForEachDevice(&object, [](Json* device) {
        auto basic = device->find("basic");
        if (basic == device->end()) return;
        Json fields = std::move(*basic);
        device->erase("basic");
        if (!fields.is_object()) return;
        for (auto& [key, value] : fields.items()) (*device)[key] = std::move(value);
      });
    }
    ForEachClaimSpec(kind, &object, RequestToV1);
  }
  if (kind == Kind::kEvent && from_version == kEventsV1) {
    RenameEventFields(&object, /*core_to_events=*/false);
    AddEventFieldsGoWrites(&object, /*events=*/false);
    object["apiVersion"] = kVersionV1;
  }
  SetApiVersion(kind, kVersionV1, &object);
  return object;
}

nlohmann::json FromV1(Kind kind, std::string_view to_version, nlohmann::json object) {
  if (!object.is_object()) return object;
  if (to_version == kVersionV1beta1) {
    if (kind == Kind::kResourceSlice) {
      ForEachDevice(&object, [](Json* device) {
        Json basic = Json::object();
        for (auto it = device->begin(); it != device->end();) {
          if (it.key() == "name") {
            ++it;
            continue;
          }
          basic[it.key()] = std::move(it.value());
          it = device->erase(it);
        }
        (*device)["basic"] = std::move(basic);
      });
    }
    ForEachClaimSpec(kind, &object, RequestFromV1);
  }
  if (kind == Kind::kEvent && to_version == kEventsV1) {
    RenameEventFields(&object, /*core_to_events=*/true);
    AddEventFieldsGoWrites(&object, /*events=*/true);
  }
  SetApiVersion(kind, to_version, &object);
  return object;
}

}  // namespace kdp::manager::resourceapi
