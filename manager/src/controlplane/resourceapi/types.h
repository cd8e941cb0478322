// The resource.k8s.io objects kdp-manager stores and acts on, in the shape of resource.k8s.io/v1
// (Kubernetes 1.34+), which the local resource API uses as its internal version: v1beta1 bodies
// are converted to this shape on the way in and back on the way out (conversion.h). Only what the
// manager reads is typed; everything else an object carries is kept in the stored JSON, so a
// client gets back what it wrote.
//
// The structs mirror k8s.io/api/resource/v1 field by field (names in comments where the C++ name
// differs); optional API fields are std::optional where "unset" and "zero" differ.
//
// Thread-safety: plain value types; externally synchronized.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TYPES_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

inline constexpr char kGroup[] = "resource.k8s.io";
inline constexpr char kVersionV1[] = "v1";
inline constexpr char kVersionV1beta1[] = "v1beta1";

struct OwnerReference {
  std::string api_version;  // apiVersion
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;  // blockOwnerDeletion

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;  // generateName
  std::string namespace_;     // namespace; empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;  // resourceVersion, decimal
  int64_t generation = 0;
  std::string creation_timestamp;  // creationTimestamp, RFC 3339 UTC
  // deletionTimestamp: set while finalizers hold a deleted object back.
  std::optional<std::string> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;  // ownerReferences
  std::vector<std::string> finalizers;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// A device attribute: exactly one of the four is set (DeviceAttribute in the API).
struct DeviceAttribute {
  std::optional<int64_t> int_value;          // intValue
  std::optional<bool> bool_value;            // boolValue
  std::optional<std::string> string_value;   // stringValue
  std::optional<std::string> version_value;  // versionValue, semantic version 2.0.0

  friend bool operator==(const DeviceAttribute&, const DeviceAttribute&) = default;
};

// CapacityRequestPolicyRange: min, and optionally max and step (quantities as written).
struct CapacityRequestPolicyRange {
  std::string min;
  std::optional<std::string> max = {};
  std::optional<std::string> step = {};

  friend bool operator==(const CapacityRequestPolicyRange&,
                         const CapacityRequestPolicyRange&) = default;
};

// How much of a consumable capacity a request may take (KEP-5075): `default` when the request
// names none, then either a list of valid values or a range; a request is rounded up to the
// next valid value.
struct CapacityRequestPolicy {
  std::optional<std::string> default_value = {};               // default
  std::vector<std::string> valid_values = {};                  // validValues, ascending
  std::optional<CapacityRequestPolicyRange> valid_range = {};  // validRange

  friend bool operator==(const CapacityRequestPolicy&, const CapacityRequestPolicy&) = default;
};

struct DeviceCapacity {
  std::string value;  // a Kubernetes quantity, as written ("80Gi")
  std::optional<CapacityRequestPolicy> request_policy = {};  // requestPolicy

  friend bool operator==(const DeviceCapacity&, const DeviceCapacity&) = default;
};

// Counter and CounterSet (KEP-4815 partitionable devices): a pool's shared counters, which its
// devices consume when allocated.
struct Counter {
  std::string value;  // a quantity

  friend bool operator==(const Counter&, const Counter&) = default;
};

struct CounterSet {
  std::string name;
  std::map<std::string, Counter> counters;

  friend bool operator==(const CounterSet&, const CounterSet&) = default;
};

// DeviceCounterConsumption: what a device takes from one counter set of its pool.
struct DeviceCounterConsumption {
  std::string counter_set;  // counterSet
  std::map<std::string, Counter> counters;

  friend bool operator==(const DeviceCounterConsumption&,
                         const DeviceCounterConsumption&) = default;
};

inline constexpr char kTaintEffectNoSchedule[] = "NoSchedule";
inline constexpr char kTaintEffectNoExecute[] = "NoExecute";
inline constexpr char kTaintEffectNone[] = "None";

// DeviceTaint (KEP-5055).
struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;                          // NoSchedule, NoExecute or None
  std::optional<std::string> time_added = {};  // timeAdded, RFC 3339

  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

inline constexpr char kTolerationOpExists[] = "Exists";
inline constexpr char kTolerationOpEqual[] = "Equal";

// DeviceToleration. An empty operator means Equal, an empty effect every effect, an empty key
// with Exists every taint.
struct DeviceToleration {
  std::string key;
  std::string operator_ = kTolerationOpEqual;  // operator
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds = {};  // tolerationSeconds

