#include "sdk/src/health/health_overrides.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace kdp {

const char* HealthName(Health health) {
  switch (health) {
    case Health::kHealthy:
      return "Healthy";
    case Health::kUnhealthy:
      return "Unhealthy";
    case Health::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

namespace internal {
namespace {

// Debian's Abseil has its own string_view, which StrCat takes.
absl::string_view Absl(std::string_view text) { return {text.data(), text.size()}; }

}  // namespace

bool HealthOverrides::Set(absl::Span<const std::string> ids, Health health,
                          std::string_view message) {
  bool changed = false;
  for (const std::string& id : ids) {
    HealthOverride next{.health = health, .message = std::string(message)};
    auto [it, inserted] = overrides_.try_emplace(id, next);
    if (inserted) {
      changed = true;
    } else if (!(it->second == next)) {
      it->second = std::move(next);
      changed = true;
    }
  }
  return changed;
}

bool HealthOverrides::ReplaceWithUnhealthy(const std::set<std::string>& unhealthy,
                                           std::string_view message) {
  std::map<std::string, HealthOverride, std::less<>> next;
  for (const std::string& id : unhealthy) {
    next.emplace(id, HealthOverride{.health = Health::kUnhealthy, .message = std::string(message)});
  }
  if (next == overrides_) return false;
  overrides_ = std::move(next);
  return true;
}

const HealthOverride* HealthOverrides::Find(const std::string& id) const {
  auto it = overrides_.find(id);
  if (it == overrides_.end()) it = overrides_.find(PhysicalId(id));
  return it == overrides_.end() ? nullptr : &it->second;
}

absl::Status ValidateHealth(std::string_view owner, std::string_view id, Health health,
                            std::string_view message, bool allow_unknown) {
  if (health != Health::kHealthy && health != Health::kUnhealthy &&
      !(allow_unknown && health == Health::kUnknown)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Absl(owner), ": health of device \"", Absl(id), "\": ", static_cast<int>(health),
        health == Health::kUnknown
            ? " (Unknown: the device plugin API has Healthy and Unhealthy only)"
            : " is not a kdp::Health value"));
  }
  if (!IsValidUtf8(message)) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(owner), ": health message of device \"",
                                                   Absl(id), "\" is not valid UTF-8"));
  }
  return absl::OkStatus();
}

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

}  // namespace internal
}  // namespace kdp
