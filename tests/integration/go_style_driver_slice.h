// The ResourceSlice half of GoStyleDriver (go_style_driver.h): the devices a driver publishes,
// and the slice bodies client-go sends for them, in Kubernetes protobuf (`k8s\0` + runtime.Unknown
// + the versioned ResourceSlice, as client-go >= 0.32 sends it even over plain HTTP) for
// resource.k8s.io/v1 (v1beta2 has the same shape and field numbers) and v1beta1 (each device's
// fields wrapped in `basic`). Fields are set as Go's generated marshallers write them: a
// non-pointer field is written even when empty (ObjectMeta's strings, an empty creationTimestamp,
// v1beta1's `nodeName` and `allNodes: false`), a pointer field only when set (v1's `nodeName`, an
// attribute's one value, `controller: true`). Also the checks the helper's slice controller makes
// on what comes back (DevicesMatch).
//
// Thread-safety: pure functions and value types.
#ifndef KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_SLICE_H_
#define KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_SLICE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "k8s/api/resource/v1/generated.pb.h"
#include "k8s/api/resource/v1beta1/generated.pb.h"
#include "k8s/apimachinery/pkg/apis/meta/v1/generated.pb.h"
#include "nlohmann/json.hpp"
#include "tests/unit/manager/resourceapi/protobuf_body_builder.h"

