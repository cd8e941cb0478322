// footprint_benchmark measures the resident memory and start-up time of kdp's real binaries, each
// run as a child process in a temporary kubelet root, against the targets:
//
//   1. kdp-gpu-plugin serving 1,000 devices (the 8-GPU fixture with --replicas 125), once
//      registered with a kdp-manager and its ListAndWatch served: VmRSS <= 8 MiB and <= half the
//      15.2 MiB of a Go device plugin (squat/generic-device-plugin, 1,000 devices, measured on this
//      machine kind), so <= 7.6 MiB; at most 6 threads;
//   2. kdp-dra-driver with 64 devices (a generated 64-GPU topology), registered and its
//      ResourceSlice published in the manager's local resource API: VmRSS <= 10 MiB;
//   3. kdp-manager holding 10,000 allocations: 10,000 pods of one device each, admitted through the
//      admin API (100 pods per manifest) from a kdp-gpu-plugin with 10,000 devices: VmRSS <= 64
//      MiB and at most 32 threads at rest;
//   4. kdp-gpu-plugin (fixture topology) from fork/exec to its Register call, received by this
//      program acting as the kubelet's registration server: median <= 10 ms and <= 4 times the
//      floor, a fork/exec of /bin/true until it exits, measured interleaved in the same run.
//
// Each figure is a benchmark of one iteration whose counters are the figure, its target and the
// ratio to it (and a floor where one means something: kdp-footprint-floor, a trivial gRPC server
// linked and configured as kdp-gpu-plugin is, bench/footprint_floor_main.cc). A summary with one
// "FIGURE:" line per figure ends the output. Pss splits shared pages among the processes mapping
// them (the manager maps the same libraries while the plugin is measured), so VmRSS is the figure
// compared with the targets.
//
// Usage: footprint_benchmark [--benchmark_* flags] [--kdp_allocations=N (10000)]
//          [--kdp_starts=N (31)] [--kdp_gpu_plugin=PATH] [--kdp_dra_driver=PATH]
//          [--kdp_manager=PATH] [--kdp_floor=PATH]
// The PATH flags measure other builds of the binaries (a lean or a shared build, say); give
// --kdp_floor from the same build as --kdp_gpu_plugin, or the floor means nothing.
// --benchmark_filter picks figures (gpu_plugin_1000, dra_driver, start_to_register, manager). The
// manager's figure takes most of the run: 10,000 admissions, each O(devices) in kdp-manager, 3-8
// min on a 2-vCPU VM. Exit status: 0 when every figure was measured (a missed target prints FAIL
// but is not an error), 1 when one could not be measured, 2 on a bad argument. docs/benchmarks.md
// has our figures.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "bench/footprint_support.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kdp/admin/v1/admin.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace kdp::bench {
namespace {

constexpr char kResource[] = "example.com/gpu";
constexpr char kDriver[] = "gpu.example.com";
constexpr char kNode[] = "node-a";
// Targets (issue 19, "Leaner than Go").
constexpr double kGoPluginMiB = 15.2;  // squat/generic-device-plugin, 1,000 devices, this VM kind
constexpr double kPluginTargetMiB = std::min(8.0, kGoPluginMiB / 2);
constexpr int kPluginMaxThreads = 6;
constexpr double kDriverTargetMiB = 10;
constexpr double kManagerTargetMiB = 64;
constexpr int kManagerMaxThreads = 32;
constexpr double kStartTargetMs = 10;
constexpr double kStartMaxRatioToFloor = 4;

struct Config {
  std::string gpu_plugin = KDP_GPU_PLUGIN_BIN;
  std::string dra_driver = KDP_DRA_DRIVER_BIN;
  std::string manager = KDP_MANAGER_BIN;
  std::string floor = KDP_FOOTPRINT_FLOOR_BIN;  // the trivial gRPC server
  std::string fixture =
      std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";
  int allocations = 10000;
  int starts = 31;
};

// The measured figures by name, for the summary (the last repetition of a benchmark wins), and
// whether any benchmark that ran failed to measure its figure.
std::map<std::string, std::string>& Figures() {
  static auto* figures = new std::map<std::string, std::string>();
  return *figures;
}
bool any_failure = false;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// ---------------------------------------------------------------------------------------------
// kdp-manager as a child, reached through its admin API.

class ManagerProcess {
 public:
  // Starts kdp-manager on `root` with `flags` and waits until its admin API answers.
  static absl::StatusOr<std::unique_ptr<ManagerProcess>> Start(const Config& config,
                                                               const std::string& root,
                                                               std::vector<std::string> flags) {
    std::vector<std::string> argv = {config.manager, "--kubelet-root", root, "--log-level",
                                     "error"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto child = Child::Start(argv, root + "-manager.log");
    if (!child.ok()) return child.status();
    std::unique_ptr<ManagerProcess> manager(new ManagerProcess(*std::move(child), root));
    if (!WaitFor([&] { return manager->Status().ok() || !manager->child_->Running(); },
                 absl::Seconds(30))) {
      return absl::DeadlineExceededError("kdp-manager's admin API did not answer in 30 s");
    }
    if (!manager->child_->Running()) return absl::InternalError(manager->child_->Describe());
    return manager;
  }

  Child& child() { return *child_; }

  absl::StatusOr<admin::v1::NodeStatus> Status() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    admin::v1::NodeStatus status;
    grpc::Status result = stub_->GetStatus(&context, admin::v1::GetStatusRequest(), &status);
    if (!result.ok()) return absl::UnavailableError(result.error_message());
    return status;
  }

