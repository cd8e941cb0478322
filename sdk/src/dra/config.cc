#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kdp/dra_config.h"
#include "nlohmann/json.hpp"

namespace kdp {

absl::StatusOr<std::string> ConfigString(std::string_view parameters_json,
                                         const ConfigField& field) {
  const nlohmann::json config = nlohmann::json::parse(parameters_json, nullptr, false);
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(field.kind, ": must be a JSON object"));
  }
  if (config.value("apiVersion", "") != field.api_version ||
      config.value("kind", "") != field.kind) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported config: apiVersion and kind must be ", field.api_version, " and ",
                     field.kind));
  }
  const std::string prefix = absl::StrCat(field.kind, ": ", field.path, ": ");
  const nlohmann::json* value = &config;
  bool top = true;
  for (absl::string_view key : absl::StrSplit(field.path, '.')) {
    if (!value->is_object()) return absl::InvalidArgumentError(prefix + "must be a string");
    auto it = value->find(std::string(key));
    // Only a config without the path's first key takes the default: {"sharing": {}} is an error.
    if (it == value->end() && top) return field.default_value;
    if (it == value->end()) return absl::InvalidArgumentError(prefix + "must be a string");
    value = &*it;
    top = false;
  }
  if (!value->is_string()) return absl::InvalidArgumentError(prefix + "must be a string");
  std::string text = value->get<std::string>();
  if (!field.allowed.empty() &&
      std::find(field.allowed.begin(), field.allowed.end(), text) == field.allowed.end()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "Unsupported value: \"", text,
                                                   "\": supported values: \"",
                                                   absl::StrJoin(field.allowed, "\", \""), "\""));
  }
  return text;
}

absl::StatusOr<std::string> ConfigString(const std::vector<OpaqueConfig>& configs,
                                         const ConfigField& field) {
  std::string value = field.default_value;
  for (const OpaqueConfig& config : configs) {
    absl::StatusOr<std::string> parsed = ConfigString(config.parameters_json, field);
    if (!parsed.ok()) {
      return absl::Status(parsed.status().code(), absl::StrCat("config from ", config.source, ": ",
                                                               parsed.status().message()));
    }
    value = *std::move(parsed);
  }
  return value;
}

}  // namespace kdp
