// Decoding and validation half of codec.h. The rules and their texts follow
// pkg/apis/resource/validation/validation.go (Kubernetes 1.34, resource.k8s.io/v1): each Decode*
// walks the JSON once, collecting every broken rule with its field path as the API server does,
// and fails with the first JSON type mismatch as encoding/json would.
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/validation.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

constexpr char kRequestRefMessage[] =
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'";
constexpr char kExactlyOneAttributeValue[] = "exactly one value must be specified";

std::string Index(const std::string& path, size_t i) { return absl::StrCat(path, "[", i, "]"); }
std::string Key(const std::string& path, const std::string& key) {
  return absl::StrCat(path, "[", key, "]");
}

const char* JsonTypeName(const Json& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "bool";
  if (v.is_array()) return "array";
  return "object";
}

// Request names of a claim and, per request, its sub-request names: what constraints, config
// and allocation results may refer to.
using RequestNames = std::map<std::string, std::set<std::string>>;

class Decoder {
 public:
  explicit Decoder(Kind kind) : kind_(InfoOf(kind)) {}

  // ---- JSON access; a wrong type records a BadRequest and reads as absent. ----
  const Json* Get(const Json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void TypeError(const Json& v, const std::string& path, const char* want) {
    if (!type_error_.empty()) return;
    type_error_ = absl::StrCat("json: cannot unmarshal ", JsonTypeName(v), " into Go struct field ",
                               path, " of type ", want);
  }
  const Json* Object(const Json& obj, const char* key, const std::string& path) {
    const Json* v = Get(obj, key);
    if (v != nullptr && !v->is_object()) {
      TypeError(*v, path, "object");
      return nullptr;
    }
    return v;
  }
  const Json* Array(const Json& obj, const char* key, const std::string& path) {
    const Json* v = Get(obj, key);
    if (v != nullptr && !v->is_array()) {
      TypeError(*v, path, "array");
      return nullptr;
    }
    return v;
  }
  std::optional<std::string> OptString(const Json& obj, const char* key, const std::string& path) {
    const Json* v = Get(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      TypeError(*v, path, "string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }
  std::string String(const Json& obj, const char* key, const std::string& path) {
    return OptString(obj, key, path).value_or("");
  }
  std::optional<int64_t> OptInt(const Json& obj, const char* key, const std::string& path) {
    const Json* v = Get(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) {
      TypeError(*v, path, "int64");
      return std::nullopt;
    }
    return v->get<int64_t>();
  }
  std::optional<bool> OptBool(const Json& obj, const char* key, const std::string& path) {
    const Json* v = Get(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      TypeError(*v, path, "bool");
      return std::nullopt;
    }
    return v->get<bool>();
  }
  std::vector<std::string> Strings(const Json& obj, const char* key, const std::string& path) {
    std::vector<std::string> out;
    const Json* arr = Array(obj, key, path);
    if (arr == nullptr) return out;
    for (size_t i = 0; i < arr->size(); ++i) {
      if (!(*arr)[i].is_string()) {
        TypeError((*arr)[i], Index(path, i), "string");
        continue;
      }
      out.push_back((*arr)[i].get<std::string>());
    }
    return out;
  }

  // ---- Objects ----
  ObjectMeta Meta(const Json& object) {
    ObjectMeta m;
    const Json* meta = Object(object, "metadata", "metadata");
    ValidateObjectMeta(kind_, meta != nullptr ? *meta : Json(), &errs_);
    if (meta == nullptr) return m;
    m = MetaFields(*meta, "metadata");
    name_ = m.name;
    return m;
  }

  ObjectMeta MetaFields(const Json& meta, const std::string& path) {
    ObjectMeta m;
    m.name = String(meta, "name", path + ".name");
    m.generate_name = String(meta, "generateName", path + ".generateName");
    m.namespace_ = String(meta, "namespace", path + ".namespace");
    m.uid = String(meta, "uid", path + ".uid");
    m.resource_version = String(meta, "resourceVersion", path + ".resourceVersion");
    m.generation = OptInt(meta, "generation", path + ".generation").value_or(0);
    m.creation_timestamp = String(meta, "creationTimestamp", path + ".creationTimestamp");
    if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) {
      m.deletion_timestamp = String(meta, "deletionTimestamp", path + ".deletionTimestamp");
    }
    StringMap(meta, "labels", path + ".labels", &m.labels);
    StringMap(meta, "annotations", path + ".annotations", &m.annotations);
    m.finalizers = Strings(meta, "finalizers", path + ".finalizers");
    if (const Json* refs = Array(meta, "ownerReferences", path + ".ownerReferences")) {
      for (size_t i = 0; i < refs->size(); ++i) {
        const std::string p = Index(path + ".ownerReferences", i);
        OwnerReference r;
        r.api_version = String((*refs)[i], "apiVersion", p + ".apiVersion");
        r.kind = String((*refs)[i], "kind", p + ".kind");
        r.name = String((*refs)[i], "name", p + ".name");
        r.uid = String((*refs)[i], "uid", p + ".uid");
        r.controller = OptBool((*refs)[i], "controller", p + ".controller").value_or(false);
        r.block_owner_deletion =
            OptBool((*refs)[i], "blockOwnerDeletion", p + ".blockOwnerDeletion").value_or(false);
        m.owner_references.push_back(std::move(r));
      }
    }
    return m;
  }

  void StringMap(const Json& obj, const char* key, const std::string& path,
                 std::map<std::string, std::string>* out) {
    const Json* map = Object(obj, key, path);
    if (map == nullptr) return;
    for (auto it = map->begin(); it != map->end(); ++it) {
      if (!it.value().is_string()) {
        TypeError(it.value(), Key(path, it.key()), "string");
        continue;
      }
      (*out)[it.key()] = it.value().get<std::string>();
    }
  }

  ResourceSliceSpec SliceSpec(const Json& spec) {
    const std::string p = "spec";
    ResourceSliceSpec s;
    s.driver = String(spec, "driver", p + ".driver");
    ValidateDriverName(s.driver, p + ".driver", &errs_);
    const Json* pool = Object(spec, "pool", p + ".pool");
    const Json empty = Json::object();
    const Json& pl = pool != nullptr ? *pool : empty;
    s.pool.name = String(pl, "name", p + ".pool.name");
    ValidatePoolName(s.pool.name, p + ".pool.name", &errs_);
    s.pool.generation = OptInt(pl, "generation", p + ".pool.generation").value_or(0);
    if (s.pool.generation < 0) {
      errs_.push_back(InvalidInt(p + ".pool.generation", s.pool.generation,
                                 "must be greater than or equal to 0"));
    }
    s.pool.resource_slice_count =
        OptInt(pl, "resourceSliceCount", p + ".pool.resourceSliceCount").value_or(0);
    if (s.pool.resource_slice_count <= 0) {
      errs_.push_back(InvalidInt(p + ".pool.resourceSliceCount", s.pool.resource_slice_count,
                                 "must be greater than zero"));
    }
    // Node selection: exactly one of the four (validateResourceSliceSpec).
    std::vector<std::string> set;
    if (std::optional<std::string> node = OptString(spec, "nodeName", p + ".nodeName")) {
      s.node_name = *node;
      if (!node->empty()) {
        set.push_back("`nodeName`");
        ValidateDnsSubdomain(*node, p + ".nodeName", &errs_);
      }
    }
    if (const Json* selector = Object(spec, "nodeSelector", p + ".nodeSelector")) {
      s.node_selector = *selector;
      set.push_back("`nodeSelector`");
    }
    if (OptBool(spec, "allNodes", p + ".allNodes").value_or(false)) {
      s.all_nodes = true;
      set.push_back("`allNodes`");
    }
    if (OptBool(spec, "perDeviceNodeSelection", p + ".perDeviceNodeSelection").value_or(false)) {
      s.per_device_node_selection = true;
      set.push_back("`perDeviceNodeSelection`");
    }
    constexpr char kOneOf[] =
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
        "required";
    if (set.empty()) {
      errs_.push_back(Required(p, kOneOf));
    } else if (set.size() > 1) {
      errs_.push_back(Invalid(p, absl::StrCat("{", absl::StrJoin(set, ", "), "}"), kOneOf));
    }
    const Json* devices = Array(spec, "devices", p + ".devices");
    if (devices != nullptr) {
      std::set<std::string> names;
      bool advanced = false;  // haveDeviceTaints || haveConsumesCounters
      for (size_t i = 0; i < devices->size(); ++i) {
        Device d =
            SliceDevice((*devices)[i], Index(p + ".devices", i), s.per_device_node_selection);
        if (!d.name.empty() && !names.insert(d.name).second) {
          errs_.push_back(Duplicate(Index(p + ".devices", i) + ".name", d.name));
        }
        advanced = advanced || !d.taints.empty() || !d.consumes_counters.empty();
        s.devices.push_back(std::move(d));
      }
      const int max = advanced ? kResourceSliceMaxDevicesWithTaintsOrConsumesCounters
                               : kResourceSliceMaxDevices;
      if (devices->size() > static_cast<size_t>(max)) {
        errs_.push_back(TooMany(p + ".devices", static_cast<int64_t>(devices->size()), max));
      }
    }
    const Json* counters = Array(spec, "sharedCounters", p + ".sharedCounters");
    if (counters != nullptr) {
      const std::string cp = p + ".sharedCounters";
      if (counters->size() > static_cast<size_t>(kResourceSliceMaxCounterSets)) {
        errs_.push_back(
            TooMany(cp, static_cast<int64_t>(counters->size()), kResourceSliceMaxCounterSets));
      }
      std::set<std::string> names;
      for (size_t i = 0; i < counters->size(); ++i) {
        const std::string ip = Index(cp, i);
        CounterSet set;
        set.name = String((*counters)[i], "name", ip + ".name");
        if (set.name.empty()) {
          errs_.push_back(Required(ip + ".name"));
        } else {
          ValidateDnsLabel(set.name, ip + ".name", &errs_);
          if (!names.insert(set.name).second) errs_.push_back(Duplicate(ip, set.name));
        }
        set.counters =
            Counters((*counters)[i], ip + ".counters", kResourceSliceMaxCountersPerCounterSet);
        s.shared_counters.push_back(std::move(set));
      }
    }
    // 1.35: counters live in slices of their own (validateResourceSliceSpec).
    if (devices != nullptr && counters != nullptr) {
      errs_.push_back(Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"));
    }
    return s;
  }

  // A map of counter name -> {value: quantity}, non-empty, names DNS labels.
  std::map<std::string, Counter> Counters(const Json& obj, const std::string& p, int max) {
    std::map<std::string, Counter> out;
    const Json* map = Object(obj, "counters", p);
    if (map == nullptr || map->empty()) {
      errs_.push_back(Required(p));
      return out;
    }
    if (map->size() > static_cast<size_t>(max)) {
      errs_.push_back(TooMany(p, static_cast<int64_t>(map->size()), max));
    }
    for (auto it = map->begin(); it != map->end(); ++it) {
      const std::string kp = Key(p, it.key());
      ValidateDnsLabel(it.key(), kp, &errs_);
      out[it.key()].value = QuantityValue(it.value(), kp + ".value", "v1.Counter");
    }
    return out;
  }

  // An optional quantity field (requestPolicy's default, min, ...): a string or a number.
  std::optional<std::string> OptQuantity(const Json& obj, const char* key, const std::string& p) {
    const Json* v = Get(obj, key);
    if (v == nullptr) return std::nullopt;
    return QuantityText(*v, p);
  }

  std::optional<Quantity> Parsed(const std::optional<std::string>& text) {
    if (!text) return std::nullopt;
    absl::StatusOr<Quantity> q = Quantity::Parse(*text);
    if (!q.ok()) return std::nullopt;
    return *q;
  }

  // validateRequestPolicy (only on a device with allowMultipleAllocations).
  CapacityRequestPolicy RequestPolicy(const Json& obj, const std::string& p,
                                      const std::string& capacity_value) {
    CapacityRequestPolicy policy;
    policy.default_value = OptQuantity(obj, "default", p + ".default");
    if (const Json* values = Array(obj, "validValues", p + ".validValues")) {
      for (size_t i = 0; i < values->size(); ++i) {
        if (std::optional<std::string> q = QuantityText((*values)[i], Index(p + ".validValues", i)))
          policy.valid_values.push_back(*q);
      }
    }
    if (const Json* range = Object(obj, "validRange", p + ".validRange")) {
      CapacityRequestPolicyRange r;
      r.min = OptQuantity(*range, "min", p + ".validRange.min").value_or("");
      r.max = OptQuantity(*range, "max", p + ".validRange.max");
      r.step = OptQuantity(*range, "step", p + ".validRange.step");
      policy.valid_range = std::move(r);
    }
    const std::optional<Quantity> max = Parsed(capacity_value);
    const std::optional<Quantity> def = Parsed(policy.default_value);
    if (!policy.valid_values.empty() && policy.valid_range) {
      errs_.push_back(Forbidden(p,
                                "exactly one policy can be specified, cannot specify "
                                "\"validValues\" and \"validRange\" at the same time"));
    } else if (!policy.valid_values.empty()) {
      const std::string vp = p + ".validValues";
      if (!def) {
        errs_.push_back(Required(p + ".default", "required when validValues is defined"));
      }
      if (policy.valid_values.size() >
          static_cast<size_t>(kCapacityRequestPolicyDiscreteMaxOptions)) {
        errs_.push_back(TooMany(vp, static_cast<int64_t>(policy.valid_values.size()),
                                kCapacityRequestPolicyDiscreteMaxOptions));
      }
      bool found_default = false;
      std::optional<Quantity> previous;
      for (size_t i = 0; i < policy.valid_values.size(); ++i) {
        const std::optional<Quantity> v = Parsed(policy.valid_values[i]);
        if (!v) continue;
        if (previous && *previous > *v) {
          errs_.push_back(
              Invalid(Index(vp, i), v->ToString(), "values must be sorted in ascending order"));
        }
        if (max && *v > *max) {
          errs_.push_back(
              Invalid(Index(vp, i), v->ToString(),
                      absl::StrCat("option is larger than capacity value: ", max->ToString())));
        }
        found_default = found_default || (def && *def == *v);
        previous = v;
      }
      if (def && !found_default) {
        errs_.push_back(Invalid(vp, def->ToString(),
                                "default value is not valid according to the requestPolicy"));
      }
    } else if (policy.valid_range) {
      const std::string rp = p + ".validRange";
      const std::optional<Quantity> min = Parsed(policy.valid_range->min);
      if (!def) errs_.push_back(Required(p + ".default", "required when validRange is defined"));
      if (policy.valid_range->min.empty()) {
        errs_.push_back(Required(rp + ".min", "required when validRange is defined"));
      } else if (min && max && *min > *max) {
        errs_.push_back(
            Invalid(rp + ".min", min->ToString(),
                    absl::StrCat("min is larger than capacity value: ", max->ToString())));
      } else if (min && def && *def < *min) {
        errs_.push_back(Invalid(p + ".default", def->ToString(), "default is less than min"));
      }
      const std::optional<Quantity> range_max = Parsed(policy.valid_range->max);
      if (range_max && max && *range_max > *max) {
        errs_.push_back(
            Invalid(rp + ".max", range_max->ToString(),
                    absl::StrCat("max is larger than capacity value: ", max->ToString())));
      }
      const std::optional<Quantity> step = Parsed(policy.valid_range->step);
      if (step && step->Sign() <= 0) {
        errs_.push_back(Invalid(rp + ".step", step->ToString(), "step must be positive"));
      }
    }
    return policy;
  }

  // validateDeviceTaint.
  DeviceTaint Taint(const Json& obj, const std::string& p) {
    DeviceTaint t;
    t.key = String(obj, "key", p + ".key");
    if (t.key.empty()) {
      errs_.push_back(Required(p + ".key"));
    } else {
      ValidateLabelKey(t.key, p + ".key", &errs_);
    }
    t.value = String(obj, "value", p + ".value");
    if (!t.value.empty()) ValidateLabelValue(t.value, p + ".value", &errs_);
    t.effect = String(obj, "effect", p + ".effect");
    if (t.effect.empty()) {
      errs_.push_back(Required(p + ".effect"));
    } else if (t.effect != kTaintEffectNoSchedule && t.effect != kTaintEffectNoExecute &&
               t.effect != kTaintEffectNone) {
      errs_.push_back(
          NotSupported(p + ".effect", t.effect,
                       {kTaintEffectNoExecute, kTaintEffectNoSchedule, kTaintEffectNone}));
    }
    t.time_added = OptString(obj, "timeAdded", p + ".timeAdded");
    return t;
  }

  // validateDeviceToleration.
  DeviceToleration Toleration(const Json& obj, const std::string& p) {
    DeviceToleration t;
    t.key = String(obj, "key", p + ".key");
    if (!t.key.empty()) ValidateLabelKey(t.key, p + ".key", &errs_);
    t.operator_ = String(obj, "operator", p + ".operator");
    if (t.operator_.empty()) t.operator_ = kTolerationOpEqual;  // SetDefaults_DeviceToleration
    t.value = String(obj, "value", p + ".value");
    if (t.operator_ == kTolerationOpExists) {
      if (!t.value.empty()) {
        errs_.push_back(
            Invalid(p + ".value", t.value, "value must be empty when `operator` is 'Exists'"));
      }
    } else if (t.operator_ == kTolerationOpEqual) {
      if (t.key.empty()) {
        errs_.push_back(
            Invalid(p + ".operator", t.operator_, "operator must be Exists when `key` is empty"));
      }
      if (!t.value.empty()) ValidateLabelValue(t.value, p + ".value", &errs_);
    } else {
      errs_.push_back(
          NotSupported(p + ".operator", t.operator_, {kTolerationOpEqual, kTolerationOpExists}));
    }
    t.effect = String(obj, "effect", p + ".effect");
    if (!t.effect.empty() && t.effect != kTaintEffectNoSchedule &&
        t.effect != kTaintEffectNoExecute && t.effect != kTaintEffectNone) {
      errs_.push_back(
          NotSupported(p + ".effect", t.effect,
                       {kTaintEffectNoExecute, kTaintEffectNoSchedule, kTaintEffectNone}));
    }
    t.toleration_seconds = OptInt(obj, "tolerationSeconds", p + ".tolerationSeconds");
    return t;
  }

  std::vector<DeviceToleration> Tolerations(const Json& obj, const std::string& p) {
    std::vector<DeviceToleration> out;
    const Json* arr = Array(obj, "tolerations", p);
    if (arr == nullptr) return out;
    if (arr->size() > static_cast<size_t>(kDeviceTolerationsMaxLength)) {
      errs_.push_back(TooMany(p, static_cast<int64_t>(arr->size()), kDeviceTolerationsMaxLength));
    }
    for (size_t i = 0; i < arr->size(); ++i) out.push_back(Toleration((*arr)[i], Index(p, i)));
    return out;
  }

  std::vector<std::string> BindingConditions(const Json& obj, const char* key,
                                             const std::string& p) {
    std::vector<std::string> out = Strings(obj, key, p);
    if (out.size() > static_cast<size_t>(kBindingConditionsMaxSize)) {
      errs_.push_back(TooMany(p, static_cast<int64_t>(out.size()), kBindingConditionsMaxSize));
    }
    for (size_t i = 0; i < out.size(); ++i) ValidateQualifiedName(out[i], Index(p, i), &errs_);
    return out;
  }

  Device SliceDevice(const Json& device, const std::string& p, bool per_device_node_selection) {
    Device d;
    if (!device.is_object()) {
      TypeError(device, p, "v1.Device");
      return d;
    }
    d.name = String(device, "name", p + ".name");
    if (d.name.empty()) {
      errs_.push_back(Required(p + ".name"));
    } else {
      ValidateDnsLabel(d.name, p + ".name", &errs_);
    }
    if (const Json* attrs = Object(device, "attributes", p + ".attributes")) {
      for (auto it = attrs->begin(); it != attrs->end(); ++it) {
        const std::string ap = Key(p + ".attributes", it.key());
        ValidateQualifiedName(it.key(), ap, &errs_);
        d.attributes[it.key()] = Attribute(it.value(), ap);
      }
    }
    d.allow_multiple_allocations =
        OptBool(device, "allowMultipleAllocations", p + ".allowMultipleAllocations")
            .value_or(false);
    if (const Json* caps = Object(device, "capacity", p + ".capacity")) {
      for (auto it = caps->begin(); it != caps->end(); ++it) {
        const std::string cp = Key(p + ".capacity", it.key());
        ValidateQualifiedName(it.key(), cp, &errs_);
        DeviceCapacity& capacity = d.capacity[it.key()];
        capacity.value = QuantityValue(it.value(), cp + ".value");
        const Json* policy = Object(it.value(), "requestPolicy", cp + ".requestPolicy");
        if (policy == nullptr) continue;
        if (!d.allow_multiple_allocations) {
          errs_.push_back(
              Forbidden(cp + ".requestPolicy", "allowMultipleAllocations must be true"));
        }
        capacity.request_policy = RequestPolicy(*policy, cp + ".requestPolicy", capacity.value);
      }
    }
    SliceDeviceExtras(device, p, per_device_node_selection, &d);
    const size_t combined = d.attributes.size() + d.capacity.size();
    if (combined > static_cast<size_t>(kResourceSliceMaxAttributesAndCapacitiesPerDevice)) {
      errs_.push_back(
          InvalidInt(p, static_cast<int64_t>(combined),
                     absl::StrCat("the total number of attributes and capacities must not exceed ",
                                  kResourceSliceMaxAttributesAndCapacitiesPerDevice)));
    }
    return d;
  }

  // The 1.33+ device fields: counters, taints, binding conditions, per-device node selection.
  void SliceDeviceExtras(const Json& device, const std::string& p, bool per_device_node_selection,
                         Device* d) {
    if (const Json* consumes = Array(device, "consumesCounters", p + ".consumesCounters")) {
      const std::string cp = p + ".consumesCounters";
      if (consumes->size() >
          static_cast<size_t>(kResourceSliceMaxDeviceCounterConsumptionsPerDevice)) {
        errs_.push_back(TooMany(cp, static_cast<int64_t>(consumes->size()),
                                kResourceSliceMaxDeviceCounterConsumptionsPerDevice));
      }
      std::set<std::string> sets;
      for (size_t i = 0; i < consumes->size(); ++i) {
        const std::string ip = Index(cp, i);
        DeviceCounterConsumption c;
        c.counter_set = String((*consumes)[i], "counterSet", ip + ".counterSet");
        if (c.counter_set.empty()) {
          errs_.push_back(Required(ip + ".counterSet"));
        } else {
          ValidateDnsLabel(c.counter_set, ip + ".counterSet", &errs_);
          if (!sets.insert(c.counter_set).second) errs_.push_back(Duplicate(ip, c.counter_set));
        }
        c.counters = Counters((*consumes)[i], ip + ".counters",
                              kResourceSliceMaxCountersPerDeviceCounterConsumption);
        d->consumes_counters.push_back(std::move(c));
      }
    }
    if (const Json* taints = Array(device, "taints", p + ".taints")) {
      if (taints->size() > static_cast<size_t>(kDeviceTaintsMaxLength)) {
        errs_.push_back(
            TooMany(p + ".taints", static_cast<int64_t>(taints->size()), kDeviceTaintsMaxLength));
      }
      for (size_t i = 0; i < taints->size(); ++i) {
        d->taints.push_back(Taint((*taints)[i], Index(p + ".taints", i)));
      }
    }
    d->binds_to_node = OptBool(device, "bindsToNode", p + ".bindsToNode").value_or(false);
    d->binding_conditions =
        BindingConditions(device, "bindingConditions", p + ".bindingConditions");
    d->binding_failure_conditions =
        BindingConditions(device, "bindingFailureConditions", p + ".bindingFailureConditions");
    if (d->binding_conditions.empty() != d->binding_failure_conditions.empty()) {
      errs_.push_back(Invalid(
          p, "",
          "bindingConditions and bindingFailureConditions must both be set or both be empty"));
    }
    // validateDevice: per-device node selection.
    std::vector<std::string> set;
    if (std::optional<std::string> node = OptString(device, "nodeName", p + ".nodeName")) {
      d->node_name = *node;
      if (node->empty()) {
        errs_.push_back(Invalid(p + ".nodeName", "", "must not be empty"));
      } else {
        set.push_back("`nodeName`");
        ValidateDnsSubdomain(*node, p + ".nodeName", &errs_);
      }
    }
    if (const Json* selector = Object(device, "nodeSelector", p + ".nodeSelector")) {
      d->node_selector = *selector;
      set.push_back("`nodeSelector`");
    }
    if (std::optional<bool> all = OptBool(device, "allNodes", p + ".allNodes")) {
      d->all_nodes = *all;
      if (*all) {
        set.push_back("`allNodes`");
      } else {
        errs_.push_back(Invalid(p + ".allNodes", "false", "must be either unset or set to true"));
      }
    }
    constexpr char kOneOfPerDevice[] =
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec";
    if (per_device_node_selection) {
      if (set.empty()) {
        errs_.push_back(Required(p, kOneOfPerDevice));
      } else if (set.size() > 1) {
        errs_.push_back(
            Invalid(p, absl::StrCat("{", absl::StrJoin(set, ", "), "}"), kOneOfPerDevice));
      }
    } else if (d->node_name || d->node_selector || device.contains("allNodes")) {
      errs_.push_back(Invalid(p, "null",
                              "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                              "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
    }
  }

  DeviceAttribute Attribute(const Json& attr, const std::string& p) {
    DeviceAttribute a;
    if (!attr.is_object()) {
      TypeError(attr, p, "v1.DeviceAttribute");
      return a;
    }
    // JSON keys are int, bool, string, version (IntValue `json:"int"`, ...).
    a.int_value = OptInt(attr, "int", p + ".int");
    a.bool_value = OptBool(attr, "bool", p + ".bool");
    a.string_value = OptString(attr, "string", p + ".string");
    a.version_value = OptString(attr, "version", p + ".version");
    std::vector<std::string> set;
    if (a.bool_value) set.push_back("bool");
    if (a.int_value) set.push_back("int");
    if (a.string_value) {
      set.push_back("string");
      if (a.string_value->size() > static_cast<size_t>(kDeviceAttributeMaxValueLength)) {
        errs_.push_back(TooLong(p + ".string", kDeviceAttributeMaxValueLength));
      }
    }
    if (a.version_value) {
      set.push_back("version");
      if (!IsSemanticVersion(*a.version_value)) {
        errs_.push_back(Invalid(p + ".version", *a.version_value,
                                "must be a string compatible with semver.org spec 2.0.0"));
      }
      if (a.version_value->size() > static_cast<size_t>(kDeviceAttributeMaxValueLength)) {
        errs_.push_back(TooLong(p + ".version", kDeviceAttributeMaxValueLength));
      }
    }
    if (set.empty()) {
      errs_.push_back(Required(p, kExactlyOneAttributeValue));
    } else if (set.size() > 1) {
      errs_.push_back(
          Invalid(p, absl::StrCat("{", absl::StrJoin(set, ", "), "}"), kExactlyOneAttributeValue));
    }
    return a;
  }

  std::string QuantityValue(const Json& cap, const std::string& p,
                            const char* type = "v1.DeviceCapacity") {
    const Json* v = Get(cap, "value");
    if (!cap.is_object()) {
      TypeError(cap, p, type);
      return "";
    }
    if (v == nullptr) {
      errs_.push_back(Required(p));
      return "";
    }
    return QuantityText(*v, p).value_or("");
  }

  // A quantity as JSON carries it (a string, or a number); a bad one is a BadRequest, as
  // Quantity.UnmarshalJSON fails.
  std::optional<std::string> QuantityText(const Json& value, const std::string& p) {
    const Json* v = &value;
    std::string text;
    if (v->is_string()) {
      text = v->get<std::string>();
    } else if (v->is_number()) {
      text = v->dump();
    } else {
      TypeError(*v, p, "resource.Quantity");
      return std::nullopt;
    }
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    if (!q.ok()) {
      if (type_error_.empty()) type_error_ = absl::StrCat(p, ": ", q.status().message());
      return text;
    }
    return text;
  }

  std::vector<DeviceSelector> Selectors(const Json& obj, const std::string& p) {
    std::vector<DeviceSelector> out;
    const Json* arr = Array(obj, "selectors", p);
    if (arr == nullptr) return out;
    if (arr->size() > static_cast<size_t>(kDeviceSelectorsMaxSize)) {
      errs_.push_back(TooMany(p, static_cast<int64_t>(arr->size()), kDeviceSelectorsMaxSize));
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      const std::string sp = Index(p, i);
      DeviceSelector sel;
      const Json* cel = Object((*arr)[i], "cel", sp + ".cel");
      if (cel == nullptr) {
        errs_.push_back(Required(sp + ".cel"));
      } else {
        sel.cel_expression = String(*cel, "expression", sp + ".cel.expression");
        if (sel.cel_expression.empty()) {
          errs_.push_back(Required(sp + ".cel.expression"));
        } else if (sel.cel_expression.size() >
                   static_cast<size_t>(kCelSelectorExpressionMaxLength)) {
          // validateCELSelector: the compiler (and kdp's recursive one) never sees longer text.
          errs_.push_back(TooLong(sp + ".cel.expression", kCelSelectorExpressionMaxLength));
        }
      }
      out.push_back(std::move(sel));
    }
    return out;
  }

  OpaqueDeviceConfiguration Opaque(const Json& obj, const std::string& p, bool required) {
    OpaqueDeviceConfiguration o;
    const Json* opaque = Object(obj, "opaque", p);
    if (opaque == nullptr) {
      if (required) errs_.push_back(Required(p));
      return o;
    }
    o.driver = String(*opaque, "driver", p + ".driver");
    ValidateDriverName(o.driver, p + ".driver", &errs_);
    const Json* params = Get(*opaque, "parameters");
    if (params == nullptr) {
      errs_.push_back(Required(p + ".parameters"));
    } else if (!params->is_object()) {
      errs_.push_back(
          Invalid(p + ".parameters", "<value omitted>", "parameters must be a valid JSON object"));
    } else {
      if (params->dump().size() > static_cast<size_t>(kOpaqueParametersMaxLength)) {
        errs_.push_back(TooLong(p + ".parameters", kOpaqueParametersMaxLength));
      }
      o.parameters = *params;
    }
    return o;
  }

  ExactDeviceRequest Exact(const Json& obj, const std::string& p, bool admin_access_allowed) {
    ExactDeviceRequest r;
    r.device_class_name = String(obj, "deviceClassName", p + ".deviceClassName");
    if (r.device_class_name.empty()) {
      errs_.push_back(Required(p + ".deviceClassName"));
    } else {
      ValidateDnsSubdomain(r.device_class_name, p + ".deviceClassName", &errs_);
    }
    r.selectors = Selectors(obj, p + ".selectors");
    // SetDefaults_ExactDeviceRequest runs before validation: "" is ExactCount, count 0 is 1.
    r.allocation_mode = String(obj, "allocationMode", p + ".allocationMode");
    if (r.allocation_mode.empty()) r.allocation_mode = kAllocationModeExactCount;
    r.count = OptInt(obj, "count", p + ".count").value_or(0);
    if (r.allocation_mode == kAllocationModeExactCount && r.count == 0) r.count = 1;
    if (r.allocation_mode == kAllocationModeAll) {
      if (r.count != 0) {
        errs_.push_back(InvalidInt(p + ".count", r.count,
                                   "must not be specified when allocationMode is 'All'"));
      }
    } else if (r.allocation_mode == kAllocationModeExactCount) {
      if (r.count <= 0) {
        errs_.push_back(InvalidInt(p + ".count", r.count, "must be greater than zero"));
      }
    } else {
      errs_.push_back(NotSupported(p + ".allocationMode", r.allocation_mode,
                                   {kAllocationModeAll, kAllocationModeExactCount}));
    }
    if (admin_access_allowed) {
      r.admin_access = OptBool(obj, "adminAccess", p + ".adminAccess").value_or(false);
    }
    r.tolerations = Tolerations(obj, p + ".tolerations");
    if (const Json* capacity = Object(obj, "capacity", p + ".capacity")) {
      if (const Json* requests = Object(*capacity, "requests", p + ".capacity.requests")) {
        for (auto it = requests->begin(); it != requests->end(); ++it) {
          const std::string kp = Key(p + ".capacity.requests", it.key());
          ValidateQualifiedName(it.key(), kp, &errs_);
          r.capacity_requests[it.key()] = QuantityText(it.value(), kp).value_or("");
        }
      }
    }
    return r;
  }

  ResourceClaimSpec ClaimSpec(const Json& spec, const std::string& p) {
    ResourceClaimSpec s;
    const Json* devices = Object(spec, "devices", p + ".devices");
    if (devices == nullptr) return s;
    const std::string dp = p + ".devices";
    RequestNames names;
    if (const Json* reqs = Array(*devices, "requests", dp + ".requests")) {
      if (reqs->size() > static_cast<size_t>(kDeviceRequestsMaxSize)) {
        errs_.push_back(
            TooMany(dp + ".requests", static_cast<int64_t>(reqs->size()), kDeviceRequestsMaxSize));
      }
      for (size_t i = 0; i < reqs->size(); ++i) {
        s.devices.requests.push_back(Request((*reqs)[i], Index(dp + ".requests", i), &names));
      }
    }
    if (const Json* cons = Array(*devices, "constraints", dp + ".constraints")) {
      if (cons->size() > static_cast<size_t>(kDeviceConstraintsMaxSize)) {
        errs_.push_back(TooMany(dp + ".constraints", static_cast<int64_t>(cons->size()),
                                kDeviceConstraintsMaxSize));
      }
      for (size_t i = 0; i < cons->size(); ++i) {
        const std::string cp = Index(dp + ".constraints", i);
        DeviceConstraint c;
        c.requests = RequestRefs((*cons)[i], cp + ".requests", names);
        std::optional<std::string> match =
            OptString((*cons)[i], "matchAttribute", cp + ".matchAttribute");
        std::optional<std::string> distinct =
            OptString((*cons)[i], "distinctAttribute", cp + ".distinctAttribute");
        if (match) {
          c.match_attribute = *match;
          ValidateFullyQualifiedName(*match, cp + ".matchAttribute", &errs_);
        } else if (distinct) {
          c.distinct_attribute = *distinct;
          ValidateFullyQualifiedName(*distinct, cp + ".distinctAttribute", &errs_);
        } else {
          errs_.push_back(Required(cp + ".matchAttribute"));
        }
        s.devices.constraints.push_back(std::move(c));
      }
    }
    if (const Json* config = Array(*devices, "config", dp + ".config")) {
      if (config->size() > static_cast<size_t>(kDeviceConfigMaxSize)) {
        errs_.push_back(
            TooMany(dp + ".config", static_cast<int64_t>(config->size()), kDeviceConfigMaxSize));
      }
      for (size_t i = 0; i < config->size(); ++i) {
        const std::string cp = Index(dp + ".config", i);
        DeviceClaimConfiguration c;
        c.requests = RequestRefs((*config)[i], cp + ".requests", names);
        c.opaque = Opaque((*config)[i], cp + ".opaque", /*required=*/true);
        s.devices.config.push_back(std::move(c));
      }
    }
    return s;
  }

  DeviceRequest Request(const Json& req, const std::string& p, RequestNames* names) {
    DeviceRequest r;
    r.name = String(req, "name", p + ".name");
    if (r.name.empty()) {
      errs_.push_back(Required(p + ".name"));
    } else {
      ValidateDnsLabel(r.name, p + ".name", &errs_);
      if (names->count(r.name) != 0) errs_.push_back(Duplicate(p + ".name", r.name));
    }
    std::set<std::string>& subs = (*names)[r.name];
    const Json* exactly = Object(req, "exactly", p + ".exactly");
    const Json* first = Array(req, "firstAvailable", p + ".firstAvailable");
    const bool has_first = first != nullptr && !first->empty();
    if (exactly != nullptr && has_first) {
      errs_.push_back(Forbidden(
          p,
          "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"));
    } else if (exactly == nullptr && !has_first) {
      errs_.push_back(Required(p, "exactly one of `exactly` or `firstAvailable` is required"));
    }
    if (exactly != nullptr) r.exactly = Exact(*exactly, p + ".exactly", true);
    if (has_first) {
      const std::string fp = p + ".firstAvailable";
      if (first->size() > static_cast<size_t>(kFirstAvailableDeviceRequestMaxSize)) {
        errs_.push_back(
            TooMany(fp, static_cast<int64_t>(first->size()), kFirstAvailableDeviceRequestMaxSize));
      }
      for (size_t i = 0; i < first->size(); ++i) {
        const std::string sp = Index(fp, i);
        DeviceSubRequest sub;
        sub.name = String((*first)[i], "name", sp + ".name");
        if (sub.name.empty()) {
          errs_.push_back(Required(sp + ".name"));
        } else {
          ValidateDnsLabel(sub.name, sp + ".name", &errs_);
          if (!subs.insert(sub.name).second) errs_.push_back(Duplicate(sp + ".name", sub.name));
        }
        sub.request = Exact((*first)[i], sp, false);
        r.first_available.push_back(std::move(sub));
      }
    }
    return r;
  }

  // validateRequestNameRef for each entry of `obj.requests`, plus uniqueness.
  std::vector<std::string> RequestRefs(const Json& obj, const std::string& p,
                                       const RequestNames& names) {
    std::vector<std::string> refs = Strings(obj, "requests", p);
    std::set<std::string> seen;
    for (size_t i = 0; i < refs.size(); ++i) {
      CheckRequestRef(refs[i], Index(p, i), names);
      if (!seen.insert(refs[i]).second) errs_.push_back(Duplicate(Index(p, i), refs[i]));
    }
    return refs;
  }

  void CheckRequestRef(const std::string& ref, const std::string& p, const RequestNames& names) {
    std::vector<std::string> parts = absl::StrSplit(ref, '/');
    auto it = names.find(parts[0]);
    if (parts.size() > 2 || it == names.end()) {
      errs_.push_back(Invalid(p, ref, kRequestRefMessage));
    } else if (parts.size() == 2 && it->second.count(parts[1]) == 0) {
      errs_.push_back(Invalid(p, ref, "must be the name of a subrequest in the claim"));
    }
  }

  ResourceClaimStatus ClaimStatus(const Json& status, const ResourceClaimSpec& spec) {
    ResourceClaimStatus s;
    RequestNames names;
    for (const DeviceRequest& r : spec.devices.requests) {
      std::set<std::string>& subs = names[r.name];
      for (const DeviceSubRequest& sub : r.first_available) subs.insert(sub.name);
    }
    if (const Json* alloc = Object(status, "allocation", "status.allocation")) {
      AllocationResult a;
      const std::string ap = "status.allocation";
      if (const Json* devices = Object(*alloc, "devices", ap + ".devices")) {
        const std::string rp = ap + ".devices.results";
        if (const Json* results = Array(*devices, "results", rp)) {
          if (results->size() > static_cast<size_t>(kAllocationResultsMaxSize)) {
            errs_.push_back(
                TooMany(rp, static_cast<int64_t>(results->size()), kAllocationResultsMaxSize));
          }
          for (size_t i = 0; i < results->size(); ++i) {
            a.results.push_back(Result((*results)[i], Index(rp, i), names));
          }
        }
        const std::string cp = ap + ".devices.config";
        if (const Json* config = Array(*devices, "config", cp)) {
          for (size_t i = 0; i < config->size(); ++i) {
            const std::string p = Index(cp, i);
            DeviceAllocationConfiguration c;
            c.source = String((*config)[i], "source", p + ".source");
            if (c.source.empty()) {
              errs_.push_back(Required(p + ".source"));
            } else if (c.source != kConfigSourceFromClass && c.source != kConfigSourceFromClaim) {
              errs_.push_back(NotSupported(p + ".source", c.source,
                                           {kConfigSourceFromClaim, kConfigSourceFromClass}));
            }
            c.requests = RequestRefs((*config)[i], p + ".requests", names);
            c.opaque = Opaque((*config)[i], p + ".opaque", /*required=*/true);
            a.config.push_back(std::move(c));
          }
        }
      }
      if (const Json* selector = Object(*alloc, "nodeSelector", ap + ".nodeSelector")) {
        a.node_selector = *selector;
      }
      s.allocation = std::move(a);
    }
    const std::string rp = "status.reservedFor";
    if (const Json* reserved = Array(status, "reservedFor", rp)) {
      if (reserved->size() > static_cast<size_t>(kResourceClaimReservedForMaxSize)) {
        errs_.push_back(
            TooMany(rp, static_cast<int64_t>(reserved->size()), kResourceClaimReservedForMaxSize));
      }
      std::set<std::string> uids;
      for (size_t i = 0; i < reserved->size(); ++i) {
        const std::string p = Index(rp, i);
        const Json& e = (*reserved)[i];
        ConsumerReference c;
        c.api_group = String(e, "apiGroup", p + ".apiGroup");
        c.resource = String(e, "resource", p + ".resource");
        c.name = String(e, "name", p + ".name");
        c.uid = String(e, "uid", p + ".uid");
        if (c.resource.empty()) errs_.push_back(Required(p + ".resource"));
        if (c.name.empty()) errs_.push_back(Required(p + ".name"));
        if (c.uid.empty()) {
          errs_.push_back(Required(p + ".uid"));
        } else if (!uids.insert(c.uid).second) {
          errs_.push_back(Duplicate(p + ".uid", c.uid));
        }
        s.reserved_for.push_back(std::move(c));
      }
      if (!s.reserved_for.empty() && !s.allocation) {
        errs_.push_back(Forbidden(rp, "may not be specified when `allocated` is not set"));
      }
    }
    return s;
  }

  DeviceRequestAllocationResult Result(const Json& r, const std::string& p,
                                       const RequestNames& names) {
    DeviceRequestAllocationResult out;
    out.request = String(r, "request", p + ".request");
    if (out.request.empty()) {
      errs_.push_back(Required(p + ".request"));
    } else {
      CheckRequestRef(out.request, p + ".request", names);
    }
    out.driver = String(r, "driver", p + ".driver");
    ValidateDriverName(out.driver, p + ".driver", &errs_);
    out.pool = String(r, "pool", p + ".pool");
    ValidatePoolName(out.pool, p + ".pool", &errs_);
    out.device = String(r, "device", p + ".device");
    if (out.device.empty()) {
      errs_.push_back(Required(p + ".device"));
    } else {
      ValidateDnsLabel(out.device, p + ".device", &errs_);
    }
    out.admin_access = OptBool(r, "adminAccess", p + ".adminAccess");
    out.share_id = OptString(r, "shareID", p + ".shareID");
    out.tolerations = Tolerations(r, p + ".tolerations");
    out.binding_conditions = BindingConditions(r, "bindingConditions", p + ".bindingConditions");
    out.binding_failure_conditions =
        BindingConditions(r, "bindingFailureConditions", p + ".bindingFailureConditions");
    if (const Json* consumed = Object(r, "consumedCapacity", p + ".consumedCapacity")) {
      for (auto it = consumed->begin(); it != consumed->end(); ++it) {
        const std::string kp = Key(p + ".consumedCapacity", it.key());
        ValidateQualifiedName(it.key(), kp, &errs_);
        out.consumed_capacity[it.key()] = QuantityText(it.value(), kp).value_or("");
      }
    }
    return out;
  }

  // The decode result: BadRequest for the first type error, else Invalid for all rule errors.
  absl::Status Finish() const {
    if (!type_error_.empty()) {
      return BadRequestError(absl::StrCat(kind_.name, " in version \"v1\" cannot be handled as a ",
                                          kind_.name, ": ", type_error_));
    }
    if (!errs_.empty()) return InvalidError(kind_, name_, errs_);
    return absl::OkStatus();
  }

  FieldErrors& errs() { return errs_; }

 private:
  const KindInfo& kind_;
  std::string name_;
  FieldErrors errs_;
  std::string type_error_;
};

const Json& SpecOf(Decoder& d, const Json& object) {
  static const Json* const kEmpty = new Json(Json::object());
  const Json* spec = d.Object(object, "spec", "spec");
  return spec != nullptr ? *spec : *kEmpty;
}

}  // namespace

absl::StatusOr<ResourceSlice> DecodeResourceSlice(const nlohmann::json& object) {
  Decoder d(Kind::kResourceSlice);
  ResourceSlice out;
  out.metadata = d.Meta(object);
  out.spec = d.SliceSpec(SpecOf(d, object));
  if (absl::Status s = d.Finish(); !s.ok()) return s;
  return out;
}

absl::StatusOr<DeviceClass> DecodeDeviceClass(const nlohmann::json& object) {
  Decoder d(Kind::kDeviceClass);
  DeviceClass out;
  out.metadata = d.Meta(object);
  const Json& spec = SpecOf(d, object);
  out.spec.selectors = d.Selectors(spec, "spec.selectors");
  if (const Json* config = d.Array(spec, "config", "spec.config")) {
    if (config->size() > static_cast<size_t>(kDeviceConfigMaxSize)) {
      d.errs().push_back(
          TooMany("spec.config", static_cast<int64_t>(config->size()), kDeviceConfigMaxSize));
    }
    for (size_t i = 0; i < config->size(); ++i) {
      out.spec.config.push_back(
          d.Opaque((*config)[i], Index("spec.config", i) + ".opaque", /*required=*/true));
    }
  }
  if (absl::Status s = d.Finish(); !s.ok()) return s;
  return out;
}

absl::StatusOr<ResourceClaim> DecodeResourceClaim(const nlohmann::json& object) {
  Decoder d(Kind::kResourceClaim);
  ResourceClaim out;
  out.metadata = d.Meta(object);
  out.spec = d.ClaimSpec(SpecOf(d, object), "spec");
  if (const Json* status = d.Object(object, "status", "status")) {
    out.status = d.ClaimStatus(*status, out.spec);
  }
  if (absl::Status s = d.Finish(); !s.ok()) return s;
  return out;
}

absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const nlohmann::json& object) {
  Decoder d(Kind::kResourceClaimTemplate);
  ResourceClaimTemplate out;
  out.metadata = d.Meta(object);
  const Json& spec = SpecOf(d, object);
  if (const Json* meta = d.Object(spec, "metadata", "spec.metadata")) {
    out.spec.metadata = d.MetaFields(*meta, "spec.metadata");
  }
  const Json* inner = d.Object(spec, "spec", "spec.spec");
  out.spec.spec = d.ClaimSpec(inner != nullptr ? *inner : Json::object(), "spec.spec");
  if (absl::Status s = d.Finish(); !s.ok()) return s;
  return out;
}

absl::Status Validate(Kind kind, const nlohmann::json& object) {
  switch (kind) {
    case Kind::kResourceSlice:
      return DecodeResourceSlice(object).status();
    case Kind::kDeviceClass:
      return DecodeDeviceClass(object).status();
    case Kind::kResourceClaim:
      return DecodeResourceClaim(object).status();
    case Kind::kResourceClaimTemplate:
      return DecodeResourceClaimTemplate(object).status();
    case Kind::kNode:
      return absl::OkStatus();
    case Kind::kNamespace:
    case Kind::kPod:
    case Kind::kEvent: {
      // The core kinds the manager writes itself (Pods, Events) or that carry nothing but
      // metadata (Namespaces): object-meta rules only.
      FieldErrors errors;
      const Json& meta = object.contains("metadata") ? object["metadata"] : Json::object();
      if (!meta.is_object()) {
        return BadRequestError(absl::StrCat(InfoOf(kind).name, " in version \"v1\" cannot be ",
                                            "handled as a ", InfoOf(kind).name,
                                            ": metadata must be an object"));
      }
      ValidateObjectMeta(InfoOf(kind), meta, &errors);
      if (kind == Kind::kNamespace && meta.contains("name") && meta["name"].is_string()) {
        ValidateDnsLabel(meta["name"].get<std::string>(), "metadata.name", &errors);
      }
      if (errors.empty()) return absl::OkStatus();
      return InvalidError(
          InfoOf(kind),
          meta.contains("name") && meta["name"].is_string() ? meta["name"].get<std::string>() : "",
          errors);
    }
  }
  return absl::OkStatus();
}

}  // namespace kdp::manager::resourceapi