  // Applies `manifest`; INTERNAL unless every pod in it was admitted.
  absl::Status ApplyPods(const std::string& manifest, int pods) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    admin::v1::ApplyRequest request;
    request.set_manifest(manifest);
    request.set_source("footprint_benchmark");
    admin::v1::ApplyResponse response;
    grpc::Status result = stub_->Apply(&context, request, &response);
    if (!result.ok()) return absl::UnavailableError(result.error_message());
    int admitted = 0;
    for (const auto& object : response.objects()) admitted += object.result() == "admitted";
    if (admitted != pods) {
      return absl::InternalError(absl::StrCat(admitted, " of ", pods, " pods admitted"));
    }
    return absl::OkStatus();
  }

  // True when `resource` is connected with `devices` devices.
  bool HasDevices(const std::string& resource, int devices) {
    absl::StatusOr<admin::v1::NodeStatus> status = Status();
    if (!status.ok()) return false;
    for (const auto& r : status->resources()) {
      if (r.name() == resource && r.connected() && r.capacity() == devices) return true;
    }
    return false;
  }

  // True when `driver` has a connected endpoint and `devices` devices in this node's slices.
  bool HasDraDevices(const std::string& driver, int devices) {
    absl::StatusOr<admin::v1::NodeStatus> status = Status();
    if (!status.ok()) return false;
    bool connected = false;
    for (const auto& d : status->dra_drivers()) {
      for (const auto& e : d.endpoints()) connected |= d.name() == driver && e.connected();
    }
    if (!connected) return false;
    absl::StatusOr<std::string> slices =
        KubeconfigGet(root_ + "/kdp/kubeconfig", "/apis/resource.k8s.io/v1/resourceslices");
    if (!slices.ok()) return false;
    const nlohmann::json list = nlohmann::json::parse(*slices, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return false;
    size_t published = 0;
    for (const nlohmann::json& slice : list["items"]) {
      const nlohmann::json spec = slice.value("spec", nlohmann::json::object());
      if (spec.value("driver", "") != driver || spec.value("nodeName", "") != kNode) continue;
      published += spec.value("devices", nlohmann::json::array()).size();
    }
    return published == static_cast<size_t>(devices);
  }

 private:
  ManagerProcess(std::unique_ptr<Child> child, std::string root)
      : child_(std::move(child)),
        root_(std::move(root)),
        stub_(admin::v1::Admin::NewStub(DialUnixSocket(root_ + "/kdp/manager.sock"))) {}

  std::unique_ptr<Child> child_;
  const std::string root_;
  std::unique_ptr<admin::v1::Admin::Stub> stub_;
};

// ---------------------------------------------------------------------------------------------
// Reporting.

// Sets the memory counters of `state` for `memory`, and the ratios to `target_mib` and, when
// given, to the floor's VmRSS.
void SetMemoryCounters(benchmark::State& state, const Memory& memory, double target_mib,
                       const Memory* floor = nullptr) {
  const double rss = memory.StatusMiB("VmRSS");
  state.counters["VmRSS_MiB"] = rss;
  state.counters["VmHWM_MiB"] = memory.StatusMiB("VmHWM");
  state.counters["Pss_MiB"] = memory.RollupMiB("Pss");
  state.counters["RssAnon_MiB"] = memory.StatusMiB("RssAnon");
  state.counters["RssFile_MiB"] = memory.StatusMiB("RssFile");
  state.counters["threads"] = static_cast<double>(Memory::Get(memory.status, "Threads"));
  state.counters["target_MiB"] = target_mib;
  state.counters["ratio_to_target"] = rss / target_mib;
  if (floor != nullptr) {
    state.counters["floor_VmRSS_MiB"] = floor->StatusMiB("VmRSS");
    state.counters["ratio_to_floor"] = rss / floor->StatusMiB("VmRSS");
  }
}

// `target_text` describes the target ("<= 10 MiB"); `max_threads` > 0 adds the threads' verdict.
std::string MemoryFigure(const std::string& what, const Memory& memory, double target_mib,
                         const std::string& target_text, int max_threads = 0) {
  const double rss = memory.StatusMiB("VmRSS");
  const int threads = static_cast<int>(Memory::Get(memory.status, "Threads"));
  std::string line = absl::StrFormat(
      "%s VmRSS %.2f MiB (VmHWM %.2f, Pss %.2f, RssAnon %.2f, RssFile %.2f, %d threads), target "
      "%s: ratio %.2f %s",
      what, rss, memory.StatusMiB("VmHWM"), memory.RollupMiB("Pss"), memory.StatusMiB("RssAnon"),
      memory.StatusMiB("RssFile"), threads, target_text, rss / target_mib,
      rss <= target_mib ? "PASS" : "FAIL");
  if (max_threads > 0) {
    absl::StrAppendFormat(&line, "; threads %d, target <= %d: %s", threads, max_threads,
                          threads <= max_threads ? "PASS" : "FAIL");
  }
  return line;
}

void Record(const std::string& name, std::string line) {
  std::printf("FIGURE: %s\n", line.c_str());
  std::fflush(stdout);
  Figures()[name] = std::move(line);
}

// Ends the benchmark with `status` when it is an error; true when it was.
bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  any_failure = true;
  state.SkipWithError(status.ToString().c_str());
  return true;
}

