#include "manager/src/devicemanager/checkpoint/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/go_json.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::checkpoint {
namespace {

using Json = nlohmann::json;

void AppendStringArray(const std::vector<std::string>& items, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendGoJsonString(items[i], out);
  }
  out->push_back(']');
}

// ---- go-spew %#v, as k8s.io/apimachinery's dump.ForHash prints this data ---------------------

constexpr char kDataType[] = "(checkpoint.checkpointData)";
constexpr char kEntriesType[] = "PodDeviceEntries:([]checkpoint.PodDevicesEntry)";
constexpr char kRegisteredType[] = " RegisteredDevices:(map[string][]string)";
constexpr char kNil[] = "<nil>";

void SpewStrings(const std::vector<std::string>& items, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(out, i > 0 ? " " : "", items[i]);
  out->push_back(']');
}

void SpewBytes(std::string_view bytes, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < bytes.size(); ++i) {
    absl::StrAppend(out, i > 0 ? " " : "", static_cast<unsigned char>(bytes[i]));
  }
  out->push_back(']');
}

void SpewEntryHead(absl::string_view pod, absl::string_view container, absl::string_view resource,
                   std::string* out) {
  absl::StrAppend(out, "{PodUID:(string)", pod, " ContainerName:(string)", container,
                  " ResourceName:(string)", resource, " DeviceIDs:");
}

// The dump of data as kdp holds it (what the kubelet hashes before it writes).
std::string SpewData(const Data& data) {
  std::string out = absl::StrCat(kDataType, "{", kEntriesType);
  if (data.entries.empty()) {
    out.append(kNil);
  } else {
    out.push_back('[');
    for (size_t i = 0; i < data.entries.size(); ++i) {
      const Entry& entry = data.entries[i];
      if (i > 0) out.push_back(' ');
      SpewEntryHead(entry.pod_uid, entry.container_name, entry.resource_name, &out);
      out.append("(checkpoint.DevicesPerNUMA)map[");
      bool first = true;
      for (const auto& [node, ids] : entry.devices) {  // std::map: numeric order, as spew sorts
        absl::StrAppend(&out, first ? "" : " ", node, ":");
        SpewStrings(ids, &out);
        first = false;
      }
      out.append("] AllocResp:([]uint8)");
      SpewBytes(entry.alloc_resp, &out);
      out.push_back('}');
    }
    out.push_back(']');
  }
  absl::StrAppend(&out, kRegisteredType, "map[");
  bool first = true;
  for (const auto& [resource, ids] : data.registered_devices) {
    absl::StrAppend(&out, first ? "" : " ", resource, ":");
    SpewStrings(ids, &out);
    first = false;
  }
  out.append("]}");
  return out;
}

// ---- Reading ------------------------------------------------------------------------------------

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("not a device manager checkpoint: ", what));
}

// A JSON string field as Go reads it: absent or null is "".
absl::StatusOr<std::string> StringField(const Json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(absl::StrCat(name, " is not a string"));
  return it->get<std::string>();
}

// A JSON list of strings (null: Go's nil slice) as the dump prints it; the items into *items.
absl::Status StringList(const Json& value, const std::string& where,
                        std::vector<std::string>* items, std::string* spew) {
  if (value.is_null()) {
    spew->append(kNil);
    return absl::OkStatus();
  }
  if (!value.is_array()) return Invalid(absl::StrCat(where, " is not a list"));
  for (const Json& item : value) {
    if (!item.is_string()) return Invalid(absl::StrCat(where, " holds a non-string"));
    items->push_back(item.get<std::string>());
  }
  SpewStrings(*items, spew);
  return absl::OkStatus();
}

absl::Status DecodeEntry(const Json& json, size_t index, Format format, Entry* entry,
                         std::string* spew) {
  const std::string where = absl::StrCat("PodDeviceEntries[", index, "]");
  if (!json.is_object()) return Invalid(absl::StrCat(where, " is not an object"));
  for (auto [field, target] :
       {std::pair{"PodUID", &entry->pod_uid}, std::pair{"ContainerName", &entry->container_name},
        std::pair{"ResourceName", &entry->resource_name}}) {
    absl::StatusOr<std::string> value = StringField(json, field);
    if (!value.ok()) return Invalid(absl::StrCat(where, ".", value.status().message()));
    *target = std::move(*value);
  }
  SpewEntryHead(entry->pod_uid, entry->container_name, entry->resource_name, spew);
  const Json devices = json.contains("DeviceIDs") ? json["DeviceIDs"] : Json();
  if (format == Format::kV1) {
    spew->append("([]string)");
    std::vector<std::string> ids;
    if (absl::Status s = StringList(devices, where + ".DeviceIDs", &ids, spew); !s.ok()) return s;
    // The 1.21–1.29 reader put every v1 device under NUMA node 0.
    if (!devices.is_null()) entry->devices[0] = std::move(ids);
  } else {
    spew->append("(checkpoint.DevicesPerNUMA)");
    if (devices.is_null()) {
      spew->append(kNil);
    } else {
      if (!devices.is_object()) return Invalid(where + ".DeviceIDs is not an object");
      std::map<int64_t, const Json*> by_node;  // spew sorts int64 keys numerically
      for (const auto& [key, ids] : devices.items()) {
        int64_t node = 0;
        auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), node);
        if (error != std::errc() || end != key.data() + key.size()) {
          return Invalid(absl::StrCat(where, ".DeviceIDs key \"", key, "\" is not a NUMA node"));
        }
        by_node[node] = &ids;
      }
      spew->append("map[");
      bool first = true;
      for (const auto& [node, ids] : by_node) {
        absl::StrAppend(spew, first ? "" : " ", node, ":");
        std::vector<std::string> list;
        if (absl::Status s = StringList(*ids, where + ".DeviceIDs", &list, spew); !s.ok()) {
          return s;
        }
        entry->devices[node] = std::move(list);
        first = false;
      }
      spew->push_back(']');
    }
  }
  spew->append(" AllocResp:([]uint8)");
  const Json alloc = json.contains("AllocResp") ? json["AllocResp"] : Json();
  if (alloc.is_null()) {
    spew->append(kNil);
  } else {
    if (!alloc.is_string() || !absl::Base64Unescape(alloc.get<std::string>(), &entry->alloc_resp)) {
      return Invalid(where + ".AllocResp is not base64");
    }
    SpewBytes(entry->alloc_resp, spew);
  }
  spew->push_back('}');
  return absl::OkStatus();
}

}  // namespace