  friend bool operator==(const DeviceToleration&, const DeviceToleration&) = default;
};

// Attribute and capacity maps are keyed by qualified name: "<domain>/<id>", or "<id>" alone,
// which means the driver's own domain.
struct Device {
  std::string name;
  std::map<std::string, DeviceAttribute> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  std::vector<DeviceCounterConsumption> consumes_counters = {};  // consumesCounters
  // Per-device node selection (only with the slice's perDeviceNodeSelection): one of the three.
  std::optional<std::string> node_name = {};         // nodeName
  std::optional<nlohmann::json> node_selector = {};  // nodeSelector, kept as written
  bool all_nodes = false;                            // allNodes
  std::vector<DeviceTaint> taints = {};
  bool binds_to_node = false;                                // bindsToNode
  std::vector<std::string> binding_conditions = {};          // bindingConditions
  std::vector<std::string> binding_failure_conditions = {};  // bindingFailureConditions
  bool allow_multiple_allocations = false;                   // allowMultipleAllocations

  friend bool operator==(const Device&, const Device&) = default;
};

struct ResourcePool {
  std::string name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;  // resourceSliceCount

  friend bool operator==(const ResourcePool&, const ResourcePool&) = default;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  // Exactly one of node_name, node_selector, all_nodes and per_device_node_selection is set.
  std::string node_name;                             // nodeName
  std::optional<nlohmann::json> node_selector = {};  // nodeSelector, kept as written
  bool all_nodes = false;                            // allNodes
  bool per_device_node_selection = false;            // perDeviceNodeSelection
  std::vector<Device> devices;
  // sharedCounters (1.35: a slice has either devices or shared counters).
  std::vector<CounterSet> shared_counters = {};

  friend bool operator==(const ResourceSliceSpec&, const ResourceSliceSpec&) = default;
};

struct ResourceSlice {
  ObjectMeta metadata;
  ResourceSliceSpec spec;

  friend bool operator==(const ResourceSlice&, const ResourceSlice&) = default;
};

struct DeviceSelector {
  std::string cel_expression;  // cel.expression

  friend bool operator==(const DeviceSelector&, const DeviceSelector&) = default;
};

// An opaque configuration for one driver (OpaqueDeviceConfiguration).
struct OpaqueDeviceConfiguration {
  std::string driver;
  nlohmann::json parameters;  // a Kubernetes object (apiVersion, kind, ...) as written

  friend bool operator==(const OpaqueDeviceConfiguration&,
                         const OpaqueDeviceConfiguration&) = default;
};

struct DeviceClassSpec {
  std::vector<DeviceSelector> selectors;
  std::vector<OpaqueDeviceConfiguration> config;  // config[].opaque

  friend bool operator==(const DeviceClassSpec&, const DeviceClassSpec&) = default;
};

struct DeviceClass {
  ObjectMeta metadata;
  DeviceClassSpec spec;

  friend bool operator==(const DeviceClass&, const DeviceClass&) = default;
};

inline constexpr char kAllocationModeExactCount[] = "ExactCount";
inline constexpr char kAllocationModeAll[] = "All";

// ExactDeviceRequest (v1 `exactly`), and the fields of a firstAvailable sub-request.
struct ExactDeviceRequest {
  std::string device_class_name;  // deviceClassName
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode = kAllocationModeExactCount;  // allocationMode
  int64_t count = 1;          // only for ExactCount; defaulted to 1 as the API server does
  bool admin_access = false;  // adminAccess
  std::vector<DeviceToleration> tolerations = {};
  // capacity.requests: the consumable capacity this request takes of each device.
  std::map<std::string, std::string> capacity_requests = {};

  friend bool operator==(const ExactDeviceRequest&, const ExactDeviceRequest&) = default;
};

struct DeviceSubRequest {
  std::string name;
  ExactDeviceRequest request;  // the sub-request's own deviceClassName, selectors, ...

