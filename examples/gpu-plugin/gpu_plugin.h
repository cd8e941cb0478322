// kdp-gpu-plugin's vendor logic: a GPU device plugin written only against kdp's public SDK.
// GpuPlugin advertises each GPU kdp::FindGpus() finds (or N time-sliced replicas of it), answers
// Allocate with the GPUs' DRM nodes, an env var and a CDI name, and prefers well-connected sets
// (kdp::GraphAllocator over a kdp::DeviceGraph). main.cc hands it to kdp::RunPlugins(), whose
// --health-file can flip GPUs Unhealthy while it runs (a GPU's ID covers its replicas).
//
// Thread-safety: as kdp::DevicePlugin: overrides may be called concurrently from several gRPC
// requests.
#ifndef KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_
#define KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_

#include "kdp/device_plugin.h"
#include "kdp/flags.h"
#include "kdp/gpus.h"
#include "kdp/preferred_allocation.h"

namespace kdp::example {

struct GpuPluginOptions {
  // Extended resource name; its domain ("example.com") is also the CDI vendor.
  std::string resource_name = "example.com/gpu";
  GpuDiscovery gpus = {};  // --topology-xml, --vendor
  int replicas = 1;        // devices per GPU (time-slicing, kdp::ReplicaIds)
  AllocationPolicy allocation_policy = AllocationPolicy::kLinkBestFit;
};

// Binds the plugin's flags to `options` (borrowed until the factory has run).
void AddGpuPluginFlags(Flags& flags, GpuPluginOptions& o);

// Allocate gives, for the GPUs behind the requested IDs (replicas of one GPU count once), their DRM
// nodes ("rw"), KDP_VISIBLE_DEVICES=<GPU IDs, PCI order> and the CDI names "<domain>/gpu=<GPU>".
class GpuPlugin : public DevicePlugin, public GraphAllocator {
 public:
  explicit GpuPlugin(GpuPluginOptions options);

  // Every GPU's devices; the topology's error when it cannot be loaded.
  absl::StatusOr<std::vector<Device>> Discover() override;
  // NOT_FOUND for an ID that is not in the inventory.
  absl::StatusOr<ContainerAllocation> Allocate(const AllocateRequest& request) override;

 private:
  const GpuPluginOptions options_;
};

}  // namespace kdp::example

#endif  // KDP_EXAMPLES_GPU_PLUGIN_GPU_PLUGIN_H_
