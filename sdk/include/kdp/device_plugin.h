// kdp::DevicePlugin is the base class a vendor subclasses to serve one extended resource (for
// example "example.com/gpu") over the kubelet's device plugin API v1beta1. The vendor implements
// Discover() (the full inventory) and, optionally, Allocate() and the capability interfaces
// PreferredAllocator and ContainerPreStarter; the SDK's runner (kdp/plugin_runner.h) serves the
// gRPC API, registers with the kubelet and advertises exactly the options the class implements.
// The vocabulary is DraDriver's: Discover(), Publish(), SetHealth() (kdp/health.h), Devices().
//
// Thread-safety: overrides may be called concurrently from several gRPC requests; SetHealth(),
// SetUnhealthyDevices() and Publish() may be called from any thread, including from inside an
// override.
#ifndef KDP_DEVICE_PLUGIN_H_
#define KDP_DEVICE_PLUGIN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kdp/health.h"

namespace kdp {

// A file or directory bind-mounted into the container.
struct Mount {
  std::string container_path = {};
  std::string host_path = {};
  bool read_only = false;

  friend bool operator==(const Mount&, const Mount&) = default;
};

// A device node made available in the container.
struct DeviceSpec {
  std::string container_path = {};
  std::string host_path = {};
  // Any combination of "r", "w" and "m" (mknod).
  std::string permissions = "rw";

  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// What a container needs to use its devices: the answer to Allocate for one container.
struct ContainerAllocation {
  std::map<std::string, std::string> envs = {};
  std::vector<Mount> mounts = {};
  std::vector<DeviceSpec> devices = {};
  std::map<std::string, std::string> annotations = {};
  // Fully qualified CDI device names, e.g. "example.com/gpu=gpu0".
  std::vector<std::string> cdi_devices = {};

  friend bool operator==(const ContainerAllocation&, const ContainerAllocation&) = default;
};

// One device of the inventory. The runtime fields (specs, mounts, envs, cdi_devices) describe what
// DefaultAllocate() hands a container that gets this device; a plugin overriding Allocate() may
// leave them empty.
struct Device {
  // Unique within the resource; the kubelet documents at most 63 characters.
  std::string id = {};
  Health health = Health::kHealthy;
  // Linux NUMA node numbers the device is attached to; empty when unknown (no topology is sent).
  std::vector<int> numa_nodes = {};

  std::vector<DeviceSpec> specs = {};
  std::vector<Mount> mounts = {};
  std::map<std::string, std::string> envs = {};
  std::vector<std::string> cdi_devices = {};

  friend bool operator==(const Device&, const Device&) = default;
};

// Allocate request for one container: the device IDs the kubelet picked.
struct AllocateRequest {
  std::vector<std::string> device_ids = {};
};

// GetPreferredAllocation request for one container.
struct PreferredRequest {
  // Devices the kubelet may choose from (healthy, free, and topology-aligned where it applies).
  std::vector<std::string> available = {};
  // Devices that must be part of the answer (already chosen, e.g. reused from init containers).
  std::vector<std::string> must_include = {};
  // Total number of devices the container needs (must_include counts towards it).
  int size = 0;
};

// ReplicaIds(), PhysicalId() and PhysicalIds() (time-slicing replicas) are in kdp/health.h,
// whose health rule they are part of.

class HealthFileWatcher;

namespace internal {
class DeviceState;
class RunnerImpl;
}  // namespace internal

// Base class of a device plugin serving one resource. Non-copyable, non-movable: the runner keeps
// a pointer to it while it serves.
class DevicePlugin {
 public:
  // `resource_name` must be a valid extended resource name ("vendor.com/name"); the runner checks
  // it with the kubelet's rules before registering.
  explicit DevicePlugin(std::string resource_name);
  virtual ~DevicePlugin();

  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  const std::string& resource_name() const { return resource_name_; }

  // Returns the complete inventory. Called once when the runner starts and again by Publish().
  // An error at start fails the runner's Start(); an error in Publish() keeps the last inventory.
  // Device IDs must be non-empty and unique, health Healthy or Unhealthy (INVALID_ARGUMENT).
  virtual absl::StatusOr<std::vector<Device>> Discover() = 0;

  // Answers Allocate for one container. The default is DefaultAllocate(). Errors travel to the
  // kubelet, which fails the pod's admission with them.
  virtual absl::StatusOr<ContainerAllocation> Allocate(const AllocateRequest& request);

  // Sets the health of `ids` under the rule of kdp/health.h (unknown IDs remembered, a physical
  // ID sets its replicas); each change reaches every open ListAndWatch stream as a new full list.
  // `message` is logged (the device plugin API has no field for it). INVALID_ARGUMENT, nothing
  // set, for Health::kUnknown or a message that is not UTF-8.
  [[nodiscard]] absl::Status SetHealth(absl::Span<const std::string> ids, Health health,
                                       std::string_view message = "");
  [[nodiscard]] absl::Status SetHealth(const std::string& id, Health health,
                                       std::string_view message = "");

  // Sets the IDs of `unhealthy` Unhealthy and clears every health set before: the complete
  // unhealthy set (a health file, a monitor's poll). Errors as SetHealth().
  [[nodiscard]] absl::Status SetUnhealthyDevices(const std::set<std::string>& unhealthy,
                                                 std::string_view message = "");

  // Calls Discover() again and publishes the result (health set by SetHealth() still applies).
  // Returns Discover()'s error or INVALID_ARGUMENT, leaving the previous inventory in place.
  [[nodiscard]] absl::Status Publish();

  // The published inventory with health applied, in Discover() order.
  [[nodiscard]] std::vector<Device> Devices() const;

  [[deprecated("use Publish(); removed in 0.3")]] absl::Status Refresh();

 protected:
  // Merges the runtime fields of the requested devices: specs, mounts and CDI names in request
  // order without duplicates, envs first-wins. NOT_FOUND names an ID that is not in the inventory.
  absl::StatusOr<ContainerAllocation> DefaultAllocate(const AllocateRequest& request) const;

  // `request` with its IDs in inventory (Discover()) order, duplicates dropped, IDs not in the
  // inventory last (sorted): the kubelet sends IDs in no particular order, and answering in
  // inventory order gives one set of devices one answer.
  [[nodiscard]] AllocateRequest InInventoryOrder(const AllocateRequest& request) const;

 private:
  friend class internal::RunnerImpl;
  friend class HealthFileWatcher;

  const std::string resource_name_;
  const std::shared_ptr<internal::DeviceState> state_;
};

// Optional capability: a plugin that also inherits PreferredAllocator advertises
// get_preferred_allocation_available and answers GetPreferredAllocation.
class PreferredAllocator {
 public:
  virtual ~PreferredAllocator() = default;

  // Returns the preferred device IDs (normally `request.size` of them, all of `must_include`
  // among them). The kubelet treats the answer as advice: IDs it did not offer are ignored.
  virtual absl::StatusOr<std::vector<std::string>> PreferredAllocation(
      const PreferredRequest& request) = 0;
};

// Optional capability: a plugin that also inherits ContainerPreStarter advertises
// pre_start_required; the kubelet calls it before every start of a container that holds devices.
class ContainerPreStarter {
 public:
  virtual ~ContainerPreStarter() = default;

  // Prepares `device_ids` for a container about to start (reset, wipe, ...). An error fails the
  // container start.
  virtual absl::Status PreStartContainer(const std::vector<std::string>& device_ids) = 0;
};

}  // namespace kdp

#endif  // KDP_DEVICE_PLUGIN_H_
