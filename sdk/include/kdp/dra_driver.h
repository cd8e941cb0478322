// kdp::DraDriver is the base class a vendor subclasses to serve a Dynamic Resource Allocation
// (DRA) driver on one node: Prepare() and Unprepare() claims the scheduler allocated, and
// Discover() the node's devices (or DiscoverPools() its pools), published as ResourceSlices
// (device model: kdp/dra_device.h). kdp::DraRunner (kdp/dra_runner.h)
// does the rest, as Go's kubeletplugin helper does: it serves the kubelet's DRAPlugin service (v1
// and v1beta1), registers through the plugin watcher, GETs each ResourceClaim, passes only this
// driver's results and configs, serializes the calls, keeps its own checkpoint of prepared claims,
// publishes the pools as ResourceSlices (by default one pool named after the node) and streams the
// devices' health (DRAResourceHealth, v1 and v1alpha1). Vendor work, as with the Go helper: CDI
// specs (kdp/cdi_dra_driver.h helps), device-in-use checks, detecting the health of a device. The
// vocabulary is DevicePlugin's: Discover(), Publish(), SetHealth() (kdp/health.h), Devices().
//
// Thread-safety: Prepare() and Unprepare() are never called concurrently with each other (the
// runner serializes them); Discover() may run concurrently with them. Publish(), SetHealth(),
// SetUnhealthyDevices(), Devices() and PreparedClaims() may be called from any thread, including
// from inside an override.
#ifndef KDP_DRA_DRIVER_H_
#define KDP_DRA_DRIVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kdp/dra_device.h"  // IWYU pragma: export
#include "kdp/health.h"

namespace kdp {

// Identifies a claim as the kubelet names it in NodePrepareResources/NodeUnprepareResources.
struct ClaimRef {
  std::string namespace_ = {};
  std::string name = {};
  std::string uid = {};

  friend bool operator==(const ClaimRef&, const ClaimRef&) = default;
};

// One entry of status.allocation.devices.results whose driver is this driver.
struct AllocatedDevice {
  std::string request = {};  // "<request>" or "<request>/<subrequest>" (firstAvailable)
  std::string driver = {};
  std::string pool = {};
  std::string device = {};
  bool admin_access = false;
  std::string share_id = {};  // consumable capacity (1.34+); empty when not shared
  // consumedCapacity: capacity name -> quantity this allocation consumes of a shared device.
  std::map<std::string, std::string> consumed_capacity = {};

  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

// One opaque configuration for this driver, from status.allocation.devices.config.
struct OpaqueConfig {
  std::string source = {};                 // "FromClass" or "FromClaim"
  std::vector<std::string> requests = {};  // empty: applies to every request
  std::string parameters_json = {};        // opaque.parameters, compact JSON
  friend bool operator==(const OpaqueConfig&, const OpaqueConfig&) = default;
};

// A ResourceClaim as the driver needs it: the devices allocated to this driver and this driver's
// configs, class configs first, then claim configs (later entries win, as upstream documents).
struct Claim {
  ClaimRef ref = {};
  std::vector<AllocatedDevice> results = {};
  std::vector<OpaqueConfig> configs = {};

  friend bool operator==(const Claim&, const Claim&) = default;
};

// One device the driver prepared for a claim, as the kubelet receives it.
struct PreparedDevice {
  // Requests this device serves (subrequest suffixes are stripped by the SDK); empty: all.
  std::vector<std::string> requests = {};
  std::string pool = {};
  std::string device = {};
  std::vector<std::string> cdi_device_ids = {};  // fully qualified, e.g. "vendor.com/gpu=uid-gpu0"
  std::string share_id = {};                     // sent on v1 only

  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

// The outcome for one claim: an error fails this claim only (the kubelet retries it).
struct PrepareResult {
  absl::Status status = absl::OkStatus();
  std::vector<PreparedDevice> devices = {};
};

using DeviceHealthStatus [[deprecated("use kdp::Health; removed in 0.3")]] = Health;

class HealthFileWatcher;

namespace internal {
class DraDriverLink;
class DraNodeServer;
class DraRunnerImpl;
}  // namespace internal

// Base class of a DRA driver. Non-copyable, non-movable: the runner keeps a pointer to it.
class DraDriver {
 public:
  // `driver_name` (e.g. "gpu.example.com") must be a DNS subdomain of at most 63 characters; the
  // runner checks it.
  explicit DraDriver(std::string driver_name);
  virtual ~DraDriver();