const char* FormatName(Format format) { return format == Format::kV1 ? "v1" : "v2"; }

uint32_t Fnv1a32(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

std::string Encode(const Data& data) {
  std::string out = "{\"Data\":{\"PodDeviceEntries\":";
  if (data.entries.empty()) {
    out.append("null");
  } else {
    out.push_back('[');
    for (size_t i = 0; i < data.entries.size(); ++i) {
      const Entry& entry = data.entries[i];
      if (i > 0) out.push_back(',');
      out.append("{\"PodUID\":");
      AppendGoJsonString(entry.pod_uid, &out);
      out.append(",\"ContainerName\":");
      AppendGoJsonString(entry.container_name, &out);
      out.append(",\"ResourceName\":");
      AppendGoJsonString(entry.resource_name, &out);
      out.append(",\"DeviceIDs\":{");
      // encoding/json sorts map keys as strings: "-1" < "0" < "1" < "10" < "2".
      std::vector<std::pair<std::string, const std::vector<std::string>*>> keys;
      for (const auto& [node, ids] : entry.devices) keys.emplace_back(absl::StrCat(node), &ids);
      std::sort(keys.begin(), keys.end());
      for (size_t k = 0; k < keys.size(); ++k) {
        absl::StrAppend(&out, k > 0 ? "," : "", "\"", keys[k].first, "\":");
        AppendStringArray(*keys[k].second, &out);
      }
      out.append("},\"AllocResp\":\"");
      absl::StrAppend(&out, absl::Base64Escape(entry.alloc_resp), "\"}");
    }
    out.push_back(']');
  }
  out.append(",\"RegisteredDevices\":{");
  bool first = true;
  for (const auto& [resource, ids] : data.registered_devices) {
    if (!first) out.push_back(',');
    AppendGoJsonString(resource, &out);
    out.push_back(':');
    AppendStringArray(ids, &out);
    first = false;
  }
  absl::StrAppend(&out, "}},\"Checksum\":", Fnv1a32(SpewData(data)), "}");
  return out;
}

absl::StatusOr<Decoded> Decode(std::string_view bytes) {
  Json root = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Invalid("the file is not valid JSON");
  if (!root.is_object() || !root.contains("Data") || !root["Data"].is_object()) {
    return Invalid("no \"Data\" object");
  }
  if (!root.contains("Checksum") || !root["Checksum"].is_number_unsigned()) {
    return Invalid("no unsigned \"Checksum\"");
  }
  const Json& data = root["Data"];
  Decoded decoded;
  decoded.checksum = root["Checksum"].get<uint64_t>();

  const Json entries = data.contains("PodDeviceEntries") ? data["PodDeviceEntries"] : Json();
  if (!entries.is_null() && !entries.is_array()) return Invalid("PodDeviceEntries is not a list");
  // The layout is v1 when entries carry DeviceIDs as lists, v2 when as objects; never both.
  bool lists = false, objects = false;
  if (entries.is_array()) {
    for (const Json& entry : entries) {
      if (!entry.is_object() || !entry.contains("DeviceIDs")) continue;
      lists = lists || entry["DeviceIDs"].is_array();
      objects = objects || entry["DeviceIDs"].is_object();
    }
  }
  if (lists && objects) return Invalid("entries mix the v1 and v2 layouts of DeviceIDs");
  decoded.format = lists ? Format::kV1 : Format::kV2;

  std::string spew = absl::StrCat(kDataType, "{", kEntriesType);
  if (entries.is_null()) {
    spew.append(kNil);
  } else {
    spew.push_back('[');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) spew.push_back(' ');
      Entry entry;
      if (absl::Status s = DecodeEntry(entries[i], i, decoded.format, &entry, &spew); !s.ok()) {
        return s;
      }
      decoded.data.entries.push_back(std::move(entry));
    }
    spew.push_back(']');
  }
  spew.append(kRegisteredType);
  const Json registered = data.contains("RegisteredDevices") ? data["RegisteredDevices"] : Json();
  if (registered.is_null()) {
    spew.append(kNil);
  } else {
    if (!registered.is_object()) return Invalid("RegisteredDevices is not an object");
    spew.append("map[");
    bool first = true;
    for (const auto& [resource, ids] : registered.items()) {  // nlohmann: sorted keys
      absl::StrAppend(&spew, first ? "" : " ", resource, ":");
      std::vector<std::string> list;
      if (absl::Status s = StringList(ids, "RegisteredDevices[" + resource + "]", &list, &spew);
          !s.ok()) {
        return s;
      }
      decoded.data.registered_devices[resource] = std::move(list);
      first = false;
    }
    spew.push_back(']');
  }
  spew.push_back('}');
  decoded.computed_checksum = Fnv1a32(spew);
  return decoded;
}

}  // namespace kdp::manager::checkpoint
