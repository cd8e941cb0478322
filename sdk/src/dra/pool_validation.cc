#include "sdk/src/dra/pool_validation.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/absl_view.h"
#include "common/resource_name.h"
#include "sdk/src/dra/resource_slice.h"

namespace kdp::internal {
namespace {

absl::Status Invalid(const std::string& field, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

// field.TooMany's text.
std::string TooMany(size_t have, size_t most) {
  return absl::StrCat("Too many: ", have, ": must have at most ", most, " items");
}

std::string Quoted(const std::string& s) { return absl::StrCat("\"", s, "\""); }

// validateCounterName: counter and counter-set names are DNS labels.
absl::Status CheckDnsLabel(const std::string& field, const std::string& name) {
  if (name.empty()) return Invalid(field, "Required value");
  if (IsDns1123Label(name)) return absl::OkStatus();
  return Invalid(field, absl::StrCat("Invalid value: ", Quoted(name), ": ",
                                     absl::StrJoin(Dns1123LabelErrors(name), "; ")));
}

absl::Status CheckLabelName(const std::string& field, const std::string& name) {
  if (name.empty()) return Invalid(field, "Required value: name part must be non-empty");
  if (IsQualifiedName(name)) return absl::OkStatus();
  return Invalid(field, absl::StrCat("Invalid value: ", Quoted(name), ": ",
                                     absl::StrJoin(QualifiedNameErrors(name), "; ")));
}

absl::Status CheckQuantity(const std::string& field, const std::string& quantity) {
  if (IsQuantity(quantity)) return absl::OkStatus();
  return Invalid(field,
                 absl::StrCat(Quoted(quantity), " is not a quantity (e.g. \"80Gi\", \"4\")"));
}

// counters maps of CounterSet and CounterConsumption.
absl::Status CheckCounters(const std::string& field, const Quantities& counters) {
  if (counters.empty()) return Invalid(field, "Required value");
  if (counters.size() > kMaxCountersPerCounterSet) {
    return Invalid(field, TooMany(counters.size(), kMaxCountersPerCounterSet));
  }
  for (const auto& [name, value] : counters) {
    if (absl::Status s = CheckDnsLabel(absl::StrCat(field, "[", Quoted(name), "]"), name);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckQuantity(absl::StrCat(field, "[", Quoted(name), "].value"), value);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// corevalidation.ValidateNodeSelector plus the ResourceSlice rule of exactly one term.
absl::Status CheckNodeSelector(const std::string& field, const NodeSelector& selector) {
  if (selector.terms.size() != 1) {
    return Invalid(field + ".nodeSelectorTerms", "must have exactly one node selector term");
  }
  const NodeSelectorTerm& term = selector.terms[0];
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    const NodeSelectorRequirement& r = term.match_expressions[i];
    const std::string path = absl::StrCat(field, ".nodeSelectorTerms[0].matchExpressions[", i, "]");
    if (absl::Status s = CheckLabelName(path + ".key", r.key); !s.ok()) return s;
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) {
        return Invalid(path + ".values",
                       "Required value: must be specified when `operator` is 'In' or 'NotIn'");
      }
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) {
        return Invalid(path + ".values",
                       "Forbidden: may not be specified when `operator` is 'Exists' or "
                       "'DoesNotExist'");
      }
    } else if (r.op == "Gt" || r.op == "Lt") {
      int64_t unused = 0;
      if (r.values.size() != 1 || !absl::SimpleAtoi(r.values[0], &unused)) {
        return Invalid(path + ".values",
                       "Required value: must be specified single value when `operator` is 'Lt' "
                       "or 'Gt'");
      }
    } else {
      return Invalid(path + ".operator", absl::StrCat("Invalid value: ", Quoted(r.op),
                                                      ": not a valid selector operator"));
    }
    for (const std::string& value : r.values) {
      if (!IsLabelValue(value)) {
        return Invalid(path + ".values", absl::StrCat("Invalid value: ", Quoted(value),
                                                      ": must be a valid label value"));
      }
    }
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    const NodeSelectorRequirement& r = term.match_fields[i];
    const std::string path = absl::StrCat(field, ".nodeSelectorTerms[0].matchFields[", i, "]");
    if (r.key != "metadata.name") {
      return Invalid(path + ".key", absl::StrCat("Invalid value: ", Quoted(r.key),
                                                 ": not a valid field selector key"));
    }
    if ((r.op != "In" && r.op != "NotIn") || r.values.size() != 1) {
      return Invalid(path, "must be exactly one value with operator In or NotIn");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRequestPolicy(const std::string& field, const std::string& capacity,
                                const CapacityRequestPolicy& policy) {
  if (!policy.valid_values.empty() && policy.valid_range.has_value()) {
    return Invalid(field,
                   "Forbidden: exactly one policy can be specified, cannot specify "
                   "\"validValues\" and \"validRange\" at the same time");
  }
  if (!policy.default_value.empty()) {
    if (absl::Status s = CheckQuantity(field + ".default", policy.default_value); !s.ok()) return s;
  }
  const std::optional<int64_t> max = QuantityMilli(capacity);
  auto milli = [](const std::string& q) { return QuantityMilli(q); };
  if (!policy.valid_values.empty()) {
    if (policy.default_value.empty()) {
      return Invalid(field + ".default", "Required value: required when validValues is defined");
    }
    if (policy.valid_values.size() > kMaxValidValues) {
      return Invalid(field + ".validValues", TooMany(policy.valid_values.size(), kMaxValidValues));
    }
    std::set<int64_t> seen;
    bool found_default = false;
    for (size_t i = 0; i < policy.valid_values.size(); ++i) {
      const std::string path = absl::StrCat(field, ".validValues[", i, "]");
      const std::string& value = policy.valid_values[i];
      if (absl::Status s = CheckQuantity(path, value); !s.ok()) return s;
      std::optional<int64_t> v = milli(value);
      if (!v.has_value()) continue;
      if (i > 0) {
        std::optional<int64_t> previous = milli(policy.valid_values[i - 1]);
        if (previous.has_value() && *previous > *v) {
          return Invalid(path, absl::StrCat("Invalid value: ", Quoted(value),
                                            ": values must be sorted in ascending order"));
        }
      }
      if (!seen.insert(*v).second) {
        return Invalid(path, absl::StrCat("Duplicate value: ", Quoted(value)));
      }
      if (max.has_value() && *v > *max) {
        return Invalid(path, absl::StrCat("Invalid value: ", Quoted(value),
                                          ": option is larger than capacity value: ", capacity));
      }
      if (v == milli(policy.default_value)) found_default = true;
    }
    if (!found_default) {
      return Invalid(field + ".validValues",
                     absl::StrCat("Invalid value: ", Quoted(policy.default_value),
                                  ": default value is not valid according to the requestPolicy"));
    }
  }
  if (policy.valid_range.has_value()) {
    const CapacityRange& range = *policy.valid_range;
    const std::string path = field + ".validRange";
    if (policy.default_value.empty()) {
      return Invalid(field + ".default", "Required value: required when validRange is defined");
    }
    if (range.min.empty()) {
      return Invalid(path + ".min", "Required value: required when validRange is defined");
    }
    for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"min", range.min},
                                      {"max", range.max},
                                      {"step", range.step}}) {
      if (value.empty()) continue;
      if (absl::Status s = CheckQuantity(absl::StrCat(path, ".", name), value); !s.ok()) return s;
    }
    const std::optional<int64_t> def = milli(policy.default_value), min = milli(range.min);
    if (!def.has_value() || !min.has_value() || !max.has_value()) return absl::OkStatus();
    auto bad = [&](const char* part, const std::string& value, const std::string& rule) {
      return Invalid(absl::StrCat(path, ".", part),
                     absl::StrCat("Invalid value: ", Quoted(value), ": ", rule));
    };
    if (*min > *max) {
      return bad("min", range.min, absl::StrCat("min is larger than capacity value: ", capacity));
    }
    if (*def < *min) {
      return Invalid(path + ".default",
                     absl::StrCat("Invalid value: ", Quoted(policy.default_value),
                                  ": default is less than min: ", range.min));
    }
    std::optional<int64_t> range_max = range.max.empty() ? std::nullopt : milli(range.max);
    if (range_max.has_value()) {
      if (*min > *range_max) {
        return bad("max", range.min, absl::StrCat("min is larger than max: ", range.max));
      }
      if (*range_max > *max) {
        return bad("max", range.max, absl::StrCat("max is larger than capacity value: ", capacity));
      }
      if (*def > *range_max) {
        return Invalid(path + ".default",
                       absl::StrCat("Invalid value: ", Quoted(policy.default_value),
                                    ": default is more than max: ", range.max));
      }
    }
    if (!range.step.empty()) {
      std::optional<int64_t> step = milli(range.step);
      if (!step.has_value()) return absl::OkStatus();
      if (*step <= 0) return bad("step", range.step, "must be greater than zero");
      if (*min + *step > *max) {
        return bad("step", range.step,
                   absl::StrCat("one step is larger than capacity value: ", capacity));
      }
      for (const std::optional<int64_t>& value : {def, range_max}) {
        if (value.has_value() && (*value - *min) % *step != 0) {
          return bad("step", value == def ? policy.default_value : range.max,
                     absl::StrCat("value is not a multiple of a given step (", range.step,
                                  ") from (", range.min, ")"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTaint(const std::string& field, const DeviceTaint& taint) {
  if (absl::Status s = CheckLabelName(field + ".key", taint.key); !s.ok()) return s;
  if (!taint.value.empty() && !IsLabelValue(taint.value)) {
    return Invalid(field + ".value",
                   absl::StrCat("Invalid value: ", Quoted(taint.value),
                                ": a valid label must be an empty string or consist of "
                                "alphanumeric characters, '-', '_' or '.', and must start and end "
                                "with an alphanumeric character"));
  }
  if (taint.effect != TaintEffect::kNoSchedule && taint.effect != TaintEffect::kNoExecute &&
      taint.effect != TaintEffect::kNone) {
    return Invalid(field + ".effect",
                   "Unsupported value: supported values: \"NoExecute\", \"NoSchedule\", \"None\"");
  }
  if (!taint.time_added.empty()) {
    absl::Time unused;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, taint.time_added, &unused, &err)) {
      return Invalid(field + ".timeAdded", absl::StrCat("Invalid value: ", Quoted(taint.time_added),
                                                        ": must be an RFC 3339 time"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckConditions(const char* field, const std::vector<std::string>& conditions) {
  if (conditions.size() > kMaxBindingConditions) {
    return Invalid(field, TooMany(conditions.size(), kMaxBindingConditions));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < conditions.size(); ++i) {
    const std::string path = absl::StrCat(field, "[", i, "]");
    if (absl::Status s = CheckLabelName(path, conditions[i]); !s.ok()) return s;
    if (!seen.insert(conditions[i]).second) {
      return Invalid(path, absl::StrCat("Duplicate value: ", Quoted(conditions[i])));
    }
  }
  return absl::OkStatus();
}

absl::Status PoolError(const std::string& pool, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat("pool \"", pool, "\": ", status.message()));
}

// validatePoolName: ≤ 253 characters of DNS subdomains separated by '/'.
absl::Status CheckPoolName(const std::string& name) {
  if (name.size() > kMaxPoolNameLength) {
    return Invalid("pool.name", "Too long: may not be more than 253 bytes");
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (!IsDns1123Subdomain(std::string_view(part.data(), part.size()))) {
      return Invalid("pool.name", absl::StrCat("Invalid value: ", Quoted(name),
                                               ": must be DNS subdomains separated by '/'"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNodeSelection(const DraPool& pool, PoolScope scope) {
  const int set = (pool.all_nodes ? 1 : 0) + (pool.node_selector.has_value() ? 1 : 0) +
                  (pool.per_device_node_selection ? 1 : 0);
  if (scope == PoolScope::kNodeLocal) {
    if (set != 0) {
      return Invalid("spec",
                     "a node plugin's pool gets the node's `nodeName`: `nodeSelector`, "
                     "`allNodes` and `perDeviceNodeSelection` must be unset");
    }
    return absl::OkStatus();
  }
  if (set == 0) {
    return Invalid("spec",
                   "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required");
  }
  if (set > 1) {
    return Invalid("spec",
                   "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required, but multiple fields are set");
  }
  if (pool.node_selector.has_value()) return CheckNodeSelector("nodeSelector", *pool.node_selector);
  return absl::OkStatus();
}

}  // namespace

bool IsLabelValue(std::string_view value) {
  if (value.empty()) return true;
  if (value.size() > 63) return false;
  auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  if (!alnum(value.front()) || !alnum(value.back())) return false;
  for (char c : value) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::optional<int64_t> QuantityMilli(std::string_view text) {
  if (!IsQuantity(text)) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
  // The digits as one integer, and how many of them follow the point.
  int64_t digits = 0;
  int fraction = 0;
  bool point = false;
  for (; i < text.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.');
       ++i) {
    if (text[i] == '.') {
      point = true;
      continue;
    }
    if (__builtin_mul_overflow(digits, 10, &digits) ||
        __builtin_add_overflow(digits, text[i] - '0', &digits)) {
      return std::nullopt;
    }
    if (point) ++fraction;
  }
  const std::string_view suffix = text.substr(i);
  static const std::map<std::string_view, int> kBinary = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                          {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  static const std::map<std::string_view, int> kDecimal = {
      {"", 0}, {"m", -3}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18}};
  // value * 1000 = digits * 2^(10 * binary) * 10^(exponent + 3 - fraction).
  int binary = 0;
  int exponent = 0;
  if (auto b = kBinary.find(suffix); b != kBinary.end()) {
    binary = b->second;
  } else if (auto d = kDecimal.find(suffix); d != kDecimal.end()) {
    exponent = d->second;
  } else if (!absl::SimpleAtoi(Sv(suffix.substr(1)), &exponent) || exponent > 40 ||
             exponent < -40) {
    return std::nullopt;
  }
  int64_t value = digits;
  for (int k = 0; k < binary; ++k) {
    if (__builtin_mul_overflow(value, int64_t{1024}, &value)) return std::nullopt;
  }
  for (int k = exponent + 3 - fraction; k > 0; --k) {
    if (__builtin_mul_overflow(value, int64_t{10}, &value)) return std::nullopt;
  }
  for (int k = exponent + 3 - fraction; k < 0; ++k) {
    if (value % 10 != 0) return std::nullopt;  // finer than 1m
    value /= 10;
  }
  return negative ? -value : value;
}

absl::Status ValidateDeviceModel(const DraDevice& device, bool per_device_node_selection) {
  for (const auto& [name, policy] : device.request_policies) {
    const std::string field = absl::StrCat("capacity[", Quoted(name), "].requestPolicy");
    auto capacity = device.capacity.find(name);
    if (capacity == device.capacity.end()) {
      return Invalid(field, "Not found: the device has no capacity of this name");
    }
    if (!device.allow_multiple_allocations) {
      return Invalid(field, "Forbidden: allowMultipleAllocations must be true");
    }
    if (absl::Status s = CheckRequestPolicy(field, capacity->second, policy); !s.ok()) return s;
  }
  if (device.consumes_counters.size() > kMaxCounterConsumptionsPerDevice) {
    return Invalid("consumesCounters",
                   TooMany(device.consumes_counters.size(), kMaxCounterConsumptionsPerDevice));
  }
  std::set<std::string> sets;
  for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
    const CounterConsumption& consumption = device.consumes_counters[i];
    const std::string path = absl::StrCat("consumesCounters[", i, "]");
    if (absl::Status s = CheckDnsLabel(path + ".counterSet", consumption.counter_set); !s.ok()) {
      return s;
    }
    if (!sets.insert(consumption.counter_set).second) {
      return Invalid(path, absl::StrCat("Duplicate value: ", Quoted(consumption.counter_set)));
    }
    if (absl::Status s = CheckCounters(path + ".counters", consumption.counters); !s.ok()) {
      return s;
    }
  }
  if (device.taints.size() > kMaxTaintsPerDevice) {
    return Invalid("taints", TooMany(device.taints.size(), kMaxTaintsPerDevice));
  }
  for (size_t i = 0; i < device.taints.size(); ++i) {
    if (absl::Status s = CheckTaint(absl::StrCat("taints[", i, "]"), device.taints[i]); !s.ok()) {
      return s;
    }
  }
  const auto& conditions = device.binding_conditions;
  const auto& failures = device.binding_failure_conditions;
  if (absl::Status s = CheckConditions("bindingConditions", conditions); !s.ok()) return s;
  if (absl::Status s = CheckConditions("bindingFailureConditions", failures); !s.ok()) return s;
  for (size_t i = 0; i < failures.size(); ++i) {
    if (std::find(conditions.begin(), conditions.end(), failures[i]) != conditions.end()) {
      return Invalid(absl::StrCat("bindingFailureConditions[", i, "]"),
                     absl::StrCat("Invalid value: ", Quoted(failures[i]),
                                  ": bindingFailureConditions must not overlap with "
                                  "bindingConditions"));
    }
  }
  if (conditions.empty() && !failures.empty()) {
    return Invalid("bindingConditions",
                   "Invalid value: bindingConditions are required to use bindingFailureConditions");
  }
  if (failures.empty() && !conditions.empty()) {
    return Invalid("bindingFailureConditions",
                   "Invalid value: bindingFailureConditions are required to use bindingConditions");
  }
  const int set = (device.node_name.empty() ? 0 : 1) + (device.node_selector.has_value() ? 1 : 0) +
                  (device.all_nodes ? 1 : 0);
  if (per_device_node_selection) {
    if (set != 1) {
      return Invalid("spec",
                     "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                     "when `perDeviceNodeSelection` is set to true in the ResourceSlice "
                     "spec");
    }
    if (!device.node_name.empty() && !IsDns1123Subdomain(device.node_name)) {
      return Invalid("nodeName", absl::StrCat("Invalid value: ", Quoted(device.node_name),
                                              ": must be a DNS subdomain"));
    }
    if (device.node_selector.has_value()) {
      return CheckNodeSelector("nodeSelector", *device.node_selector);
    }
  } else if (set != 0) {
    return Invalid("spec",
                   "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                   "`perDeviceNodeSelection` is set to true in the ResourceSlice spec");
  }
  return absl::OkStatus();
}

absl::Status ValidateDraPools(const std::vector<DraPool>& pools, PoolScope scope) {
  std::set<std::string> names;
  for (const DraPool& pool : pools) {
    if (pool.name.empty() && scope == PoolScope::kCluster) {
      return absl::InvalidArgumentError("pool \"\": pool.name: Required value");
    }
    if (!pool.name.empty()) {
      if (absl::Status s = CheckPoolName(pool.name); !s.ok()) return PoolError(pool.name, s);
    }
    if (!names.insert(pool.name).second) {
      return PoolError(pool.name, absl::InvalidArgumentError(
                                      "pool.name: Duplicate value: a pool of this name is "
                                      "published twice"));
    }
    if (absl::Status s = CheckNodeSelection(pool, scope); !s.ok()) return PoolError(pool.name, s);
    std::map<std::string, const CounterSet*> sets;
    for (size_t i = 0; i < pool.shared_counters.size(); ++i) {
      const CounterSet& set = pool.shared_counters[i];
      const std::string path = absl::StrCat("sharedCounters[", i, "]");
      if (absl::Status s = CheckDnsLabel(path + ".name", set.name); !s.ok()) {
        return PoolError(pool.name, s);
      }
      if (!sets.emplace(set.name, &set).second) {
        return PoolError(pool.name, Invalid(path + ".name",
                                            absl::StrCat("Duplicate value: ", Quoted(set.name))));
      }
      if (absl::Status s = CheckCounters(path + ".counters", set.counters); !s.ok()) {
        return PoolError(pool.name, s);
      }
    }
    // Each device on its own first (names, attributes, capacities; then the new fields).
    if (absl::Status s = ValidateDraDevicesIn(pool.devices, pool.per_device_node_selection);
        !s.ok()) {
      return PoolError(pool.name, s);
    }
    for (const DraDevice& device : pool.devices) {
      for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
        const CounterConsumption& consumption = device.consumes_counters[i];
        const std::string path =
            absl::StrCat("device \"", device.name, "\": consumesCounters[", i, "].counterSet");
        auto set = sets.find(consumption.counter_set);
        if (set == sets.end()) {
          return PoolError(pool.name,
                           Invalid(path, absl::StrCat(Quoted(consumption.counter_set),
                                                      " is not a counter set of this pool: a "
                                                      "device may only consume counter sets of "
                                                      "its own pool")));
        }
        for (const auto& [counter, amount] : consumption.counters) {
          if (!set->second->counters.contains(counter)) {
            return PoolError(
                pool.name,
                Invalid(path, absl::StrCat("counter ", Quoted(counter), " is not in counter set ",
                                           Quoted(consumption.counter_set))));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace kdp::internal