// The trivial gRPC server (kdp-footprint-floor: linked and configured as kdp-gpu-plugin, no kdp
// plugin code), after one call: what any gRPC server of this build pays before kdp's own code.
absl::StatusOr<Memory> MeasureTrivialServer(const Config& config, const std::string& dir) {
  const std::string socket = dir + "/trivial.sock";
  auto child = Child::Start({config.floor, socket}, dir + "/trivial.log");
  if (!child.ok()) return child.status();
  auto stub = v1beta1::DevicePlugin::NewStub(DialUnixSocket(socket));
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1beta1::DevicePluginOptions options;
  grpc::Status status = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  // The service implements nothing: UNIMPLEMENTED is its answer.
  if (status.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
    return absl::UnavailableError(
        absl::StrCat("trivial server: ", status.error_message(), "; ", (*child)->Describe()));
  }
  return ReadMemory((*child)->pid());
}

// ---------------------------------------------------------------------------------------------
// The figures.

void BM_GpuPlugin1000(benchmark::State& state, const Config* config) {
  for (auto _ : state) {
    TempDir dir("kdp-footprint-");
    const std::string root = dir.path() + "/root";
    auto manager = ManagerProcess::Start(*config, root, {"--topology-xml", config->fixture});
    if (Failed(state, manager.status())) return;
    const auto started = std::chrono::steady_clock::now();
    // --metrics-address on a free port: /metrics and /healthz are served (and counted) whatever
    // holds the default port.
    auto plugin = Child::Start(
        {config->gpu_plugin, "--kubelet-root", root, "--topology-xml", config->fixture,
         "--replicas", "125", "--log-level", "error", "--metrics-address", "127.0.0.1:0"},
        dir.path() + "/plugin.log");
    if (Failed(state, plugin.status())) return;
    if (!WaitFor([&] { return (*manager)->HasDevices(kResource, 1000) || !(*plugin)->Running(); },
                 absl::Seconds(30))) {
      Failed(state, absl::DeadlineExceededError("1000 devices not registered in 30 s"));
      return;
    }
    if (!(*plugin)->Running()) {
      Failed(state, absl::InternalError((*plugin)->Describe()));
      return;
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    absl::StatusOr<Memory> memory = ReadMemory((*plugin)->pid());
    absl::StatusOr<Memory> floor = MeasureTrivialServer(*config, dir.path());
    if (Failed(state, memory.status()) || Failed(state, floor.status())) return;
    SetMemoryCounters(state, *memory, kPluginTargetMiB, &*floor);
    state.counters["max_threads"] = kPluginMaxThreads;
    std::printf("kdp-gpu-plugin, 1000 devices, largest Rss (MiB): %s\n",
                memory->Largest(12).c_str());
    std::printf("kdp-gpu-plugin threads: %s\n", memory->Threads().c_str());
    std::printf("trivial gRPC server (same build): VmRSS %.2f MiB; largest: %s; threads: %s\n",
                floor->StatusMiB("VmRSS"), floor->Largest(8).c_str(), floor->Threads().c_str());
    Record("gpu_plugin",
           MemoryFigure("kdp-gpu-plugin serving 1000 devices, registered, ListAndWatch served:",
                        *memory, kPluginTargetMiB,
                        absl::StrFormat("<= 8 MiB and <= half the Go plugin's %.1f MiB (%.1f)",
                                        kGoPluginMiB, kPluginTargetMiB),
                        kPluginMaxThreads) +
               absl::StrFormat(" (trivial gRPC server of this build: %.2f MiB)",
                               floor->StatusMiB("VmRSS")));
    Record("side_by_side",
           absl::StrFormat(
               "VmRSS serving 1000 devices: kdp-gpu-plugin %.2f MiB (%d threads) | "
               "trivial gRPC server of the same build %.2f MiB (%d threads) | Go "
               "device plugin %.1f MiB (squat/generic-device-plugin, measured earlier "
               "on this machine kind); kdp = %.2f x the floor, %.2f x Go",
               memory->StatusMiB("VmRSS"), static_cast<int>(Memory::Get(memory->status, "Threads")),
               floor->StatusMiB("VmRSS"), static_cast<int>(Memory::Get(floor->status, "Threads")),
               kGoPluginMiB, memory->StatusMiB("VmRSS") / floor->StatusMiB("VmRSS"),
               memory->StatusMiB("VmRSS") / kGoPluginMiB));
    if (!(*plugin)->Stop()) std::printf("note: kdp-gpu-plugin did not exit 0 on SIGTERM\n");
  }
}

void BM_DraDriver64(benchmark::State& state, const Config* config) {
  for (auto _ : state) {
    TempDir dir("kdp-footprint-");
    const std::string root = dir.path() + "/root";
    const std::string topology = dir.path() + "/64-gpus.xml";
    if (!WriteFile(topology, GpuTopologyXml(64))) {
      Failed(state, absl::InternalError("cannot write " + topology));
      return;
    }
    auto manager =
        ManagerProcess::Start(*config, root, {"--node-name", kNode, "--topology-xml", topology});
    if (Failed(state, manager.status())) return;
    const auto started = std::chrono::steady_clock::now();
    auto driver = Child::Start(
        {config->dra_driver, "--kubelet-root", root, "--cdi-root", dir.path() + "/cdi",
         "--node-name", kNode, "--kubeconfig", root + "/kdp/kubeconfig", "--topology-xml", topology,
         "--log-level", "error", "--metrics-address", "127.0.0.1:0"},
        dir.path() + "/driver.log");
    if (Failed(state, driver.status())) return;
    if (!WaitFor([&] { return (*manager)->HasDraDevices(kDriver, 64) || !(*driver)->Running(); },
                 absl::Seconds(30), absl::Milliseconds(10))) {
      Failed(state, absl::DeadlineExceededError("64 devices not published in 30 s"));
      return;
    }
    if (!(*driver)->Running()) {
      Failed(state, absl::InternalError((*driver)->Describe()));
      return;
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    absl::StatusOr<Memory> memory = ReadMemory((*driver)->pid());
    if (Failed(state, memory.status())) return;
    SetMemoryCounters(state, *memory, kDriverTargetMiB);
    std::printf("kdp-dra-driver, 64 devices, largest Rss (MiB): %s\n", memory->Largest(12).c_str());
    std::printf("kdp-dra-driver threads: %s\n", memory->Threads().c_str());
    Record("dra_driver", MemoryFigure("kdp-dra-driver with 64 devices, registered, ResourceSlice "
                                      "published:",
                                      *memory, kDriverTargetMiB, "<= 10 MiB"));
    if (!(*driver)->Stop()) std::printf("note: kdp-dra-driver did not exit 0 on SIGTERM\n");
  }
}

// A manifest of `count` pods p<first>..., each asking for one device of kResource.
std::string PodsManifest(int first, int count) {
  std::string manifest;
  for (int i = first; i < first + count; ++i) {
    absl::StrAppend(&manifest, i == first ? "" : "---\n",
                    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p", i,
                    "\n  namespace: default\nspec:\n  containers:\n    - name: c\n      image: "
                    "example.com/app:1\n"
                    "      resources:\n        limits:\n          example.com/gpu: 1\n");
  }
  return manifest;
}

void BM_ManagerAllocations(benchmark::State& state, const Config* config) {
  const int pods = config->allocations;
  // Replicas of each GPU are devices of their own: ceil(pods / 1024) GPUs (the flag's limit).
  const int gpus = (pods + 1023) / 1024;
  const int replicas = (pods + gpus - 1) / gpus;
  for (auto _ : state) {
    TempDir dir("kdp-footprint-");
    const std::string root = dir.path() + "/root";
    const std::string topology = absl::StrCat(dir.path(), "/", gpus, "-gpus.xml");
    if (!WriteFile(topology, GpuTopologyXml(gpus))) {
      Failed(state, absl::InternalError("cannot write " + topology));
      return;
    }
    auto manager = ManagerProcess::Start(*config, root, {"--topology-xml", topology});
    if (Failed(state, manager.status())) return;
    auto plugin =
        Child::Start({config->gpu_plugin, "--kubelet-root", root, "--topology-xml", topology,
                      "--replicas", absl::StrCat(replicas), "--log-level", "error"},
                     dir.path() + "/plugin.log");
    if (Failed(state, plugin.status())) return;
    if (!WaitFor([&] { return (*manager)->HasDevices(kResource, gpus * replicas); },
                 absl::Seconds(60), absl::Milliseconds(20))) {
      Failed(state,
             absl::DeadlineExceededError(absl::StrCat(
                 gpus * replicas, " devices not registered in 60 s: ", (*plugin)->Describe())));
      return;
    }
    absl::StatusOr<Memory> before = ReadMemory((*manager)->child().pid());
    if (Failed(state, before.status())) return;
    constexpr int kPodsPerManifest = 100;
    const auto started = std::chrono::steady_clock::now();
    for (int first = 0; first < pods; first += kPodsPerManifest) {
      const int count = std::min(kPodsPerManifest, pods - first);
      if (Failed(state, (*manager)->ApplyPods(PodsManifest(first, count), count))) return;
      if ((first + count) % 1000 == 0) {
        std::fprintf(stderr, "footprint_benchmark: %d pods admitted\n", first + count);
      }
    }
    const double admit_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    state.SetIterationTime(admit_s);
    // Memory once the state store has compacted the journal into the checkpoint (1 s after the
    // last change by default), so that the compaction's own peak is in VmHWM, not in VmRSS.
    const std::string journal = root + "/kdp/journal";
    WaitFor([&] { return std::filesystem::file_size(journal) < 4096; }, absl::Seconds(60),
            absl::Milliseconds(50));
    // Then until VmRSS holds still for 1 s (the manager hands free pages back after compacting).
    double last_rss = -1;
    WaitFor(
        [&] {
          absl::StatusOr<Memory> now = ReadMemory((*manager)->child().pid());
          const double rss = now.ok() ? now->StatusMiB("VmRSS") : -1;
          return std::exchange(last_rss, rss) == rss;
        },
        absl::Seconds(30), absl::Seconds(1));
    absl::StatusOr<Memory> after = ReadMemory((*manager)->child().pid());
    absl::StatusOr<Memory> plugin_memory = ReadMemory((*plugin)->pid());
    if (Failed(state, after.status()) || Failed(state, plugin_memory.status())) return;
    SetMemoryCounters(state, *after, kManagerTargetMiB);
    state.counters["max_threads"] = kManagerMaxThreads;
    const double per_pod_kib =
        (after->StatusMiB("VmRSS") - before->StatusMiB("VmRSS")) * 1024 / pods;
    state.counters["VmRSS_before_MiB"] = before->StatusMiB("VmRSS");
    state.counters["KiB_per_allocation"] = per_pod_kib;
    state.counters["admissions_per_s"] = pods / admit_s;
    std::printf(
        "kdp-manager with %d devices, before admissions: VmRSS %.2f MiB; after: largest "
        "Rss (MiB): %s\n",
        gpus * replicas, before->StatusMiB("VmRSS"), after->Largest(6).c_str());
    std::printf("kdp-manager threads at rest: %s\n", after->Threads().c_str());
    std::printf("kdp-gpu-plugin with %d devices after %d allocations: VmRSS %.2f MiB\n",
                gpus * replicas, pods, plugin_memory->StatusMiB("VmRSS"));
    Record("manager", MemoryFigure(absl::StrCat("kdp-manager holding ", pods, " allocations:"),
                                   *after, kManagerTargetMiB, "<= 64 MiB", kManagerMaxThreads) +
                          absl::StrFormat(" (%.2f MiB before admitting, %.1f KiB per allocation; "
                                          "%d admissions in %.1f s, %.0f/s)",
                                          before->StatusMiB("VmRSS"), per_pod_kib, pods, admit_s,
                                          pods / admit_s));
  }
}

// The kubelet's registration server: stamps the arrival of every Register call.
class RegistrationStamp final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest*,
                        v1beta1::Empty*) override {
    absl::MutexLock lock(&mu_);
    last_ = std::chrono::steady_clock::now();
    ++count_;
    return grpc::Status::OK;
  }

  // Waits up to `timeout` for the Register call number `number`; its arrival time, or nullopt.
  std::optional<std::chrono::steady_clock::time_point> WaitFor(int number, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto arrived = [this, number]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ >= number; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout)) return std::nullopt;
    return last_;
  }

 private:
  absl::Mutex mu_;
  std::chrono::steady_clock::time_point last_ ABSL_GUARDED_BY(mu_);
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

