#include "examples/dra-driver/gpu_dra_driver.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace kdp::example {
namespace {

std::string Kind() { return absl::StrCat(kCdiVendor, "/", kCdiClass); }

std::string SpecNameFor(const std::string& claim_uid) {
  return kdp::cdi::TransientSpecName(kCdiVendor, kCdiClass, claim_uid);
}

// A UUID-shaped ID that is stable for a GPU on a node: real drivers read it from the hardware
// (NVML, ROCm SMI); the example derives it from the node name and the PCI address.
std::string FakeUuid(const std::string& node, const PciAddress& address) {
  const uint64_t a = std::hash<std::string>{}(absl::StrCat(node, "/", address.ToString()));
  const uint64_t b = std::hash<std::string>{}(absl::StrCat(address.ToString(), "/", node));
  return absl::StrFormat("GPU-%08x-%04x-%04x-%04x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                         b >> 48, b & 0xffffffffffff);
}

// GPUs named in the specs this driver left in `cdi_root`: "<uid>-<gpu>" device names.
std::map<std::string, std::string> ReadInUse(const std::string& cdi_root) {
  std::map<std::string, std::string> in_use;
  DIR* dir = ::opendir(cdi_root.c_str());
  if (dir == nullptr) return in_use;
  const std::string prefix = absl::StrCat(kCdiVendor, "-", kCdiClass, "_");
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (!absl::StartsWith(name, prefix) || !absl::EndsWith(name, ".json")) continue;
    std::ifstream in(absl::StrCat(cdi_root, "/", name));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<kdp::cdi::Spec> spec = kdp::cdi::ParseJson(text.str(), name);
    if (!spec.ok()) continue;  // not ours to judge; the runtime reports it
    const std::string uid = name.substr(prefix.size(), name.size() - prefix.size() - 5);
    for (const kdp::cdi::Device& device : spec->devices) {
      if (absl::StartsWith(device.name, uid + "-")) {
        in_use[device.name.substr(uid.size() + 1)] = uid;
      }
    }
  }
  ::closedir(dir);
  return in_use;
}

}  // namespace

absl::StatusOr<std::string> ParseGpuConfig(const std::string& parameters_json) {
  const nlohmann::json config = nlohmann::json::parse(parameters_json, nullptr, false);
  if (!config.is_object()) return absl::InvalidArgumentError("GpuConfig: must be a JSON object");
  const std::string expected_api = absl::StrCat(kGpuDriverName, "/v1alpha1");
  if (config.value("apiVersion", "") != expected_api || config.value("kind", "") != "GpuConfig") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported config: apiVersion and kind must be ", expected_api, " and GpuConfig"));
  }
  std::string strategy = "Exclusive";
  if (config.contains("sharing")) {
    const nlohmann::json& sharing = config["sharing"];
    if (!sharing.is_object() || !sharing.value("strategy", nlohmann::json()).is_string()) {
      return absl::InvalidArgumentError("GpuConfig: sharing.strategy: must be a string");
    }
    strategy = sharing["strategy"].get<std::string>();
    if (strategy != "Exclusive" && strategy != "TimeSlicing") {
      return absl::InvalidArgumentError(
          absl::StrCat("GpuConfig: sharing.strategy: Unsupported value: \"", strategy,
                       "\": supported values: \"Exclusive\", \"TimeSlicing\""));
    }
  }
  return strategy;
}

absl::StatusOr<std::unique_ptr<GpuDraDriver>> GpuDraDriver::Create(GpuDraDriverOptions options) {
  absl::StatusOr<std::unique_ptr<Topology>> topology =
      options.topology_xml.empty() ? Topology::FromHost()
                                   : Topology::FromXmlFile(options.topology_xml);
  if (!topology.ok()) return topology.status();
  std::vector<Gpu> gpus = FindGpus(**topology, options.vendor_id);
  std::map<std::string, std::string> in_use = ReadInUse(options.cdi_root);
  auto driver = std::unique_ptr<GpuDraDriver>(
      new GpuDraDriver(std::move(options), std::move(gpus), std::move(in_use)));
  if (const std::string& path = driver->options_.health_file; !path.empty()) {
    // The SDK keeps health for the devices of the last list it read; reading it now lets the
    // file's first state hold from the health stream's first message.
    if (absl::Status listed = driver->PublishDevices(); !listed.ok()) return listed;
    GpuDraDriver* target = driver.get();  // Outlives the watcher: ~GpuDraDriver stops it first.
    driver->watcher_ = std::make_unique<HealthFileWatcher>(
        path, [target](const std::set<std::string>& gpus) { target->SetUnhealthyGpus(gpus); });
    if (absl::Status status = driver->watcher_->Poll(); !status.ok()) return status;
    if (absl::Status status = driver->watcher_->Start(); !status.ok()) return status;
  }
  return driver;
}

GpuDraDriver::~GpuDraDriver() {
  if (watcher_ != nullptr) watcher_->Stop();
}

void GpuDraDriver::SetUnhealthyGpus(const std::set<std::string>& unhealthy_gpus) {
  for (const Gpu& gpu : gpus_) {
    const bool listed = unhealthy_gpus.count(gpu.id) != 0;
    absl::Status set = SetDeviceHealth(
        gpu.id, listed ? DeviceHealthStatus::kUnhealthy : DeviceHealthStatus::kHealthy,
        listed ? absl::StrCat("listed in ", options_.health_file) : "");
    if (!set.ok())
      std::fprintf(stderr, "health of %s: %s\n", gpu.id.c_str(), set.ToString().c_str());
  }
}

