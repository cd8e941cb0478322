#include "sdk/src/dra/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
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

std::string EncodeDraCheckpoint(const std::string& driver, const PreparedClaims& claims,
                                uint64_t generation) {
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
  if (generation > 0) data["generation"] = generation;
  std::string data_text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  json file = {{"checksum", Crc32(data_text)}, {"data", data_text}};
  return file.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

absl::StatusOr<PreparedClaims> DecodeDraCheckpoint(const std::string& bytes,
                                                   const std::string& driver,
                                                   const std::string& what, uint64_t* generation) {
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
  auto stored_generation = data.find("generation");
  if (stored_generation != data.end() && !stored_generation->is_number_unsigned()) {
    return corrupt("generation must be a non-negative integer");
  }
  if (generation != nullptr) {
    *generation = stored_generation == data.end() ? 0 : stored_generation->get<uint64_t>();
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

// Where the next Store goes, and what this process knows to be on disk.
struct DraCheckpoint::Slots {
  absl::Mutex mu;
  bool loaded ABSL_GUARDED_BY(mu) = false;
  int target ABSL_GUARDED_BY(mu) = 0;                // the slot the next Store overwrites
  uint64_t next_generation ABSL_GUARDED_BY(mu) = 1;  // what the next Store writes
  // The highest generation known durable: written with a sync here, or synced at Load. Files of
  // earlier kdp (generation 0) were written durably.
  uint64_t durable_generation ABSL_GUARDED_BY(mu) = 0;
};

DraCheckpoint::DraCheckpoint(std::string path, std::string driver)
    : path_(std::move(path)), driver_(std::move(driver)), slots_(std::make_shared<Slots>()) {}

namespace {

// fdatasync of an existing file (a slot another instance, or this one before a crash, wrote).
absl::Status SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  const int synced = ::fdatasync(fd);
  const int error = errno;
  ::close(fd);
  return synced == 0 ? absl::OkStatus() : ErrnoStatus(error, absl::StrCat("fdatasync ", path));
}

absl::Status SyncDirectoryOf(const std::string& path) {
  const std::string dir = DirectoryOf(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open directory ", dir));
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  return synced == 0 ? absl::OkStatus() : ErrnoStatus(error, absl::StrCat("fsync ", dir));
}

}  // namespace

absl::StatusOr<PreparedClaims> DraCheckpoint::Load() const {
  Slots& slots = *slots_;
  absl::MutexLock lock(&slots.mu);
  return LoadLocked(slots);
}

absl::StatusOr<PreparedClaims> DraCheckpoint::LoadLocked(Slots& slots) const {
  slots.mu.AssertHeld();
  struct Read {
    bool exists = false;
    absl::StatusOr<PreparedClaims> claims = PreparedClaims();
    uint64_t generation = 0;
  };
  Read read[2];
  for (int slot = 0; slot < 2; ++slot) {
    absl::StatusOr<std::string> bytes = ReadFile(SlotPath(slot));
    if (absl::IsNotFound(bytes.status())) continue;
    if (!bytes.ok()) return bytes.status();
    read[slot].exists = true;
    read[slot].claims =
        DecodeDraCheckpoint(*bytes, driver_, SlotPath(slot), &read[slot].generation);
    // Another driver's file, or a format this SDK does not read: never a torn write.
    if (absl::IsFailedPrecondition(read[slot].claims.status())) return read[slot].claims;
  }
  int newest = -1;
  for (int slot = 0; slot < 2; ++slot) {
    if (!read[slot].exists || !read[slot].claims.ok()) continue;
    if (newest < 0 || read[slot].generation > read[newest].generation) newest = slot;
  }
  if (newest < 0) {
    for (const Read& r : read) {
      if (r.exists) return r.claims.status();  // neither slot parses
    }
    slots.loaded = true;  // neither exists
    slots.target = 0;
    slots.next_generation = 1;
    return PreparedClaims();
  }
  // Before the other slot is overwritten, the newest must be on disk.
  if (read[newest].generation > slots.durable_generation) {
    if (absl::Status synced = SyncFile(SlotPath(newest)); !synced.ok()) return synced;
    slots.durable_generation = read[newest].generation;
  }
  slots.loaded = true;
  slots.target = 1 - newest;
  slots.next_generation = read[newest].generation + 1;
  return *std::move(read[newest].claims);
}

absl::Status DraCheckpoint::Store(const PreparedClaims& claims, bool sync) const {
  Slots& slots = *slots_;
  absl::MutexLock lock(&slots.mu);
  if (!slots.loaded) {
    // Where to write follows from what is there; unreadable slots are overwritten.
    absl::StatusOr<PreparedClaims> loaded = LoadLocked(slots);
    if (!loaded.ok() && !absl::IsDataLoss(loaded.status())) return loaded.status();
    slots.loaded = true;
  }
  const std::string path = SlotPath(slots.target);
  std::string bytes = EncodeDraCheckpoint(driver_, claims, slots.next_generation);
  // Padded with spaces to a whole number of 4 KiB blocks: a slot then keeps its size from one
  // write to the next, so its fdatasync has only the data to write, no size change to commit
  // through the file system's journal (and a full disk cannot refuse the overwrite). JSON
  // readers skip the trailing whitespace.
  constexpr size_t kSlotBlock = 4096;
  bytes.resize((bytes.size() / kSlotBlock + 1) * kSlotBlock, ' ');
  bool created = true;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  }
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  absl::Status status = [&]() -> absl::Status {
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t n =
          ::pwrite(fd, bytes.data() + written, bytes.size() - written, static_cast<off_t>(written));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, absl::StrCat("write ", path));
      written += static_cast<size_t>(n);
    }
    struct stat st;
    const bool same_size = ::fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(bytes.size());
    if (!same_size && ::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) {
      return ErrnoStatus(errno, absl::StrCat("truncate ", path));
    }
    if (sync && ::fdatasync(fd) != 0) return ErrnoStatus(errno, absl::StrCat("fdatasync ", path));
    return absl::OkStatus();
  }();
  ::close(fd);
  // A new slot's name must survive a power loss too (once per slot).
  if (status.ok() && created) status = SyncDirectoryOf(path);
  if (!status.ok()) {
    // The slot may now hold half a file: the next Load skips it, and its state stays the other
    // slot's. Loading again decides where the next write goes.
    slots.loaded = false;
    return status;
  }
  if (sync) slots.durable_generation = slots.next_generation;
  ++slots.next_generation;
  return absl::OkStatus();
}

}  // namespace kdp::internal
