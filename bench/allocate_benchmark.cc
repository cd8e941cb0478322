// allocate_benchmark measures, in one run, kdp's Allocate round trip (the manager's
// kdp::manager::Endpoint calling a plugin served by the SDK's PluginRunner) against the floor of
// the machine it runs on (a bare gRPC unary call over a unix socket, sync API, empty messages),
// prints their ratio against the 1.5 target, and then the resident memory of the kdp-gpu-plugin
// example serving 1,000 devices against the 8 MiB target, with a breakdown.
//
// Why in-process for the ratio: the floor server, the SDK's plugin server and the client then share
// one process and one CPU layout, so the ratio shows what kdp adds, not how the scheduler placed
// two processes. Informational figures: the floor server with a callback-API ListAndWatch (the
// server shape the SDK had before it moved ListAndWatch to the sync API, kept to show why), the
// SDK plugin with 1,000 devices, and the real kdp-gpu-plugin
// process. Repetitions are interleaved (floor, kdp, floor, ...) so a slow phase of the machine
// moves both sides of the ratio.
//
// Usage: allocate_benchmark [--benchmark_* flags] [--kdp_gpu_plugin=PATH] [--kdp_skip_rss]
// Exit status: 0 when everything was measured (a missed target is reported, not an error), 1 when
// a measurement could not be made, 2 on a bad argument. docs/benchmarks.md has our figures.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_temp_dir.h"
#include "bench/summary_reporter.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"
#include "manager/src/devicemanager/endpoint.h"

extern char** environ;

