// Time-slicing replica IDs (kdp/health.h).
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kdp/health.h"

namespace kdp {

std::vector<std::string> ReplicaIds(const std::string& id, int replicas) {
  if (replicas == 1) return {id};
  std::vector<std::string> ids;
  for (int k = 0; k < replicas; ++k) ids.push_back(absl::StrCat(id, "::", k));
  return ids;
}

std::string PhysicalId(std::string_view id) { return std::string(id.substr(0, id.find("::"))); }

std::vector<std::string> PhysicalIds(absl::Span<const std::string> ids) {
  std::vector<std::string> physical;
  for (const std::string& id : ids) {
    std::string device = PhysicalId(id);
    if (std::find(physical.begin(), physical.end(), device) == physical.end()) {
      physical.push_back(std::move(device));
    }
  }
  return physical;
}

}  // namespace kdp
