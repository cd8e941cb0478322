#include "manager/src/nodestatus/node_status.h"

#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "manager/src/controlplane/resourceapi/kube_time.h"
#include "manager/src/pod/quantity.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

// The kubelet's default hard eviction threshold for memory.available: allocatable memory is
// capacity less it (no system or kube reservations are configured).
constexpr int64_t kEvictionHardMemoryBytes = 100 * 1024 * 1024;

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

std::string Binary(int64_t bytes) {
  return Quantity::FromInt64(bytes, Quantity::Format::kBinarySI).ToString();
}

std::string Decimal(int64_t value) { return Quantity::FromInt64(value).ToString(); }

// The os-release PRETTY_NAME, unquoted ("Debian GNU/Linux 12 (bookworm)").
std::string OsImage() {
  std::ifstream in("/etc/os-release");
  for (std::string line; std::getline(in, line);) {
    absl::string_view value = line;
    if (!absl::ConsumePrefix(&value, "PRETTY_NAME=")) continue;
    absl::ConsumePrefix(&value, "\"");
    absl::ConsumeSuffix(&value, "\"");
    return std::string(value);
  }
  return "Linux";
}

std::string GoArch(const std::string& machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  if (machine == "ppc64le" || machine == "s390x" || machine == "riscv64") return machine;
  return machine;
}

// One condition as the kubelet's setters write it.
Json Condition(const char* type, const char* status, const char* reason, const char* message,
               const std::string& heartbeat, const std::string& since) {
  return {{"type", type},
          {"status", status},
          {"lastHeartbeatTime", heartbeat},
          {"lastTransitionTime", since},
          {"reason", reason},
          {"message", message}};
}

Json WithoutHeartbeats(Json status) {
  for (Json& condition : status["conditions"]) condition.erase("lastHeartbeatTime");
  return status;
}

}  // namespace

MachineResources ReadMachineResources(const std::string& kubelet_root) {
  MachineResources machine;
  machine.cpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "MemTotal:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, " kB");
    int64_t kib = 0;
    if (absl::SimpleAtoi(rest, &kib)) machine.memory_bytes = kib * 1024;
  }
  struct statvfs fs {};
  if (statvfs(kubelet_root.c_str(), &fs) == 0) {
    machine.ephemeral_storage_bytes = static_cast<int64_t>(fs.f_blocks * fs.f_frsize);
  }
  return machine;
}

NodeSystemInfo ReadNodeSystemInfo(const std::string& kubelet_version,
                                  const std::string& runtime_version) {
  NodeSystemInfo info;
  info.machine_id = FirstLine("/etc/machine-id");
  info.system_uuid = absl::AsciiStrToLower(FirstLine("/sys/class/dmi/id/product_uuid"));
  info.boot_id = FirstLine("/proc/sys/kernel/random/boot_id");
  utsname names{};
  if (uname(&names) == 0) {
    info.kernel_version = names.release;
    info.architecture = GoArch(names.machine);
  }
  info.os_image = OsImage();
  info.container_runtime_version = runtime_version;
  info.kubelet_version = kubelet_version;
  return info;
}

Json NodeStatusJson(const std::string& node_name, const MachineResources& machine,
                    const std::vector<ResourceCapacity>& devices, const NodeSystemInfo& info,
                    absl::Time heartbeat, absl::Time since) {
  Json capacity = {{"cpu", Decimal(machine.cpus)},
                   {"memory", Binary(machine.memory_bytes)},
                   {"ephemeral-storage", Binary(machine.ephemeral_storage_bytes)},
                   {"pods", Decimal(machine.max_pods)}};
  Json allocatable = capacity;
  allocatable["memory"] =
      Binary(std::max<int64_t>(0, machine.memory_bytes - kEvictionHardMemoryBytes));
  for (const ResourceCapacity& resource : devices) {
    // Removed resources are reported with 0 (GetCapacity already says so).
    capacity[resource.name] = Decimal(resource.capacity);
    allocatable[resource.name] = Decimal(resource.allocatable);
  }
  const std::string beat = resourceapi::KubeTime(heartbeat);
  const std::string start = resourceapi::KubeTime(since);
  return {
      {"capacity", std::move(capacity)},
      {"allocatable", std::move(allocatable)},
      {"conditions", Json::array({Condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                            "kubelet has sufficient memory available", beat, start),
                                  Condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                                            "kubelet has no disk pressure", beat, start),
                                  Condition("PIDPressure", "False", "KubeletHasSufficientPID",
                                            "kubelet has sufficient PID available", beat, start),
                                  Condition("Ready", "True", "KubeletReady",
                                            "kubelet is posting ready status", beat, start)})},
      {"addresses", Json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                 {{"type", "Hostname"}, {"address", node_name}}})},
      {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 0}}}}},
      {"nodeInfo",
       {{"machineID", info.machine_id},
        {"systemUUID", info.system_uuid},
        {"bootID", info.boot_id},
        {"kernelVersion", info.kernel_version},
        {"osImage", info.os_image},
        {"containerRuntimeVersion", info.container_runtime_version},
        {"kubeletVersion", info.kubelet_version},
        {"kubeProxyVersion", ""},
        {"operatingSystem", info.operating_system},
        {"architecture", info.architecture}}}};
}

NodeStatusUpdater::NodeStatusUpdater(resourceapi::ObjectStore* store,
                                     NodeStatusUpdaterOptions options)
    : store_(store),
      options_(std::move(options)),
      since_(options_.now ? options_.now() : absl::Now()) {}

NodeStatusUpdater::~NodeStatusUpdater() { Stop(); }

bool NodeStatusUpdater::Sync() {
  absl::MutexLock lock(&sync_mu_);
  const absl::Time now = options_.now ? options_.now() : absl::Now();
  Json status = NodeStatusJson(options_.node_name, options_.machine, options_.device_capacity(),
                               options_.info, now, since_);
  Json comparable = WithoutHeartbeats(status);
  if (comparable == last_ && now - last_report_ < options_.report_period) return false;
  store_->SetNodeStatus(status);
  last_ = std::move(comparable);
  last_report_ = now;
  return true;
}

void NodeStatusUpdater::Start() {
  Sync();
  thread_.Start(options_.sync_period, [this] { Sync(); });
}

void NodeStatusUpdater::Stop() { thread_.Stop(); }

}  // namespace kdp::manager
