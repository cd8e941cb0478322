// The API server's validation rules for names in resource.k8s.io objects, as
// pkg/apis/resource/validation/validation.go and apimachinery's ValidateObjectMeta apply them,
// appending field errors worded like the API server's. The codec (codec_decode.cc) calls these
// while decoding; the store's strategies call the object-meta rules.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_VALIDATION_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_VALIDATION_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// Limits from pkg/apis/resource/types.go.
inline constexpr int kDriverNameMaxLength = 63;
inline constexpr int kPoolNameMaxLength = 253;
inline constexpr int kDeviceMaxIdLength = 32;  // C identifier part of a qualified name
inline constexpr int kDeviceAttributeMaxValueLength = 64;
inline constexpr int kResourceSliceMaxDevices = 128;
inline constexpr int kResourceSliceMaxAttributesAndCapacitiesPerDevice = 32;
inline constexpr int kDeviceRequestsMaxSize = 32;
inline constexpr int kDeviceSelectorsMaxSize = 32;
inline constexpr int kDeviceConfigMaxSize = 32;
inline constexpr int kDeviceConstraintsMaxSize = 32;
inline constexpr int kFirstAvailableDeviceRequestMaxSize = 8;
inline constexpr int kAllocationResultsMaxSize = 32;
inline constexpr int kResourceClaimReservedForMaxSize = 256;
inline constexpr int kOpaqueParametersMaxLength = 10 * 1024;
inline constexpr int kCelSelectorExpressionMaxLength = 10 * 1024;  // bytes
// 1.35: partitionable devices, taints, consumable capacity.
inline constexpr int kResourceSliceMaxDevicesWithTaintsOrConsumesCounters = 64;
inline constexpr int kResourceSliceMaxCounterSets = 8;
inline constexpr int kResourceSliceMaxCountersPerCounterSet = 32;
inline constexpr int kResourceSliceMaxDeviceCounterConsumptionsPerDevice = 2;
inline constexpr int kResourceSliceMaxCountersPerDeviceCounterConsumption = 32;
inline constexpr int kDeviceTaintsMaxLength = 16;
inline constexpr int kDeviceTolerationsMaxLength = 16;
inline constexpr int kBindingConditionsMaxSize = 4;
inline constexpr int kCapacityRequestPolicyDiscreteMaxOptions = 10;

// IsDNS1123Subdomain / IsDNS1123Label errors as field.Invalid(path, value, msg).
void ValidateDnsSubdomain(std::string_view value, const std::string& path, FieldErrors* errs);
void ValidateDnsLabel(std::string_view value, const std::string& path, FieldErrors* errs);
// validateDriverName: required, at most 63 bytes, a DNS subdomain once lower-cased.
void ValidateDriverName(std::string_view value, const std::string& path, FieldErrors* errs);
// validatePoolName: required, at most 253 bytes, '/'-separated DNS subdomains.
void ValidatePoolName(std::string_view value, const std::string& path, FieldErrors* errs);
// validateQualifiedName: a C identifier, or "<driver-like domain>/<C identifier>".
void ValidateQualifiedName(std::string_view value, const std::string& path, FieldErrors* errs);
// validateFullyQualifiedName: a qualified name that has a domain ("must include a domain").
void ValidateFullyQualifiedName(std::string_view value, const std::string& path, FieldErrors* errs);
// validation.IsQualifiedName (a label key, "[prefix/]name") and IsValidLabelValue, as
// field.Invalid(path, value, msg): taint and toleration keys and values.
void ValidateLabelKey(std::string_view value, const std::string& path, FieldErrors* errs);
void ValidateLabelValue(std::string_view value, const std::string& path, FieldErrors* errs);
// A semantic version 2.0.0 string (semver.org's regular expression).
bool IsSemanticVersion(std::string_view value);

// ValidateObjectMeta for an object of `kind` (JSON `metadata` at path "metadata"): name required
// ("name or generateName is required") and a DNS subdomain; namespace required and a DNS label
// for namespaced kinds; label keys qualified names and values label values; annotation keys
// qualified names. Type errors are reported as Invalid.
void ValidateObjectMeta(const KindInfo& kind, const nlohmann::json& metadata, FieldErrors* errs);

// The kubelet's --node-labels value: "key=value[,key=value...]" (empty: none), keys qualified
// names, values label values (possibly empty). INVALID_ARGUMENT naming the term and the rule.
absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(std::string_view text);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_VALIDATION_H_
