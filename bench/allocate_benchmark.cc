// allocate_benchmark measures, in one run, kdp's Allocate round trip (the manager's
// kdp::manager::Endpoint calling a plugin served by the SDK's PluginRunner) against the floor of
// the machine it runs on (a bare gRPC unary call over a unix socket, sync API, empty messages),
// prints their ratio against the 1.5 target, and then measures the resident memory of the
// kdp-gpu-plugin example serving 1,000 devices against the 8 MiB target.
//
// Why in-process for the ratio: the floor server, the SDK's plugin server and the client then share
// one process and one CPU layout, so the ratio shows what kdp adds (DefaultAllocate, conversions,
// deadline, Status mapping), not how the scheduler placed two processes. The Allocate against the
// real kdp-gpu-plugin process is reported as a third, informational figure.
//
// Usage: allocate_benchmark [--benchmark_* flags] [--kdp_gpu_plugin=PATH] [--kdp_skip_rss]
// Exit status: 0 when everything was measured (a missed target is reported, not an error), 1 when
// a measurement could not be made. docs/benchmarks.md has the figures measured on our machines.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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
// argv[1] that turns this binary into the "trivial gRPC server" of the RSS breakdown.
constexpr char kTrivialServerFlag[] = "--kdp_internal_trivial_server=";

// ---------------------------------------------------------------------------------------------
// Scratch directory and child processes.

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/kdp-bench-XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process started with fork/exec, its stdout and stderr going to a log file. It gets
// SIGTERM if this process dies first (PR_SET_PDEATHSIG), so a crashed benchmark leaves no plugin
// behind; the destructor sends SIGTERM and reaps it.
class ChildProcess {
 public:
  // `extra_env` entries ("NAME=value") are added to this process's environment.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
      const std::string& log_path) {
    // Everything the child touches is built before fork: only async-signal-safe calls after it.
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    for (const std::string& e : extra_env) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (log < 0 || null < 0) _exit(127);
      dup2(null, 0);
      dup2(log, 1);
      dup2(log, 2);
      execve(args[0], args.data(), env.data());
      _exit(127);
    }
    return std::unique_ptr<ChildProcess>(new ChildProcess(pid, log_path));
  }

  ~ChildProcess() { (void)Terminate(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const { return ReadFile(log_path_); }

  // True while the process has not exited (reaps it when it has).
  bool Running() {
    if (exited_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
    }
    return !exited_;
  }

  // SIGTERM, then up to 5 s for a clean exit, then SIGKILL. Returns the wait status.
  int Terminate() {
    if (!Running()) return status_;
    kill(pid_, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (Running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
    if (Running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      exited_ = true;
    }
    return status_;
  }

 private:
  ChildProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}

  const pid_t pid_;
  const std::string log_path_;
  bool exited_ = false;
  int status_ = 0;
};

// Polls until `socket_path` is a socket: a benchmark may poll; the plugin offers nothing to wait
// on.
absl::Status WaitForSocket(ChildProcess& child, const std::string& socket_path,
                           absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!IsSocket(socket_path)) {
    if (!child.Running()) {
      return absl::InternalError(
          absl::StrCat("process exited before serving ", socket_path, "; its log:\n", child.log()));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no socket at ", socket_path, " after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::OkStatus();
}

std::string PluginSocketIn(const std::string& kubelet_root,
                           const std::string& resource = kResource) {
  return absl::StrCat(kubelet_root, "/device-plugins/", SocketNameFor(resource));
}

// ---------------------------------------------------------------------------------------------
// The three servers.

// The floor: GetDevicePluginOptions answering at once, nothing else.
class FloorService final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

// The same service shaped like the SDK's PluginService: ListAndWatch on the callback API next to
// the sync unary methods. Registering one callback method gives the server callback-API pollers
// besides its sync thread pool; this figure shows what that alone costs a sync unary call.
class MixedFloorService final : public v1beta1::DevicePlugin::WithCallbackMethod_ListAndWatch<
                                    v1beta1::DevicePlugin::Service> {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> StartFloorServer(grpc::Service* service,
                                               const std::string& socket_path) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket_path), grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

std::shared_ptr<grpc::Channel> Dial(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // As Endpoint::Connect does.
  return grpc::CreateCustomChannel(UnixTarget(socket_path), grpc::InsecureChannelCredentials(),
                                   args);
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
      Device device;
      device.id = absl::StrCat("gpu", i);
      device.numa_nodes = {i / 4};
      device.specs = {{.container_path = absl::StrCat("/dev/dri/card", i),
                       .host_path = absl::StrCat("/dev/dri/card", i)},
                      {.container_path = absl::StrCat("/dev/dri/renderD", 128 + i),
                       .host_path = absl::StrCat("/dev/dri/renderD", 128 + i)}};
      device.mounts = {{.container_path = "/usr/lib/kdp-gpu",
                        .host_path = "/opt/kdp-gpu/lib",
                        .read_only = true}};
      device.envs = {{"KDP_VISIBLE_DEVICES", device.id}};
      device.cdi_devices = {absl::StrCat("example.com/gpu=", device.id)};
      devices.push_back(std::move(device));
    }
    return devices;
  }

 private:
  const int count_;
};

// ---------------------------------------------------------------------------------------------
// Benchmarks.

// Context switches of this whole process so far (every thread, voluntary and not).
long ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

// Runs `call` once per iteration and adds the per-call p50/p99 (µs) of this repetition as
// counters, next to the mean that Google Benchmark reports, and the context switches per call of
// this process: each is a thread hand-off, and on a 2-vCPU VM often a wake-up of the other vCPU.
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
  state.counters["csw"] =
      static_cast<double>(ContextSwitches() - switches_before) / static_cast<double>(micros.size());
  std::sort(micros.begin(), micros.end());
  auto percentile = [&](double p) {
    return micros[std::min(micros.size() - 1, static_cast<size_t>(p * micros.size()))];
  };
  state.counters["p50_us"] = percentile(0.50);
  state.counters["p99_us"] = percentile(0.99);
}