void BM_StartToRegistered(benchmark::State& state, const Config* config) {
  for (auto _ : state) {
    TempDir dir("kdp-footprint-");
    const std::string root = dir.path() + "/root";
    std::filesystem::create_directories(root + "/device-plugins");
    RegistrationStamp registration;
    auto server = ServeOnUnixSocket(root + "/device-plugins/kubelet.sock", &registration);
    if (Failed(state, server.status())) return;
    std::vector<double> plugin_ms;
    std::vector<double> floor_ms;
    for (int i = 0; i < config->starts; ++i) {
      // The floor: fork, exec and exit of /bin/true.
      auto floor_start = std::chrono::steady_clock::now();
      auto floor = Child::Start({"/bin/true"}, "/dev/null");
      if (Failed(state, floor.status())) return;
      (*floor)->Wait();
      floor_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - floor_start)
              .count());
      // kdp-gpu-plugin: fork to Register.
      const auto start = std::chrono::steady_clock::now();
      auto plugin = Child::Start(
          {config->gpu_plugin, "--kubelet-root", root, "--topology-xml", config->fixture,
           "--log-level", "error", "--metrics-address", "127.0.0.1:0"},
          dir.path() + "/plugin.log");
      if (Failed(state, plugin.status())) return;
      auto registered = registration.WaitFor(i + 1, absl::Seconds(10));
      if (!registered.has_value()) {
        Failed(state, absl::DeadlineExceededError(
                          absl::StrCat("no Register in 10 s: ", (*plugin)->Describe())));
        return;
      }
      plugin_ms.push_back(std::chrono::duration<double, std::milli>(*registered - start).count());
      if (!(*plugin)->Stop()) std::printf("note: kdp-gpu-plugin did not exit 0 on SIGTERM\n");
    }
    (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    const double median = Median(plugin_ms);
    const double floor = Median(floor_ms);
    state.SetIterationTime(median / 1000);
    std::sort(plugin_ms.begin(), plugin_ms.end());
    state.counters["median_ms"] = median;
    state.counters["min_ms"] = plugin_ms.front();
    state.counters["p90_ms"] = plugin_ms[plugin_ms.size() * 9 / 10];
    state.counters["floor_median_ms"] = floor;
    state.counters["ratio_to_floor"] = median / floor;
    state.counters["target_ms"] = kStartTargetMs;
    state.counters["ratio_to_target"] = median / kStartTargetMs;
    const bool pass = median <= kStartTargetMs && median <= kStartMaxRatioToFloor * floor;
    Record(
        "startup",
        absl::StrFormat("kdp-gpu-plugin fork/exec to Register (8-GPU fixture): median %.2f ms "
                        "over %d starts (min %.2f, p90 %.2f); floor fork/exec/exit of "
                        "/bin/true %.2f ms (ratio %.1f); target <= %.0f ms and <= %.0f x the "
                        "floor: ratio %.2f %s",
                        median, config->starts, plugin_ms.front(),
                        plugin_ms[plugin_ms.size() * 9 / 10], floor, median / floor, kStartTargetMs,
                        kStartMaxRatioToFloor, median / kStartTargetMs, pass ? "PASS" : "FAIL"));
  }
}

