// Encoding half of codec.h: typed -> resource.k8s.io/v1 JSON, omitting what Go's omitempty omits.
#include <string>

#include "manager/src/controlplane/resourceapi/codec.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

Json Strings(const std::vector<std::string>& v) {
  Json out = Json::array();
  for (const std::string& s : v) out.push_back(s);
  return out;
}

Json Selectors(const std::vector<DeviceSelector>& selectors) {
  Json out = Json::array();
  for (const DeviceSelector& s : selectors)
    out.push_back({{"cel", {{"expression", s.cel_expression}}}});
  return out;
}

Json Opaque(const OpaqueDeviceConfiguration& o) {
  return {{"driver", o.driver},
          {"parameters", o.parameters.is_null() ? Json::object() : o.parameters}};
}

Json Attribute(const DeviceAttribute& a) {
  Json out = Json::object();
  if (a.int_value) out["int"] = *a.int_value;
  if (a.bool_value) out["bool"] = *a.bool_value;
  if (a.string_value) out["string"] = *a.string_value;
  if (a.version_value) out["version"] = *a.version_value;
  return out;
}

Json Tolerations(const std::vector<DeviceToleration>& tolerations) {
  Json out = Json::array();
  for (const DeviceToleration& t : tolerations) {
    Json tol = {{"operator", t.operator_}};
    if (!t.key.empty()) tol["key"] = t.key;
    if (!t.value.empty()) tol["value"] = t.value;
    if (!t.effect.empty()) tol["effect"] = t.effect;
    if (t.toleration_seconds) tol["tolerationSeconds"] = *t.toleration_seconds;
    out.push_back(std::move(tol));
  }
  return out;
}

Json Counters(const std::map<std::string, Counter>& counters) {
  Json out = Json::object();
  for (const auto& [name, c] : counters) out[name] = {{"value", c.value}};
  return out;
}

Json Exact(const ExactDeviceRequest& r, bool with_admin_access) {
  Json out = {{"deviceClassName", r.device_class_name}, {"allocationMode", r.allocation_mode}};
  if (!r.selectors.empty()) out["selectors"] = Selectors(r.selectors);
  if (r.allocation_mode == kAllocationModeExactCount) out["count"] = r.count;
  if (with_admin_access && r.admin_access) out["adminAccess"] = true;
  if (!r.tolerations.empty()) out["tolerations"] = Tolerations(r.tolerations);
  if (!r.capacity_requests.empty()) out["capacity"] = {{"requests", r.capacity_requests}};
  return out;
}

Json Capacity(const DeviceCapacity& c) {
  Json out = {{"value", c.value}};
  if (!c.request_policy) return out;
  const CapacityRequestPolicy& p = *c.request_policy;
  Json policy = Json::object();
  if (p.default_value) policy["default"] = *p.default_value;
  if (!p.valid_values.empty()) policy["validValues"] = Strings(p.valid_values);
  if (p.valid_range) {
    Json range = {{"min", p.valid_range->min}};
    if (p.valid_range->max) range["max"] = *p.valid_range->max;
    if (p.valid_range->step) range["step"] = *p.valid_range->step;
    policy["validRange"] = std::move(range);
  }
  out["requestPolicy"] = std::move(policy);
  return out;
}

Json SliceDevice(const Device& d) {
  Json device = {{"name", d.name}};
  if (!d.attributes.empty()) {
    Json attrs = Json::object();
    for (const auto& [name, a] : d.attributes) attrs[name] = Attribute(a);
    device["attributes"] = std::move(attrs);
  }
  if (!d.capacity.empty()) {
    Json caps = Json::object();
    for (const auto& [name, c] : d.capacity) caps[name] = Capacity(c);
    device["capacity"] = std::move(caps);
  }
  if (!d.consumes_counters.empty()) {
    Json consumes = Json::array();
    for (const DeviceCounterConsumption& c : d.consumes_counters) {
      consumes.push_back({{"counterSet", c.counter_set}, {"counters", Counters(c.counters)}});
    }
    device["consumesCounters"] = std::move(consumes);
  }
  if (d.node_name) device["nodeName"] = *d.node_name;
  if (d.node_selector) device["nodeSelector"] = *d.node_selector;
  if (d.all_nodes) device["allNodes"] = true;
  if (!d.taints.empty()) {
    Json taints = Json::array();
    for (const DeviceTaint& t : d.taints) {
      Json taint = {{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) taint["value"] = t.value;
      if (t.time_added) taint["timeAdded"] = *t.time_added;
      taints.push_back(std::move(taint));
    }
    device["taints"] = std::move(taints);
  }
  if (d.binds_to_node) device["bindsToNode"] = true;
  if (!d.binding_conditions.empty()) device["bindingConditions"] = Strings(d.binding_conditions);
  if (!d.binding_failure_conditions.empty())
    device["bindingFailureConditions"] = Strings(d.binding_failure_conditions);
  if (d.allow_multiple_allocations) device["allowMultipleAllocations"] = true;
  return device;
}

}  // namespace

