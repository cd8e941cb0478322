#include "sdk/src/dra/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "nlohmann/json.hpp"

namespace kdp::internal {
namespace {

using nlohmann::json;

constexpr char kApiVersion[] = "kdp.dev/v1";
constexpr char kKind[] = "DraDriverCheckpoint";
constexpr char kStarted[] = "PrepareStarted";
constexpr char kCompleted[] = "PrepareCompleted";

uint32_t Crc32(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a uInt length; the data is far below 4 GiB, but feed it in chunks anyway.
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    left -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

json EncodeDevice(const PreparedDevice& device) {
  json out = {{"requests", device.requests},
              {"pool", device.pool},
              {"device", device.device},
              {"cdiDeviceIDs", device.cdi_device_ids}};
  if (!device.share_id.empty()) out["shareID"] = device.share_id;
  return out;
}

// Reads a string member; false when it is present with another type.
bool ReadString(const json& object, const char* key, std::string* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

bool ReadStrings(const json& object, const char* key, std::vector<std::string>* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_array()) return false;
  for (const json& item : *it) {
    if (!item.is_string()) return false;
    out->push_back(item.get<std::string>());
  }
  return true;
}

}  // namespace

std::string EncodeDraCheckpoint(const std::string& driver, const PreparedClaims& claims) {
  json prepared = json::array();
  for (const auto& [uid, record] : claims) {
    json devices = json::array();
    for (const PreparedDevice& device : record.devices) devices.push_back(EncodeDevice(device));
    prepared.push_back({{"uid", uid},
                        {"namespace", record.ref.namespace_},
                        {"name", record.ref.name},
                        {"state", record.completed ? kCompleted : kStarted},
                        {"devices", std::move(devices)}});
  }
  json data = {{"apiVersion", kApiVersion},
               {"kind", kKind},
               {"driver", driver},
               {"preparedClaims", std::move(prepared)}};
  std::string data_text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  json file = {{"checksum", Crc32(data_text)}, {"data", data_text}};
  return file.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

absl::StatusOr<PreparedClaims> DecodeDraCheckpoint(const std::string& bytes,
                                                   const std::string& driver,
                                                   const std::string& what) {
  auto corrupt = [&what](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", what, " is corrupted: ", why,
                                            " (remove the file to start afresh)"));
  };
  json file = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object()) return corrupt("not a JSON object");
  auto checksum = file.find("checksum");
  auto data_it = file.find("data");
  if (checksum == file.end() || !checksum->is_number_unsigned() || data_it == file.end() ||
      !data_it->is_string()) {
    return corrupt("missing \"checksum\" or \"data\"");
  }
  const std::string data_text = data_it->get<std::string>();
  if (checksum->get<uint64_t>() != Crc32(data_text)) return corrupt("checksum mismatch");
  json data = json::parse(data_text, nullptr, /*allow_exceptions=*/false);
  if (data.is_discarded() || !data.is_object()) return corrupt("data is not a JSON object");

  std::string api_version, kind, file_driver;
  if (!ReadString(data, "apiVersion", &api_version) || !ReadString(data, "kind", &kind) ||
      !ReadString(data, "driver", &file_driver)) {
    return corrupt("apiVersion, kind and driver must be strings");
  }
  if (api_version != kApiVersion || kind != kKind) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", what, " has apiVersion \"", api_version, "\" kind \"", kind,
                     "\"; this SDK reads ", kApiVersion, " ", kKind));
  }
  if (file_driver != driver) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", what, " belongs to driver \"",
                                                      file_driver, "\", not \"", driver, "\""));
  }
  PreparedClaims claims;
  auto prepared = data.find("preparedClaims");
  if (prepared == data.end() || prepared->is_null()) return claims;
  if (!prepared->is_array()) return corrupt("preparedClaims must be a list");
  for (const json& item : *prepared) {
    if (!item.is_object()) return corrupt("a prepared claim must be an object");
    PreparedClaimRecord record;
    if (!ReadString(item, "uid", &record.ref.uid) ||
        !ReadString(item, "namespace", &record.ref.namespace_) ||
        !ReadString(item, "name", &record.ref.name) || record.ref.uid.empty()) {
      return corrupt("a prepared claim needs string uid, namespace and name");
    }
    std::string state;
    if (!ReadString(item, "state", &state) || (state != kStarted && state != kCompleted)) {
      return corrupt(absl::StrCat("claim ", record.ref.uid, ": state must be \"", kStarted,
                                  "\" or \"", kCompleted, "\""));
    }
    record.completed = state == kCompleted;
    auto devices = item.find("devices");
    if (devices != item.end() && !devices->is_null()) {
      if (!devices->is_array()) return corrupt("devices must be a list");
      for (const json& entry : *devices) {
        PreparedDevice device;
        if (!entry.is_object() || !ReadStrings(entry, "requests", &device.requests) ||
            !ReadString(entry, "pool", &device.pool) ||
            !ReadString(entry, "device", &device.device) ||
            !ReadStrings(entry, "cdiDeviceIDs", &device.cdi_device_ids) ||
            !ReadString(entry, "shareID", &device.share_id)) {
          return corrupt("a prepared device has a field of the wrong type");
        }
        record.devices.push_back(std::move(device));
      }
    }
    std::string uid = record.ref.uid;
    if (!claims.emplace(uid, std::move(record)).second) {
      return corrupt(absl::StrCat("claim ", uid, " is listed twice"));
    }
  }
  return claims;
}

absl::StatusOr<PreparedClaims> DraCheckpoint::Load() const {
  absl::StatusOr<std::string> bytes = ReadFile(path_);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return PreparedClaims();
    return bytes.status();
  }
  return DecodeDraCheckpoint(*bytes, driver_, path_);
}

absl::Status DraCheckpoint::Store(const PreparedClaims& claims) const {
  return WriteFileDurably(path_, EncodeDraCheckpoint(driver_, claims), 0600);
}

}  // namespace kdp::internal
