#include "manager/src/devicemanager/allocator.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <memory>

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

PickRequest PickRequestOf(const AllocationRequest& request) {
  return {.pod_uid = request.pod_uid,
          .container = request.container,
          .resource = request.resource,
          .required = request.required,
          .existing = request.existing,
          .reusable = request.reusable,
          .numa_affinity = request.numa_affinity};
}

absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const AllocationRequest& request,
                                                           const PreferredAllocationFn& preferred) {
  std::optional<FreeDevices> free;
  if (request.devices.has_value()) {
    free.emplace(std::make_shared<const ResourceDevices>(*request.devices));
    for (const std::string& id : request.in_use) free->Hold(id);
  }
  return DevicesToAllocate(
      PickRequestOf(request),
      [&](const std::function<void(const FreeDevices*)>& fn) {
        fn(free.has_value() ? &*free : nullptr);
      },
      preferred);
}

absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const PickRequest& request,
                                                           const WithFreeDevices& with_free,
                                                           const PreferredAllocationFn& preferred) {
  using Tier = FreeDevices::Tier;
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
  std::vector<std::string> picked;
  std::set<std::string> picked_set;
  // Takes `id` unless taken already; true while more are needed (ForEach's "go on").
  auto take = [&](const std::string& id) {
    if (needed == 0) return false;
    if (picked_set.insert(id).second) {
      picked.push_back(id);
      --needed;
    }
    return needed > 0;
  };
  auto allocated_less = [&] {
    return absl::InternalError(errors::AllocatedLess(request.required, request.required - needed));
  };

  absl::Status status;
  bool done = false;
  // With GetPreferredAllocation: what the plugin is offered (natural order), and whether the
  // aligned devices alone can serve the request (flow j) or not (flow k).
  std::vector<std::string> offer;
  bool aligned_only = false;
  with_free([&](const FreeDevices* free) {
    // c–e run before the needed == 0 shortcut (kubernetes #109595): a pod must not be admitted
    // without its devices after a node reboot while the plugin is not back yet.
    if (free == nullptr) {
      status = absl::FailedPreconditionError(errors::UnregisteredDevice(request.resource));
      return;
    }
    if (free->healthy() == 0) {
      status = absl::FailedPreconditionError(errors::NoHealthyDevices(request.resource));
      return;
    }
    if (request.existing.has_value()) {
      for (const std::string& id : *request.existing) {
        if (free->IsHealthy(id)) continue;
        status =
            absl::FailedPreconditionError(errors::PreviouslyAllocatedUnhealthy(request.resource));
        return;
      }
    }
    if (needed == 0) {
      done = true;
      return;
    }
    // g. Devices of the pod's finished init containers first.
    for (const std::string& id : DeviceSet(request.reusable.begin(), request.reusable.end())) {
      if (!take(id)) break;
    }
    if (needed == 0) {
      done = true;
      return;
    }
    // h. The rest from healthy devices no container holds.
    if (free->size() < needed) {
      status = absl::ResourceExhaustedError(
          errors::DevicesUnavailable(request.resource, needed, free->size()));
      return;
    }
    const std::optional<std::set<int64_t>>& affinity = request.numa_affinity;
    if (!preferred) {
      // Without the plugin's advice, j and k both come down to: aligned devices, then unaligned,
      // then those without a node, each in natural order.
      for (Tier tier : {Tier::kAligned, Tier::kUnaligned, Tier::kNoAffinity}) {
        free->ForEach(tier, affinity, take);
        if (needed == 0) break;
      }
      if (needed == 0) {
        done = true;
      } else {
        status = allocated_less();
      }
      return;
    }
    std::vector<std::string> aligned;
    free->ForEach(Tier::kAligned, affinity, [&](const std::string& id) {
      aligned.push_back(id);
      return true;
    });
    aligned_only = needed < static_cast<int64_t>(aligned.size());
    if (aligned_only) {
      offer = std::move(aligned);
    } else {
      // k. Every aligned device first; the plugin chooses among all the free ones.
      for (const std::string& id : aligned) {
        if (!take(id)) break;
      }
      if (needed == 0) {
        done = true;
        return;
      }
      offer.reserve(static_cast<size_t>(free->size()));
      free->ForEachFree([&](const std::string& id) {
        offer.push_back(id);
        return true;
      });
    }
  });
  if (!status.ok()) return status;
  if (done) return picked;

  // The plugin is offered the devices and those already picked, and must include the latter.
  std::vector<std::string> must_include = picked;
  std::sort(must_include.begin(), must_include.end(), NaturalLess);
  std::vector<std::string> offered;
  if (must_include.empty()) {
    offered = std::move(offer);  // the usual case: no copy of 10,000 IDs
  } else {
    offered.reserve(offer.size() + must_include.size());
    std::merge(offer.begin(), offer.end(), must_include.begin(), must_include.end(),
               std::back_inserter(offered), NaturalLess);
    offered.erase(std::unique(offered.begin(), offered.end()), offered.end());
    offer = {};
  }
  absl::StatusOr<std::vector<std::string>> answer =
      preferred(offered, picked, static_cast<int>(request.required));
  if (!answer.ok()) return answer.status();
  // Only IDs that were offered count: the plugin's answer is advice. (Those picked already were
  // offered too; take() skips them.)
  for (const std::string& id : *answer) {
    if (needed == 0) break;
    if (std::binary_search(offered.begin(), offered.end(), id, NaturalLess)) take(id);
  }
  if (needed == 0) return picked;
  if (aligned_only) {
    // j. Fill from the aligned devices.
    for (const std::string& id : offered) {
      if (!take(id)) break;
    }
    if (needed == 0) return picked;
    return allocated_less();
  }
  // k. Fill from the unaligned devices, then those without a node: of those free when the
  // plugin was asked (a device freed meanwhile was not offered, and is not taken).
  with_free([&](const FreeDevices* free) {
    if (free == nullptr) return;
    for (Tier tier : {Tier::kUnaligned, Tier::kNoAffinity}) {
      if (needed == 0) break;
      free->ForEach(tier, request.numa_affinity, [&](const std::string& id) {
        return !std::binary_search(offered.begin(), offered.end(), id, NaturalLess) || take(id);
      });
    }
  });
  if (needed == 0) return picked;
  return allocated_less();
}

}  // namespace kdp::manager
