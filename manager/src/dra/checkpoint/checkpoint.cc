#include "manager/src/dra/checkpoint/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/durable_file.h"
#include "common/go_json.h"
#include "common/path_safety.h"
#include "common/unix_socket.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::dra {
namespace {

using Json = nlohmann::json;

// A []string: nil (empty) is `null`, as the kubelet's slices copied from protobuf are nil.
void AppendStrings(const std::vector<std::string>& items, std::string* out) {
  if (items.empty()) {
    out->append("null");
    return;
  }
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendGoJsonString(items[i], out);
  }
  out->push_back(']');
}

void AppendDevice(const state::Device& device, std::string* out) {
  out->append("{\"PoolName\":");
  AppendGoJsonString(device.pool_name, out);
  out->append(",\"DeviceName\":");
  AppendGoJsonString(device.device_name, out);
  if (device.share_id.has_value()) {  // 1.35+ field order: after DeviceName
    out->append(",\"ShareID\":");
    AppendGoJsonString(*device.share_id, out);
  }
  out->append(",\"RequestNames\":");
  AppendStrings(device.request_names, out);
  out->append(",\"CDIDeviceIDs\":");
  AppendStrings(device.cdi_device_ids, out);
  out->push_back('}');
}

void AppendClaim(const state::ClaimInfoState& claim, std::string* out) {
  out->append("{\"ClaimUID\":");
  AppendGoJsonString(claim.claim_uid, out);
  out->append(",\"ClaimName\":");
  AppendGoJsonString(claim.claim_name, out);
  out->append(",\"Namespace\":");
  AppendGoJsonString(claim.namespace_, out);
  // sets.Set[string] is map[string]struct{}: sorted keys (std::set orders bytes as Go does).
  out->append(",\"PodUIDs\":{");
  bool first = true;
  for (const std::string& uid : claim.pod_uids) {
    if (!first) out->push_back(',');
    AppendGoJsonString(uid, out);
    out->append(":{}");
    first = false;
  }
  out->append("},\"DriverState\":{");
  first = true;
  for (const auto& [driver, driver_state] : claim.driver_state) {
    if (!first) out->push_back(',');
    AppendGoJsonString(driver, out);
    out->append(":{\"Devices\":");
    if (driver_state.devices.empty()) {
      out->append("null");
    } else {
      out->push_back('[');
      for (size_t i = 0; i < driver_state.devices.size(); ++i) {
        if (i > 0) out->push_back(',');
        AppendDevice(driver_state.devices[i], out);
      }
      out->push_back(']');
    }
    out->push_back('}');
    first = false;
  }
  out->append("}}");
}

// ---- Reading, as Go's json.Unmarshal into the kubelet's structs ------------------------------

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(std::string(what));
}

// A struct field: the exact key first, else a case-insensitive match (Go's EqualFold); nullptr
// when absent.
const Json* Field(const Json& object, const std::string& name) {
  auto it = object.find(name);
  if (it != object.end()) return &*it;
  for (auto candidate = object.begin(); candidate != object.end(); ++candidate) {
    if (absl::EqualsIgnoreCase(candidate.key(), name)) return &*candidate;
  }
  return nullptr;
}

