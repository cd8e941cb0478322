// The device choice of one (container, resource): the kubelet's devicesToAllocate and
// filterByAffinity (both in pkg/kubelet/cm/devicemanager/manager.go), as pure functions over a
// snapshot, so every branch is testable without a plugin. Deterministic where the kubelet iterates
// Go sets at random: candidates are taken in natural ID order ("gpu2" before "gpu10").
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_ALLOCATOR_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_ALLOCATOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/devicemanager/device_registry.h"

namespace kdp::manager {

// Orders strings with embedded numbers by value: "gpu2" < "gpu10".
bool NaturalLess(const std::string& a, const std::string& b);
struct NaturalOrder {
  bool operator()(const std::string& a, const std::string& b) const { return NaturalLess(a, b); }
};
using DeviceSet = std::set<std::string, NaturalOrder>;

struct AllocationRequest {
  std::string pod_uid;
  std::string container;
  std::string resource;
  // The container's limit for the resource.
  int64_t required = 0;
  // The registry's view of the resource; nullopt when it never registered.
  std::optional<ResourceDevices> devices;
  // Devices the container already holds for the resource (container restart), if any.
  std::optional<std::set<std::string>> existing;
  // Devices of the resource held by any container (reservations included).
  std::set<std::string> in_use;
  // Devices of finished init containers of the same pod, taken first.
  std::set<std::string> reusable;
  // The topology manager's NUMA affinity for the container; nullopt = no affinity.
  std::optional<std::set<int64_t>> numa_affinity;
};

// GetPreferredAllocation(available, must_include, size); nullptr when the plugin does not
// advertise it.
using PreferredAllocationFn = std::function<absl::StatusOr<std::vector<std::string>>(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size)>;

// Returns the devices to allocate (empty: nothing to do) or the kubelet's error text as
// FAILED_PRECONDITION (RESOURCE_EXHAUSTED when too few devices are free).
absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const AllocationRequest& request,
                                                           const PreferredAllocationFn& preferred);

struct AffinitySplit {
  DeviceSet aligned;
  DeviceSet unaligned;
  DeviceSet no_affinity;
};

// filterByAffinity (the kubelet's, in devicemanager/manager.go): splits `available` by the NUMA
// affinity.
AffinitySplit FilterByAffinity(const ResourceDevices& devices, const DeviceSet& available,
                               const std::optional<std::set<int64_t>>& numa_affinity);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_ALLOCATOR_H_
