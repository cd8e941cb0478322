#include "manager/kdpctl/checkpoint_command.h"

#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/durable_file.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::kdpctl {
namespace {

namespace checkpoint = manager::checkpoint;
namespace dra = manager::dra;

nlohmann::json AllocResponseJson(const std::string& bytes) {
  v1beta1::ContainerAllocateResponse response;
  if (!response.ParseFromString(bytes)) {
    return {{"error", "AllocResp is not a ContainerAllocateResponse"}};
  }
  nlohmann::json envs = nlohmann::json::object(), annotations = nlohmann::json::object();
  for (const auto& [k, v] : response.envs()) envs[k] = v;
  for (const auto& [k, v] : response.annotations()) annotations[k] = v;
  nlohmann::json mounts = nlohmann::json::array(), devices = nlohmann::json::array(),
                 cdi = nlohmann::json::array();
  for (const auto& m : response.mounts()) {
    mounts.push_back({{"container_path", m.container_path()},
                      {"host_path", m.host_path()},
                      {"read_only", m.read_only()}});
  }
  for (const auto& d : response.devices()) {
    devices.push_back({{"container_path", d.container_path()},
                       {"host_path", d.host_path()},
                       {"permissions", d.permissions()}});
  }
  for (const auto& c : response.cdi_devices()) cdi.push_back(c.name());
  return {{"envs", envs},
          {"mounts", mounts},
          {"devices", devices},
          {"annotations", annotations},
          {"cdi_devices", cdi}};
}

// Reads the whole file; on failure prints the reason and sets *exit_code to 1.
std::optional<std::string> Read(const std::string& path, int* exit_code) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) {
    std::cerr << "kdpctl: " << bytes.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  return *std::move(bytes);
}

// Decodes a device-manager checkpoint; on failure prints the reason and sets *exit_code to 2.
std::optional<checkpoint::Decoded> Decode(const std::string& path, const std::string& bytes,
                                          int* exit_code) {
  absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(bytes);
  if (!decoded.ok()) {
    std::cerr << "kdpctl: " << path << ": " << decoded.status().message() << "\n";
    *exit_code = 2;
    return std::nullopt;
  }
  return *std::move(decoded);
}

// Reads and decodes; on failure prints the reason and sets *exit_code.
std::optional<checkpoint::Decoded> Load(const std::string& path, int* exit_code) {
  std::optional<std::string> bytes = Read(path, exit_code);
  if (!bytes.has_value()) return std::nullopt;
  return Decode(path, *bytes, exit_code);
}

// A DRA manager checkpoint, by content: an object whose "Data" is a string (the device manager's
// is an object), or the <= 1.31 DRA layout ("version" with "entries"/"checksum").
bool IsDraCheckpoint(const std::string& bytes) {
  nlohmann::json root =
      nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return false;
  if (root.contains("Data")) return root["Data"].is_string();
  return root.contains("version") && (root.contains("entries") || root.contains("checksum"));
}

void PrintDraSummary(const dra::CheckpointEnvelope& envelope, const dra::CheckpointData* data) {
  std::cout << "format dra";
  if (data != nullptr) std::cout << " (" << data->kind << " " << data->api_version << ")";
  std::cout << ", checksum " << envelope.checksum
            << (envelope.checksum_ok() ? " (ok)" : " (MISMATCH)") << "\n";
  if (data == nullptr) return;
  for (const dra::state::ClaimInfoState& claim : data->claims) {
    std::cout << "claim " << claim.namespace_ << "/" << claim.claim_name << " uid "
              << claim.claim_uid << " pods";
    if (claim.pod_uids.empty()) std::cout << " (none)";
    for (const std::string& pod : claim.pod_uids) std::cout << " " << pod;
    std::cout << "\n";
    for (const auto& [driver, driver_state] : claim.driver_state) {
      std::cout << "  driver " << driver << ":";
      if (driver_state.devices.empty()) std::cout << " (no devices)";
      for (const dra::state::Device& device : driver_state.devices) {
        std::cout << " " << device.pool_name << "/" << device.device_name;
        if (!device.request_names.empty()) {
          std::cout << "[" << absl::StrJoin(device.request_names, ",") << "]";
        }
        if (!device.cdi_device_ids.empty()) {
          std::cout << "=" << absl::StrJoin(device.cdi_device_ids, ",");
        }
      }
      std::cout << "\n";
    }
  }
}

int InspectDraCheckpoint(const std::string& path, const std::string& bytes, bool json) {
  absl::StatusOr<dra::CheckpointEnvelope> envelope = dra::DecodeCheckpointEnvelope(bytes);
  if (!envelope.ok()) {
    std::cerr << "kdpctl: " << path << ": " << envelope.status().message() << "\n";
    return 2;
  }
  // Data is parsed even when the checksum does not match, to show what the file holds; the
  // kubelet itself would stop at the checksum.
  absl::StatusOr<dra::CheckpointData> data = dra::DecodeCheckpointData(envelope->data);
  if (json) {
    std::cout << DraCheckpointJson(*envelope, data)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    PrintDraSummary(*envelope, data.ok() ? &*data : nullptr);
  }
  if (!envelope->checksum_ok()) {
    std::cerr << "kdpctl: " << path << ": checksum mismatch: stored " << envelope->checksum
              << ", computed " << envelope->computed_checksum << "\n";
    return 2;
  }
  if (!data.ok()) {
    std::cerr << "kdpctl: " << path << ": " << data.status().message() << "\n";
    return 2;
  }
  return 0;
}