// ---------------------------------------------------------------------------------------------

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      return absl::StartsWith(arg, flag) ? argv[i] + std::strlen(flag) : nullptr;
    };
    if (const char* v = value("--kdp_gpu_plugin=")) {
      config.gpu_plugin = v;
    } else if (const char* v = value("--kdp_dra_driver=")) {
      config.dra_driver = v;
    } else if (const char* v = value("--kdp_manager=")) {
      config.manager = v;
    } else if (const char* v = value("--kdp_floor=")) {
      config.floor = v;
    } else if (const char* v = value("--kdp_allocations=");
               v != nullptr && absl::SimpleAtoi(v, &config.allocations) && config.allocations > 0 &&
               config.allocations <= 100000) {
    } else if (const char* v = value("--kdp_starts=");
               v != nullptr && absl::SimpleAtoi(v, &config.starts) && config.starts > 0) {
    } else {
      std::fprintf(stderr, "footprint_benchmark: bad argument %s\n", arg.c_str());
      return 2;
    }
  }
  auto add = [](const char* name, auto function, const Config* c) {
    benchmark::RegisterBenchmark(name, function, c)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  add("footprint/gpu_plugin_1000_devices", BM_GpuPlugin1000, &config);
  add("footprint/dra_driver_64_devices", BM_DraDriver64, &config);
  add("footprint/gpu_plugin_start_to_register", BM_StartToRegistered, &config);
  add(absl::StrCat("footprint/manager_", config.allocations, "_allocations").c_str(),
      BM_ManagerAllocations, &config);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  std::printf("\n== footprint_benchmark summary ==\n");
  for (const char* name : {"gpu_plugin", "side_by_side", "dra_driver", "manager", "startup"}) {
    auto it = Figures().find(name);
    if (it != Figures().end()) std::printf("FIGURE: %s\n", it->second.c_str());
  }
  return any_failure ? 1 : 0;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
