#include "manager/src/pod/pod_json.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

constexpr std::pair<std::string_view, ContainerKind> kKinds[] = {
    {"init", ContainerKind::kInit},
    {"sidecar", ContainerKind::kSidecar},
    {"app", ContainerKind::kApp}};

std::string KindName(ContainerKind kind) {
  for (const auto& [name, value] : kKinds) {
    if (value == kind) return std::string(name);
  }
  return "";  // An out-of-range enum value; PodFromJson rejects it.
}

// Length of the valid UTF-8 sequence at s[i], or 0 where Go's utf8.DecodeRuneInString would
// return RuneError (bad or truncated sequence, overlong form, surrogate, above U+10FFFF).
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  const size_t n = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (n == 0 || lead > 0xf4 || i + n > s.size()) return 0;
  uint32_t value = lead & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMin[n] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  return n;
}

// `s` with each byte that starts no valid UTF-8 sequence replaced by U+FFFD, as Go's
// encoding/json writes strings, so that dump() cannot throw type_error.316.
std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t length = Utf8Length(s, i);
    out.append(length == 0 ? std::string_view("\xef\xbf\xbd") : s.substr(i, length));
    i += length == 0 ? 1 : length;
  }
  return out;
}

Json ContainersToJson(const std::vector<Container>& containers) {
  Json list = Json::array();
  for (const Container& container : containers) {
    Json extended = Json::object();
    for (const auto& [key, count] : container.extended_resources) extended[ValidUtf8(key)] = count;
    Json other = Json::object();
    for (const auto& [key, limit] : container.other_limits) {
      other[ValidUtf8(key)] = ValidUtf8(limit);
    }
    Json entry = Json::object({{"name", ValidUtf8(container.name)},
                               {"kind", KindName(container.kind)},
                               {"extendedResources", std::move(extended)},
                               {"otherLimits", std::move(other)}});
    // Only when present, so that pods written before DRA read the same.
    if (!container.claims.empty()) {
      Json claims = Json::array();
      for (const ContainerClaim& claim : container.claims) {
        claims.push_back({{"name", ValidUtf8(claim.name)}, {"request", ValidUtf8(claim.request)}});
      }
      entry["claims"] = std::move(claims);
    }
    list.push_back(std::move(entry));
  }
  return list;
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", std::string(key));
}

// Reads one pod; every error names `source` and the JSON path of the bad value.
class Decoder {
 public:
  explicit Decoder(std::string_view source) : source_(source) {}

  absl::StatusOr<Pod> ReadPod(const Json& json, const std::string& path) {
    if (!json.is_object()) return Error(path, "must be an object");
    Pod pod;
    KDP_ASSIGN_OR_RETURN(pod.namespace_, NonEmptyString(json, path, "namespace"));
    KDP_ASSIGN_OR_RETURN(pod.name, NonEmptyString(json, path, "name"));
    KDP_ASSIGN_OR_RETURN(pod.uid, NonEmptyString(json, path, "uid"));
    KDP_ASSIGN_OR_RETURN(pod.init_containers, ReadContainers(json, path, "initContainers"));
    KDP_ASSIGN_OR_RETURN(pod.containers, ReadContainers(json, path, "containers"));
    if (json.contains("resourceClaims")) {
      KDP_ASSIGN_OR_RETURN(const Json* claims,
                           Field(json, path, "resourceClaims", &Json::is_array, "an array"));
      for (std::size_t i = 0; i < claims->size(); ++i) {
        const std::string item = absl::StrCat(Join(path, "resourceClaims"), "[", i, "]");
        const Json& claim = (*claims)[i];
        if (!claim.is_object()) return Error(item, "must be an object");
        PodResourceClaim out;
        KDP_ASSIGN_OR_RETURN(out.name, NonEmptyString(claim, item, "name"));
        KDP_ASSIGN_OR_RETURN(out.resource_claim_name, String(claim, item, "resourceClaimName"));
        KDP_ASSIGN_OR_RETURN(out.resource_claim_template_name,
                             String(claim, item, "resourceClaimTemplateName"));
        pod.resource_claims.push_back(std::move(out));
      }
    }
    if (json.contains("resourceClaimStatuses")) {
      KDP_ASSIGN_OR_RETURN(const Json* statuses, Field(json, path, "resourceClaimStatuses",
                                                       &Json::is_object, "an object"));
      for (const auto& [name, value] : statuses->items()) {
        if (!value.is_string()) {
          return Error(absl::StrCat(Join(path, "resourceClaimStatuses"), "[", name, "]"),
                       "must be a string");
        }
        pod.resource_claim_statuses.emplace(name, value.get<std::string>());
      }
    }
    if (json.contains("terminating")) {
      KDP_ASSIGN_OR_RETURN(const Json* terminating,
                           Field(json, path, "terminating", &Json::is_boolean, "a boolean"));
      pod.terminating = terminating->get<bool>();
    }
    if (json.contains("apiObject")) {
      KDP_ASSIGN_OR_RETURN(pod.api_object, String(json, path, "apiObject"));
      if (!Json::parse(pod.api_object, nullptr, /*allow_exceptions=*/false).is_object()) {
        return Error(Join(path, "apiObject"), "must be a JSON object");
      }
    }
    return pod;
  }

