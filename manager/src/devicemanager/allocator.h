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
#include "manager/src/devicemanager/free_devices.h"

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
// FAILED_PRECONDITION (RESOURCE_EXHAUSTED when too few devices are free). Indexes the request's
// devices first (O(devices log devices)); the manager keeps the index instead (below).
absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const AllocationRequest& request,
                                                           const PreferredAllocationFn& preferred);

// The same request against a kept index of the free devices.
struct PickRequest {
  std::string pod_uid;
  std::string container;
  std::string resource;
  int64_t required = 0;
  std::optional<std::set<std::string>> existing = std::nullopt;
  std::set<std::string> reusable = {};
  std::optional<std::set<int64_t>> numa_affinity = std::nullopt;
};
// The pick part of `request` (everything but the devices, which the index holds).
PickRequest PickRequestOf(const AllocationRequest& request);
// Runs its argument with the resource's free devices (nullptr: the resource is not registered)
// under the lock that guards them. Called more than once per pick, never across `preferred`.
using WithFreeDevices = std::function<void(const std::function<void(const FreeDevices*)>&)>;

// DevicesToAllocate over `with_free`: the same devices and errors as above. Without
// GetPreferredAllocation it costs O((required + reusable) × log devices), whatever the number of
// free devices; with it, O(free devices) to list them in the request to the plugin.
absl::StatusOr<std::vector<std::string>> DevicesToAllocate(const PickRequest& request,
                                                           const WithFreeDevices& with_free,
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
