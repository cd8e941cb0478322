#include "examples/dra-driver/gpu_dra_driver.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kdp::example {
namespace {

// A UUID-shaped ID that is stable for a GPU on a node: real drivers read it from the hardware
// (NVML, ROCm SMI); the example derives it from the node name and the PCI address.
std::string FakeUuid(const std::string& node, const PciAddress& address) {
  const uint64_t a = std::hash<std::string>{}(absl::StrCat(node, "/", address.ToString()));
  const uint64_t b = std::hash<std::string>{}(absl::StrCat(address.ToString(), "/", node));
  return absl::StrFormat("GPU-%08x-%04x-%04x-%04x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                         b >> 48, b & 0xffffffffffff);
}

Quantities Slices(int n) { return {{"compute", std::to_string(n)}, {"memory", std::to_string(n)}}; }

const std::vector<PartitionProfile> kProfiles = {{"1g", 4, Slices(1)}, {"2g", 2, Slices(2)}};

class GpuDraDriver final : public CdiDraDriver {
 public:
  GpuDraDriver(GpuDraDriverOptions options, std::vector<Gpu> gpus)
      : CdiDraDriver(kGpuDriverName, "gpu.example.com/gpu", options.cdi_root),
        options_(std::move(options)),
        gpus_(std::move(gpus)) {}

  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    std::vector<DraDevice> devices;
    for (const Gpu& gpu : gpus_) {
      DraDevice device{.name = gpu.id, .capacity = {{"memory", options_.gpu_memory}}};
      device.attributes["index"] = static_cast<int64_t>(devices.size());
      device.attributes["uuid"] = FakeUuid(options_.node_name, gpu.address);
      device.attributes["pciAddress"] = gpu.address.ToString();
      if (!gpu.numa_nodes.empty()) device.attributes["numaNode"] = int64_t{gpu.numa_nodes[0]};
      device.attributes["model"] = std::string("example-gpu");
      device.attributes["driverVersion"] = VersionValue{.semver = "1.0.0"};
      if (options_.layout == "shareable")
        MakeShareable(device, "memory", "1Gi");  // claims take whole Gi
      devices.push_back(std::move(device));
    }
    return devices;
  }

  // --layout=partitions: each GPU's 4 compute and 4 memory slices are a counter set the whole GPU
  // takes entirely, its four 1g partitions one of each, its two 2g partitions two. Discover()
  // cannot fail.
  absl::StatusOr<std::vector<DraPool>> DiscoverPools() override {
    if (options_.layout != "partitions") return DraDriver::DiscoverPools();
    return std::vector<DraPool>{PartitionedPool(*Discover(), Slices(4), kProfiles)};
  }

  absl::StatusOr<cdi::ContainerEdits> DeviceEdits(const Claim& claim, const AllocatedDevice& device,
                                                  size_t i) override {
    absl::StatusOr<std::string> strategy = ConfigString(claim.configs, kSharingStrategy);
    if (!strategy.ok()) return strategy.status();
    // The SDK checked that DiscoverPools() lists it; a partition "gpu0-1g-2" is on "gpu0".
    const std::string id = device.device.substr(0, device.device.find('-'));
    auto gpu = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& g) { return g.id == id; });
    cdi::ContainerEdits edits{
        .env = {absl::StrCat("GPU_DEVICE_", i, "=", device.device),
                absl::StrCat("GPU_DEVICE_", i, "_PCI_ADDRESS=", gpu->address.ToString()),
                absl::StrCat("GPU_DEVICE_", i, "_SHARING_STRATEGY=", *strategy)}};
    AddShareEnv(device, absl::StrCat("GPU_DEVICE_", i), &edits);  // a share: _SHARE_ID, _MEMORY
    for (const std::string& path : gpu->dev_nodes) edits.device_nodes.push_back({.path = path});
    return edits;
  }

 private:
  const GpuDraDriverOptions options_;
  const std::vector<Gpu> gpus_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CdiDraDriver>> NewGpuDraDriver(GpuDraDriverOptions options) {
  absl::StatusOr<std::vector<Gpu>> gpus = options.gpus.Find();
  if (!gpus.ok()) return gpus.status();
  return std::make_unique<GpuDraDriver>(std::move(options), *std::move(gpus));
}

}  // namespace kdp::example
