// kdp-gpu-plugin's vendor logic: a real GPU device plugin written only against kdp's public SDK
// (kdp/device_plugin.h, kdp/topology.h). GpuPlugin finds the GPUs on the PCI bus through
// kdp::Topology, advertises each as one device (or as N time-sliced replicas), answers Allocate
// with the GPU's DRM nodes, an env var and a CDI name, and prefers NUMA-local sets in
// GetPreferredAllocation. HealthFileWatcher turns a text file into health changes, so a demo or a
// test can flip GPUs Unhealthy while the plugin runs. main.cc only parses flags.
//
// Thread-safety: GpuPlugin follows kdp::DevicePlugin: its overrides may be called concurrently
// from several gRPC requests. HealthFileWatcher is thread-safe. The free functions are pure.
#ifndef KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_
#define KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "kdp/device_plugin.h"
#include "kdp/preferred_allocation.h"
#include "kdp/topology.h"

namespace kdp::example {

// One physical GPU found on the PCI bus.
struct Gpu {
  // "gpu0", "gpu1", ...: the index in ascending PCI address order, so IDs are stable across
  // restarts and readable in `kubectl describe node`, unlike raw PCI addresses.
  std::string id;
  PciAddress address;
  std::vector<int> numa_nodes;
  // Host paths of the GPU's DRM nodes: "/dev/dri/card1", "/dev/dri/renderD128".
  std::vector<std::string> dev_nodes;

  friend bool operator==(const Gpu&, const Gpu&) = default;
};

// The GPUs of `topology`: PCI class 0x0300 (VGA) or 0x0302 (3D controller), of vendor `vendor_id`
// when given, in ascending PCI address order and named gpu0..gpuN-1 in that order. Empty when
// there is none (not an error: the plugin then advertises no device).
std::vector<Gpu> FindGpus(const Topology& topology, std::optional<uint16_t> vendor_id);

// Parses a PCI vendor ID in hex, with or without "0x" ("10de", "0x10DE"). INVALID_ARGUMENT,
// naming `text`, for anything else (empty, non-hex, above 0xffff).
absl::StatusOr<uint16_t> ParseVendorId(absl::string_view text);

// The GPU IDs listed in a health file's `text`: one per line, surrounding whitespace trimmed;
// blank lines and lines starting with '#' ignored. A replica ID ("gpu3::1") names its GPU
// ("gpu3"): a GPU is healthy or not as a whole.
std::set<std::string> ParseHealthFile(absl::string_view text);

// The GPU a device ID belongs to: "gpu3::1" -> "gpu3"; a plain GPU ID is returned unchanged.
std::string GpuIdOf(absl::string_view device_id);

// Watches a health file and reports the set of unhealthy GPU IDs whenever it changes. A missing
// file means "all healthy". Thread-safe; Stop() is idempotent.
class HealthFileWatcher {
 public:
  using Callback = std::function<void(const std::set<std::string>& unhealthy_gpus)>;

  // `on_change` is called from Poll(), one report at a time and in the order the changes were
  // read; it must not call back into the watcher.
  HealthFileWatcher(std::string path, Callback on_change);
  ~HealthFileWatcher();  // Stops.

  HealthFileWatcher(const HealthFileWatcher&) = delete;
  HealthFileWatcher& operator=(const HealthFileWatcher&) = delete;

  // Reads the file now and calls `on_change` when its set differs from the last one reported
  // (initially the empty set, i.e. all healthy). UNAVAILABLE, naming the path, when the file
  // exists but cannot be read; the last reported set then stays in effect.
  [[nodiscard]] absl::Status Poll() ABSL_LOCKS_EXCLUDED(mu_);

  // Polls every `interval` on a background thread until Stop(). The thread takes no process
  // signals; a failed read is printed to stderr once and retried. FAILED_PRECONDITION when
  // already started, or stopped (a watcher starts once).
  [[nodiscard]] absl::Status Start(absl::Duration interval = absl::Milliseconds(100));