absl::Status ReadString(const Json& object, const std::string& name, const std::string& where,
                        std::string* out) {
  const Json* value = Field(object, name);
  if (value == nullptr || value->is_null()) return absl::OkStatus();
  if (!value->is_string()) return Invalid(absl::StrCat(where, ".", name, " is not a string"));
  *out = value->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadStrings(const Json& object, const std::string& name, const std::string& where,
                         std::vector<std::string>* out) {
  const Json* value = Field(object, name);
  if (value == nullptr || value->is_null()) return absl::OkStatus();
  if (!value->is_array()) return Invalid(absl::StrCat(where, ".", name, " is not a list"));
  for (const Json& item : *value) {
    if (!item.is_string()) return Invalid(absl::StrCat(where, ".", name, " holds a non-string"));
    out->push_back(item.get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ReadDevice(const Json& json, const std::string& where, state::Device* device) {
  if (!json.is_object()) return Invalid(where + " is not an object");
  if (absl::Status s = ReadString(json, "PoolName", where, &device->pool_name); !s.ok()) return s;
  if (absl::Status s = ReadString(json, "DeviceName", where, &device->device_name); !s.ok()) {
    return s;
  }
  if (const Json* share = Field(json, "ShareID"); share != nullptr && !share->is_null()) {
    if (!share->is_string()) return Invalid(where + ".ShareID is not a string");
    device->share_id = share->get<std::string>();
  }
  if (absl::Status s = ReadStrings(json, "RequestNames", where, &device->request_names); !s.ok()) {
    return s;
  }
  return ReadStrings(json, "CDIDeviceIDs", where, &device->cdi_device_ids);
}

absl::Status ReadClaim(const Json& json, const std::string& where, state::ClaimInfoState* claim) {
  if (!json.is_object()) return Invalid(where + " is not an object");
  for (auto [name, target] :
       {std::pair{"ClaimUID", &claim->claim_uid}, std::pair{"ClaimName", &claim->claim_name},
        std::pair{"Namespace", &claim->namespace_}}) {
    if (absl::Status s = ReadString(json, name, where, target); !s.ok()) return s;
  }
  if (const Json* pods = Field(json, "PodUIDs"); pods != nullptr && !pods->is_null()) {
    if (!pods->is_object()) return Invalid(where + ".PodUIDs is not an object");
    for (const auto& [uid, empty] : pods->items()) {
      if (!empty.is_object() && !empty.is_null()) {
        return Invalid(absl::StrCat(where, ".PodUIDs[\"", uid, "\"] is not {}"));
      }
      claim->pod_uids.insert(uid);
    }
  }
  if (const Json* drivers = Field(json, "DriverState"); drivers != nullptr && !drivers->is_null()) {
    if (!drivers->is_object()) return Invalid(where + ".DriverState is not an object");
    for (const auto& [driver, value] : drivers->items()) {
      const std::string at = absl::StrCat(where, ".DriverState[\"", driver, "\"]");
      state::DriverState& driver_state = claim->driver_state[driver];
      if (value.is_null()) continue;
      if (!value.is_object()) return Invalid(at + " is not an object");
      const Json* devices = Field(value, "Devices");
      if (devices == nullptr || devices->is_null()) continue;
      if (!devices->is_array()) return Invalid(at + ".Devices is not a list");
      for (size_t i = 0; i < devices->size(); ++i) {
        state::Device device;
        if (absl::Status s =
                ReadDevice((*devices)[i], absl::StrCat(at, ".Devices[", i, "]"), &device);
            !s.ok()) {
          return s;
        }
        driver_state.devices.push_back(std::move(device));
      }
    }
  }
  return absl::OkStatus();
}

bool LooksLikeSpewFormat(const Json& root) {
  return root.is_object() && Field(root, "Data") == nullptr && root.contains("version") &&
         (root.contains("entries") || root.contains("checksum"));
}

}  // namespace

std::string ClaimInfoKey(const std::string& claim_name, const std::string& namespace_) {
  return absl::StrCat(namespace_, "/", claim_name);
}

uint32_t Crc32Ieee(std::string_view bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large inputs in pieces.
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), std::numeric_limits<uInt>::max());
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

std::string EncodeCheckpointData(const std::vector<state::ClaimInfoState>& claims) {
  // CheckpointData{metav1.TypeMeta (inline: kind, apiVersion), ClaimInfoStateList}.
  std::string out = absl::StrCat("{\"kind\":\"", kCheckpointKind, "\",\"apiVersion\":\"",
                                 kCheckpointApiVersion, "\",\"ClaimInfoStateList\":[");
  for (size_t i = 0; i < claims.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendClaim(claims[i], &out);
  }
  out.append("]}");
  return out;
}

std::string EncodeCheckpoint(const std::vector<state::ClaimInfoState>& claims) {
  const std::string data = EncodeCheckpointData(claims);
  std::string out = "{\"Data\":";
  AppendGoJsonString(data, &out);
  absl::StrAppend(&out, ",\"Checksum\":", Crc32Ieee(data), "}");
  return out;
}

absl::StatusOr<CheckpointEnvelope> DecodeCheckpointEnvelope(std::string_view bytes) {
  Json root = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Invalid("not a DRA checkpoint: the file is not valid JSON");
  if (LooksLikeSpewFormat(root)) {
    return absl::FailedPreconditionError(
        "this is the kubelet <= 1.31 DRA checkpoint format (\"version\":\"v1\" with a go-spew "
        "checksum), which kdp does not read; drain the node and remove the file (#127653)");
  }
  if (!root.is_object()) return Invalid("not a DRA checkpoint: not a JSON object");
  const Json* data = Field(root, "Data");
  if (data == nullptr || !data->is_string()) {
    return Invalid("not a DRA checkpoint: no \"Data\" string");
  }
  const Json* checksum = Field(root, "Checksum");
  if (checksum == nullptr || !checksum->is_number_unsigned() ||
      checksum->get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return Invalid("not a DRA checkpoint: no uint32 \"Checksum\"");
  }
  CheckpointEnvelope envelope;
  envelope.data = data->get<std::string>();
  envelope.checksum = checksum->get<uint64_t>();
  envelope.computed_checksum = Crc32Ieee(envelope.data);
  return envelope;
}

absl::StatusOr<CheckpointData> DecodeCheckpointData(std::string_view data) {
  Json root = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Invalid("Data is not valid JSON");
  if (!root.is_object()) return Invalid("Data is not a JSON object");
  CheckpointData decoded;
  if (absl::Status s = ReadString(root, "kind", "Data", &decoded.kind); !s.ok()) return s;
  if (absl::Status s = ReadString(root, "apiVersion", "Data", &decoded.api_version); !s.ok()) {
    return s;
  }
  const Json* list = nullptr;
  for (const char* key : {"ClaimInfoStateList", "Entries"}) {
    list = Field(root, key);
    if (list != nullptr) {
      decoded.list_key = key;
      break;
    }
  }
  if (list == nullptr || list->is_null()) return decoded;
  if (!list->is_array()) return Invalid(absl::StrCat("Data.", decoded.list_key, " is not a list"));
  for (size_t i = 0; i < list->size(); ++i) {
    state::ClaimInfoState claim;
    if (absl::Status s =
            ReadClaim((*list)[i], absl::StrCat("Data.", decoded.list_key, "[", i, "]"), &claim);
        !s.ok()) {
      return s;
    }
    decoded.claims.push_back(std::move(claim));
  }
  return decoded;
}

absl::StatusOr<std::vector<state::ClaimInfoState>> DecodeCheckpoint(std::string_view bytes) {
  absl::StatusOr<CheckpointEnvelope> envelope = DecodeCheckpointEnvelope(bytes);
  if (!envelope.ok()) {
    if (absl::IsFailedPrecondition(envelope.status())) return envelope.status();
    return absl::DataLossError(
        absl::StrCat("checkpoint is corrupted: ", envelope.status().message()));
  }
  // The kubelet's VerifyChecksum runs before Data is unmarshalled.
  if (!envelope->checksum_ok()) {
    return absl::DataLossError(absl::StrCat("checkpoint is corrupted: stored checksum ",
                                            envelope->checksum, ", computed ",
                                            envelope->computed_checksum));
  }
  absl::StatusOr<CheckpointData> data = DecodeCheckpointData(envelope->data);
  if (!data.ok()) {
    return absl::DataLossError(absl::StrCat("checkpoint is corrupted: ", data.status().message()));
  }
  return std::move(data->claims);
}

absl::StatusOr<std::unique_ptr<Checkpointer>> Checkpointer::Create(const std::string& state_dir,
                                                                   const std::string& name) {
  if (state_dir.empty()) return Invalid("DRA checkpoint: empty state directory");
  if (absl::Status valid = ValidateFileName("DRA checkpoint name", name, state_dir); !valid.ok()) {
    return valid;
  }
  // 0750 whatever the umask: the kubelet root's directories are not for other users.
  if (absl::Status made = MakeDirectories(state_dir, 0750); !made.ok()) return made;
  std::string path = state_dir.back() == '/' ? state_dir + name : state_dir + "/" + name;
  return std::unique_ptr<Checkpointer>(new Checkpointer(std::move(path), name));
}

absl::StatusOr<std::vector<state::ClaimInfoState>> Checkpointer::GetOrCreate() {
  absl::StatusOr<std::string> bytes = ReadFile(path_);
  if (absl::IsNotFound(bytes.status())) {
    if (absl::Status stored = Store({}); !stored.ok()) return stored;
    return std::vector<state::ClaimInfoState>();
  }
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::vector<state::ClaimInfoState>> claims = DecodeCheckpoint(*bytes);
  if (!claims.ok()) {
    return absl::Status(claims.status().code(),
                        absl::StrCat("failed to get checkpoint ", name_, ": ",
                                     claims.status().message(), " (", path_, ")"));
  }
  return claims;
}

absl::Status Checkpointer::Store(const std::vector<state::ClaimInfoState>& claims) {
  return WriteFileDurably(path_, EncodeCheckpoint(claims));
}

}  // namespace kdp::manager::dra
