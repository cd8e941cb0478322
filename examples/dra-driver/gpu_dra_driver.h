// kdp-dra-driver's vendor logic: a DRA driver for GPUs written only against kdp's public SDK
// (kdp/dra_driver.h, kdp/cdi.h, kdp/topology.h). GpuDraDriver publishes each GPU that
// kdp::Topology finds on the PCI bus as a DRA device with attributes (index, uuid, pciAddress,
// numaNode, model, driverVersion) and capacity (memory); Prepare() writes one CDI spec per claim
// with the GPUs' DRM nodes and env vars and returns their CDI device IDs; Unprepare() removes it.
// With a health file (the device-plugin example's HealthFileWatcher and format: unhealthy GPU IDs,
// one per line, re-read every 100 ms) the GPUs listed there are reported Unhealthy on the SDK's
// DRA health stream, the others Healthy. GPU discovery is shared with the device-plugin example
// (FindGpus), so both paths see the same GPUs under the same names. main.cc only parses flags.
//
// Thread-safety: as kdp::DraDriver: Prepare() and Unprepare() are serialized by the runner;
// Devices() may run concurrently with them. SetUnhealthyGpus() may be called from any thread.
#ifndef KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_
#define KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "examples/gpu-plugin/gpu_plugin.h"
#include "kdp/cdi.h"
#include "kdp/dra_driver.h"

namespace kdp::example {

inline constexpr char kGpuDriverName[] = "gpu.example.com";
// CDI kind "gpu.example.com/gpu": one transient spec per claim,
// "<cdi root>/gpu.example.com-gpu_<claim UID>.json", devices "<claim UID>-<gpu>".
inline constexpr char kCdiVendor[] = "gpu.example.com";
inline constexpr char kCdiClass[] = "gpu";

struct GpuDraDriverOptions {
  // Discover GPUs from this hwloc XML file instead of the host.
  std::string topology_xml = {};
  // Only GPUs of this PCI vendor; any vendor when unset.
  std::optional<uint16_t> vendor_id = {};
  // The runtimes' dynamic CDI spec directory.
  std::string cdi_root = kdp::cdi::kDynamicSpecDir;
  // Published as each GPU's "memory" capacity: hwloc does not know a GPU's memory.
  std::string gpu_memory = "16Gi";
  // Seeds the GPUs' stable fake UUIDs, so two nodes never publish the same UUID.
  std::string node_name = {};
  // File listing unhealthy GPU IDs, re-read every 100 ms; empty: no health file (all Healthy).
  std::string health_file = {};
};

// The opaque configuration this driver accepts in DeviceClasses and ResourceClaims:
//   apiVersion: gpu.example.com/v1alpha1
//   kind: GpuConfig
//   sharing: {strategy: Exclusive | TimeSlicing}
// Returns the strategy, or INVALID_ARGUMENT naming the field.
absl::StatusOr<std::string> ParseGpuConfig(const std::string& parameters_json);

class GpuDraDriver final : public kdp::DraDriver {
 public:
  // Reads the topology (its error), finds the GPUs and re-reads which of them are prepared from
  // this driver's CDI specs left in `cdi_root` (a driver restart keeps the in-use check). With a
  // health file: its first state is applied before this returns (an unreadable file is its
  // UNAVAILABLE error), then it is watched until the driver is destroyed.
  static absl::StatusOr<std::unique_ptr<GpuDraDriver>> Create(GpuDraDriverOptions options);
  ~GpuDraDriver() override;  // Stops the health file watcher first.

  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override;
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override;
  absl::StatusOr<std::vector<DraDevice>> Devices() override;

  // GPU name → UID of the claim it is prepared for.
  std::map<std::string, std::string> InUse() const ABSL_LOCKS_EXCLUDED(mu_);

  // Reports exactly the GPUs in `unhealthy_gpus` Unhealthy ("listed in <health file>") and every
  // other GPU Healthy; IDs of no GPU of this node are ignored. REQUIRES: the SDK read Devices()
  // (PublishDevices() or a started runner), as SetDeviceHealth() does.
  void SetUnhealthyGpus(const std::set<std::string>& unhealthy_gpus);

 private:
  GpuDraDriver(GpuDraDriverOptions options, std::vector<Gpu> gpus,
               std::map<std::string, std::string> in_use);
  PrepareResult PrepareClaim(const Claim& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const GpuDraDriverOptions options_;
  const std::vector<Gpu> gpus_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> in_use_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HealthFileWatcher> watcher_;
};

}  // namespace kdp::example

#endif  // KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_