 private:
  absl::Status Error(const std::string& path, std::string_view rule) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", path, path.empty() ? "" : ": ", std::string(rule)));
  }

  // object[key], which must exist and have the type `is` tests for (`type`, for the message).
  absl::StatusOr<const Json*> Field(const Json& object, const std::string& path,
                                    std::string_view key, bool (Json::*is)() const noexcept,
                                    std::string_view type) const {
    const auto it = object.find(key);
    if (it == object.end()) return Error(Join(path, key), "Required value");
    if (!((*it).*is)()) return Error(Join(path, key), absl::StrCat("must be ", std::string(type)));
    return &*it;
  }

  absl::StatusOr<std::string> NonEmptyString(const Json& object, const std::string& path,
                                             std::string_view key) const {
    KDP_ASSIGN_OR_RETURN(const Json* value, Field(object, path, key, &Json::is_string, "a string"));
    if (value->get_ref<const std::string&>().empty()) {
      return Error(Join(path, key), "must be non-empty");
    }
    return value->get<std::string>();
  }

  // object[key] when it is a string; absent is "".
  absl::StatusOr<std::string> String(const Json& object, const std::string& path,
                                     std::string_view key) const {
    if (!object.contains(key)) return std::string();
    KDP_ASSIGN_OR_RETURN(const Json* value, Field(object, path, key, &Json::is_string, "a string"));
    return value->get<std::string>();
  }

  absl::StatusOr<std::vector<Container>> ReadContainers(const Json& pod, const std::string& path,
                                                        std::string_view key) {
    const bool init = key == "initContainers";
    KDP_ASSIGN_OR_RETURN(const Json* list, Field(pod, path, key, &Json::is_array, "an array"));
    if (!init && list->empty()) return Error(Join(path, key), "must be non-empty");
    std::vector<Container> containers;
    for (size_t i = 0; i < list->size(); ++i) {
      KDP_ASSIGN_OR_RETURN(
          Container container,
          ReadContainer((*list)[i], absl::StrCat(Join(path, key), "[", i, "]"), init));
      containers.push_back(std::move(container));
    }
    return containers;
  }

  absl::StatusOr<Container> ReadContainer(const Json& json, const std::string& path, bool init) {
    if (!json.is_object()) return Error(path, "must be an object");
    Container container;
    KDP_ASSIGN_OR_RETURN(container.name, NonEmptyString(json, path, "name"));
    const auto [first, inserted] = name_paths_.emplace(container.name, Join(path, "name"));
    if (!inserted) {
      const std::string quoted =
          Json(container.name).dump(-1, ' ', false, Json::error_handler_t::replace);
      return Error(Join(path, "name"),
                   absl::StrCat("must be unique in the pod: ", quoted, " is also ", first->second));
    }
    KDP_ASSIGN_OR_RETURN(const Json* kind, Field(json, path, "kind", &Json::is_string, "a string"));
    const auto* it = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& entry) {
      return entry.first == kind->get_ref<const std::string&>();
    });
    if (it == std::end(kKinds)) {
      return Error(Join(path, "kind"), R"(must be one of "init", "sidecar", "app")");
    }
    container.kind = it->second;
    if (init == (container.kind == ContainerKind::kApp)) {
      return Error(Join(path, "kind"), init ? R"(must be "init" or "sidecar" in initContainers)"
                                            : R"(must be "app" in containers)");
    }
    KDP_ASSIGN_OR_RETURN(const Json* extended,
                         Field(json, path, "extendedResources", &Json::is_object, "an object"));
    for (const auto& [name, value] : extended->items()) {
      // A device count is an integer in [0, INT64_MAX]; parse() gives non-negative ones unsigned.
      if (value.is_number_unsigned() ? value.get<uint64_t>() > uint64_t{INT64_MAX}
                                     : !value.is_number_integer() || value.get<int64_t>() < 0) {
        return Error(absl::StrCat(Join(path, "extendedResources"), "[", name, "]"),
                     "must be a non-negative integer");
      }
      container.extended_resources.emplace(name, value.get<int64_t>());
    }
    KDP_ASSIGN_OR_RETURN(const Json* other,
                         Field(json, path, "otherLimits", &Json::is_object, "an object"));
    for (const auto& [name, value] : other->items()) {
      if (!value.is_string()) {
        return Error(absl::StrCat(Join(path, "otherLimits"), "[", name, "]"), "must be a string");
      }
      container.other_limits.emplace(name, value.get<std::string>());
    }
    if (json.contains("claims")) {
      KDP_ASSIGN_OR_RETURN(const Json* claims,
                           Field(json, path, "claims", &Json::is_array, "an array"));
      for (std::size_t i = 0; i < claims->size(); ++i) {
        const std::string item = absl::StrCat(Join(path, "claims"), "[", i, "]");
        if (!(*claims)[i].is_object()) return Error(item, "must be an object");
        ContainerClaim claim;
        KDP_ASSIGN_OR_RETURN(claim.name, NonEmptyString((*claims)[i], item, "name"));
        KDP_ASSIGN_OR_RETURN(claim.request, String((*claims)[i], item, "request"));
        container.claims.push_back(std::move(claim));
      }
    }
    return container;
  }

  const std::string source_;
  std::map<std::string, std::string> name_paths_;  // container name -> path where first seen
};

}  // namespace