  friend bool operator==(const DeviceSubRequest&, const DeviceSubRequest&) = default;
};

// One request of a claim: exactly one of `exactly` and `first_available` is set (v1beta1's flat
// request converts to `exactly`).
struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;  // firstAvailable

  friend bool operator==(const DeviceRequest&, const DeviceRequest&) = default;
};

// Exactly one of match_attribute and distinct_attribute is set.
struct DeviceConstraint {
  std::vector<std::string> requests;    // empty: all requests
  std::string match_attribute;          // matchAttribute, a qualified name
  std::string distinct_attribute = {};  // distinctAttribute (1.34+)

  friend bool operator==(const DeviceConstraint&, const DeviceConstraint&) = default;
};

struct DeviceClaimConfiguration {
  std::vector<std::string> requests;  // empty: all requests
  OpaqueDeviceConfiguration opaque;

  friend bool operator==(const DeviceClaimConfiguration&,
                         const DeviceClaimConfiguration&) = default;
};

struct DeviceClaim {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;

  friend bool operator==(const DeviceClaim&, const DeviceClaim&) = default;
};

struct ResourceClaimSpec {
  DeviceClaim devices;

  friend bool operator==(const ResourceClaimSpec&, const ResourceClaimSpec&) = default;
};

struct DeviceRequestAllocationResult {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;     // adminAccess
  std::optional<std::string> share_id;  // shareID (1.34+), a device allocated more than once
  std::vector<DeviceToleration> tolerations = {};             // the request's, when it had any
  std::vector<std::string> binding_conditions = {};           // bindingConditions, the device's
  std::vector<std::string> binding_failure_conditions = {};   // bindingFailureConditions
  std::map<std::string, std::string> consumed_capacity = {};  // consumedCapacity (shared devices)

  friend bool operator==(const DeviceRequestAllocationResult&,
                         const DeviceRequestAllocationResult&) = default;
};

inline constexpr char kConfigSourceFromClass[] = "FromClass";
inline constexpr char kConfigSourceFromClaim[] = "FromClaim";

struct DeviceAllocationConfiguration {
  std::string source;  // FromClass or FromClaim
  std::vector<std::string> requests;
  OpaqueDeviceConfiguration opaque;

  friend bool operator==(const DeviceAllocationConfiguration&,
                         const DeviceAllocationConfiguration&) = default;
};

struct AllocationResult {
  std::vector<DeviceRequestAllocationResult> results;  // devices.results
  std::vector<DeviceAllocationConfiguration> config;   // devices.config, class configs first
  std::optional<nlohmann::json> node_selector = {};    // nodeSelector (kdp: this node's name)

  friend bool operator==(const AllocationResult&, const AllocationResult&) = default;
};

// ResourceClaimConsumerReference.
struct ConsumerReference {
  std::string api_group;  // apiGroup; "" for pods
  std::string resource = "pods";
  std::string name;
  std::string uid;

  friend bool operator==(const ConsumerReference&, const ConsumerReference&) = default;
};

struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;
  std::vector<ConsumerReference> reserved_for;  // reservedFor

  friend bool operator==(const ResourceClaimStatus&, const ResourceClaimStatus&) = default;
};

struct ResourceClaim {
  ObjectMeta metadata;
  ResourceClaimSpec spec;
  ResourceClaimStatus status;

  friend bool operator==(const ResourceClaim&, const ResourceClaim&) = default;
};

struct ResourceClaimTemplateSpec {
  ObjectMeta metadata;  // labels and annotations copied to each generated claim
  ResourceClaimSpec spec;

  friend bool operator==(const ResourceClaimTemplateSpec&,
                         const ResourceClaimTemplateSpec&) = default;
};

struct ResourceClaimTemplate {
  ObjectMeta metadata;
  ResourceClaimTemplateSpec spec;

  friend bool operator==(const ResourceClaimTemplate&, const ResourceClaimTemplate&) = default;
};

// The annotation the resourceclaim controller puts on claims it generates from a template:
// the pod's claim name (pod.spec.resourceClaims[].name).
inline constexpr char kPodClaimNameAnnotation[] = "resource.kubernetes.io/pod-claim-name";

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_TYPES_H_
