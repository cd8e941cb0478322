// kdp-dra-driver's vendor logic: a DRA driver for GPUs written only against kdp's public SDK. It
// publishes each GPU kdp::FindGpus() finds as a DRA device with attributes (index, uuid,
// pciAddress, numaNode, model, driverVersion) and capacity (memory), optionally with MIG-like
// partitions sharing counters (--partitions) or as a shareable device (--shareable, consumable
// memory; Prepare passes the share ID and memory limit), and prepares claims as
// kdp::CdiDraDriver does (one CDI spec per claim, the in-use check from the SDK's checkpoint)
// with each GPU's DRM nodes and GPU_DEVICE_<i>* env vars. main.cc hands it to
// kdp::RunDraDriver(), whose --health-file reports GPUs Unhealthy on the DRA health stream.
//
// Thread-safety: as kdp::DraDriver; the functions here are thread-safe.
#ifndef KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_
#define KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_

#include "kdp/cdi_dra_driver.h"
#include "kdp/dra_config.h"
#include "kdp/gpus.h"

namespace kdp::example {

inline constexpr char kGpuDriverName[] = "gpu.example.com";
// The opaque config DeviceClasses and ResourceClaims may carry: apiVersion
// gpu.example.com/v1alpha1, kind GpuConfig, sharing: {strategy: Exclusive | TimeSlicing}.
inline const ConfigField kSharingStrategy{.api_version = "gpu.example.com/v1alpha1",
                                          .kind = "GpuConfig",
                                          .path = "sharing.strategy",
                                          .default_value = "Exclusive",
                                          .allowed = {"Exclusive", "TimeSlicing"}};

struct GpuDraDriverOptions {
  GpuDiscovery gpus = {};                       // --topology-xml, --vendor
  std::string cdi_root = cdi::kDynamicSpecDir;  // where the per-claim CDI specs go
  std::string gpu_memory = "16Gi";  // --gpu-memory: each GPU's capacity (hwloc does not know it)
  std::string node_name = {};       // seeds the GPUs' stable fake UUIDs
  // --layout: "gpus" (whole GPUs), "partitions" (also MIG-like partitions of each GPU,
  // "gpu0-1g-0".."gpu0-1g-3", "gpu0-2g-0", "gpu0-2g-1" with attribute profile, sharing the counter
  // set "gpu0" with it) or "shareable" (claims share each GPU, consuming its memory in whole Gi).
  std::string layout = "gpus";
};

// Reads the topology (its error) and finds the GPUs. The driver's CDI kind is
// "gpu.example.com/gpu".
absl::StatusOr<std::unique_ptr<CdiDraDriver>> NewGpuDraDriver(GpuDraDriverOptions options);

}  // namespace kdp::example

#endif  // KDP_EXAMPLES_DRA_DRIVER_GPU_DRA_DRIVER_H_