namespace kdp::testing {

// One device of a slice: its name, attributes of each kind and capacities (quantity strings).
struct GoDevice {
  std::string name = {};
  std::map<std::string, int64_t> ints = {};
  std::map<std::string, bool> bools = {};
  std::map<std::string, std::string> strings = {};
  std::map<std::string, std::string> versions = {};  // semantic versions, "1.2.3"
  std::map<std::string, std::string> capacity = {};  // "80Gi"
  // consumesCounters: what the device takes of one counter set of the pool (partitionable
  // devices, as NVIDIA's driver publishes MIG devices against 1.35); empty: none.
  std::string counter_set = {};
  std::map<std::string, std::string> consumes = {};  // counter -> quantity
  // taints (v1 only): key and effect ("NoSchedule", "NoExecute", "None"), as a driver that taints
  // a broken device publishes them.
  std::vector<std::pair<std::string, std::string>> taints = {};
};

// One shared counter set (sharedCounters[]): name and counter -> quantity.
struct GoCounterSet {
  std::string name = {};
  std::map<std::string, std::string> counters = {};
};

// The spec of one slice of the driver's pool (named after the node): its devices, or (1.35) its
// shared counter sets in a slice of their own; `slice_count` is the pool's resourceSliceCount.
struct GoSliceSpec {
  std::string driver = {};
  std::string node = {};
  int64_t pool_generation = 1;
  std::vector<GoDevice> devices = {};
  std::vector<GoCounterSet> counter_sets = {};  // v1 only
  int64_t slice_count = 1;
};

// The v1 JSON of a device's attributes and capacity, as the API answers them:
// {"attributes":{k:{"int"|"bool"|"string"|"version":v}},"capacity":{k:{"value":q}}}.
inline nlohmann::json DeviceAttributesJson(const GoDevice& device) {
  nlohmann::json attributes = nlohmann::json::object();
  for (const auto& [key, value] : device.ints) attributes[key] = {{"int", value}};
  for (const auto& [key, value] : device.bools) attributes[key] = {{"bool", value}};
  for (const auto& [key, value] : device.strings) attributes[key] = {{"string", value}};
  for (const auto& [key, value] : device.versions) attributes[key] = {{"version", value}};
  nlohmann::json capacity = nlohmann::json::object();
  for (const auto& [key, value] : device.capacity) capacity[key] = {{"value", value}};
  return {{"attributes", attributes}, {"capacity", capacity}};
}

// True when `spec` (a ResourceSlice's JSON spec in `version`) has exactly the devices `devices`
// by name, each with exactly the given attributes, capacities and taints (other fields are not
// compared:
// the server may default some, as the helper's controller tolerates).
inline bool DevicesMatch(const nlohmann::json& spec, const std::vector<GoDevice>& devices,
                         std::string_view version) {
  if (!spec.is_object() || !spec.contains("devices") || !spec["devices"].is_array()) {
    return devices.empty();
  }
  const nlohmann::json& listed = spec["devices"];
  if (listed.size() != devices.size()) return false;
  for (const GoDevice& device : devices) {
    bool found = false;
    for (const auto& entry : listed) {
      if (!entry.is_object() || entry.value("name", "") != device.name) continue;
      const nlohmann::json& fields =
          version == "v1beta1" ? entry.value("basic", nlohmann::json()) : entry;
      const nlohmann::json want = DeviceAttributesJson(device);
      auto map_of = [&fields](const char* key) {
        return fields.is_object() && fields.contains(key) ? fields[key] : nlohmann::json::object();
      };
      found = map_of("attributes") == want["attributes"] && map_of("capacity") == want["capacity"];
      // Taints (key and effect) as the driver sent them; a server may add timeAdded.
      std::vector<std::pair<std::string, std::string>> taints;
      if (fields.is_object() && fields.contains("taints") && fields["taints"].is_array()) {
        for (const auto& taint : fields["taints"]) {
          taints.emplace_back(taint.value("key", ""), taint.value("effect", ""));
        }
      }
      found = found && taints == device.taints;
      break;
    }
    if (!found) return false;
  }
  return true;
}

namespace go_slice_internal {

namespace metapb = ::k8s::io::apimachinery::pkg::apis::meta::v1;

// A JSON ObjectMeta (from the informer, or built for a POST) as Go marshals metav1.ObjectMeta.
inline void FillObjectMeta(const nlohmann::json& meta, metapb::ObjectMeta* out) {
  auto text = [&meta](const char* key) {
    return meta.contains(key) && meta[key].is_string() ? meta[key].get<std::string>()
                                                       : std::string();
  };
  out->set_name(text("name"));
  out->set_generatename(text("generateName"));
  out->set_namespace_(text("namespace"));
  out->set_selflink(text("selfLink"));
  out->set_uid(text("uid"));
  out->set_resourceversion(text("resourceVersion"));
  out->set_generation(meta.contains("generation") && meta["generation"].is_number_integer()
                          ? meta["generation"].get<int64_t>()
                          : 0);
  // metav1.Time marshals a zero time as an empty message.
  metapb::Time* created = out->mutable_creationtimestamp();
  absl::Time parsed;
  std::string error;
  if (!text("creationTimestamp").empty() &&
      absl::ParseTime(absl::RFC3339_full, text("creationTimestamp"), &parsed, &error)) {
    created->set_seconds(absl::ToUnixSeconds(parsed));
  }
  for (const char* key : {"labels", "annotations"}) {
    if (!meta.contains(key) || !meta[key].is_object()) continue;
    auto* map =
        std::string_view(key) == "labels" ? out->mutable_labels() : out->mutable_annotations();
    for (const auto& [k, v] : meta[key].items()) {
      if (v.is_string()) (*map)[k] = v.get<std::string>();
    }
  }
  if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array()) {
    for (const auto& ref : meta["ownerReferences"]) {
      metapb::OwnerReference* owner = out->add_ownerreferences();
      owner->set_kind(ref.value("kind", ""));
      owner->set_name(ref.value("name", ""));
      owner->set_uid(ref.value("uid", ""));
      owner->set_apiversion(ref.value("apiVersion", ""));
      if (ref.contains("controller")) owner->set_controller(ref.value("controller", false));
    }
  }
}

template <typename AttributeMap, typename CapacityMap>
void FillDeviceFields(const GoDevice& device, AttributeMap* attributes, CapacityMap* capacity) {
  for (const auto& [key, value] : device.ints) (*attributes)[key].set_int_(value);
  for (const auto& [key, value] : device.bools) (*attributes)[key].set_bool_(value);
  for (const auto& [key, value] : device.strings) (*attributes)[key].set_string(value);
  for (const auto& [key, value] : device.versions) (*attributes)[key].set_version(value);
  for (const auto& [key, value] : device.capacity) {
    (*capacity)[key].mutable_value()->set_string(value);
  }
}

}  // namespace go_slice_internal

