#include "sdk/src/dra/resource_slice.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/path_safety.h"
#include "common/resource_name.h"
#include "sdk/src/dra/pool_validation.h"

namespace kdp::internal {
namespace {

using nlohmann::json;

// Generated names get 5 random characters appended; names may have 253.
constexpr size_t kMaxGenerateNameLength = kDns1123SubdomainMaxLength - 5;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// validateCIdentifier: [A-Za-z_][A-Za-z0-9_]*, at most 32 characters.
bool IsCIdentifier(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  if (IsDigit(id[0])) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// A device attribute or capacity name (resource.k8s.io QualifiedName): a C identifier, or a DNS
// subdomain (≤ 63) + "/" + C identifier.
bool IsDeviceQualifiedName(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return IsCIdentifier(name);
  std::string_view domain = name.substr(0, slash);
  return domain.size() <= 63 && IsDns1123Subdomain(domain) && IsCIdentifier(name.substr(slash + 1));
}

bool IsNumericIdentifier(std::string_view part) {
  if (part.empty()) return false;
  for (char c : part) {
    if (!IsDigit(c)) return false;
  }
  return part.size() == 1 || part[0] != '0';
}

bool IsAlnumDashIdentifier(std::string_view part) {
  if (part.empty()) return false;
  for (char c : part) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

absl::Status DeviceError(const DraDevice& device, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("device \"", device.name, "\": ", what));
}

absl::Status ValidateDevice(const DraDevice& device) {
  if (!IsDns1123Label(device.name)) {
    return DeviceError(device, absl::StrCat("name must be a DNS label: ",
                                            absl::StrJoin(Dns1123LabelErrors(device.name), "; ")));
  }
  if (device.attributes.size() + device.capacity.size() > kMaxAttributesAndCapacity) {
    return DeviceError(
        device, absl::StrCat("has ", device.attributes.size() + device.capacity.size(),
                             " attributes and capacities; at most ", kMaxAttributesAndCapacity,
                             " are allowed"));
  }
  const char* kNameRule =
      "must be a C identifier of at most 32 characters, optionally prefixed by a DNS subdomain "
      "and '/'";
  for (const auto& [name, value] : device.attributes) {
    if (!IsDeviceQualifiedName(name)) {
      return DeviceError(device, absl::StrCat("attribute name \"", name, "\" ", kNameRule));
    }
    if (const auto* text = std::get_if<std::string>(&value);
        text != nullptr && text->size() > kMaxAttributeValueLength) {
      return DeviceError(device, absl::StrCat("attribute \"", name, "\": string value longer than ",
                                              kMaxAttributeValueLength, " bytes"));
    }
    if (const auto* version = std::get_if<VersionValue>(&value); version != nullptr) {
      if (version->semver.size() > kMaxAttributeValueLength || !IsSemver(version->semver)) {
        return DeviceError(device,
                           absl::StrCat("attribute \"", name, "\": version \"", version->semver,
                                        "\" must be a semantic version of at most ",
                                        kMaxAttributeValueLength, " bytes"));
      }
    }
  }
  for (const auto& [name, quantity] : device.capacity) {
    if (!IsDeviceQualifiedName(name)) {
      return DeviceError(device, absl::StrCat("capacity name \"", name, "\" ", kNameRule));
    }
    if (device.attributes.count(name) != 0) {
      return DeviceError(device,
                         absl::StrCat("\"", name, "\" is both an attribute and a capacity"));
    }
    if (!IsQuantity(quantity)) {
      return DeviceError(device, absl::StrCat("capacity \"", name, "\": \"", quantity,
                                              "\" is not a quantity (e.g. \"80Gi\", \"500m\")"));
    }
  }
  return absl::OkStatus();
}

json QuantitiesJson(const Quantities& quantities) {
  json out = json::object();
  for (const auto& [name, value] : quantities) out[name] = {{"value", value}};
  return out;
}

json RequirementsJson(const std::vector<NodeSelectorRequirement>& requirements) {
  json out = json::array();
  for (const NodeSelectorRequirement& r : requirements) {
    json entry = {{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) entry["values"] = r.values;
    out.push_back(std::move(entry));
  }
  return out;
}

const char* EffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoExecute:
      return "NoExecute";
    case TaintEffect::kNone:
      return "None";
    case TaintEffect::kNoSchedule:
      break;
  }
  return "NoSchedule";
}

bool UsesAdvancedFeatures(const DraDevice& device) {
  return !device.taints.empty() || !device.consumes_counters.empty();
}

}  // namespace

// One rule for driver names, shared with the manager (common/path_safety.h): the name becomes
// the directory plugins/<driver>/ and part of the registration socket's name.
absl::Status ValidateDriverName(const std::string& name) { return ValidateDraDriverName(name); }

absl::Status ValidateDraDevices(const std::vector<DraDevice>& devices) {
  return ValidateDraDevicesIn(devices, false);
}

absl::Status ValidateDraDevicesIn(const std::vector<DraDevice>& devices,
                                  bool per_device_node_selection) {
  std::set<std::string> names;
  for (const DraDevice& device : devices) {
    if (absl::Status status = ValidateDevice(device); !status.ok()) return status;
    if (absl::Status status = ValidateDeviceModel(device, per_device_node_selection);
        !status.ok()) {
      return DeviceError(device, std::string(status.message()));
    }
    if (!names.insert(device.name).second) {
      return DeviceError(device, "name is used by more than one device");
    }
  }
  return absl::OkStatus();
}

// resource.Quantity's grammar: <signedNumber><suffix>, suffix binary SI (Ki..Ei), decimal SI
// (m, k, M, G, T, P, E or none) or a decimal exponent (e/E and a signed integer).
bool IsQuantity(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && IsDigit(text[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  std::string_view suffix = text.substr(i);
  static const std::set<std::string_view> kSuffixes = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
                                                       "m", "k",  "M",  "G",  "T",  "P",  "E"};
  if (kSuffixes.count(suffix) != 0) return true;
  if (suffix[0] != 'e' && suffix[0] != 'E') return false;
  std::string_view exponent = suffix.substr(1);
  if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.remove_prefix(1);
  if (exponent.empty()) return false;
  for (char c : exponent) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

bool IsSemver(std::string_view text) {
  absl::string_view core(text.data(), text.size());
  auto identifiers_ok = [](absl::string_view list, bool prerelease) {
    if (list.empty()) return false;
    for (absl::string_view part : absl::StrSplit(list, '.')) {
      std::string_view p(part.data(), part.size());
      if (!IsAlnumDashIdentifier(p)) return false;
      // Numeric pre-release identifiers must not have leading zeros.
      if (prerelease && std::all_of(p.begin(), p.end(), IsDigit) && !IsNumericIdentifier(p)) {
        return false;
      }
    }
    return true;
  };
  if (size_t plus = core.find('+'); plus != absl::string_view::npos) {
    if (!identifiers_ok(core.substr(plus + 1), false)) return false;
    core = core.substr(0, plus);
  }
  if (size_t dash = core.find('-'); dash != absl::string_view::npos) {
    if (!identifiers_ok(core.substr(dash + 1), true)) return false;
    core = core.substr(0, dash);
  }
  std::vector<absl::string_view> numbers = absl::StrSplit(core, '.');
  if (numbers.size() != 3) return false;
  for (absl::string_view number : numbers) {
    if (!IsNumericIdentifier(std::string_view(number.data(), number.size()))) return false;
  }
  return true;
}

json DeviceJson(const DraDevice& device) {
  json out = {{"name", device.name}};
  if (!device.attributes.empty()) {
    json attributes = json::object();
    for (const auto& [name, value] : device.attributes) {
      json& entry = attributes[name];
      if (const auto* i = std::get_if<int64_t>(&value)) {
        entry = {{"int", *i}};
      } else if (const auto* b = std::get_if<bool>(&value)) {
        entry = {{"bool", *b}};
      } else if (const auto* s = std::get_if<std::string>(&value)) {
        entry = {{"string", *s}};
      } else {
        entry = {{"version", std::get<VersionValue>(value).semver}};
      }
    }
    out["attributes"] = std::move(attributes);
  }
  if (!device.capacity.empty()) {
    json capacity = QuantitiesJson(device.capacity);
    for (const auto& [name, policy] : device.request_policies) {
      // Go writes "default": null for an unset default (no omitempty); absent reads the same.
      json entry = json::object();
      if (!policy.default_value.empty()) entry["default"] = policy.default_value;
      if (!policy.valid_values.empty()) entry["validValues"] = policy.valid_values;
      if (policy.valid_range.has_value()) {
        json range = {{"min", policy.valid_range->min}};
        if (!policy.valid_range->max.empty()) range["max"] = policy.valid_range->max;
        if (!policy.valid_range->step.empty()) range["step"] = policy.valid_range->step;
        entry["validRange"] = std::move(range);
      }
      capacity[name]["requestPolicy"] = std::move(entry);
    }
    out["capacity"] = std::move(capacity);
  }
  if (!device.consumes_counters.empty()) {
    json consumes = json::array();
    for (const CounterConsumption& c : device.consumes_counters) {
      consumes.push_back({{"counterSet", c.counter_set}, {"counters", QuantitiesJson(c.counters)}});
    }
    out["consumesCounters"] = std::move(consumes);
  }
  if (!device.node_name.empty()) out["nodeName"] = device.node_name;
  if (device.node_selector.has_value())
    out["nodeSelector"] = NodeSelectorJson(*device.node_selector);
  if (device.all_nodes) out["allNodes"] = true;
  if (!device.taints.empty()) {
    json taints = json::array();
    for (const DeviceTaint& taint : device.taints) {
      json entry = {{"key", taint.key}, {"effect", EffectName(taint.effect)}};
      if (!taint.value.empty()) entry["value"] = taint.value;
      if (!taint.time_added.empty()) entry["timeAdded"] = taint.time_added;
      taints.push_back(std::move(entry));
    }
    out["taints"] = std::move(taints);
  }
  if (device.binds_to_node) out["bindsToNode"] = true;
  if (!device.binding_conditions.empty()) out["bindingConditions"] = device.binding_conditions;
  if (!device.binding_failure_conditions.empty()) {
    out["bindingFailureConditions"] = device.binding_failure_conditions;
  }
  if (device.allow_multiple_allocations) out["allowMultipleAllocations"] = true;
  return out;
}

json CounterSetJson(const CounterSet& set) {
  return {{"name", set.name}, {"counters", QuantitiesJson(set.counters)}};
}

json NodeSelectorJson(const NodeSelector& selector) {
  json terms = json::array();
  for (const NodeSelectorTerm& term : selector.terms) {
    json entry = json::object();
    if (!term.match_expressions.empty()) {
      entry["matchExpressions"] = RequirementsJson(term.match_expressions);
    }
    if (!term.match_fields.empty()) entry["matchFields"] = RequirementsJson(term.match_fields);
    terms.push_back(std::move(entry));
  }
  return {{"nodeSelectorTerms", std::move(terms)}};
}

std::vector<json> SplitDevices(const std::vector<DraDevice>& devices) {
  std::vector<json> slices;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i % kMaxDevicesPerSlice == 0) slices.push_back(json::array());
    slices.back().push_back(DeviceJson(devices[i]));
  }
  if (slices.empty()) slices.push_back(json::array());
  return slices;
}

json OwnerReferenceJson(const SliceTarget& target) {
  if (!target.node_name.empty()) {
    return {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"name", target.node_name},
            {"uid", target.node_uid},
            {"controller", true}};
  }
  if (!target.owner.has_value()) return nullptr;
  return {{"apiVersion", target.owner->api_version},
          {"kind", target.owner->kind},
          {"name", target.owner->name},
          {"uid", target.owner->uid},
          {"controller", true}};
}