void BM_GrpcUnaryFloor(benchmark::State& state, v1beta1::DevicePlugin::Stub* stub) {
  MeasureRoundTrips(state, [stub]() {
    grpc::ClientContext context;
    v1beta1::DevicePluginOptions response;
    grpc::Status status = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &response);
    return status.ok() ? absl::OkStatus() : absl::UnavailableError(status.error_message());
  });
}

void BM_EndpointAllocate(benchmark::State& state, manager::Endpoint* endpoint,
                         std::vector<std::string> ids) {
  MeasureRoundTrips(state, [&]() -> absl::Status {
    absl::StatusOr<v1beta1::AllocateResponse> response = endpoint->Allocate(ids);
    if (!response.ok()) return response.status();
    if (response->container_responses_size() != 1) {
      return absl::InternalError("Allocate answered no container response");
    }
    return absl::OkStatus();
  });
}

// Console output as usual, plus the median (or, without repetitions, the only) real time and
// counters of each benchmark, for the summary.
class SummaryReporter final : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;

  struct Figure {
    double real_us = 0;
    double p50_us = 0;
    double p99_us = 0;
    bool median = false;
    std::string error;
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const std::string name = run.run_name.function_name;
      Figure& figure = figures_[name];
      if (run.error_occurred) {
        figure.error = run.error_message;
        continue;
      }
      const bool is_median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (!is_median && (run.run_type == Run::RT_Aggregate || figure.median)) continue;
      figure.median = is_median;
      figure.real_us = run.GetAdjustedRealTime();  // Every benchmark reports in µs.
      auto counter = [&](const char* key) {
        auto it = run.counters.find(key);
        return it == run.counters.end() ? 0.0 : it->second.value;
      };
      figure.p50_us = counter("p50_us");
      figure.p99_us = counter("p99_us");
    }
  }

  const Figure* Find(const std::string& name) const {
    auto it = figures_.find(name);
    return it == figures_.end() || !it->second.error.empty() || it->second.real_us <= 0
               ? nullptr
               : &it->second;
  }
  std::string ErrorOf(const std::string& name) const {
    auto it = figures_.find(name);
    return it == figures_.end() ? "not run" : it->second.error;
  }

 private:
  std::map<std::string, Figure> figures_;
};

// ---------------------------------------------------------------------------------------------
// Memory of kdp-gpu-plugin.

struct MemoryFigures {
  // From /proc/<pid>/status, in KiB.
  std::map<std::string, long> status;
  // From /proc/<pid>/smaps_rollup, in KiB.
  std::map<std::string, long> rollup;
  // Rss by mapping (library basename, [heap], [anon], [stack], ...), largest first, in KiB.
  std::vector<std::pair<std::string, long>> by_mapping;
};

