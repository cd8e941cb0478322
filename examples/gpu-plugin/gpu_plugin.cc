#include "examples/gpu-plugin/gpu_plugin.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kdp::example {
namespace {

constexpr uint16_t kPciClassVga = 0x0300;
constexpr uint16_t kPciClass3d = 0x0302;
constexpr char kReplicaSeparator[] = "::";
constexpr char kVisibleDevicesEnv[] = "KDP_VISIBLE_DEVICES";

absl::Status Unreadable(const std::string& path, int error) {
  return absl::UnavailableError(
      absl::StrCat("cannot read health file ", path, ": ", std::strerror(error)));
}

// The content of `path`, empty when it does not exist. UNAVAILABLE, naming the path and the
// reason, when it exists but cannot be read (a directory, no permission).
absl::StatusOr<std::string> ReadIfExists(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? absl::StatusOr<std::string>("") : Unreadable(path, errno);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  const int error = errno;
  close(fd);
  if (n < 0) return Unreadable(path, error);
  return text;
}

}  // namespace

std::vector<Gpu> FindGpus(const Topology& topology, std::optional<uint16_t> vendor_id) {
  std::vector<Gpu> gpus;
  // Ascending PCI address: the order, and so the names, survive restarts.
  for (const PciDevice& pci : topology.PciDevicesWithClass({kPciClassVga, kPciClass3d})) {
    if (vendor_id.has_value() && pci.vendor_id != *vendor_id) continue;
    Gpu gpu;
    gpu.id = absl::StrCat("gpu", gpus.size());
    gpu.address = pci.address;
    gpu.numa_nodes = pci.numa_nodes;
    // hwloc also lists OS devices that are not files under a GPU ("cuda0", "nvml0",
    // "opencl0d0"); the DRM nodes are what a container opens.
    for (const OsDevice& os_device : pci.os_devices) {
      const std::string& name = os_device.name;
      if (absl::StartsWith(name, "card") || absl::StartsWith(name, "renderD")) {
        gpu.dev_nodes.push_back("/dev/dri/" + name);
      }
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

absl::StatusOr<uint16_t> ParseVendorId(absl::string_view text) {
  absl::string_view digits = text;
  if (!absl::ConsumePrefix(&digits, "0x")) absl::ConsumePrefix(&digits, "0X");
  uint32_t value = 0;
  // SimpleHexAtoi alone would also take signs, spaces and a second "0x".
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), absl::ascii_isxdigit) ||
      !absl::SimpleHexAtoi(digits, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid PCI vendor ID \"", text, "\": want 1 to 4 hex digits, e.g. 10de"));
  }
  return static_cast<uint16_t>(value);
}

std::string GpuIdOf(absl::string_view device_id) {
  return std::string(device_id.substr(0, device_id.find(kReplicaSeparator)));
}

std::set<std::string> ParseHealthFile(absl::string_view text) {
  std::set<std::string> gpus;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    gpus.insert(GpuIdOf(line));
  }
  return gpus;
}

HealthFileWatcher::HealthFileWatcher(std::string path, Callback on_change)
    : path_(std::move(path)), on_change_(std::move(on_change)) {}

HealthFileWatcher::~HealthFileWatcher() { Stop(); }

absl::Status HealthFileWatcher::Poll() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> text = ReadIfExists(path_);
  if (!text.ok()) return text.status();
  std::set<std::string> unhealthy = ParseHealthFile(*text);
  // Comparing content rather than mtime catches two edits within one mtime tick and ignores
  // edits that change nothing (a comment).
  if (unhealthy == last_) return absl::OkStatus();
  last_ = std::move(unhealthy);
  on_change_(last_);
  return absl::OkStatus();
}

absl::Status HealthFileWatcher::Start(absl::Duration interval) {
  absl::MutexLock lock(&thread_mu_);
  if (thread_.joinable() || stop_.HasBeenNotified()) {
    return absl::FailedPreconditionError("health file watcher already started");
  }
  // RunPluginsUntilSignal() blocks SIGTERM/SIGINT and sigwait()s for them; a thread created
  // before it did would take SIGTERM's default action and end the process without cleanup.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  thread_ = std::thread([this, interval] {
    bool failing = false;
    while (!stop_.WaitForNotificationWithTimeout(interval)) {
      // A failed read keeps the last state; say so once, not every 100 ms.
      absl::Status status = Poll();
      if (!status.ok() && !failing) std::fprintf(stderr, "%s\n", status.ToString().c_str());
      failing = !status.ok();
    }
  });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return absl::OkStatus();
}

void HealthFileWatcher::Stop() {
  absl::MutexLock lock(&thread_mu_);
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<GpuPlugin>> GpuPlugin::Create(GpuPluginOptions options) {
  if (options.replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas must be at least 1, got ", options.replicas));
  }
  if (options.resource_name.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("resource name \"", options.resource_name,
                                                   "\" has no domain (want e.g. example.com/gpu)"));
  }
  auto plugin = absl::WrapUnique(new GpuPlugin(std::move(options)));
  if (const std::string& path = plugin->options_.health_file; !path.empty()) {
    GpuPlugin* target = plugin.get();  // Outlives the watcher: ~GpuPlugin stops it first.
    plugin->watcher_ = std::make_unique<HealthFileWatcher>(
        path, [target](const std::set<std::string>& gpus) { target->SetUnhealthyGpus(gpus); });
    if (absl::Status status = plugin->watcher_->Poll(); !status.ok()) return status;
    if (absl::Status status = plugin->watcher_->Start(); !status.ok()) return status;
  }
  return plugin;
}

