#include "manager/src/conformance/plugin_answers.h"

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kdp::manager::conformance {
namespace {

bool ValidPermissions(const std::string& permissions) {
  if (permissions.empty()) return false;
  for (char c : permissions) {
    if (c != 'r' && c != 'w' && c != 'm') return false;
  }
  return true;
}

bool Absolute(const std::string& path) { return absl::StartsWith(path, "/"); }

}  // namespace

std::string DeviceListProblems(const v1beta1::ListAndWatchResponse& list) {
  constexpr size_t kShown = 4;
  std::vector<std::string> problems;
  std::map<std::string, int> count;
  for (const v1beta1::Device& device : list.devices()) {
    if (device.id().empty()) problems.push_back("a device with an empty ID");
    if (++count[device.id()] == 2 && !device.id().empty()) {
      problems.push_back(absl::StrCat("device ", device.id(), " listed twice"));
    }
    if (device.health() != "Healthy" && device.health() != "Unhealthy") {
      problems.push_back(
          absl::StrCat("device ", device.id(), " with health \"", device.health(), "\""));
    }
    if (device.has_topology()) {
      for (const v1beta1::NUMANode& node : device.topology().nodes()) {
        if (node.id() < 0) {
          problems.push_back(absl::StrCat("device ", device.id(), " on NUMA node ", node.id()));
        }
      }
    }
  }
  if (problems.size() > kShown) {
    problems.resize(kShown);
    problems.push_back("…");
  }
  return absl::StrJoin(problems, "; ");
}

std::string AllocateProblems(const v1beta1::AllocateRequest& request,
                             const v1beta1::AllocateResponse& response) {
  if (response.container_responses_size() != request.container_requests_size()) {
    return absl::StrCat(response.container_responses_size(), " container responses for ",
                        request.container_requests_size(), " container requests");
  }
  std::vector<std::string> problems;
  for (const v1beta1::ContainerAllocateResponse& container : response.container_responses()) {
    for (const v1beta1::DeviceSpec& device : container.devices()) {
      if (!Absolute(device.container_path()) || !Absolute(device.host_path())) {
        problems.push_back(absl::StrCat("device \"", device.host_path(), "\" → \"",
                                        device.container_path(), "\": paths must be absolute"));
      }
      if (!ValidPermissions(device.permissions())) {
        problems.push_back(absl::StrCat("device \"", device.container_path(), "\" permissions \"",
                                        device.permissions(), "\": one or more of r, w, m"));
      }
    }
    for (const v1beta1::Mount& mount : container.mounts()) {
      if (!Absolute(mount.container_path()) || !Absolute(mount.host_path())) {
        problems.push_back(absl::StrCat("mount \"", mount.host_path(), "\" → \"",
                                        mount.container_path(), "\": paths must be absolute"));
      }
    }
    for (const auto& [name, value] : container.envs()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        problems.push_back(absl::StrCat("environment variable name \"", name, "\""));
      }
    }
    for (const v1beta1::CDIDevice& cdi : container.cdi_devices()) {
      const size_t slash = cdi.name().find('/');
      const size_t equals = cdi.name().find('=');
      if (slash == 0 || slash == std::string::npos || equals == std::string::npos ||
          equals < slash + 2 || equals + 1 == cdi.name().size()) {
        problems.push_back(absl::StrCat("CDI device \"", cdi.name(),
                                        "\": not a fully qualified vendor/class=name"));
      }
    }
  }
  return absl::StrJoin(problems, "; ");
}

std::string PreferredProblems(const v1beta1::ContainerPreferredAllocationRequest& request,
                              const v1beta1::PreferredAllocationResponse& response) {
  if (response.container_responses_size() != 1) {
    return absl::StrCat(response.container_responses_size(), " container responses for 1 request");
  }
  const auto& answer = response.container_responses(0).deviceids();
  const std::set<std::string> available(request.available_deviceids().begin(),
                                        request.available_deviceids().end());
  const std::set<std::string> chosen(answer.begin(), answer.end());
  const std::string got = absl::StrCat("[", absl::StrJoin(answer, ", "), "] with must_include [",
                                       absl::StrJoin(request.must_include_deviceids(), ", "), "]");
  if (answer.size() != request.allocation_size() ||
      chosen.size() != static_cast<size_t>(answer.size())) {
    return absl::StrCat(got, ": not ", request.allocation_size(), " distinct devices");
  }
  for (const std::string& id : chosen) {
    if (!available.contains(id)) return absl::StrCat(got, ": ", id, " was not available");
  }
  for (const std::string& id : request.must_include_deviceids()) {
    if (!chosen.contains(id)) return absl::StrCat(got, ": without ", id);
  }
  return "";
}

}  // namespace kdp::manager::conformance