// "Key:   1234 kB" lines.
std::map<std::string, long> ParseKbLines(const std::string& text) {
  std::map<std::string, long> values;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || !absl::EndsWith(line, "kB")) continue;
    values[line.substr(0, colon)] = std::strtol(line.c_str() + colon + 1, nullptr, 10);
  }
  return values;
}

MemoryFigures ReadMemory(pid_t pid) {
  const std::string proc = absl::StrCat("/proc/", pid);
  MemoryFigures figures;
  figures.status = ParseKbLines(ReadFile(proc + "/status"));
  figures.rollup = ParseKbLines(ReadFile(proc + "/smaps_rollup"));

  std::map<std::string, long> by_mapping;
  std::istringstream smaps(ReadFile(proc + "/smaps"));
  std::string line;
  std::string current;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.empty()) continue;
    if (first.back() != ':') {  // A mapping header: "start-end perms offset dev inode [path]".
      std::string perms, offset, dev, inode, path;
      fields >> perms >> offset >> dev >> inode;
      std::getline(fields, path);
      path.erase(0, path.find_first_not_of(' '));
      current = path.empty() ? "[anon]" : std::filesystem::path(path).filename().string();
      if (current.empty()) current = path;
    } else if (first == "Rss:") {
      long kb = 0;
      fields >> kb;
      by_mapping[current] += kb;
    }
  }
  figures.by_mapping.assign(by_mapping.begin(), by_mapping.end());
  std::sort(figures.by_mapping.begin(), figures.by_mapping.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return figures;
}

double MiB(long kib) { return static_cast<double>(kib) / 1024.0; }

struct PluginRun {
  std::string label;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  int expected_devices = 0;
};

struct PluginMemory {
  MemoryFigures memory;
  absl::Duration startup;  // fork to socket.
  int threads = 0;
};

// Starts the plugin, waits for its socket, consumes one ListAndWatch (checking the device count)
// and, with the stream still open, makes 100 Allocate calls; then reads its memory and stops it
// with SIGTERM.
absl::StatusOr<PluginMemory> MeasurePluginMemory(const PluginRun& run, const std::string& root,
                                                 const std::string& first_device) {
  std::vector<std::string> argv = run.argv;
  argv.push_back("--kubelet-root");
  argv.push_back(root);
  const std::string socket_path = PluginSocketIn(root);
  const absl::Time started = absl::Now();
  auto child = ChildProcess::Start(argv, run.env, root + ".log");
  if (!child.ok()) return child.status();
  if (absl::Status s = WaitForSocket(**child, socket_path, absl::Seconds(10)); !s.ok()) return s;
  PluginMemory result;
  result.startup = absl::Now() - started;

  auto stub = v1beta1::DevicePlugin::NewStub(Dial(socket_path));
  grpc::ClientContext stream_context;
  stream_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  // The socket file exists from bind(), a moment before listen(): wait rather than fail.
  stream_context.set_wait_for_ready(true);
  auto reader = stub->ListAndWatch(&stream_context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse snapshot;
  if (!reader->Read(&snapshot)) {
    grpc::Status status = reader->Finish();
    return absl::UnavailableError(
        absl::StrCat(run.label, ": ListAndWatch sent nothing: ", status.error_message(), "; log:\n",
                     (*child)->log()));
  }
  if (snapshot.devices_size() != run.expected_devices) {
    return absl::InternalError(absl::StrCat(run.label, ": ListAndWatch sent ",
                                            snapshot.devices_size(), " devices, expected ",
                                            run.expected_devices));
  }
  {
    auto endpoint = manager::Endpoint::Connect(kResource, socket_path, {});
    if (!endpoint.ok()) return endpoint.status();
    for (int i = 0; i < 100; ++i) {
      auto response = (*endpoint)->Allocate({first_device});
      if (!response.ok()) return response.status();
    }
  }
  result.memory = ReadMemory((*child)->pid());
  std::istringstream status(ReadFile(absl::StrCat("/proc/", (*child)->pid(), "/status")));
  for (std::string line; std::getline(status, line);) {
    if (absl::StartsWith(line, "Threads:")) result.threads = std::atoi(line.c_str() + 8);
  }
  stream_context.TryCancel();
  (void)reader->Finish();
  const int wait_status = (*child)->Terminate();
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::printf("note: %s did not exit 0 after SIGTERM (wait status %d)\n", run.label.c_str(),
                wait_status);
  }
  return result;
}

