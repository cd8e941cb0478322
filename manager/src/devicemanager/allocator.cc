#include "manager/src/devicemanager/allocator.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Compare numerically without overflow: strip leading zeros, then length, then digits.
      size_t i_nz = i, j_nz = j;
      while (i_nz + 1 < i_end && a[i_nz] == '0') ++i_nz;
      while (j_nz + 1 < j_end && b[j_nz] == '0') ++j_nz;
      if (i_end - i_nz != j_end - j_nz) return i_end - i_nz < j_end - j_nz;
      int cmp = a.compare(i_nz, i_end - i_nz, b, j_nz, j_end - j_nz);
      if (cmp != 0) return cmp < 0;
      if (i_end - i != j_end - j) return i_end - i < j_end - j;  // "01" after "1"
      i = i_end;
      j = j_end;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

AffinitySplit FilterByAffinity(const ResourceDevices& devices, const DeviceSet& available,
                               const std::optional<std::set<int64_t>>& numa_affinity) {
  AffinitySplit split;
  bool has_topology = std::any_of(devices.devices.begin(), devices.devices.end(),
                                  [](const auto& d) { return !d.second.numa_nodes.empty(); });
  if (!has_topology || !numa_affinity.has_value() || numa_affinity->empty()) {
    split.no_affinity = available;
    return split;
  }
  // Group the available devices per NUMA node (-1: no topology).
  std::map<int64_t, DeviceSet> per_node;
  for (const std::string& id : available) {
    auto it = devices.devices.find(id);
    if (it == devices.devices.end() || it->second.numa_nodes.empty()) {
      per_node[-1].insert(id);
      continue;
    }
    for (int64_t node : it->second.numa_nodes) per_node[node].insert(id);
  }
  // Nodes in the affinity first, then the other real nodes, then -1; within the first two groups
  // by ascending device count (ties by node ID, for determinism).
  std::vector<int64_t> order;
  for (const auto& [node, ids] : per_node) {
    if (node != -1) order.push_back(node);
  }
  auto rank = [&](int64_t node) { return numa_affinity->contains(node) ? 0 : 1; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    if (per_node[x].size() != per_node[y].size()) return per_node[x].size() < per_node[y].size();
    return x < y;
  });
  if (per_node.contains(-1)) order.push_back(-1);
  std::set<std::string> placed;
  for (int64_t node : order) {
    for (const std::string& id : per_node[node]) {
      if (!placed.insert(id).second) continue;
      if (node == -1) {
        split.no_affinity.insert(id);
      } else if (numa_affinity->contains(node)) {
        split.aligned.insert(id);
      } else {
        split.unaligned.insert(id);
      }
    }
  }
  return split;
}

absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const AllocationRequest& request,
                                                           const PreferredAllocationFn& preferred) {
  int64_t needed = request.required;
  // a. A container that already holds devices (a restart) may not change its request.
  if (request.existing.has_value()) {
    needed -= static_cast<int64_t>(request.existing->size());
    if (needed != 0) {
      return absl::FailedPreconditionError(
          errors::ChangedRequest(request.pod_uid, request.container, request.resource,
                                 static_cast<int64_t>(request.existing->size()), request.required));
    }
  }
  // c–e run before the needed == 0 shortcut (kubernetes #109595): a pod must not be admitted
  // without its devices after a node reboot while the plugin is not back yet.
  if (!request.devices.has_value()) {
    return absl::FailedPreconditionError(errors::UnregisteredDevice(request.resource));
  }
  std::set<std::string> healthy = request.devices->Healthy();
  if (healthy.empty()) {
    return absl::FailedPreconditionError(errors::NoHealthyDevices(request.resource));
  }
  if (request.existing.has_value() &&
      !std::includes(healthy.begin(), healthy.end(), request.existing->begin(),
                     request.existing->end())) {
    return absl::FailedPreconditionError(errors::PreviouslyAllocatedUnhealthy(request.resource));
  }
  if (needed == 0) return std::vector<std::string>{};

  std::vector<std::string> picked;
  std::set<std::string> picked_set;
  // Takes devices from `from` (in its order) until nothing more is needed; true when done.
  auto take_from = [&](const auto& from) {
    for (const std::string& id : from) {
      if (needed == 0) break;
      if (!picked_set.insert(id).second) continue;
      picked.push_back(id);
      --needed;
    }
    return needed == 0;
  };

  // g. Devices of the pod's finished init containers first.
  if (take_from(DeviceSet(request.reusable.begin(), request.reusable.end()))) return picked;

  // h. The rest from healthy devices no container holds.
  DeviceSet available;
  for (const std::string& id : healthy) {
    if (!request.in_use.contains(id)) available.insert(id);
  }
  if (static_cast<int64_t>(available.size()) < needed) {
    return absl::ResourceExhaustedError(errors::DevicesUnavailable(
        request.resource, needed, static_cast<int64_t>(available.size())));
  }

  AffinitySplit split = FilterByAffinity(*request.devices, available, request.numa_affinity);
  auto ask_plugin = [&](const DeviceSet& offered) -> absl::StatusOr<std::vector<std::string>> {
    if (!preferred) return std::vector<std::string>{};
    DeviceSet offer = offered;
    offer.insert(picked.begin(), picked.end());
    return preferred(std::vector<std::string>(offer.begin(), offer.end()), picked,
                     static_cast<int>(request.required));
  };
  // Only IDs that were offered count: the plugin's answer is advice.
  auto offered_only = [](const std::vector<std::string>& ids, const DeviceSet& offered) {
    std::vector<std::string> out;
    for (const std::string& id : ids) {
      if (offered.contains(id)) out.push_back(id);
    }
    return out;
  };

  // j. Everything fits in the aligned set: let the plugin choose within it.
  if (needed < static_cast<int64_t>(split.aligned.size())) {
    absl::StatusOr<std::vector<std::string>> answer = ask_plugin(split.aligned);
    if (!answer.ok()) return answer.status();
    if (take_from(offered_only(*answer, split.aligned))) return picked;
    if (take_from(split.aligned)) return picked;
    return absl::InternalError(errors::AllocatedLess(request.required, request.required - needed));
  }
  // k. Take every aligned device, let the plugin choose among the rest, then fill.
  if (take_from(split.aligned)) return picked;
  absl::StatusOr<std::vector<std::string>> answer = ask_plugin(available);
  if (!answer.ok()) return answer.status();
  if (take_from(offered_only(*answer, available))) return picked;
  if (take_from(split.unaligned)) return picked;
  if (take_from(split.no_affinity)) return picked;
  return absl::InternalError(errors::AllocatedLess(request.required, request.required - needed));
}

}  // namespace kdp::manager