  // Stops and joins the thread; after it returns `on_change` is not called by the thread again.
  void Stop() ABSL_LOCKS_EXCLUDED(thread_mu_);

 private:
  const std::string path_;
  const Callback on_change_;

  absl::Mutex mu_;  // Serialises Poll() so reports are never reordered.
  std::set<std::string> last_ ABSL_GUARDED_BY(mu_);

  absl::Mutex thread_mu_;
  absl::Notification stop_;
  std::thread thread_ ABSL_GUARDED_BY(thread_mu_);
};

struct GpuPluginOptions {
  // Extended resource name; its domain ("example.com") is also the CDI vendor.
  std::string resource_name = "example.com/gpu";
  // hwloc XML file to discover from instead of the live host; empty = live host.
  std::string topology_xml = "";
  // Only GPUs of this PCI vendor; empty = any vendor.
  std::optional<uint16_t> vendor_id = std::nullopt;
  // Devices advertised per GPU (time-slicing); 1 = the GPU itself, N > 1 =
  // "<gpu>::0".."<gpu>::N-1".
  int replicas = 1;
  // File listing unhealthy GPU IDs, re-read every 100 ms; empty = no health file.
  std::string health_file = "";
  // How GetPreferredAllocation chooses (kdp/preferred_allocation.h).
  AllocationPolicy allocation_policy = AllocationPolicy::kLinkBestFit;
};

// The GPU device plugin. Allocate gives, for the GPUs behind the requested IDs (replicas of one
// GPU count once), their DRM nodes with "rw", KDP_VISIBLE_DEVICES=<GPU IDs, PCI order> and the CDI
// names "<domain>/gpu=<GPU ID>".
//
// Preferred allocation: the SDK's DeviceGraph (kdp/preferred_allocation.h) over the GPUs' PCI
// locality, NVLink/xGMI links and NUMA nodes, under `allocation_policy` (default link-best-fit:
// the best-connected set, leaving the best-connected rest; numa-packed: fewest NUMA nodes first;
// spread). Replicas of one GPU count as one physical device, so time-sliced requests spread over
// GPUs, the least loaded first.
class GpuPlugin : public DevicePlugin, public PreferredAllocator {
 public:
  // INVALID_ARGUMENT when replicas < 1 or the resource name has no "domain/" prefix; the health
  // file's errors from HealthFileWatcher::Poll(). A readable health file is applied before this
  // returns and then watched until the plugin is destroyed.
  static absl::StatusOr<std::unique_ptr<GpuPlugin>> Create(GpuPluginOptions options);
  ~GpuPlugin() override;  // Stops the health watcher first.

  // Reads the topology (its error when it cannot be loaded) and returns every GPU's devices.
  absl::StatusOr<std::vector<Device>> Discover() override;
  // NOT_FOUND for an ID that is not in the inventory.
  absl::StatusOr<ContainerAllocation> Allocate(const AllocateRequest& request) override;
  // Never fails; IDs unknown to the inventory are not chosen (must_include is kept as given).
  absl::StatusOr<std::vector<std::string>> PreferredAllocation(
      const PreferredRequest& request) override;

  // Makes exactly `unhealthy_gpus` (GPU IDs) Unhealthy, with all their replicas, and every GPU
  // unhealthy before but not listed now Healthy again. Unknown IDs apply once discovered.
  void SetUnhealthyGpus(const std::set<std::string>& unhealthy_gpus) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit GpuPlugin(GpuPluginOptions options);
  // The device IDs advertised for GPU `gpu_id`.
  std::vector<std::string> DeviceIdsOf(const std::string& gpu_id) const;

  const GpuPluginOptions options_;
  const std::string cdi_vendor_;  // "example.com"
  absl::Mutex mu_;
  std::set<std::string> unhealthy_ ABSL_GUARDED_BY(mu_);
  // The last Discover()'s inventory with its pair scores.
  std::optional<DeviceGraph> graph_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HealthFileWatcher> watcher_;
};

}  // namespace kdp::example

#endif  // KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_
