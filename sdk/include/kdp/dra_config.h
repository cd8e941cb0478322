// Reading a DRA driver's opaque configuration (opaque.parameters of a DeviceClass or a
// ResourceClaim, kdp::OpaqueConfig) the way drivers with a small typed config do: check its
// apiVersion and kind, then read one string field, optionally from a set of allowed values, with
// error messages worded as the API server words field errors.
//
// Thread-safety: the functions are pure and thread-safe; ConfigField is a regular value type.
#ifndef KDP_DRA_CONFIG_H_
#define KDP_DRA_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kdp/dra_driver.h"

namespace kdp {

// One string field of a config kind.
struct ConfigField {
  std::string api_version = {};    // every config must have it, e.g. "gpu.example.com/v1alpha1"
  std::string kind = {};           // and this kind, e.g. "GpuConfig"
  std::string path = {};           // dot-separated object keys, e.g. "sharing.strategy"
  std::string default_value = {};  // for a config without the path's first key
  std::vector<std::string> allowed = {};  // empty: any string
};

// The field of one config's JSON text. INVALID_ARGUMENT: "<kind>: must be a JSON object";
// "unsupported config: apiVersion and kind must be <api_version> and <kind>";
// "<kind>: <path>: must be a string" (also for a key of the path, other than the first, that is
// missing, and for one that is not an object);
// "<kind>: <path>: Unsupported value: \"x\": supported values: \"a\", \"b\"".
[[nodiscard]] absl::StatusOr<std::string> ConfigString(std::string_view parameters_json,
                                                       const ConfigField& field);

// The field over a claim's configs (class configs first, then claim configs: the last one wins,
// default_value when there is none), an error prefixed "config from <source>: ".
[[nodiscard]] absl::StatusOr<std::string> ConfigString(const std::vector<OpaqueConfig>& configs,
                                                       const ConfigField& field);

}  // namespace kdp

#endif  // KDP_DRA_CONFIG_H_
