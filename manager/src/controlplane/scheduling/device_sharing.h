// The per-device rules of the structured allocator that KEP-5055 (device taints) and KEP-5075
// (consumable capacity) add, as k8s.io/dynamic-resource-allocation/structured has them: whether a
// request's tolerations let it use a tainted device, how much of a shared device's capacity one
// allocation consumes (the request policy applied), and the shareID of a new share. The claim
// allocator (claim_allocator.h) and the device taint eviction controller
// (resourceclaim/device_taint_eviction.h) use them.
//
// Thread-safety: pure functions; RandomShareId is thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_DEVICE_SHARING_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_DEVICE_SHARING_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager::scheduling {

// DeviceToleration.ToleratesTaint: the effect (when set) and key (when set) match, and the value
// does for operator Equal (or empty); Exists tolerates any value.
bool ToleratesTaint(const resourceapi::DeviceToleration& toleration,
                    const resourceapi::DeviceTaint& taint);

// Every NoSchedule and NoExecute taint of `device` tolerated by one of `tolerations` (effect
// None is informational).
bool AllTaintsTolerated(const resourceapi::Device& device,
                        const std::vector<resourceapi::DeviceToleration>& tolerations);

// The quantity `text` holds; nullopt when unset or not a quantity (the API server refuses those).
std::optional<Quantity> ParseQuantity(const std::optional<std::string>& text);

// Upstream calculateConsumedCapacity: what one allocation consumes of `capacity` (its value
// `value`): the request's amount, or the policy's default, or the whole capacity, rounded up to
// the policy's next valid value (validValues) or step from min (validRange).
Quantity ConsumedAmount(const std::optional<Quantity>& requested,
                        const resourceapi::DeviceCapacity& capacity, const Quantity& value);

// Upstream violatesPolicy: an amount the policy does not allow (above max, off the step, not one
// of the valid values).
bool ViolatesPolicy(const Quantity& amount, const resourceapi::DeviceCapacity& capacity);

// What one allocation with capacity.requests `requests` consumes of `device` (upstream
// CmpRequestOverCapacity without the other allocations): for a device with
// allowMultipleAllocations every capacity's ConsumedAmount; for another device nothing (an empty
// map), but each requested capacity must be at most the device's. nullopt when the request names
// a capacity the device lacks ("some requested capacity has not been defined"), the policy refuses
// the amount, or it exceeds the capacity. `values` are the device's capacities, parsed (the
// allocator parses them once per device, not once per request and device).
std::optional<std::map<std::string, Quantity>> CapacityConsumption(
    const resourceapi::Device& device, const std::map<std::string, Quantity>& values,
    const std::map<std::string, std::string>& requests);

// A new shareID: a random UUID (version 4), as upstream's allocator makes them.
std::string RandomShareId();

}  // namespace kdp::manager::scheduling

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_SCHEDULING_DEVICE_SHARING_H_