std::vector<json> PoolSliceContents(const DraPool& pool) {
  std::vector<json> slices;
  for (size_t i = 0; i < pool.shared_counters.size(); ++i) {
    if (i % kMaxCounterSetsPerSlice == 0) slices.push_back({{"sharedCounters", json::array()}});
    slices.back()["sharedCounters"].push_back(CounterSetJson(pool.shared_counters[i]));
  }
  // ResourceSliceMaxDevicesWithTaintsOrConsumesCounters: one such device lowers its slice's limit.
  size_t first_device_slice = slices.size();
  bool advanced = false;
  for (const DraDevice& device : pool.devices) {
    const bool with = advanced || UsesAdvancedFeatures(device);
    const size_t limit = with ? kMaxDevicesPerSliceWithTaintsOrCounters : kMaxDevicesPerSlice;
    if (slices.size() == first_device_slice || slices.back()["devices"].size() + 1 > limit) {
      slices.push_back({{"devices", json::array()}});
      advanced = false;
    }
    advanced = advanced || UsesAdvancedFeatures(device);
    slices.back()["devices"].push_back(DeviceJson(device));
  }
  if (slices.empty()) slices.push_back({{"devices", json::array()}});
  if (pool.per_device_node_selection) {
    for (json& slice : slices) slice["perDeviceNodeSelection"] = true;
  }
  return slices;
}