// Prints the 1,000-device figure against the target, then the breakdown. Returns whether it
// measured.
bool ReportMemory(const std::string& plugin_bin, const std::string& self_bin,
                  const std::string& topology, const TempDir& dir, std::string* summary) {
  const std::vector<std::string> plugin = {plugin_bin, "--topology-xml", topology, "--log-level",
                                           "error"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = plugin;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  const std::vector<PluginRun> runs = {
      {"kdp-gpu-plugin, 1000 devices (--replicas 125)", with({"--replicas", "125"}), {}, 1000},
      {"kdp-gpu-plugin, 8 devices", with({}), {}, 8},
      {"kdp-gpu-plugin, 1000 devices, MALLOC_ARENA_MAX=1",
       with({"--replicas", "125"}),
       {"MALLOC_ARENA_MAX=1"},
       1000},
  };
  std::vector<PluginMemory> measured;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto memory = MeasurePluginMemory(runs[i], absl::StrCat(dir.path(), "/rss", i),
                                      runs[i].expected_devices == 8 ? "gpu0" : "gpu0::0");
    if (!memory.ok()) {
      std::printf("RSS: %s\n", memory.status().ToString().c_str());
      *summary = absl::StrCat("RSS not measured: ", memory.status().message());
      return false;
    }
    measured.push_back(*std::move(memory));
  }

  // A trivial gRPC server: this binary re-executed as just the floor server. Linked with the
  // same shared libraries (gRPC, protobuf, Abseil, hwloc, libstdc++), it is what any process of
  // this build pays before kdp adds anything.
  std::optional<MemoryFigures> trivial;
  {
    const std::string root = dir.path() + "/trivial";
    const std::string socket_path = PluginSocketIn(root);
    std::error_code ignored;
    std::filesystem::create_directories(root + "/device-plugins", ignored);
    auto child =
        ChildProcess::Start({self_bin, kTrivialServerFlag + socket_path}, {}, root + ".log");
    if (child.ok() && WaitForSocket(**child, socket_path, absl::Seconds(10)).ok()) {
      auto stub = v1beta1::DevicePlugin::NewStub(Dial(socket_path));
      for (int i = 0; i < 100; ++i) {
        grpc::ClientContext context;
        context.set_wait_for_ready(true);
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        v1beta1::DevicePluginOptions response;
        (void)stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &response);
      }
      trivial = ReadMemory((*child)->pid());
    }
  }

  const MemoryFigures& thousand = measured[0].memory;
  const double rss = MiB(thousand.status.count("VmRSS") ? thousand.status.at("VmRSS") : 0);
  const bool pass = rss <= kRssTargetMiB;
  std::printf("\n== kdp-gpu-plugin memory (after one ListAndWatch and 100 Allocate calls) ==\n");
  std::printf("%-52s %8s %8s %8s %8s %8s %8s %7s %7s\n", "process", "VmRSS", "VmHWM", "RssAnon",
              "RssFile", "Pss", "Private", "threads", "start");
  auto row = [](const std::string& label, const MemoryFigures& m, int threads,
                std::optional<absl::Duration> startup) {
    auto get = [](const std::map<std::string, long>& map, const char* key) {
      auto it = map.find(key);
      return it == map.end() ? 0L : it->second;
    };
    const long private_kb = get(m.rollup, "Private_Clean") + get(m.rollup, "Private_Dirty");
    std::printf(
        "%-52s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7s %7s\n", label.c_str(),
        MiB(get(m.status, "VmRSS")), MiB(get(m.status, "VmHWM")), MiB(get(m.status, "RssAnon")),
        MiB(get(m.status, "RssFile")), MiB(get(m.rollup, "Pss")), MiB(private_kb),
        threads > 0 ? absl::StrCat(threads).c_str() : "",
        startup ? absl::StrFormat("%.0fms", absl::ToDoubleMilliseconds(*startup)).c_str() : "");
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    row(runs[i].label, measured[i].memory, measured[i].threads, measured[i].startup);
  }
  if (trivial) row("trivial gRPC server (this binary, floor service only)", *trivial, 0, {});
  std::printf(
      "(MiB; Pss splits shared pages among the processes mapping them; Private = pages "
      "only this process maps)\n");
  std::printf("largest Rss contributors of the 1000-device plugin (MiB):");
  const size_t shown = std::min<size_t>(8, thousand.by_mapping.size());
  for (size_t i = 0; i < shown; ++i) {
    std::printf(" %s %.2f%s", thousand.by_mapping[i].first.c_str(),
                MiB(thousand.by_mapping[i].second), i + 1 < shown ? "," : "\n");
  }
  *summary = absl::StrFormat("kdp-gpu-plugin RSS %.2f MiB with 1000 devices (target <= %.0f) %s",
                             rss, kRssTargetMiB, pass ? "PASS" : "FAIL");
  return true;
}

