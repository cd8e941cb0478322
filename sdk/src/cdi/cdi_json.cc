// JSON encoding and strict decoding of kdp::cdi::Spec. Keys and their order are those of the Go
// types in tags.cncf.io/container-device-interface/specs-go/config.go; empty or unset optional
// fields are omitted as `omitempty` does. Decoding is strict like the runtimes' loader
// (sigs.k8s.io/yaml UnmarshalStrict): an unknown key is an error, null is treated as absent.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kdp/cdi.h"
#include "nlohmann/json.hpp"

namespace kdp::cdi {
namespace {

using Ordered = nlohmann::ordered_json;
using Json = nlohmann::json;

// ---- Encoding ---------------------------------------------------------------------------------

void PutStrings(Ordered& out, const char* key, const std::vector<std::string>& values) {
  if (!values.empty()) out[key] = values;
}

void PutMap(Ordered& out, const char* key, const std::map<std::string, std::string>& values) {
  if (values.empty()) return;
  Ordered object = Ordered::object();
  for (const auto& [k, v] : values) object[k] = v;
  out[key] = std::move(object);
}

Ordered EncodeEdits(const ContainerEdits& edits) {
  Ordered out = Ordered::object();
  PutStrings(out, "env", edits.env);
  if (!edits.device_nodes.empty()) {
    Ordered nodes = Ordered::array();
    for (const DeviceNode& node : edits.device_nodes) {
      Ordered n = Ordered::object();
      n["path"] = node.path;
      if (!node.host_path.empty()) n["hostPath"] = node.host_path;
      if (!node.type.empty()) n["type"] = node.type;
      if (node.major.has_value()) n["major"] = *node.major;
      if (node.minor.has_value()) n["minor"] = *node.minor;
      if (node.file_mode.has_value()) n["fileMode"] = *node.file_mode;
      if (!node.permissions.empty()) n["permissions"] = node.permissions;
      if (node.uid.has_value()) n["uid"] = *node.uid;
      if (node.gid.has_value()) n["gid"] = *node.gid;
      nodes.push_back(std::move(n));
    }
    out["deviceNodes"] = std::move(nodes);
  }
  if (!edits.hooks.empty()) {
    Ordered hooks = Ordered::array();
    for (const Hook& hook : edits.hooks) {
      Ordered h = Ordered::object();
      h["hookName"] = hook.hook_name;
      h["path"] = hook.path;
      PutStrings(h, "args", hook.args);
      PutStrings(h, "env", hook.env);
      if (hook.timeout.has_value()) h["timeout"] = *hook.timeout;
      hooks.push_back(std::move(h));
    }
    out["hooks"] = std::move(hooks);
  }
  if (!edits.mounts.empty()) {
    Ordered mounts = Ordered::array();
    for (const Mount& mount : edits.mounts) {
      Ordered m = Ordered::object();
      m["hostPath"] = mount.host_path;
      m["containerPath"] = mount.container_path;
      if (!mount.type.empty()) m["type"] = mount.type;
      PutStrings(m, "options", mount.options);
      mounts.push_back(std::move(m));
    }
    out["mounts"] = std::move(mounts);
  }
  if (edits.intel_rdt.has_value()) {
    const IntelRdt& rdt = *edits.intel_rdt;
    Ordered r = Ordered::object();
    if (!rdt.clos_id.empty()) r["closID"] = rdt.clos_id;
    if (!rdt.l3_cache_schema.empty()) r["l3CacheSchema"] = rdt.l3_cache_schema;
    if (!rdt.mem_bw_schema.empty()) r["memBwSchema"] = rdt.mem_bw_schema;
    PutStrings(r, "schemata", rdt.schemata);
    if (rdt.enable_monitoring) r["enableMonitoring"] = true;
    out["intelRdt"] = std::move(r);
  }
  if (!edits.additional_gids.empty()) out["additionalGids"] = edits.additional_gids;
  if (!edits.net_devices.empty()) {
    Ordered nets = Ordered::array();
    for (const NetDevice& net : edits.net_devices) {
      nets.push_back(Ordered{{"hostInterfaceName", net.host_interface_name}, {"name", net.name}});
    }
    out["netDevices"] = std::move(nets);
  }
  return out;
}

// ---- Decoding ---------------------------------------------------------------------------------

// Reads one JSON document into the model; the first error is kept and every later read is a
// no-op, so the decoders read straight through without checking after each field.
class Decoder {
 public:
  explicit Decoder(std::string_view source) : source_(source) {}

  const absl::Status& status() const { return status_; }

  // True when `value` (at `path`) is an object whose keys are all in `known`.
  bool Object(const Json& value, const std::string& path,
              std::initializer_list<std::string_view> known) {
    if (!status_.ok()) return false;
    if (!value.is_object()) return Fail(path, "expected an object");
    for (const auto& item : value.items()) {
      bool found = false;
      for (std::string_view k : known) found = found || item.key() == k;
      if (!found) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat(source_, ": unknown field \"", Join(path, item.key()), "\" in CDI spec"));
        return false;
      }
    }
    return true;
  }