nlohmann::json PodToJson(const Pod& pod) {
  Json json = Json::object({{"namespace", ValidUtf8(pod.namespace_)},
                            {"name", ValidUtf8(pod.name)},
                            {"uid", ValidUtf8(pod.uid)},
                            {"initContainers", ContainersToJson(pod.init_containers)},
                            {"containers", ContainersToJson(pod.containers)}});
  // DRA fields only when used, so that the records of pods without claims are unchanged.
  if (!pod.resource_claims.empty()) {
    Json claims = Json::array();
    for (const PodResourceClaim& claim : pod.resource_claims) {
      claims.push_back(
          {{"name", ValidUtf8(claim.name)},
           {"resourceClaimName", ValidUtf8(claim.resource_claim_name)},
           {"resourceClaimTemplateName", ValidUtf8(claim.resource_claim_template_name)}});
    }
    json["resourceClaims"] = std::move(claims);
  }
  if (!pod.resource_claim_statuses.empty()) {
    Json statuses = Json::object();
    for (const auto& [name, claim] : pod.resource_claim_statuses) {
      statuses[ValidUtf8(name)] = ValidUtf8(claim);
    }
    json["resourceClaimStatuses"] = std::move(statuses);
  }
  if (pod.terminating) json["terminating"] = true;
  if (!pod.api_object.empty()) json["apiObject"] = ValidUtf8(pod.api_object);
  return json;
}

absl::StatusOr<Pod> PodFromJson(const nlohmann::json& json, std::string_view source,
                                std::string_view path_prefix) {
  // Every access above is checked and cannot throw; this keeps any case they missed inside.
  try {
    return Decoder(source).ReadPod(json, std::string(path_prefix));
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": ", e.what()));
  }
}

}  // namespace kdp::manager