GpuPlugin::GpuPlugin(GpuPluginOptions options)
    : DevicePlugin(options.resource_name),
      options_(std::move(options)),
      cdi_vendor_(options_.resource_name.substr(0, options_.resource_name.find('/'))) {}

GpuPlugin::~GpuPlugin() {
  if (watcher_ != nullptr) watcher_->Stop();
}

std::vector<std::string> GpuPlugin::DeviceIdsOf(const std::string& gpu_id) const {
  if (options_.replicas == 1) return {gpu_id};
  std::vector<std::string> ids;
  for (int k = 0; k < options_.replicas; ++k) {
    ids.push_back(absl::StrCat(gpu_id, kReplicaSeparator, k));
  }
  return ids;
}

absl::StatusOr<std::vector<Device>> GpuPlugin::Discover() {
  absl::StatusOr<std::unique_ptr<Topology>> topology =
      options_.topology_xml.empty() ? Topology::FromHost()
                                    : Topology::FromXmlFile(options_.topology_xml);
  if (!topology.ok()) return topology.status();
  std::vector<Device> devices;
  std::vector<AllocatableDevice> placement;
  for (const Gpu& gpu : FindGpus(**topology, options_.vendor_id)) {
    for (const std::string& id : DeviceIdsOf(gpu.id)) {
      placement.push_back({.id = id,
                           .physical_id = gpu.id,
                           .numa_nodes = gpu.numa_nodes,
                           .pci_address = gpu.address});
    }
    // Every replica carries its GPU's runtime fields; DefaultAllocate() de-duplicates them.
    Device device;
    device.numa_nodes = gpu.numa_nodes;
    device.cdi_devices = {absl::StrCat(cdi_vendor_, "/gpu=", gpu.id)};
    for (const std::string& path : gpu.dev_nodes) {
      device.specs.push_back({.container_path = path, .host_path = path, .permissions = "rw"});
    }
    for (std::string& id : DeviceIdsOf(gpu.id)) {
      device.id = std::move(id);
      devices.push_back(device);
    }
  }
  absl::StatusOr<DeviceGraph> graph = DeviceGraph::Build(std::move(placement), **topology);
  if (!graph.ok()) return graph.status();
  absl::MutexLock lock(&mu_);
  graph_ = *std::move(graph);
  return devices;
}

absl::StatusOr<ContainerAllocation> GpuPlugin::Allocate(const AllocateRequest& request) {
  // The kubelet sends IDs in no particular order; answering in inventory (PCI) order makes one
  // set of devices always give one answer.
  std::set<std::string> requested(request.device_ids.begin(), request.device_ids.end());
  AllocateRequest in_order;
  std::vector<std::string> gpus;
  for (const Device& device : Devices()) {
    if (requested.erase(device.id) == 0) continue;
    in_order.device_ids.push_back(device.id);
    // Replicas of one GPU are adjacent in the inventory, so this de-duplicates them.
    if (std::string gpu = GpuIdOf(device.id); gpus.empty() || gpus.back() != gpu) {
      gpus.push_back(std::move(gpu));
    }
  }
  // Unknown IDs stay in, so that DefaultAllocate() rejects them with NOT_FOUND.
  in_order.device_ids.insert(in_order.device_ids.end(), requested.begin(), requested.end());
  // DRM nodes and CDI names come from the devices, de-duplicated across replicas.
  absl::StatusOr<ContainerAllocation> allocation = DefaultAllocate(in_order);
  if (!allocation.ok()) return allocation;
  allocation->envs[kVisibleDevicesEnv] = absl::StrJoin(gpus, ",");
  return allocation;
}

absl::StatusOr<std::vector<std::string>> GpuPlugin::PreferredAllocation(
    const PreferredRequest& request) {
  std::optional<DeviceGraph> graph;
  {
    absl::MutexLock lock(&mu_);
    graph = graph_;
  }
  if (!graph.has_value()) {
    return absl::FailedPreconditionError("no inventory yet: Discover() has not run");
  }
  return graph->Choose(request, options_.allocation_policy);
}

void GpuPlugin::SetUnhealthyGpus(const std::set<std::string>& unhealthy_gpus) {
  // Held across SetHealth() so concurrent callers reach the SDK in the order they took it.
  absl::MutexLock lock(&mu_);
  std::vector<std::string> recovered;
  std::vector<std::string> failed;
  for (const std::string& gpu : unhealthy_) {
    if (unhealthy_gpus.contains(gpu)) continue;
    for (std::string& id : DeviceIdsOf(gpu)) recovered.push_back(std::move(id));
  }
  for (const std::string& gpu : unhealthy_gpus) {
    for (std::string& id : DeviceIdsOf(gpu)) failed.push_back(std::move(id));
  }
  SetHealth(recovered, Health::kHealthy);
  SetHealth(failed, Health::kUnhealthy);
  unhealthy_ = unhealthy_gpus;
}

}  // namespace kdp::example
