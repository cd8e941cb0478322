#include "sdk/src/dra_device_health.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kdp::internal {
namespace {

// Debian's Abseil has its own string_view, which StrCat takes.
absl::string_view Absl(std::string_view text) { return {text.data(), text.size()}; }

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The lead byte gives the sequence length and the smallest value that needs it (shorter
    // "overlong" forms are invalid).
    size_t length = 0;
    uint32_t value = 0;
    uint32_t minimum = 0;
    if ((c & 0xe0) == 0xc0) {
      length = 2;
      value = c & 0x1f;
      minimum = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3;
      value = c & 0x0f;
      minimum = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4;
      value = c & 0x07;
      minimum = 0x10000;
    } else {
      return false;  // A continuation byte first, or 0xf8..0xff.
    }
    if (text.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      value = (value << 6) | (next & 0x3f);
    }
    if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

void DeviceHealthTable::SetDevices(const std::vector<DraDevice>& devices) {
  std::map<std::string, State, std::less<>> next;
  absl::MutexLock lock(&mu_);
  bool changed = devices.size() != devices_.size();
  for (const DraDevice& device : devices) {
    auto it = devices_.find(device.name);
    if (it == devices_.end()) {
      changed = true;
      next[device.name] = State{};
    } else {
      next[device.name] = std::move(it->second);
    }
  }
  devices_ = std::move(next);
  if (changed) SignalLocked();
}

absl::Status DeviceHealthTable::Set(std::string_view device, DeviceHealthStatus health,
                                    std::string message) {
  if (health != DeviceHealthStatus::kUnknown && health != DeviceHealthStatus::kHealthy &&
      health != DeviceHealthStatus::kUnhealthy) {
    return absl::InvalidArgumentError(absl::StrCat("health of device \"", Absl(device),
                                                   "\": status ", static_cast<int>(health),
                                                   " is not a DeviceHealthStatus"));
  }
  if (!IsValidUtf8(message)) {
    return absl::InvalidArgumentError(
        absl::StrCat("health message of device \"", Absl(device), "\" is not valid UTF-8"));
  }
  absl::MutexLock lock(&mu_);
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "device \"", Absl(device), "\" is not among the devices of driver ", driver_,
        " (health is set for devices of the last Devices() list, read at DraRunner::Start() and "
        "by PublishDevices())"));
  }
  if (it->second.health == health && it->second.message == message) return absl::OkStatus();
  it->second = State{.health = health, .message = std::move(message)};
  SignalLocked();
  return absl::OkStatus();
}

std::vector<DeviceHealthEntry> DeviceHealthTable::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<DeviceHealthEntry> entries;
  entries.reserve(devices_.size());
  for (const auto& [name, state] : devices_) {
    entries.push_back({.device = name, .health = state.health, .message = state.message});
  }
  return entries;
}

int64_t DeviceHealthTable::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

void DeviceHealthTable::Subscribe(DeviceHealthSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.insert(subscriber);
  subscriber->OnHealthChanged();
}

void DeviceHealthTable::Unsubscribe(DeviceHealthSubscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(subscriber);
}

void DeviceHealthTable::SignalLocked() {
  ++generation_;
  for (DeviceHealthSubscriber* subscriber : subscribers_) subscriber->OnHealthChanged();
}

absl::Status SetUnhealthyDevices(DeviceHealthTable& table, const std::set<std::string>& unhealthy,
                                 const std::string& message) {
  absl::Status first = absl::OkStatus();
  for (const DeviceHealthEntry& entry : table.Snapshot()) {
    const bool listed = unhealthy.contains(entry.device);
    absl::Status set = table.Set(
        entry.device, listed ? DeviceHealthStatus::kUnhealthy : DeviceHealthStatus::kHealthy,
        listed ? message : "");
    if (first.ok()) first = set;
  }
  return first;
}

}  // namespace kdp::internal