// ---------------------------------------------------------------------------------------------

// `allocate_benchmark --kdp_internal_trivial_server=<socket>`: serves the floor service until
// SIGTERM, for the RSS breakdown.
int RunTrivialServer(const std::string& socket_path) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  FloorService service;
  std::unique_ptr<grpc::Server> server = StartFloorServer(&service, socket_path);
  if (server == nullptr) return 1;
  int signal = 0;
  sigwait(&signals, &signal);
  server->Shutdown();
  return 0;
}

int Main(int argc, char** argv) {
  if (argc == 2 && absl::StartsWith(argv[1], kTrivialServerFlag)) {
    return RunTrivialServer(argv[1] + std::strlen(kTrivialServerFlag));
  }
  // Interleave the repetitions of the benchmarks (floor, kdp, floor, ...) so that a slow phase of
  // the VM moves both figures, not the ratio; the command line may still say otherwise.
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

  TempDir dir;
  if (!dir.ok()) {
    std::fprintf(stderr, "allocate_benchmark: mkdtemp: %s\n", std::strerror(errno));
    return 1;
  }

  // 1. Floor.
  FloorService floor_service;
  const std::string floor_socket = dir.path() + "/floor.sock";
  std::unique_ptr<grpc::Server> floor_server = StartFloorServer(&floor_service, floor_socket);
  if (floor_server == nullptr) {
    std::fprintf(stderr, "allocate_benchmark: cannot serve %s\n", floor_socket.c_str());
    return 1;
  }
  auto floor_stub = v1beta1::DevicePlugin::NewStub(Dial(floor_socket));
  MixedFloorService mixed_service;
  const std::string mixed_socket = dir.path() + "/mixed.sock";
  std::unique_ptr<grpc::Server> mixed_server = StartFloorServer(&mixed_service, mixed_socket);
  if (mixed_server == nullptr) {
    std::fprintf(stderr, "allocate_benchmark: cannot serve %s\n", mixed_socket.c_str());
    return 1;
  }
  auto mixed_stub = v1beta1::DevicePlugin::NewStub(Dial(mixed_socket));

  // 2. kdp in-process: PluginRunner serving BenchPlugin, the manager's Endpoint calling it.
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<BenchPlugin>(kResource, 8));
  plugins.push_back(std::make_unique<BenchPlugin>(kManyResource, 1000));
  auto runner = PluginRunner::Create({.kubelet_root = dir.path() + "/inproc"}, std::move(plugins));
  absl::Status started = runner.ok() ? (*runner)->Start() : runner.status();
  if (!started.ok()) {
    std::fprintf(stderr, "allocate_benchmark: PluginRunner: %s\n", started.ToString().c_str());
    return 1;
  }
  auto in_process =
      manager::Endpoint::Connect(kResource, PluginSocketIn(dir.path() + "/inproc"), {});
  auto in_process_many = manager::Endpoint::Connect(
      kManyResource, PluginSocketIn(dir.path() + "/inproc", kManyResource), {});
  for (const auto* endpoint : {&in_process, &in_process_many}) {
    if (!endpoint->ok()) {
      std::fprintf(stderr, "allocate_benchmark: %s\n", endpoint->status().ToString().c_str());
      return 1;
    }
  }

  // 3. kdp against the real kdp-gpu-plugin process (8 GPUs of the fixture).
  std::unique_ptr<ChildProcess> plugin_process;
  std::unique_ptr<manager::Endpoint> to_process;
  std::string process_error;
  {
    const std::string root = dir.path() + "/process";
    auto child = ChildProcess::Start(
        {plugin_bin, "--topology-xml", topology, "--kubelet-root", root, "--log-level", "error"},
        {}, root + ".log");
    absl::Status status = child.ok()
                              ? WaitForSocket(**child, PluginSocketIn(root), absl::Seconds(10))
                              : child.status();
    if (status.ok()) {
      plugin_process = *std::move(child);
      auto endpoint = manager::Endpoint::Connect(kResource, PluginSocketIn(root), {});
      if (endpoint.ok()) {
        to_process = *std::move(endpoint);
      } else {
        status = endpoint.status();
      }
    }
    process_error = status.ToString();
  }

  auto configure = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->MeasureProcessCPUTime()
        ->MinTime(0.5)
        ->Repetitions(5)
        ->ReportAggregatesOnly(true);
  };
  configure(benchmark::RegisterBenchmark(kFloorName, BM_GrpcUnaryFloor, floor_stub.get()));
  configure(benchmark::RegisterBenchmark(kMixedFloorName, BM_GrpcUnaryFloor, mixed_stub.get()));
  configure(benchmark::RegisterBenchmark(kInProcessName, BM_EndpointAllocate, in_process->get(),
                                         std::vector<std::string>{"gpu0"}));
  configure(benchmark::RegisterBenchmark(kManyName, BM_EndpointAllocate, in_process_many->get(),
                                         std::vector<std::string>{"gpu0"}));
  if (to_process != nullptr) {
    configure(benchmark::RegisterBenchmark(kProcessName, BM_EndpointAllocate, to_process.get(),
                                           std::vector<std::string>{"gpu0"}));
  } else {
    std::printf("skipping %s: %s\n", kProcessName, process_error.c_str());
  }

  SummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                 : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  to_process.reset();
  plugin_process.reset();
  in_process->reset();
  in_process_many->reset();
  (*runner)->Stop();
  floor_server->Shutdown();
  mixed_server->Shutdown();

  bool measured = true;
  std::string ratio_summary = "ratio not measured";
  std::printf("\n== Summary: median of repetitions, µs per round trip ==\n");
  std::printf("%-58s %9s %9s %9s\n", "figure", "mean", "p50", "p99");
  auto print = [&](const char* label, const char* name) {
    const SummaryReporter::Figure* f = reporter.Find(name);
    if (f == nullptr) {
      std::printf("%-58s %s\n", label, reporter.ErrorOf(name).c_str());
    } else {
      std::printf("%-58s %9.1f %9.1f %9.1f\n", label, f->real_us, f->p50_us, f->p99_us);
    }
    return f;
  };
  const auto* floor = print("floor: gRPC unary, sync, unix socket, empty messages", kFloorName);
  const auto* mixed = print("floor with a callback ListAndWatch in the service", kMixedFloorName);
  const auto* kdp = print("kdp: Endpoint::Allocate -> SDK plugin, in-process", kInProcessName);
  print("kdp: same, plugin with 1000 devices", kManyName);
  const auto* process = print("kdp: Endpoint::Allocate -> kdp-gpu-plugin process", kProcessName);
  if (floor != nullptr && kdp != nullptr) {
    const double ratio = kdp->real_us / floor->real_us;
    const bool pass = ratio <= kRatioTarget;
    std::printf("%-58s %9.2f   (p50 ratio %.2f)\n", "ratio kdp in-process / floor", ratio,
                kdp->p50_us / floor->p50_us);
    if (mixed != nullptr) {
      std::printf("%-58s %9.2f   (server shape: sync unary next to a callback stream)\n",
                  "ratio floor with callback stream / floor", mixed->real_us / floor->real_us);
      std::printf("%-58s %9.2f   (what kdp's code adds over that shape)\n",
                  "ratio kdp in-process / floor with callback stream",
                  kdp->real_us / mixed->real_us);
    }
    if (process != nullptr) {
      std::printf("%-58s %9.2f   (informational)\n", "ratio kdp-gpu-plugin process / floor",
                  process->real_us / floor->real_us);
    }
    ratio_summary =
        absl::StrFormat("Allocate %.1f us vs floor %.1f us: ratio %.2f (target <= %.1f) %s",
                        kdp->real_us, floor->real_us, ratio, kRatioTarget, pass ? "PASS" : "FAIL");
  } else {
    measured = false;
  }

  std::string rss_summary = "RSS skipped (--kdp_skip_rss)";
  if (!skip_rss) {
    std::error_code error;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
    measured = ReportMemory(plugin_bin, self, topology, dir, &rss_summary) && measured;
  }
  std::printf("\nallocate_benchmark: %s; %s\n", ratio_summary.c_str(), rss_summary.c_str());
  return measured ? 0 : 1;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