nlohmann::json EncodeObjectMeta(const ObjectMeta& m) {
  Json out = Json::object();
  if (!m.name.empty()) out["name"] = m.name;
  if (!m.generate_name.empty()) out["generateName"] = m.generate_name;
  if (!m.namespace_.empty()) out["namespace"] = m.namespace_;
  if (!m.uid.empty()) out["uid"] = m.uid;
  if (!m.resource_version.empty()) out["resourceVersion"] = m.resource_version;
  if (m.generation != 0) out["generation"] = m.generation;
  if (!m.creation_timestamp.empty()) out["creationTimestamp"] = m.creation_timestamp;
  if (m.deletion_timestamp.has_value()) out["deletionTimestamp"] = *m.deletion_timestamp;
  if (!m.labels.empty()) out["labels"] = m.labels;
  if (!m.annotations.empty()) out["annotations"] = m.annotations;
  if (!m.owner_references.empty()) {
    Json refs = Json::array();
    for (const OwnerReference& r : m.owner_references) {
      Json ref = {
          {"apiVersion", r.api_version}, {"kind", r.kind}, {"name", r.name}, {"uid", r.uid}};
      if (r.controller) ref["controller"] = true;
      if (r.block_owner_deletion) ref["blockOwnerDeletion"] = true;
      refs.push_back(std::move(ref));
    }
    out["ownerReferences"] = std::move(refs);
  }
  if (!m.finalizers.empty()) out["finalizers"] = Strings(m.finalizers);
  return out;
}

nlohmann::json EncodeResourceSlice(const ResourceSlice& slice) {
  const ResourceSliceSpec& s = slice.spec;
  Json spec = {{"driver", s.driver},
               {"pool",
                {{"name", s.pool.name},
                 {"generation", s.pool.generation},
                 {"resourceSliceCount", s.pool.resource_slice_count}}}};
  if (!s.node_name.empty()) spec["nodeName"] = s.node_name;
  if (s.node_selector) spec["nodeSelector"] = *s.node_selector;
  if (s.all_nodes) spec["allNodes"] = true;
  if (s.per_device_node_selection) spec["perDeviceNodeSelection"] = true;
  if (!s.shared_counters.empty()) {
    Json sets = Json::array();
    for (const CounterSet& set : s.shared_counters) {
      sets.push_back({{"name", set.name}, {"counters", Counters(set.counters)}});
    }
    spec["sharedCounters"] = std::move(sets);
  } else {
    Json devices = Json::array();
    for (const Device& d : s.devices) devices.push_back(SliceDevice(d));
    spec["devices"] = std::move(devices);
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", EncodeObjectMeta(slice.metadata)},
          {"spec", std::move(spec)}};
}

nlohmann::json EncodeDeviceClass(const DeviceClass& device_class) {
  Json spec = Json::object();
  if (!device_class.spec.selectors.empty())
    spec["selectors"] = Selectors(device_class.spec.selectors);
  if (!device_class.spec.config.empty()) {
    Json config = Json::array();
    for (const OpaqueDeviceConfiguration& c : device_class.spec.config) {
      config.push_back({{"opaque", Opaque(c)}});
    }
    spec["config"] = std::move(config);
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", EncodeObjectMeta(device_class.metadata)},
          {"spec", std::move(spec)}};
}

