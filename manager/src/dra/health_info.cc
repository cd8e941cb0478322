#include "manager/src/dra/health_info.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/go_json.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::dra {
namespace {

std::string DeviceKey(const std::string& pool, const std::string& device) {
  return absl::StrCat(pool, "/", device);
}

// Go's time.Time MarshalJSON (RFC 3339 with nanoseconds, trailing zeros dropped), in UTC.
std::string GoTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

absl::Duration EffectiveTimeout(const DeviceHealth& device) {
  // The kubelet substitutes the default for a zero timeout; a negative one (only from a foreign
  // file, buildDeviceHealth never stores one) is treated the same way.
  return device.health_check_timeout > absl::ZeroDuration() ? device.health_check_timeout
                                                            : kDefaultHealthTimeout;
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("dra_health_state: ", what));
}

}  // namespace

const char* DeviceHealthStatusName(DeviceHealthStatus health) {
  switch (health) {
    case DeviceHealthStatus::kHealthy:
      return "Healthy";
    case DeviceHealthStatus::kUnhealthy:
      return "Unhealthy";
    case DeviceHealthStatus::kUnknown:
      break;
  }
  return "Unknown";
}

std::string TruncateHealthMessage(std::string message) {
  if (message.size() <= kResourceHealthMessageMaxLength) return message;
  message.resize(kResourceHealthMessageMaxLength - 3);
  message += "...";
  return message;
}

DeviceHealth BuildDeviceHealth(const WatchedDeviceHealth& device) {
  DeviceHealth out;
  out.pool_name = device.pool_name;
  out.device_name = device.device_name;
  switch (device.health) {
    case WireHealthStatus::kHealthy:
      out.health = DeviceHealthStatus::kHealthy;
      break;
    case WireHealthStatus::kUnhealthy:
      out.health = DeviceHealthStatus::kUnhealthy;
      break;
    case WireHealthStatus::kUnknown:
      out.health = DeviceHealthStatus::kUnknown;
      break;
  }
  out.last_updated = absl::FromUnixSeconds(device.last_updated_time);
  if (device.health_check_timeout_seconds > 0) {
    out.health_check_timeout = absl::Seconds(device.health_check_timeout_seconds);
  } else {
    if (device.health_check_timeout_seconds < 0) {
      KDP_LOG_DEBUG("Ignoring negative health check timeout, using default", "poolName",
                    device.pool_name, "deviceName", device.device_name, "providedTimeout",
                    device.health_check_timeout_seconds);
    }
    out.health_check_timeout = kDefaultHealthTimeout;
  }
  out.message = TruncateHealthMessage(device.message);
  return out;
}

std::string EncodeHealthState(
    const std::map<std::string, std::map<std::string, DeviceHealth>>& drivers) {
  // Written by hand so the bytes are Go's (field order, escaping), like the claim checkpoint.
  std::string out = "{";
  bool first_driver = true;
  for (const auto& [driver, devices] : drivers) {
    if (!first_driver) out += ",";
    first_driver = false;
    AppendGoJsonString(driver, &out);
    out += ":{\"Devices\":{";
    bool first_device = true;
    for (const auto& [key, device] : devices) {
      if (!first_device) out += ",";
      first_device = false;
      AppendGoJsonString(key, &out);
      out += ":{\"PoolName\":";
      AppendGoJsonString(device.pool_name, &out);
      out += ",\"DeviceName\":";
      AppendGoJsonString(device.device_name, &out);
      out += ",\"Health\":";
      AppendGoJsonString(DeviceHealthStatusName(device.health), &out);
      out += ",\"LastUpdated\":";
      AppendGoJsonString(GoTime(device.last_updated), &out);
      absl::StrAppend(&out, ",\"HealthCheckTimeout\":",
                      absl::ToInt64Nanoseconds(device.health_check_timeout), ",\"Message\":");
      AppendGoJsonString(device.message, &out);
      out += "}";
    }
    out += "}}";
  }
  out += "}";
  return out;
}

absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> DecodeHealthState(
    absl::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json.begin(), json.end(), nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Invalid("not JSON");
  // Go unmarshals null into an empty map.
  if (doc.is_null()) return std::map<std::string, std::map<std::string, DeviceHealth>>{};
  if (!doc.is_object()) return Invalid("not a JSON object of drivers");
  std::map<std::string, std::map<std::string, DeviceHealth>> drivers;
  for (const auto& driver_item : doc.items()) {
    const std::string& driver = driver_item.key();
    const nlohmann::json& state = driver_item.value();
    if (!state.is_object()) return Invalid(absl::StrCat("driver ", driver, ": not an object"));
    std::map<std::string, DeviceHealth>& devices = drivers[driver];
    auto found = state.find("Devices");
    if (found == state.end() || found->is_null()) continue;
    if (!found->is_object()) return Invalid(absl::StrCat("driver ", driver, ": Devices"));
    for (const auto& device_item : found->items()) {
      const std::string& key = device_item.key();
      const nlohmann::json& entry = device_item.value();
      const std::string where = absl::StrCat("driver ", driver, ", device ", key, ": ");
      if (!entry.is_object()) return Invalid(absl::StrCat(where, "not an object"));
      DeviceHealth device;
      auto text = [&](const char* field, std::string* out) -> absl::Status {
        auto it = entry.find(field);
        if (it == entry.end() || it->is_null()) return absl::OkStatus();
        if (!it->is_string()) return Invalid(absl::StrCat(where, field, " is not a string"));
        *out = it->get<std::string>();
        return absl::OkStatus();
      };
      std::string health;
      std::string last_updated;
      for (absl::Status s :
           {text("PoolName", &device.pool_name), text("DeviceName", &device.device_name),
            text("Health", &health), text("LastUpdated", &last_updated),
            text("Message", &device.message)}) {
        if (!s.ok()) return s;
      }
      if (health == "Healthy") {
        device.health = DeviceHealthStatus::kHealthy;
      } else if (health == "Unhealthy") {
        device.health = DeviceHealthStatus::kUnhealthy;
      }
      if (!last_updated.empty()) {
        std::string err;
        if (!absl::ParseTime(absl::RFC3339_full, last_updated, &device.last_updated, &err)) {
          return Invalid(absl::StrCat(where, "LastUpdated \"", last_updated, "\": ", err));
        }
      }
      if (auto it = entry.find("HealthCheckTimeout"); it != entry.end() && !it->is_null()) {
        if (!it->is_number_integer()) {
          return Invalid(absl::StrCat(where, "HealthCheckTimeout is not an integer"));
        }
        device.health_check_timeout = absl::Nanoseconds(it->get<int64_t>());
      }
      devices[key] = std::move(device);
    }
  }
  return drivers;
}

