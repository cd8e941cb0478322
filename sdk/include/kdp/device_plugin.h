// kdp::DevicePlugin is the base class a vendor subclasses to serve one extended resource (for
// example "example.com/gpu") over the kubelet's device plugin API v1beta1. The vendor implements
// Discover() (the full inventory) and, optionally, Allocate() and the capability interfaces
// PreferredAllocator and ContainerPreStarter; the SDK's runner (kdp/plugin_runner.h) serves the
// gRPC API, registers with the kubelet and advertises exactly the options the class implements.
//
// Thread-safety: overrides may be called concurrently from several gRPC requests; SetHealth() and
// Refresh() may be called from any thread, including from inside an override.
#ifndef KDP_DEVICE_PLUGIN_H_
#define KDP_DEVICE_PLUGIN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kdp {

// Health of one device as the kubelet sees it.
enum class Health { kHealthy, kUnhealthy };

// "Healthy" or "Unhealthy", the strings of the wire protocol.
const char* HealthName(Health health);

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

// Time-slicing replicas, in NVIDIA's naming: the IDs device `id` is advertised under when shared
// `replicas` ways: `id` itself for 1, else "<id>::0" .. "<id>::<replicas - 1>"; none below 1.
[[nodiscard]] std::vector<std::string> ReplicaIds(const std::string& id, int replicas);

// The device a replica ID names: "gpu3::1" -> "gpu3"; any other ID unchanged.
[[nodiscard]] std::string PhysicalId(std::string_view id);
// PhysicalId() of each of `ids`, duplicates dropped, in the order of their first replica.
[[nodiscard]] std::vector<std::string> PhysicalIds(absl::Span<const std::string> ids);

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

  // Returns the complete inventory. Called once when the runner starts and again on Refresh().
  // An error at start fails the runner's Start(); an error on Refresh() keeps the last inventory.
  // Device IDs must be non-empty and unique (INVALID_ARGUMENT otherwise).
  virtual absl::StatusOr<std::vector<Device>> Discover() = 0;

  // Answers Allocate for one container. The default is DefaultAllocate(). Errors travel to the
  // kubelet, which fails the pod's admission with them.
  virtual absl::StatusOr<ContainerAllocation> Allocate(const AllocateRequest& request);

  // Overrides the health of the devices `ids` until the next SetHealth() for them (also across
  // Refresh()). Unknown IDs are remembered and apply once Discover() reports them. A physical ID
  // ("gpu3") applies to its replicas ("gpu3::0", ...; see ReplicaIds()) too, unless a replica has
  // an override of its own. Every change reaches each open ListAndWatch stream as a new full
  // snapshot.
  void SetHealth(absl::Span<const std::string> ids, Health health);
  void SetHealth(const std::string& id, Health health);

  // Calls Discover() again and publishes the result (health overrides still apply). Returns
  // Discover()'s error, leaving the previous inventory in place.
  absl::Status Refresh();

  // The current inventory with health overrides applied, in Discover() order.
  std::vector<Device> Devices() const;

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