nlohmann::json EncodeClaimSpec(const ResourceClaimSpec& spec) {
  Json devices = Json::object();
  const DeviceClaim& d = spec.devices;
  if (!d.requests.empty()) {
    Json requests = Json::array();
    for (const DeviceRequest& r : d.requests) {
      Json req = {{"name", r.name}};
      if (r.exactly) req["exactly"] = Exact(*r.exactly, /*with_admin_access=*/true);
      if (!r.first_available.empty()) {
        Json subs = Json::array();
        for (const DeviceSubRequest& sub : r.first_available) {
          Json s = Exact(sub.request, /*with_admin_access=*/false);
          s["name"] = sub.name;
          subs.push_back(std::move(s));
        }
        req["firstAvailable"] = std::move(subs);
      }
      requests.push_back(std::move(req));
    }
    devices["requests"] = std::move(requests);
  }
  if (!d.constraints.empty()) {
    Json constraints = Json::array();
    for (const DeviceConstraint& c : d.constraints) {
      Json con = Json::object();
      if (!c.match_attribute.empty()) con["matchAttribute"] = c.match_attribute;
      if (!c.distinct_attribute.empty()) con["distinctAttribute"] = c.distinct_attribute;
      if (!c.requests.empty()) con["requests"] = Strings(c.requests);
      constraints.push_back(std::move(con));
    }
    devices["constraints"] = std::move(constraints);
  }
  if (!d.config.empty()) {
    Json config = Json::array();
    for (const DeviceClaimConfiguration& c : d.config) {
      Json con = {{"opaque", Opaque(c.opaque)}};
      if (!c.requests.empty()) con["requests"] = Strings(c.requests);
      config.push_back(std::move(con));
    }
    devices["config"] = std::move(config);
  }
  return {{"devices", std::move(devices)}};
}

nlohmann::json EncodeClaimStatus(const ResourceClaimStatus& status) {
  Json out = Json::object();
  if (status.allocation) {
    const AllocationResult& a = *status.allocation;
    Json results = Json::array();
    for (const DeviceRequestAllocationResult& r : a.results) {
      Json result = {
          {"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}};
      if (r.admin_access) result["adminAccess"] = *r.admin_access;
      if (!r.tolerations.empty()) result["tolerations"] = Tolerations(r.tolerations);
      if (!r.binding_conditions.empty())
        result["bindingConditions"] = Strings(r.binding_conditions);
      if (!r.binding_failure_conditions.empty())
        result["bindingFailureConditions"] = Strings(r.binding_failure_conditions);
      if (r.share_id) result["shareID"] = *r.share_id;
      if (!r.consumed_capacity.empty()) result["consumedCapacity"] = r.consumed_capacity;
      results.push_back(std::move(result));
    }
    Json devices = {{"results", std::move(results)}};
    if (!a.config.empty()) {
      Json config = Json::array();
      for (const DeviceAllocationConfiguration& c : a.config) {
        Json con = {{"source", c.source}, {"opaque", Opaque(c.opaque)}};
        if (!c.requests.empty()) con["requests"] = Strings(c.requests);
        config.push_back(std::move(con));
      }
      devices["config"] = std::move(config);
    }
    Json allocation = {{"devices", std::move(devices)}};
    if (a.node_selector) allocation["nodeSelector"] = *a.node_selector;
    out["allocation"] = std::move(allocation);
  }
  if (!status.reserved_for.empty()) {
    Json reserved = Json::array();
    for (const ConsumerReference& c : status.reserved_for) {
      Json ref = {{"resource", c.resource}, {"name", c.name}, {"uid", c.uid}};
      if (!c.api_group.empty()) ref["apiGroup"] = c.api_group;
      reserved.push_back(std::move(ref));
    }
    out["reservedFor"] = std::move(reserved);
  }
  return out;
}

nlohmann::json EncodeResourceClaim(const ResourceClaim& claim) {
  Json out = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaim"},
              {"metadata", EncodeObjectMeta(claim.metadata)},
              {"spec", EncodeClaimSpec(claim.spec)}};
  Json status = EncodeClaimStatus(claim.status);
  if (!status.empty()) out["status"] = std::move(status);
  return out;
}

nlohmann::json EncodeResourceClaimTemplate(const ResourceClaimTemplate& claim_template) {
  Json spec = {{"spec", EncodeClaimSpec(claim_template.spec.spec)}};
  Json meta = EncodeObjectMeta(claim_template.spec.metadata);
  if (!meta.empty()) spec["metadata"] = std::move(meta);
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", EncodeObjectMeta(claim_template.metadata)},
          {"spec", std::move(spec)}};
}

}  // namespace kdp::manager::resourceapi