GpuDraDriver::GpuDraDriver(GpuDraDriverOptions options, std::vector<Gpu> gpus,
                           std::map<std::string, std::string> in_use)
    : DraDriver(kGpuDriverName),
      options_(std::move(options)),
      gpus_(std::move(gpus)),
      in_use_(std::move(in_use)) {}

absl::StatusOr<std::vector<DraDevice>> GpuDraDriver::Devices() {
  std::vector<DraDevice> devices;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& gpu = gpus_[i];
    DraDevice device;
    device.name = gpu.id;
    device.attributes["index"] = static_cast<int64_t>(i);
    device.attributes["uuid"] = FakeUuid(options_.node_name, gpu.address);
    device.attributes["pciAddress"] = gpu.address.ToString();
    if (!gpu.numa_nodes.empty()) {
      device.attributes["numaNode"] = static_cast<int64_t>(gpu.numa_nodes.front());
    }
    device.attributes["model"] = std::string("example-gpu");
    device.attributes["driverVersion"] = VersionValue{.semver = "1.0.0"};
    device.capacity["memory"] = options_.gpu_memory;
    devices.push_back(std::move(device));
  }
  return devices;
}

PrepareResult GpuDraDriver::PrepareClaim(const Claim& claim) {
  const std::string& uid = claim.ref.uid;
  // Configs come class first, then claim: the later one wins.
  std::string strategy = "Exclusive";
  for (const OpaqueConfig& config : claim.configs) {
    absl::StatusOr<std::string> parsed = ParseGpuConfig(config.parameters_json);
    if (!parsed.ok()) {
      return {.status = absl::InvalidArgumentError(
                  absl::StrCat("config from ", config.source, ": ", parsed.status().message())),
              .devices = {}};
    }
    strategy = *parsed;
  }
  kdp::cdi::Spec spec;
  spec.kind = Kind();
  spec.container_edits.env = {absl::StrCat("DRA_RESOURCE_CLAIM_UID=", uid),
                              absl::StrCat("DRA_RESOURCE_DRIVER_NAME=", kGpuDriverName)};
  std::vector<PreparedDevice> prepared;
  for (std::size_t i = 0; i < claim.results.size(); ++i) {
    const AllocatedDevice& result = claim.results[i];
    auto gpu = std::find_if(gpus_.begin(), gpus_.end(),
                            [&](const Gpu& g) { return g.id == result.device; });
    if (gpu == gpus_.end()) {
      return {.status = absl::NotFoundError(
                  absl::StrCat("device ", result.device, " is not a GPU of this node")),
              .devices = {}};
    }
    // The last line of defence against a double allocation: the scheduler should never do it.
    auto holder = in_use_.find(gpu->id);
    if (holder != in_use_.end() && holder->second != uid && !result.admin_access) {
      return {.status = absl::FailedPreconditionError(
                  absl::StrCat(gpu->id, " is already prepared for ResourceClaim ", holder->second)),
              .devices = {}};
    }
    kdp::cdi::Device device;
    device.name = absl::StrCat(uid, "-", gpu->id);
    for (const std::string& path : gpu->dev_nodes) {
      device.container_edits.device_nodes.push_back({.path = path});
    }
    device.container_edits.env = {
        absl::StrCat("GPU_DEVICE_", i, "=", gpu->id),
        absl::StrCat("GPU_DEVICE_", i, "_PCI_ADDRESS=", gpu->address.ToString()),
        absl::StrCat("GPU_DEVICE_", i, "_SHARING_STRATEGY=", strategy)};
    spec.devices.push_back(std::move(device));
    prepared.push_back(
        {.requests = {result.request},
         .pool = result.pool,
         .device = result.device,
         .cdi_device_ids = {kdp::cdi::QualifiedName(Kind(), spec.devices.back().name)},
         .share_id = result.share_id});
  }
  if (spec.devices.empty()) return {.status = absl::OkStatus(), .devices = {}};
  spec.cdi_version = kdp::cdi::MinimumRequiredVersion(spec);
  // Written on every Prepare, also a repeated one: a reboot empties /var/run/cdi while the SDK's
  // checkpoint still lists the claim (kubernetes#141433).
  if (absl::Status written = kdp::cdi::WriteSpec(options_.cdi_root, SpecNameFor(uid), spec);
      !written.ok()) {
    return {.status = written, .devices = {}};
  }
  for (const AllocatedDevice& result : claim.results) in_use_[result.device] = uid;
  return {.status = absl::OkStatus(), .devices = std::move(prepared)};
}

std::map<std::string, PrepareResult> GpuDraDriver::Prepare(const std::vector<Claim>& claims) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, PrepareResult> results;
  for (const Claim& claim : claims) results[claim.ref.uid] = PrepareClaim(claim);
  return results;
}

std::map<std::string, absl::Status> GpuDraDriver::Unprepare(const std::vector<ClaimRef>& claims) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, absl::Status> results;
  for (const ClaimRef& claim : claims) {
    absl::Status removed = kdp::cdi::RemoveSpec(options_.cdi_root, SpecNameFor(claim.uid));
    if (removed.ok()) {
      std::erase_if(in_use_, [&](const auto& entry) { return entry.second == claim.uid; });
    }
    results[claim.uid] = removed;
  }
  return results;
}

std::map<std::string, std::string> GpuDraDriver::InUse() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

}  // namespace kdp::example