HealthInfoCache::HealthInfoCache(HealthInfoCacheOptions options) : options_(std::move(options)) {
  if (options_.state_file.empty()) return;
  absl::StatusOr<std::string> data = ReadFile(options_.state_file);
  if (!data.ok()) {
    if (data.status().code() != absl::StatusCode::kNotFound) {
      KDP_LOG_ERROR("Failed to load health checkpoint, proceeding with empty cache", "path",
                    options_.state_file, "err", data.status().message());
    }
    return;
  }
  auto decoded = DecodeHealthState(*data);
  if (!decoded.ok()) {
    KDP_LOG_ERROR("Failed to load health checkpoint, proceeding with empty cache", "path",
                  options_.state_file, "err", decoded.status().message());
    return;
  }
  absl::MutexLock lock(&mu_);
  drivers_ = *std::move(decoded);
}

absl::Time HealthInfoCache::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

bool HealthInfoCache::Fresh(const DeviceHealth& device, absl::Time now) {
  return now - device.last_updated <= EffectiveTimeout(device);
}

DeviceHealth HealthInfoCache::GetHealthInfo(const std::string& driver, const std::string& pool,
                                            const std::string& device) const {
  DeviceHealth result;
  result.pool_name = pool;
  result.device_name = device;
  const absl::Time now = Now();
  absl::MutexLock lock(&mu_);
  auto d = drivers_.find(driver);
  if (d == drivers_.end()) return result;
  auto it = d->second.find(DeviceKey(pool, device));
  if (it == d->second.end()) return result;
  // A stale entry keeps the default Unknown and no message.
  if (!Fresh(it->second, now)) return result;
  return it->second;
}

std::vector<DeviceHealth> HealthInfoCache::UpdateHealthInfo(const std::string& driver,
                                                            std::vector<DeviceHealth> devices) {
  std::vector<DeviceHealth> changed;
  uint64_t generation = 0;
  std::string data;
  {
    const absl::Time now = Now();
    absl::MutexLock lock(&mu_);
    std::map<std::string, DeviceHealth>& current = drivers_[driver];
    std::set<std::string> reported;
    // Phase 1: the report replaces what was known of each device it lists.
    for (DeviceHealth& device : devices) {
      device.last_updated = now;
      std::string key = DeviceKey(device.pool_name, device.device_name);
      reported.insert(key);
      auto it = current.find(key);
      if (it == current.end() || it->second.health != device.health ||
          it->second.message != device.message ||
          it->second.health_check_timeout != device.health_check_timeout) {
        changed.push_back(device);
      }
      current[key] = std::move(device);
    }
    // Phase 2: a device the driver stopped reporting turns Unknown once its timeout passed.
    for (auto& [key, device] : current) {
      if (reported.count(key) > 0) continue;
      if (device.health != DeviceHealthStatus::kUnknown && !Fresh(device, now)) {
        device.health = DeviceHealthStatus::kUnknown;
        device.message.clear();
        device.last_updated = now;
        changed.push_back(device);
      }
    }
    if (changed.empty()) return changed;
    generation = ++generation_;
    if (!options_.state_file.empty()) data = EncodeHealthState(drivers_);
  }
  // Phase 3, outside the lock: persist.
  Save(generation, data);
  return changed;
}

void HealthInfoCache::ClearDriver(const std::string& driver) {
  uint64_t generation = 0;
  std::string data;
  {
    absl::MutexLock lock(&mu_);
    if (drivers_.erase(driver) == 0) return;
    generation = ++generation_;
    if (!options_.state_file.empty()) data = EncodeHealthState(drivers_);
  }
  Save(generation, data);
}

std::map<std::string, std::map<std::string, DeviceHealth>> HealthInfoCache::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return drivers_;
}

int64_t HealthInfoCache::save_failures() const {
  absl::MutexLock lock(&write_mu_);
  return save_failures_;
}

void HealthInfoCache::Save(uint64_t generation, const std::string& data) {
  if (options_.state_file.empty()) return;
  absl::MutexLock lock(&write_mu_);
  if (generation <= written_generation_) return;  // a newer snapshot is on disk already
  absl::Status written = WriteFileDurably(options_.state_file, data);
  if (!written.ok()) {
    ++save_failures_;
    KDP_LOG_ERROR(
        "Failed to save health checkpoint after update. Kubelet restart may lose the device "
        "health information.",
        "path", options_.state_file, "err", written.message());
    return;
  }
  written_generation_ = generation;
}

}  // namespace kdp::manager::dra
