#include "manager/kdpctl/checkpoint_command.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::kdpctl {
namespace {

namespace checkpoint = manager::checkpoint;

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

// Reads and decodes; on failure prints the reason and sets *exit_code.
std::optional<checkpoint::Decoded> Load(const std::string& path, int* exit_code) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) {
    std::cerr << "kdpctl: " << bytes.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  absl::StatusOr<checkpoint::Decoded> decoded = checkpoint::Decode(*bytes);
  if (!decoded.ok()) {
    std::cerr << "kdpctl: " << path << ": " << decoded.status().message() << "\n";
    *exit_code = 2;
    return std::nullopt;
  }
  return *std::move(decoded);
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

int InspectCheckpoint(const std::string& path, bool json) {
  int exit_code = 0;
  std::optional<checkpoint::Decoded> decoded = Load(path, &exit_code);
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
