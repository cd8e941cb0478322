#include "examples/gpu-plugin/gpu_plugin.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kdp/gpus.h"

namespace kdp::example {

void AddGpuPluginFlags(Flags& flags, GpuPluginOptions& o) {
  o.gpus.AddFlags(flags);
  flags.AddString("--resource-name", &o.resource_name,
                  "extended resource to advertise; its domain is also the CDI vendor");
  flags.AddInt("--replicas", &o.replicas,
               "devices advertised per GPU for time-slicing; above 1, IDs are <gpu>::<k>", 1, 1024);
  flags.AddValue("--allocation-policy", &o.allocation_policy, ParseAllocationPolicy,
                 "how GetPreferredAllocation chooses: link-best-fit (default; the best-connected "
                 "GPUs by NVLink and PCIe locality, leaving the best-connected rest), numa-packed "
                 "(fewest NUMA nodes first) or spread (across NUMA nodes)");
}

GpuPlugin::GpuPlugin(GpuPluginOptions options)
    : DevicePlugin(options.resource_name),
      GraphAllocator(options.allocation_policy),
      options_(std::move(options)) {}

absl::StatusOr<std::vector<Device>> GpuPlugin::Discover() {
  absl::StatusOr<std::unique_ptr<Topology>> topology = options_.gpus.LoadTopology();
  if (!topology.ok()) return topology.status();
  const std::string domain = options_.resource_name.substr(0, options_.resource_name.find('/'));
  std::vector<Device> devices;
  std::vector<AllocatableDevice> placement;
  for (const Gpu& gpu : FindGpus(**topology, options_.gpus.vendor_id)) {
    // Every replica carries its GPU's runtime fields; DefaultAllocate() de-duplicates them.
    Device device{.numa_nodes = gpu.numa_nodes, .cdi_devices = {domain + "/gpu=" + gpu.id}};
    for (const std::string& path : gpu.dev_nodes) device.specs.push_back({path, path, "rw"});
    for (const std::string& id : ReplicaIds(gpu.id, options_.replicas)) {
      device.id = id;
      devices.push_back(device);
      placement.push_back({id, gpu.id, gpu.numa_nodes, gpu.address});
    }
  }
  if (absl::Status s = SetDeviceGraph(std::move(placement), **topology); !s.ok()) return s;
  return devices;
}

absl::StatusOr<ContainerAllocation> GpuPlugin::Allocate(const AllocateRequest& request) {
  // Inventory (PCI) order, whatever order the kubelet sent: one set of devices, one answer. Unknown
  // IDs stay in, so that DefaultAllocate() rejects them with NOT_FOUND.
  const AllocateRequest in_order = InInventoryOrder(request);
  absl::StatusOr<ContainerAllocation> allocation = DefaultAllocate(in_order);
  if (!allocation.ok()) return allocation;
  allocation->envs["KDP_VISIBLE_DEVICES"] = absl::StrJoin(PhysicalIds(in_order.device_ids), ",");
  return allocation;
}

}  // namespace kdp::example