  DraDriver(const DraDriver&) = delete;
  DraDriver& operator=(const DraDriver&) = delete;

  const std::string& driver_name() const { return driver_name_; }

  // Prepares `claims` (allocated, with UIDs checked against the API server) and returns one result
  // per claim UID; a UID missing from the map fails that claim. Must be idempotent: the kubelet
  // repeats NodePrepareResources (after a restart, a reboot), and the SDK calls Prepare again for a
  // claim it already recorded, so a driver re-creates what vanished (CDI specs in a tmpfs
  // /var/run/cdi, kubernetes#141433) and returns the same devices.
  virtual std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) = 0;

  // Undoes Prepare for claims the SDK's checkpoint lists: every claim Prepare was called for,
  // even when it failed (it may have done part of the work); claims never prepared, or already
  // unprepared, succeed without a call. Returns one status per UID; a missing UID or an error
  // keeps the claim recorded and the kubelet retries.
  virtual std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) = 0;

  // The node's devices, published as one pool named after the node. Called at Start() (an error
  // fails it) and by Publish(), through DiscoverPools()' default. Override this or DiscoverPools();
  // the default returns UNIMPLEMENTED.
  virtual absl::StatusOr<std::vector<DraDevice>> Discover();

  // Every pool this node plugin publishes (kdp/dra_device.h), for shared counters or several
  // pools; all get the node's nodeName and the Node as owner. Default: one pool, named after the
  // node (empty name), holding Discover()'s devices.
  virtual absl::StatusOr<std::vector<DraPool>> DiscoverPools();

  // Calls DiscoverPools() again, validates the result and hands it to the running runner's
  // publisher, which reconciles the ResourceSlices in the background (retrying API errors with
  // backoff). Returns its error or INVALID_ARGUMENT for an invalid pool or device, leaving the
  // previous pools in place; OK without a running runner (nothing to publish yet; they are kept).
  [[nodiscard]] absl::Status Publish();

  // The devices of the node's pool (the one named after the node) that the SDK last validated (at
  // Start(), by Publish()): Discover()'s list by default. The health streams report these.
  [[nodiscard]] std::vector<DraDevice> Devices() const;
  // Every pool the SDK last validated, names resolved.
  [[nodiscard]] std::vector<DraPool> Pools() const;

  // Sets the health of `devices` (kdp/health.h) and sends every health stream the complete list
  // at once; `message` says why (shown with the kubelet's ResourceHealthStatusMessage gate). OK
  // also without a runner; INVALID_ARGUMENT, nothing set, for a value outside the enum or a
  // message that is not UTF-8.
  [[nodiscard]] absl::Status SetHealth(absl::Span<const std::string> devices, Health health,
                                       std::string_view message = "");
  [[nodiscard]] absl::Status SetHealth(const std::string& device, Health health,
                                       std::string_view message = "");

  // Sets the IDs of `unhealthy` Unhealthy with `message` and clears every health set before: a
  // complete statement of what is unhealthy now (a health file, a monitor's poll); the others
  // are as Discover() says. Errors as SetHealth().
  [[nodiscard]] absl::Status SetUnhealthyDevices(const std::set<std::string>& unhealthy,
                                                 std::string_view message = "");

  // The claims the SDK's checkpoint records as prepared by this driver, by UID, with the devices
  // Prepare() returned: read at the runner's Start() (so a restarted driver knows them), updated
  // when each NodePrepareResources or NodeUnprepareResources call has been recorded. A claim
  // whose Prepare() has not succeeded is not listed; inside Prepare(), the claims of that call are
  // not listed yet. Empty until a runner serving the driver has read its checkpoint. For
  // device-in-use checks.
  [[nodiscard]] std::map<std::string, std::vector<PreparedDevice>> PreparedClaims() const;

  [[deprecated("use Publish(); removed in 0.3")]] absl::Status PublishDevices();
  [[deprecated("use SetHealth(); removed in 0.3")]] absl::Status SetDeviceHealth(
      std::string_view device, Health health, std::string_view message = "");

 private:
  friend class internal::DraRunnerImpl;
  friend class internal::DraNodeServer;
  friend class HealthFileWatcher;

  const std::string driver_name_;
  const std::shared_ptr<internal::DraDriverLink> link_;
};

}  // namespace kdp

// Code written before the runner moved to its own header (kdp/dra_runner.h) still finds it here.
#include "kdp/dra_runner.h"  // IWYU pragma: export

#endif  // KDP_DRA_DRIVER_H_