json PoolSliceJson(const SliceTarget& target, const DraPool& pool, int64_t generation,
                   int64_t slice_count, const json& content) {
  std::string generate_name = absl::StrCat(target.driver, "-");
  if (!target.node_name.empty()) {
    generate_name = absl::StrCat(target.node_name, "-", generate_name);
  } else if (target.owner.has_value()) {
    generate_name = absl::StrCat(target.owner->name, "-", generate_name);
  }
  if (generate_name.size() > kMaxGenerateNameLength) generate_name.resize(kMaxGenerateNameLength);
  json metadata = {{"generateName", generate_name}};
  if (json owner = OwnerReferenceJson(target); !owner.is_null()) {
    metadata["ownerReferences"] = json::array({std::move(owner)});
  }
  json spec = content;
  spec["driver"] = target.driver;
  spec["pool"] = {{"name", pool.name.empty() ? target.node_name : pool.name},
                  {"generation", generation},
                  {"resourceSliceCount", slice_count}};
  if (!target.node_name.empty()) {
    spec["nodeName"] = target.node_name;
  } else if (pool.all_nodes) {
    spec["allNodes"] = true;
  } else if (pool.node_selector.has_value()) {
    spec["nodeSelector"] = NodeSelectorJson(*pool.node_selector);
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
}

json SliceJson(const SliceTarget& target, int64_t generation, int64_t slice_count,
               const json& devices) {
  return PoolSliceJson(target, DraPool{.name = target.node_name}, generation, slice_count,
                       {{"devices", devices}});
}

}  // namespace kdp::internal