  // The member `key` of `object`, or null when absent or null.
  static const Json* Member(const Json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  void String(const Json& object, const std::string& path, const char* key, std::string* out) {
    const Json* v = Member(object, key);
    if (v == nullptr || !status_.ok()) return;
    if (!v->is_string()) {
      Fail(Join(path, key), "expected a string");
      return;
    }
    *out = v->get<std::string>();
  }

  void Bool(const Json& object, const std::string& path, const char* key, bool* out) {
    const Json* v = Member(object, key);
    if (v == nullptr || !status_.ok()) return;
    if (!v->is_boolean()) {
      Fail(Join(path, key), "expected true or false");
      return;
    }
    *out = v->get<bool>();
  }

  void Strings(const Json& object, const std::string& path, const char* key,
               std::vector<std::string>* out) {
    const Json* v = Member(object, key);
    if (v == nullptr || !status_.ok()) return;
    if (!v->is_array()) {
      Fail(Join(path, key), "expected an array of strings");
      return;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) {
        Fail(absl::StrCat(Join(path, key), "[", i, "]"), "expected a string");
        return;
      }
      out->push_back((*v)[i].get<std::string>());
    }
  }

  void Map(const Json& object, const std::string& path, const char* key,
           std::map<std::string, std::string>* out) {
    const Json* v = Member(object, key);
    if (v == nullptr || !status_.ok()) return;
    if (!v->is_object()) {
      Fail(Join(path, key), "expected an object of strings");
      return;
    }
    for (const auto& item : v->items()) {
      if (!item.value().is_string()) {
        Fail(Join(Join(path, key), item.key()), "expected a string");
        return;
      }
      (*out)[item.key()] = item.value().get<std::string>();
    }
  }

  // An integer in [min, max] (floats such as 1.0 are rejected, as Go's decoder rejects them).
  template <typename T>
  std::optional<T> Integer(const Json& value, const std::string& path) {
    if (!status_.ok()) return std::nullopt;
    constexpr int64_t kMin = std::numeric_limits<T>::min();
    constexpr uint64_t kMax = std::numeric_limits<T>::max();
    if (value.is_number_unsigned()) {
      uint64_t u = value.get<uint64_t>();
      if (u <= kMax) return static_cast<T>(u);
    } else if (value.is_number_integer()) {
      int64_t i = value.get<int64_t>();
      if (i >= kMin && (i < 0 || static_cast<uint64_t>(i) <= kMax)) return static_cast<T>(i);
    } else {
      Fail(path, "expected an integer");
      return std::nullopt;
    }
    Fail(path, absl::StrCat("integer out of range [", kMin, ", ", kMax, "]"));
    return std::nullopt;
  }

  template <typename T>
  void OptionalInteger(const Json& object, const std::string& path, const char* key,
                       std::optional<T>* out) {
    const Json* v = Member(object, key);
    if (v == nullptr) return;
    std::optional<T> value = Integer<T>(*v, Join(path, key));
    if (value.has_value()) *out = value;
  }

  // Calls `element(item, item_path)` for each element of the array `key`.
  template <typename F>
  void Array(const Json& object, const std::string& path, const char* key, F element) {
    const Json* v = Member(object, key);
    if (v == nullptr || !status_.ok()) return;
    if (!v->is_array()) {
      Fail(Join(path, key), "expected an array");
      return;
    }
    for (size_t i = 0; i < v->size() && status_.ok(); ++i) {
      element((*v)[i], absl::StrCat(Join(path, key), "[", i, "]"));
    }
  }

  bool Fail(const std::string& path, absl::string_view rule) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(source_, ": ", path.empty() ? "(top level)" : path, ": ", rule));
    }
    return false;
  }

  static std::string Join(const std::string& path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }

 private:
  std::string source_;
  absl::Status status_;
};

