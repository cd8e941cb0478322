// kdp::Health: a device's health, and the one rule by which device plugins
// (DevicePlugin::SetHealth(), kdp/device_plugin.h) and DRA drivers (DraDriver::SetHealth(),
// kdp/dra_driver.h) report it:
//   - Health is set by ID, from any thread, before, while or after a runner serves.
//   - A set health holds until the next one for that ID, across every Publish(). An ID that the
//     inventory does not list (yet) is remembered and applies once Discover() lists it; a device
//     that leaves the inventory and comes back keeps it.
//   - A physical device's ID ("gpu3") also sets its replicas ("gpu3::0", ...; ReplicaIds()
//     below) that have no health of their own.
//   - Devices Discover() lists and nobody set are Healthy (a device plugin's Device::health says
//     otherwise where it is set).
//   - Every change reaches the kubelet as a new complete list (ListAndWatch, or the DRA health
//     stream).
// The message says why; the DRA health stream carries it (the kubelet cuts it at 1,024 bytes),
// the device plugin API has no field for it and the SDK logs it.
//
// Thread-safety: every function here is; the enum is a value.
#ifndef KDP_HEALTH_H_
#define KDP_HEALTH_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace kdp {

// Health of one device. kUnknown exists in the DRA health API only (KEP-4680: the kubelet shows
// it in the pod status); a device plugin's SetHealth() refuses it.
enum class Health { kHealthy, kUnhealthy, kUnknown };

// "Healthy", "Unhealthy" or "Unknown", the strings of the wire protocols.
const char* HealthName(Health health);

// Time-slicing replicas, in NVIDIA's naming: the IDs device `id` is advertised under when shared
// `replicas` ways: `id` itself for 1, else "<id>::0" .. "<id>::<replicas - 1>"; none below 1.
[[nodiscard]] std::vector<std::string> ReplicaIds(const std::string& id, int replicas);

// The device a replica ID names: "gpu3::1" -> "gpu3"; any other ID unchanged.
[[nodiscard]] std::string PhysicalId(std::string_view id);
// PhysicalId() of each of `ids`, duplicates dropped, in the order of their first replica.
[[nodiscard]] std::vector<std::string> PhysicalIds(absl::Span<const std::string> ids);

}  // namespace kdp

#endif  // KDP_HEALTH_H_