// The ResourceSlice `metadata` + `spec` as client-go's protobuf request body for `version`
// ("v1", "v1beta2": v1 messages; "v1beta1": the `basic` wrapper).
inline std::string EncodeSliceBody(std::string_view version, const nlohmann::json& metadata,
                                   const GoSliceSpec& spec) {
  const std::string api_version = "resource.k8s.io/" + std::string(version);
  if (version == "v1beta1") {
    namespace pb = ::k8s::io::api::resource::v1beta1;
    pb::ResourceSlice slice;
    go_slice_internal::FillObjectMeta(metadata, slice.mutable_metadata());
    pb::ResourceSliceSpec* out = slice.mutable_spec();
    out->set_driver(spec.driver);
    out->mutable_pool()->set_name(spec.node);
    out->mutable_pool()->set_generation(spec.pool_generation);
    out->mutable_pool()->set_resourceslicecount(1);
    out->set_nodename(spec.node);  // string in v1beta1: always written
    out->set_allnodes(false);      // bool in v1beta1: always written
    for (const GoDevice& device : spec.devices) {
      pb::Device* d = out->add_devices();
      d->set_name(device.name);
      go_slice_internal::FillDeviceFields(device, d->mutable_basic()->mutable_attributes(),
                                          d->mutable_basic()->mutable_capacity());
    }
    return ProtobufBody(api_version, "ResourceSlice", slice);
  }
  namespace pb = ::k8s::io::api::resource::v1;
  pb::ResourceSlice slice;
  go_slice_internal::FillObjectMeta(metadata, slice.mutable_metadata());
  pb::ResourceSliceSpec* out = slice.mutable_spec();
  out->set_driver(spec.driver);
  out->mutable_pool()->set_name(spec.node);
  out->mutable_pool()->set_generation(spec.pool_generation);
  out->mutable_pool()->set_resourceslicecount(spec.slice_count);
  out->set_nodename(spec.node);  // *string in v1: written because it is set
  for (const GoDevice& device : spec.devices) {
    pb::Device* d = out->add_devices();
    d->set_name(device.name);
    go_slice_internal::FillDeviceFields(device, d->mutable_attributes(), d->mutable_capacity());
    for (const auto& [key, effect] : device.taints) {
      pb::DeviceTaint* taint = d->add_taints();
      taint->set_key(key);
      taint->set_effect(effect);
    }
    if (device.counter_set.empty()) continue;
    pb::DeviceCounterConsumption* consumption = d->add_consumescounters();
    consumption->set_counterset(device.counter_set);
    for (const auto& [name, value] : device.consumes) {
      (*consumption->mutable_counters())[name].mutable_value()->set_string(value);
    }
  }
  for (const GoCounterSet& set : spec.counter_sets) {
    pb::CounterSet* shared = out->add_sharedcounters();
    shared->set_name(set.name);
    for (const auto& [name, value] : set.counters) {
      (*shared->mutable_counters())[name].mutable_value()->set_string(value);
    }
  }
  return ProtobufBody(api_version, "ResourceSlice", slice);
}

// The JSON twin of EncodeSliceBody (the debugging fallback; not what Go drivers send).
inline std::string EncodeSliceJson(std::string_view version, const nlohmann::json& metadata,
                                   const GoSliceSpec& spec) {
  nlohmann::json devices = nlohmann::json::array();
  for (const GoDevice& device : spec.devices) {
    nlohmann::json fields = DeviceAttributesJson(device);
    devices.push_back(version == "v1beta1"
                          ? nlohmann::json{{"name", device.name}, {"basic", fields}}
                          : nlohmann::json{{"name", device.name},
                                           {"attributes", fields["attributes"]},
                                           {"capacity", fields["capacity"]}});
  }
  nlohmann::json body = {
      {"apiVersion", "resource.k8s.io/" + std::string(version)},
      {"kind", "ResourceSlice"},
      {"metadata", metadata},
      {"spec",
       {{"driver", spec.driver},
        {"nodeName", spec.node},
        {"pool",
         {{"name", spec.node}, {"generation", spec.pool_generation}, {"resourceSliceCount", 1}}},
        {"devices", devices}}}};
  return body.dump();
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_SLICE_H_