void DecodeEdits(Decoder& d, const Json& value, const std::string& path, ContainerEdits* out) {
  if (!d.Object(
          value, path,
          {"env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGids", "netDevices"})) {
    return;
  }
  d.Strings(value, path, "env", &out->env);
  d.Array(value, path, "deviceNodes", [&](const Json& item, const std::string& p) {
    if (!d.Object(item, p,
                  {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid",
                   "gid"})) {
      return;
    }
    DeviceNode node;
    d.String(item, p, "path", &node.path);
    d.String(item, p, "hostPath", &node.host_path);
    d.String(item, p, "type", &node.type);
    d.OptionalInteger(item, p, "major", &node.major);
    d.OptionalInteger(item, p, "minor", &node.minor);
    d.OptionalInteger(item, p, "fileMode", &node.file_mode);
    d.String(item, p, "permissions", &node.permissions);
    d.OptionalInteger(item, p, "uid", &node.uid);
    d.OptionalInteger(item, p, "gid", &node.gid);
    out->device_nodes.push_back(std::move(node));
  });
  d.Array(value, path, "hooks", [&](const Json& item, const std::string& p) {
    if (!d.Object(item, p, {"hookName", "path", "args", "env", "timeout"})) return;
    Hook hook;
    d.String(item, p, "hookName", &hook.hook_name);
    d.String(item, p, "path", &hook.path);
    d.Strings(item, p, "args", &hook.args);
    d.Strings(item, p, "env", &hook.env);
    d.OptionalInteger(item, p, "timeout", &hook.timeout);
    out->hooks.push_back(std::move(hook));
  });
  d.Array(value, path, "mounts", [&](const Json& item, const std::string& p) {
    if (!d.Object(item, p, {"hostPath", "containerPath", "type", "options"})) return;
    Mount mount;
    d.String(item, p, "hostPath", &mount.host_path);
    d.String(item, p, "containerPath", &mount.container_path);
    d.String(item, p, "type", &mount.type);
    d.Strings(item, p, "options", &mount.options);
    out->mounts.push_back(std::move(mount));
  });
  if (const Json* rdt = Decoder::Member(value, "intelRdt"); rdt != nullptr) {
    std::string p = Decoder::Join(path, "intelRdt");
    if (d.Object(*rdt, p,
                 {"closID", "l3CacheSchema", "memBwSchema", "schemata", "enableMonitoring"})) {
      IntelRdt r;
      d.String(*rdt, p, "closID", &r.clos_id);
      d.String(*rdt, p, "l3CacheSchema", &r.l3_cache_schema);
      d.String(*rdt, p, "memBwSchema", &r.mem_bw_schema);
      d.Strings(*rdt, p, "schemata", &r.schemata);
      d.Bool(*rdt, p, "enableMonitoring", &r.enable_monitoring);
      out->intel_rdt = std::move(r);
    }
  }
  d.Array(value, path, "additionalGids", [&](const Json& item, const std::string& p) {
    std::optional<uint32_t> gid = d.Integer<uint32_t>(item, p);
    if (gid.has_value()) out->additional_gids.push_back(*gid);
  });
  d.Array(value, path, "netDevices", [&](const Json& item, const std::string& p) {
    if (!d.Object(item, p, {"hostInterfaceName", "name"})) return;
    NetDevice net;
    d.String(item, p, "hostInterfaceName", &net.host_interface_name);
    d.String(item, p, "name", &net.name);
    out->net_devices.push_back(std::move(net));
  });
}

}  // namespace

std::string ToJson(const Spec& spec) {
  Ordered out = Ordered::object();
  out["cdiVersion"] = spec.cdi_version;
  out["kind"] = spec.kind;
  PutMap(out, "annotations", spec.annotations);
  Ordered devices = Ordered::array();
  for (const Device& device : spec.devices) {
    Ordered d = Ordered::object();
    d["name"] = device.name;
    PutMap(d, "annotations", device.annotations);
    d["containerEdits"] = EncodeEdits(device.container_edits);
    devices.push_back(std::move(d));
  }
  out["devices"] = std::move(devices);
  if (!spec.container_edits.empty()) out["containerEdits"] = EncodeEdits(spec.container_edits);
  return out.dump(2) + "\n";
}

absl::StatusOr<Spec> ParseJson(std::string_view text, std::string_view source_name) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::string_view(source_name.data(), source_name.size()),
                     ": not a valid JSON CDI spec: ", e.what()));
  }
  Decoder d(source_name);
  Spec spec;
  if (d.Object(root, "", {"cdiVersion", "kind", "annotations", "devices", "containerEdits"})) {
    d.String(root, "", "cdiVersion", &spec.cdi_version);
    d.String(root, "", "kind", &spec.kind);
    d.Map(root, "", "annotations", &spec.annotations);
    d.Array(root, "", "devices", [&](const Json& item, const std::string& p) {
      if (!d.Object(item, p, {"name", "annotations", "containerEdits"})) return;
      Device device;
      d.String(item, p, "name", &device.name);
      d.Map(item, p, "annotations", &device.annotations);
      if (const Json* edits = Decoder::Member(item, "containerEdits"); edits != nullptr) {
        DecodeEdits(d, *edits, Decoder::Join(p, "containerEdits"), &device.container_edits);
      }
      spec.devices.push_back(std::move(device));
    });
    if (const Json* edits = Decoder::Member(root, "containerEdits"); edits != nullptr) {
      DecodeEdits(d, *edits, "containerEdits", &spec.container_edits);
    }
  }
  if (!d.status().ok()) return d.status();
  return spec;
}

}  // namespace kdp::cdi