void ReportMismatch(const std::string& path, const checkpoint::Decoded& decoded) {
  std::cerr << "kdpctl: " << path << ": checksum mismatch: stored " << decoded.checksum
            << ", computed " << decoded.computed_checksum << "\n";
}

}  // namespace

nlohmann::json CheckpointJson(const checkpoint::Decoded& decoded) {
  nlohmann::json entries = nlohmann::json::array();
  for (const checkpoint::Entry& entry : decoded.data.entries) {
    nlohmann::json devices = nlohmann::json::object();
    for (const auto& [node, ids] : entry.devices) devices[absl::StrCat(node)] = ids;
    entries.push_back({{"pod_uid", entry.pod_uid},
                       {"container", entry.container_name},
                       {"resource", entry.resource_name},
                       {"devices", devices},
                       {"alloc_response", AllocResponseJson(entry.alloc_resp)}});
  }
  nlohmann::json registered = nlohmann::json::object();
  for (const auto& [resource, ids] : decoded.data.registered_devices) registered[resource] = ids;
  return {{"format", checkpoint::FormatName(decoded.format)},
          {"checksum_ok", decoded.checksum_ok()},
          {"checksum", decoded.checksum},
          {"computed_checksum", decoded.computed_checksum},
          {"entries", entries},
          {"registered_devices", registered}};
}

nlohmann::json DraCheckpointJson(const dra::CheckpointEnvelope& envelope,
                                 const absl::StatusOr<dra::CheckpointData>& data) {
  nlohmann::json out = {{"format", "dra"},
                        {"checksum_ok", envelope.checksum_ok()},
                        {"checksum", envelope.checksum},
                        {"computed_checksum", envelope.computed_checksum}};
  if (!data.ok()) {
    out["error"] = std::string(data.status().message());
    return out;
  }
  out["kind"] = data->kind;
  out["api_version"] = data->api_version;
  nlohmann::json claims = nlohmann::json::array();
  for (const dra::state::ClaimInfoState& claim : data->claims) {
    nlohmann::json drivers = nlohmann::json::object();
    for (const auto& [driver, driver_state] : claim.driver_state) {
      nlohmann::json devices = nlohmann::json::array();
      for (const dra::state::Device& device : driver_state.devices) {
        nlohmann::json entry = {{"pool", device.pool_name},
                                {"device", device.device_name},
                                {"request_names", device.request_names},
                                {"cdi_device_ids", device.cdi_device_ids}};
        if (device.share_id.has_value()) entry["share_id"] = *device.share_id;
        devices.push_back(std::move(entry));
      }
      drivers[driver] = std::move(devices);
    }
    claims.push_back({{"namespace", claim.namespace_},
                      {"name", claim.claim_name},
                      {"uid", claim.claim_uid},
                      {"pod_uids", claim.pod_uids},
                      {"drivers", drivers}});
  }
  out["claims"] = std::move(claims);
  return out;
}

int InspectCheckpoint(const std::string& path, bool json) {
  int exit_code = 0;
  std::optional<std::string> bytes = Read(path, &exit_code);
  if (!bytes.has_value()) return exit_code;
  if (IsDraCheckpoint(*bytes)) return InspectDraCheckpoint(path, *bytes, json);
  if (nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false).is_discarded()) {
    // Neither kind of kubelet checkpoint: say so rather than name only one of them.
    std::cerr << "kdpctl: " << path
              << ": not a kubelet checkpoint (device manager or dra_manager_state): the file is "
                 "not valid JSON\n";
    return 2;
  }
  std::optional<checkpoint::Decoded> decoded = Decode(path, *bytes, &exit_code);
  if (!decoded.has_value()) return exit_code;
  if (json) {
    std::cout << CheckpointJson(*decoded).dump(2, ' ', false,
                                               nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << "format " << checkpoint::FormatName(decoded->format) << ", checksum "
              << decoded->checksum << (decoded->checksum_ok() ? " (ok)" : " (MISMATCH)") << "\n";
    for (const checkpoint::Entry& entry : decoded->data.entries) {
      std::cout << "pod " << entry.pod_uid << " container " << entry.container_name << " "
                << entry.resource_name << ":";
      for (const auto& [node, ids] : entry.devices) {
        for (const std::string& id : ids) std::cout << " " << id << "@" << node;
      }
      std::cout << "\n";
    }
    for (const auto& [resource, ids] : decoded->data.registered_devices) {
      std::cout << "registered " << resource << ": " << ids.size() << " healthy\n";
    }
  }
  if (!decoded->checksum_ok()) {
    ReportMismatch(path, *decoded);
    return 2;
  }
  return 0;
}

int ConvertCheckpoint(const std::string& in, const std::string& out) {
  int exit_code = 0;
  std::optional<checkpoint::Decoded> decoded = Load(in, &exit_code);
  if (!decoded.has_value()) return exit_code;
  if (!decoded->checksum_ok()) {
    ReportMismatch(in, *decoded);
    return 2;
  }
  if (absl::Status written = WriteFileDurably(out, checkpoint::Encode(decoded->data));
      !written.ok()) {
    std::cerr << "kdpctl: " << written.message() << "\n";
    return 1;
  }
  std::cout << "converted " << in << " (" << checkpoint::FormatName(decoded->format) << ") to "
            << out << " (v2)\n";
  return 0;
}

}  // namespace kdp::kdpctl