namespace kdp::bench {
namespace {

constexpr double kRatioTarget = 1.5;
constexpr double kRssTargetMiB = 8.0;
constexpr char kResource[] = "example.com/gpu";
// The in-process plugin with 1,000 devices, served by the same runner on a socket of its own.
constexpr char kManyResource[] = "example.com/vgpu";
constexpr char kFloorName[] = "floor/grpc_unary_sync";
constexpr char kMixedFloorName[] = "floor/grpc_unary_sync_next_to_callback_stream";
constexpr char kInProcessName[] = "kdp/allocate_in_process";
constexpr char kManyName[] = "kdp/allocate_in_process_1000_devices";
constexpr char kProcessName[] = "kdp/allocate_gpu_plugin_process";
// argv[1] that turns this binary into the "trivial gRPC server" of the memory breakdown.
constexpr char kTrivialServerFlag[] = "--kdp_internal_trivial_server=";

// ---------------------------------------------------------------------------------------------
// Files, directories and child processes.

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string PluginSocketIn(const std::string& kubelet_root,
                           const std::string& resource = kResource) {
  return absl::StrCat(kubelet_root, "/device-plugins/", SocketNameFor(resource));
}

// A server process started with fork/exec, stdout and stderr to a log file. It gets SIGTERM if
// this process dies first (PR_SET_PDEATHSIG), so a crashed benchmark leaves no plugin behind; the
// destructor stops it as Terminate() does.
class ServerProcess {
 public:
  // Starts `argv` with `extra_env` ("NAME=value") added to this environment and waits until
  // `socket_path` exists (polling: the plugin offers nothing to wait on). INTERNAL, with the
  // log, when it exits first; DEADLINE_EXCEEDED after 10 s.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
      const std::string& socket_path, const std::string& log_path) {
    // Everything the child touches is built before fork: only async-signal-safe calls after it.
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    for (const std::string& e : extra_env) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    const absl::Time started = absl::Now();
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (log < 0 || null < 0) _exit(127);
      dup2(null, 0);
      dup2(log, 1);
      dup2(log, 2);
      execve(args[0], args.data(), env.data());
      _exit(127);
    }
    std::unique_ptr<ServerProcess> process(new ServerProcess(pid));
    while (!IsSocket(socket_path)) {
      if (!process->Running()) {
        return absl::InternalError(absl::StrCat(argv[0], " exited before serving ", socket_path,
                                                "; its log:\n", ReadFile(log_path)));
      }
      if (absl::Now() - started > absl::Seconds(10)) {
        return absl::DeadlineExceededError(absl::StrCat("no socket at ", socket_path));
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
    process->startup_ = absl::Now() - started;
    return process;
  }

  ~ServerProcess() { (void)Terminate(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // From fork to the socket's appearance.
  absl::Duration startup() const { return startup_; }

  // SIGTERM, up to 5 s for it to exit, then SIGKILL. True when it exited 0 on SIGTERM.
  bool Terminate() {
    if (Running()) {
      kill(pid_, SIGTERM);
      const absl::Time deadline = absl::Now() + absl::Seconds(5);
      while (Running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
      if (Running()) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        exited_ = true;
      }
    }
    return WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
  }

 private:
  explicit ServerProcess(pid_t pid) : pid_(pid) {}

  bool Running() {
    if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  const pid_t pid_;
  absl::Duration startup_;
  bool exited_ = false;
  int status_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Servers and clients.

// The floor: GetDevicePluginOptions answering at once, every method on the sync API.
class FloorService final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

// The same with ListAndWatch on the callback API next to the sync unary methods (the SDK's first
// shape). One callback method gives the server callback-API polling besides its sync thread
// pool; this figure shows what that alone costs a sync unary call, which is why the SDK now
// serves ListAndWatch on the sync API.
class MixedFloorService final : public v1beta1::DevicePlugin::WithCallbackMethod_ListAndWatch<
                                    v1beta1::DevicePlugin::Service> {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> Serve(grpc::Service* service, const std::string& socket_path) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // As Endpoint::Connect does.
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateCustomChannel(UnixTarget(socket_path), grpc::InsecureChannelCredentials(), args));
}

// One GetDevicePluginOptions call; `wait` waits (10 s at most) for a server still starting.
absl::Status CallOptions(v1beta1::DevicePlugin::Stub& stub, bool wait = false) {
  grpc::ClientContext context;
  if (wait) {
    context.set_wait_for_ready(true);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }
  v1beta1::DevicePluginOptions response;
  grpc::Status status = stub.GetDevicePluginOptions(&context, v1beta1::Empty(), &response);
  return status.ok() ? absl::OkStatus() : absl::UnavailableError(status.error_message());
}

// An in-process plugin with `count` GPUs whose devices carry what DefaultAllocate() merges: two
// device nodes, a mount, an env and a CDI name each, so an Allocate does the SDK's real work.
class BenchPlugin final : public DevicePlugin {
 public:
  BenchPlugin(std::string resource_name, int count)
      : DevicePlugin(std::move(resource_name)), count_(count) {}

  absl::StatusOr<std::vector<Device>> Discover() override {
    std::vector<Device> devices;
    for (int i = 0; i < count_; ++i) {
      Device& device = devices.emplace_back();
      device.id = absl::StrCat("gpu", i);
      device.numa_nodes = {i % 2};
      const std::string card = absl::StrCat("/dev/dri/card", i);
      const std::string render = absl::StrCat("/dev/dri/renderD", 128 + i);
      device.specs = {{.container_path = card, .host_path = card},
                      {.container_path = render, .host_path = render}};
      device.mounts = {
          {.container_path = "/usr/lib/kdp", .host_path = "/opt/kdp/lib", .read_only = true}};
      device.envs = {{"KDP_VISIBLE_DEVICES", device.id}};
      device.cdi_devices = {absl::StrCat("example.com/gpu=", device.id)};
    }
    return devices;
  }

 private:
  const int count_;
};

// ---------------------------------------------------------------------------------------------
// Benchmarks and their summary.

// Context switches of this whole process so far (every thread, voluntary or not).
long ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

// Runs `call` once per iteration. Adds as counters this repetition's per-call p50 and p99 (µs)
// and the context switches per call of this process: each is a thread hand-off, and on a 2-vCPU
// VM often a wake-up of the other vCPU, which is where a round trip's time goes.
template <typename Call>
void MeasureRoundTrips(benchmark::State& state, Call call) {
  std::vector<double> micros;
  micros.reserve(1 << 16);
  const long switches_before = ContextSwitches();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = call();
    const auto end = std::chrono::steady_clock::now();
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  if (micros.empty()) return;
  const double calls = static_cast<double>(micros.size());
  state.counters["csw"] = static_cast<double>(ContextSwitches() - switches_before) / calls;
  std::sort(micros.begin(), micros.end());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
}

void BM_GrpcUnary(benchmark::State& state, v1beta1::DevicePlugin::Stub* stub) {
  MeasureRoundTrips(state, [stub] { return CallOptions(*stub); });
}

void BM_EndpointAllocate(benchmark::State& state, manager::Endpoint* endpoint) {
  const std::vector<std::string> ids = {"gpu0"};
  MeasureRoundTrips(state, [&]() -> absl::Status {
    absl::StatusOr<v1beta1::AllocateResponse> response = endpoint->Allocate(ids);
    if (!response.ok()) return response.status();
    if (response->container_responses_size() != 1 ||
        response->container_responses(0).devices_size() == 0) {
      return absl::InternalError("Allocate answered no devices");
    }
    return absl::OkStatus();
  });
}

// Prints the latency table and ratios; returns the summary sentence, or an error when the floor
// or the in-process Allocate is missing.
absl::StatusOr<std::string> PrintLatencySummary(const SummaryReporter& reporter) {
  std::printf("\n== Summary: medians over repetitions, µs per round trip ==\n");
  std::printf("%-58s %9s %9s %9s\n", "figure", "mean", "p50", "p99");
  const auto* floor = reporter.Print("floor: gRPC unary, sync, unix socket, empty", kFloorName);
  const auto* mixed =
      reporter.Print("floor, service with a callback ListAndWatch", kMixedFloorName);
  const auto* kdp =
      reporter.Print("kdp: Endpoint::Allocate -> SDK plugin, in-process", kInProcessName);
  reporter.Print("kdp: same, plugin with 1000 devices", kManyName);
  const auto* process = reporter.Print("kdp: Endpoint::Allocate -> kdp-gpu-plugin", kProcessName);
  if (floor == nullptr || kdp == nullptr) {
    return absl::UnavailableError("ratio not measured");
  }
  const double ratio = kdp->mean_us / floor->mean_us;
  std::printf("%-58s %9.2f   (p50 ratio %.2f)\n", "ratio kdp in-process / floor", ratio,
              kdp->Counter("p50_us") / floor->Counter("p50_us"));
  if (mixed != nullptr) {
    std::printf("%-58s %9.2f   (why ListAndWatch is served on the sync API)\n",
                "callback-ListAndWatch floor / floor", mixed->mean_us / floor->mean_us);
  }
  if (process != nullptr) {
    std::printf("%-58s %9.2f   (informational)\n", "ratio kdp-gpu-plugin process / floor",
                process->mean_us / floor->mean_us);
  }
  return absl::StrFormat("Allocate %.1f us vs floor %.1f us: ratio %.2f (target <= %.1f) %s",
                         kdp->mean_us, floor->mean_us, ratio, kRatioTarget,
                         ratio <= kRatioTarget ? "PASS" : "FAIL");
}

// ---------------------------------------------------------------------------------------------
// Memory.

struct Memory {
  std::map<std::string, long> status;  // /proc/<pid>/status, "Key: <number>" lines (KiB).
  std::map<std::string, long> rollup;  // /proc/<pid>/smaps_rollup (KiB).
  // Rss by mapping (library file name, [heap], [anon], [stack], ...), largest first (KiB).
  std::vector<std::pair<std::string, long>> by_mapping;
  absl::Duration startup;

  long Get(const std::map<std::string, long>& map, const char* key) const {
    auto it = map.find(key);
    return it == map.end() ? 0 : it->second;
  }
};

std::map<std::string, long> ParseNumbers(const std::string& text) {
  std::map<std::string, long> values;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    char* end = nullptr;
    if (colon == std::string::npos) continue;
    const long value = std::strtol(line.c_str() + colon + 1, &end, 10);
    if (end != line.c_str() + colon + 1) values[line.substr(0, colon)] = value;
  }
  return values;
}

Memory ReadMemory(const ServerProcess& process) {
  const std::string proc = absl::StrCat("/proc/", process.pid());
  Memory memory;
  memory.status = ParseNumbers(ReadFile(proc + "/status"));
  memory.rollup = ParseNumbers(ReadFile(proc + "/smaps_rollup"));
  memory.startup = process.startup();
  std::map<std::string, long> by_mapping;
  std::istringstream smaps(ReadFile(proc + "/smaps"));
  std::string mapping;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.empty()) continue;
    if (first.back() != ':') {  // A mapping: "start-end perms offset dev inode [path]".
      std::string perms, offset, dev, inode, path;
      fields >> perms >> offset >> dev >> inode >> std::ws;
      std::getline(fields, path);
      mapping = path.empty() ? "[anon]" : std::filesystem::path(path).filename().string();
    } else if (first == "Rss:") {
      long kib = 0;
      fields >> kib;
      by_mapping[mapping] += kib;
    }
  }
  memory.by_mapping.assign(by_mapping.begin(), by_mapping.end());
  std::sort(memory.by_mapping.begin(), memory.by_mapping.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return memory;
}

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

struct MemoryRun {
  std::string label;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  // Devices the first ListAndWatch must list, and one of them to Allocate; 0 for a server that is
  // not a plugin (it gets GetDevicePluginOptions calls instead).
  int devices = 0;
  std::string device_id;
};

// Starts the server with --kubelet-root `root`; for a plugin, consumes the first ListAndWatch
// (checking the device count) and, with the stream open, makes 100 Allocate calls; then reads its
// memory and stops it with SIGTERM.
absl::StatusOr<Memory> MeasureMemory(const MemoryRun& run, const std::string& root) {
  std::vector<std::string> argv = run.argv;
  const std::string socket_path = PluginSocketIn(root);
  if (run.devices > 0) {
    argv.insert(argv.end(), {"--kubelet-root", root});
  } else {
    std::error_code ignored;
    std::filesystem::create_directories(root + "/device-plugins", ignored);
    argv.push_back(kTrivialServerFlag + socket_path);
  }
  auto process = ServerProcess::Start(argv, run.env, socket_path, root + ".log");
  if (!process.ok()) return process.status();
  auto stub = Dial(socket_path);
  grpc::ClientContext stream;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader;
  if (run.devices > 0) {
    // The socket exists from bind(), a moment before listen(): wait rather than fail.
    stream.set_wait_for_ready(true);
    stream.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    reader = stub->ListAndWatch(&stream, v1beta1::Empty());
    v1beta1::ListAndWatchResponse snapshot;
    if (!reader->Read(&snapshot)) {
      return absl::UnavailableError(
          absl::StrCat(run.label, ": no ListAndWatch message: ", reader->Finish().error_message()));
    }
    if (snapshot.devices_size() != run.devices) {
      return absl::InternalError(
          absl::StrCat(run.label, ": ListAndWatch listed ", snapshot.devices_size(), " devices"));
    }
    auto endpoint = manager::Endpoint::Connect(kResource, socket_path, {});
    for (int i = 0; i < 100 && endpoint.ok(); ++i) {
      if (auto response = (*endpoint)->Allocate({run.device_id}); !response.ok()) {
        return response.status();
      }
    }
    if (!endpoint.ok()) return endpoint.status();
  } else {
    for (int i = 0; i < 100; ++i) {
      if (absl::Status status = CallOptions(*stub, /*wait=*/true); !status.ok()) return status;
    }
  }
  Memory memory = ReadMemory(**process);
  if (reader != nullptr) {
    stream.TryCancel();
    (void)reader->Finish();
  }
  if (!(*process)->Terminate()) {
    std::printf("note: %s did not exit 0 on SIGTERM\n", run.label.c_str());
  }
  return memory;
}

// Measures kdp-gpu-plugin with 1,000 devices and the breakdown rows, prints them, and returns the
// summary sentence.
absl::StatusOr<std::string> ReportMemory(const std::string& plugin_bin, const std::string& topology,
                                         const std::string& dir) {
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  const std::vector<std::string> plugin = {plugin_bin, "--topology-xml", topology, "--log-level",
                                           "error"};
  std::vector<std::string> replicated = plugin;
  replicated.insert(replicated.end(), {"--replicas", "125"});
  const std::vector<MemoryRun> runs = {
      {"kdp-gpu-plugin, 1000 devices (--replicas 125)", replicated, {}, 1000, "gpu0::0"},
      {"kdp-gpu-plugin, 8 devices", plugin, {}, 8, "gpu0"},
      {"kdp-gpu-plugin, 1000 devices, MALLOC_ARENA_MAX=1",
       replicated,
       {"MALLOC_ARENA_MAX=1"},
       1000,
       "gpu0::0"},
      // This binary re-executed as just the floor server: same shared libraries (gRPC, protobuf,
      // Abseil, hwloc, libstdc++), so what any process of this build pays before kdp's code.
      {"trivial gRPC server (same libraries, no kdp code)", {self}, {}, 0, ""},
  };
  std::printf("\n== Memory after one ListAndWatch and 100 Allocate calls (MiB) ==\n");
  std::printf("%-50s %7s %7s %7s %7s %7s %7s %7s %6s\n", "process", "VmRSS", "VmHWM", "RssAnon",
              "RssFile", "Pss", "Private", "threads", "start");
  std::vector<Memory> measured;
  for (size_t i = 0; i < runs.size(); ++i) {
    absl::StatusOr<Memory> m = MeasureMemory(runs[i], absl::StrCat(dir, "/rss", i));
    if (!m.ok()) return m.status();
    const long private_kib =
        m->Get(m->rollup, "Private_Clean") + m->Get(m->rollup, "Private_Dirty");
    std::printf("%-50s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7ld %4.0fms\n", runs[i].label.c_str(),
                MiB(m->Get(m->status, "VmRSS")), MiB(m->Get(m->status, "VmHWM")),
                MiB(m->Get(m->status, "RssAnon")), MiB(m->Get(m->status, "RssFile")),
                MiB(m->Get(m->rollup, "Pss")), MiB(private_kib), m->Get(m->status, "Threads"),
                absl::ToDoubleMilliseconds(m->startup));
    measured.push_back(*std::move(m));
  }
  std::printf(
      "(Pss: shared pages split among the processes mapping them; Private: pages no other "
      "process maps; start: fork to socket)\nlargest Rss of the 1000-device plugin:");
  const Memory& thousand = measured[0];
  const size_t shown = std::min<size_t>(8, thousand.by_mapping.size());
  for (size_t i = 0; i < shown; ++i) {
    std::printf(" %s %.2f%s", thousand.by_mapping[i].first.c_str(),
                MiB(thousand.by_mapping[i].second), i + 1 < shown ? "," : "\n");
  }
  const double rss = MiB(thousand.Get(thousand.status, "VmRSS"));
  return absl::StrFormat("kdp-gpu-plugin VmRSS %.2f MiB with 1000 devices (target <= %.0f) %s", rss,
                         kRssTargetMiB, rss <= kRssTargetMiB ? "PASS" : "FAIL");
}

// ---------------------------------------------------------------------------------------------

// `allocate_benchmark --kdp_internal_trivial_server=<socket>`: serves FloorService until SIGTERM.
int RunTrivialServer(const std::string& socket_path) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  FloorService service;
  std::unique_ptr<grpc::Server> server = Serve(&service, socket_path);
  if (server == nullptr) return 1;
  int signal = 0;
  sigwait(&signals, &signal);
  server->Shutdown();
  return 0;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "allocate_benchmark: %s\n", what.c_str());
  return 1;
}

int Main(int argc, char** argv) {
  if (argc == 2 && absl::StartsWith(argv[1], kTrivialServerFlag)) {
    return RunTrivialServer(argv[1] + std::strlen(kTrivialServerFlag));
  }
  // Interleaved repetitions by default; a later flag on the command line still wins.
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave.data());
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  std::string plugin_bin = KDP_GPU_PLUGIN_BIN;
  bool skip_rss = false;
  for (int i = 1; i < args_count; ++i) {
    const std::string arg = args[i];
    if (absl::StartsWith(arg, "--kdp_gpu_plugin=")) {
      plugin_bin = arg.substr(std::strlen("--kdp_gpu_plugin="));
    } else if (arg == "--kdp_skip_rss") {
      skip_rss = true;
    } else {
      std::fprintf(stderr, "allocate_benchmark: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  // The runner retries registration on a kubelet.sock that is not there; keep that quiet.
  log::SetMinLevel(log::Level::kError);
  const std::string topology =
      std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";
  TempDir dir("kdp-bench-");
  if (dir.path().empty()) return Fail(absl::StrCat("mkdtemp: ", std::strerror(errno)));

  // The floor, and the floor with the SDK's server shape.
  FloorService floor_service;
  MixedFloorService mixed_service;
  std::unique_ptr<grpc::Server> floor_server = Serve(&floor_service, dir.path() + "/floor.sock");
  std::unique_ptr<grpc::Server> mixed_server = Serve(&mixed_service, dir.path() + "/mixed.sock");
  if (floor_server == nullptr || mixed_server == nullptr) return Fail("cannot serve the floors");
  auto floor_stub = Dial(dir.path() + "/floor.sock");
  auto mixed_stub = Dial(dir.path() + "/mixed.sock");

  // kdp in-process: a PluginRunner serving both BenchPlugins, the manager's Endpoint calling them.
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<BenchPlugin>(kResource, 8));
  plugins.push_back(std::make_unique<BenchPlugin>(kManyResource, 1000));
  const std::string inproc = dir.path() + "/inproc";
  auto runner = PluginRunner::Create({.kubelet_root = inproc}, std::move(plugins));
  if (!runner.ok()) return Fail(runner.status().ToString());
  if (absl::Status started = (*runner)->Start(); !started.ok()) return Fail(started.ToString());
  auto in_process = manager::Endpoint::Connect(kResource, PluginSocketIn(inproc), {});
  auto in_process_many =
      manager::Endpoint::Connect(kManyResource, PluginSocketIn(inproc, kManyResource), {});
  if (!in_process.ok()) return Fail(in_process.status().ToString());
  if (!in_process_many.ok()) return Fail(in_process_many.status().ToString());

  // kdp against the real kdp-gpu-plugin process (the fixture's 8 GPUs).
  const std::string process_root = dir.path() + "/process";
  auto plugin_process =
      ServerProcess::Start({plugin_bin, "--topology-xml", topology, "--kubelet-root", process_root,
                            "--log-level", "error"},
                           {}, PluginSocketIn(process_root), process_root + ".log");
  absl::StatusOr<std::unique_ptr<manager::Endpoint>> to_process =
      plugin_process.ok() ? manager::Endpoint::Connect(kResource, PluginSocketIn(process_root), {})
                          : plugin_process.status();

  auto add = [](const char* name, auto function, auto* target) {
    benchmark::RegisterBenchmark(name, function, target)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MeasureProcessCPUTime()
        ->MinTime(0.5)
        ->Repetitions(5)
        ->ReportAggregatesOnly(true);
  };
  add(kFloorName, BM_GrpcUnary, floor_stub.get());
  add(kMixedFloorName, BM_GrpcUnary, mixed_stub.get());
  add(kInProcessName, BM_EndpointAllocate, in_process->get());
  add(kManyName, BM_EndpointAllocate, in_process_many->get());
  if (to_process.ok()) {
    add(kProcessName, BM_EndpointAllocate, to_process->get());
  } else {
    std::printf("not running %s: %s\n", kProcessName, to_process.status().ToString().c_str());
  }
  SummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                 : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (to_process.ok()) to_process->reset();
  if (plugin_process.ok() && !(*plugin_process)->Terminate()) {
    std::printf("note: kdp-gpu-plugin did not exit 0 on SIGTERM\n");
  }
  in_process->reset();
  in_process_many->reset();
  (*runner)->Stop();
  floor_server->Shutdown();
  mixed_server->Shutdown();

  absl::StatusOr<std::string> latency = PrintLatencySummary(reporter);
  absl::StatusOr<std::string> memory = std::string("RSS skipped (--kdp_skip_rss)");
  if (!skip_rss) memory = ReportMemory(plugin_bin, topology, dir.path());
  auto text = [](const absl::StatusOr<std::string>& s) {
    return s.ok() ? *s : std::string(s.status().message());
  };
  std::printf("\nallocate_benchmark: %s; %s\n", text(latency).c_str(), text(memory).c_str());
  return latency.ok() && memory.ok() ? 0 : 1;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
