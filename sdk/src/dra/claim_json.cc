#include "sdk/src/dra/claim_json.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kdp::internal {
namespace {

using nlohmann::json;

// The member `key` of `object` when present and not null; nullptr otherwise.
const json* Member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status Malformed(const std::string& claim, const std::string& path, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat("claim ", claim, ": field ", path, " must be ", want));
}

absl::StatusOr<std::string> StringField(const json& object, const char* key,
                                        const std::string& claim, const std::string& path) {
  const json* value = Member(object, key);
  if (value == nullptr) return std::string();
  if (!value->is_string()) return Malformed(claim, absl::StrCat(path, ".", key), "a string");
  return value->get<std::string>();
}

absl::StatusOr<std::vector<std::string>> StringList(const json& object, const char* key,
                                                    const std::string& claim,
                                                    const std::string& path) {
  std::vector<std::string> out;
  const json* value = Member(object, key);
  if (value == nullptr) return out;
  if (!value->is_array()) {
    return Malformed(claim, absl::StrCat(path, ".", key), "a list of strings");
  }
  for (const json& item : *value) {
    if (!item.is_string()) {
      return Malformed(claim, absl::StrCat(path, ".", key), "a list of strings");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

// An array member (empty when absent); INVALID_ARGUMENT when present and not an array.
absl::StatusOr<const json*> ArrayField(const json& object, const char* key,
                                       const std::string& claim, const std::string& path) {
  static const json kEmpty = json::array();
  const json* value = Member(object, key);
  if (value == nullptr) return &kEmpty;
  if (!value->is_array()) return Malformed(claim, absl::StrCat(path, ".", key), "a list");
  return value;
}

}  // namespace

std::string BaseRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

absl::StatusOr<Claim> DecodeClaim(const json& claim_json, const ClaimRef& requested,
                                  const std::string& driver) {
  const std::string name = absl::StrCat(requested.namespace_, "/", requested.name);
  if (!claim_json.is_object()) return Malformed(name, "<root>", "an object");

  // The same checks, order and texts as the Go helper's nodePrepareResources.
  const json* status = Member(claim_json, "status");
  const json* allocation = status == nullptr ? nullptr : Member(*status, "allocation");
  if (allocation == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("claim ", name, " not allocated"));
  }
  const json* metadata = Member(claim_json, "metadata");
  std::string uid;
  if (metadata != nullptr) {
    KDP_ASSIGN_OR_RETURN(uid, StringField(*metadata, "uid", name, "metadata"));
  }
  if (uid != requested.uid) {
    return absl::FailedPreconditionError(absl::StrCat("claim ", name, " got replaced"));
  }

  Claim claim;
  claim.ref = requested;
  const json* devices = Member(*allocation, "devices");
  if (devices == nullptr) return claim;  // Allocated, but nothing for any driver.
  const std::string base = "status.allocation.devices";

  KDP_ASSIGN_OR_RETURN(const json* results, ArrayField(*devices, "results", name, base));
  for (size_t i = 0; i < results->size(); ++i) {
    const json& result = (*results)[i];
    const std::string path = absl::StrCat(base, ".results[", i, "]");
    if (!result.is_object()) return Malformed(name, path, "an object");
    AllocatedDevice device;
    KDP_ASSIGN_OR_RETURN(device.driver, StringField(result, "driver", name, path));
    if (device.driver != driver) continue;
    KDP_ASSIGN_OR_RETURN(device.request, StringField(result, "request", name, path));
    KDP_ASSIGN_OR_RETURN(device.pool, StringField(result, "pool", name, path));
    KDP_ASSIGN_OR_RETURN(device.device, StringField(result, "device", name, path));
    KDP_ASSIGN_OR_RETURN(device.share_id, StringField(result, "shareID", name, path));
    if (const json* consumed = Member(result, "consumedCapacity"); consumed != nullptr) {
      if (!consumed->is_object()) {
        return Malformed(name, path + ".consumedCapacity", "a map of quantities");
      }
      for (const auto& [capacity, quantity] : consumed->items()) {
        // resource.Quantity marshals as a string; its decoder also takes a bare number.
        if (quantity.is_string()) {
          device.consumed_capacity[capacity] = quantity.get<std::string>();
        } else if (quantity.is_number()) {
          device.consumed_capacity[capacity] = quantity.dump();
        } else {
          return Malformed(name, absl::StrCat(path, ".consumedCapacity[\"", capacity, "\"]"),
                           "a quantity");
        }
      }
    }
    if (const json* admin = Member(result, "adminAccess"); admin != nullptr) {
      if (!admin->is_boolean()) return Malformed(name, path + ".adminAccess", "a boolean");
      device.admin_access = admin->get<bool>();
    }
    claim.results.push_back(std::move(device));
  }

  KDP_ASSIGN_OR_RETURN(const json* configs, ArrayField(*devices, "config", name, base));
  std::vector<OpaqueConfig> from_class;
  std::vector<OpaqueConfig> from_claim;
  for (size_t i = 0; i < configs->size(); ++i) {
    const json& config = (*configs)[i];
    const std::string path = absl::StrCat(base, ".config[", i, "]");
    if (!config.is_object()) return Malformed(name, path, "an object");
    const json* opaque = Member(config, "opaque");
    if (opaque == nullptr) continue;  // Not an opaque config: nothing this driver can use.
    KDP_ASSIGN_OR_RETURN(std::string config_driver,
                         StringField(*opaque, "driver", name, path + ".opaque"));
    if (config_driver != driver) continue;
    OpaqueConfig out;
    KDP_ASSIGN_OR_RETURN(out.source, StringField(config, "source", name, path));
    KDP_ASSIGN_OR_RETURN(out.requests, StringList(config, "requests", name, path));
    const json* parameters = Member(*opaque, "parameters");
    out.parameters_json = parameters == nullptr
                              ? "{}"
                              : parameters->dump(-1, ' ', false, json::error_handler_t::replace);
    if (out.source == "FromClass") {
      from_class.push_back(std::move(out));
    } else if (out.source == "FromClaim") {
      from_claim.push_back(std::move(out));
    } else {
      return Malformed(name, path + ".source", "\"FromClass\" or \"FromClaim\"");
    }
  }
  claim.configs = std::move(from_class);
  for (OpaqueConfig& config : from_claim) claim.configs.push_back(std::move(config));
  return claim;
}

}  // namespace kdp::internal
