// broken_device_plugin: a small Kubernetes device plugin written directly against the generated
// gRPC code of the device plugin API (not kdp's SDK), which kdp-conformance's own tests run. By
// default it does everything the kubelet expects; `--defect NAME` gives it exactly one deliberate
// bug that breaks exactly one kubelet expectation, so each conformance scenario can be shown to
// catch its bug, and only its bug.
//
// Usage: broken_device_plugin --kubelet-root DIR [--resource NAME] [--devices N]
//                             [--defect NAME] [--health-file FILE]
// It serves DIR/device-plugins/stub.sock, registers on DIR/device-plugins/kubelet.sock and lists
// devices stub-0 .. stub-{N-1} (N = 4) of NAME (example.com/stub), all on NUMA node 0. FILE lists
// unhealthy device IDs, one a line, and is re-read every 100 ms; no file: all are healthy.
//
// Defects, and the conformance scenario each one targets:
//   none                 correct behaviour (the default).
//   no-reregister        never registers again after the kubelet restarts (it still serves a
//                        fresh socket).                                     dp.kubelet-restart
//   diff-listandwatch    after the first full list, a health change sends only the devices
//                        whose health changed.                              dp.health-full-list
//   bad-allocate         Allocate's DeviceSpecs have a relative container_path ("dev/<id>")
//                        and permissions "rwx".                             dp.allocate
//   crash-on-unexpected  std::abort() on an Allocate for more than one container (legal: a
//                        pod with two containers that each ask for devices). dp.unexpected-calls
//   socket-left          on SIGTERM (or SIGINT), exits 0 without removing its socket file.
//                                                                           dp.sigterm
//   wrong-preferred      GetPreferredAllocation ignores must_include_deviceIDs and answers the
//                        last allocation_size available IDs.                dp.preferred-allocation
//   duplicate-ids        every ListAndWatch message lists stub-0 twice.     dp.devices
//   stale-socket         does not remove a leftover file at its socket path at start-up, so a
//                        start after a SIGKILL cannot listen and exits 1.   dp.plugin-restart
//   unserved-preferred   advertises GetPreferredAllocation but answers it UNIMPLEMENTED.
//                                                                           dp.options
//                        Not alone: the kubelet calls what is advertised, so dp.allocate fails
//                        too and dp.preferred-allocation is skipped.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace {

// The --defect names. The code compares config.defect with them as written, so grepping a name
// finds every line its defect changes.
constexpr absl::string_view kDefects[] = {
    "none",        "no-reregister",   "diff-listandwatch", "bad-allocate", "crash-on-unexpected",
    "socket-left", "wrong-preferred", "duplicate-ids",     "stale-socket", "unserved-preferred"};

constexpr absl::Duration kTick = absl::Milliseconds(100);
constexpr absl::Duration kRegisterRetry = absl::Milliseconds(500);
constexpr auto kRegisterDeadline = std::chrono::seconds(5);
// Long enough for streams that see `stopping` to end cleanly; calls still open after it are
// cancelled by gRPC.
constexpr auto kShutdownGrace = std::chrono::milliseconds(200);

struct Config {
  std::string kubelet_root;
  std::string resource = "example.com/stub";
  int devices = 4;
  std::string defect = "none";
  std::string health_file;
};

void Log(absl::string_view line) {
  // One fprintf per line, so lines from different threads do not interleave.
  std::fprintf(stderr, "broken_device_plugin: %.*s\n", static_cast<int>(line.size()), line.data());
}

// Parses argv by hand (absl::flags is not available): every error names its flag and means exit
// status 2.
std::optional<Config> ParseFlags(int argc, char** argv) {
  Config config;
  std::string devices = std::to_string(config.devices);
  const std::pair<absl::string_view, std::string*> flags[] = {
      {"--kubelet-root", &config.kubelet_root},
      {"--resource", &config.resource},
      {"--devices", &devices},
      {"--defect", &config.defect},
      {"--health-file", &config.health_file}};
  for (int i = 1; i < argc; ++i) {
    auto flag = std::find_if(std::begin(flags), std::end(flags),
                             [&](const auto& f) { return f.first == argv[i]; });
    if (flag == std::end(flags)) {
      Log(absl::StrCat("unknown flag ", argv[i]));
      return std::nullopt;
    }
    if (++i == argc) {
      Log(absl::StrCat(flag->first, " needs a value"));
      return std::nullopt;
    }
    *flag->second = argv[i];
  }
  auto [end, error] =
      std::from_chars(devices.data(), devices.data() + devices.size(), config.devices);
  if (error != std::errc() || end != devices.data() + devices.size() || config.devices < 1) {
    Log(absl::StrCat("--devices: want a positive integer, got \"", devices, "\""));
    return std::nullopt;
  }
  if (std::find(std::begin(kDefects), std::end(kDefects), config.defect) == std::end(kDefects)) {
    Log(absl::StrCat("--defect: unknown defect \"", config.defect,
                     "\"; allowed: ", absl::StrJoin(kDefects, ", ")));
    return std::nullopt;
  }
  if (config.kubelet_root.empty()) {
    Log("--kubelet-root DIR is required");
    return std::nullopt;
  }
  // gRPC reads "unix://dir/x" as authority "dir", path "/x": the path must be absolute.
  config.kubelet_root = std::filesystem::absolute(config.kubelet_root).string();
  return config;
}

// What a path names: a new file at the same path (even one that reuses the inode number) has a
// different identity, which is how a kubelet restart shows up on its socket.
using FileId = std::tuple<dev_t, ino_t, time_t, long>;

std::optional<FileId> StatFile(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

class StubPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  explicit StubPlugin(const Config& config) : config_(config) {
    for (int i = 0; i < config.devices; ++i) ids_.push_back(absl::StrCat("stub-", i));
  }

  // Takes the IDs the health file lists; a change to a known device's health wakes every
  // ListAndWatch stream. IDs of devices it does not have are ignored.
  void SetUnhealthy(const std::set<std::string>& listed) {
    std::set<std::string> unhealthy;
    for (const std::string& id : ids_) {
      if (listed.contains(id)) unhealthy.insert(id);
    }
    absl::MutexLock lock(&mu_);
    if (unhealthy == unhealthy_) return;
    unhealthy_ = std::move(unhealthy);
    ++generation_;
    changed_.SignalAll();
  }

  // Ends open streams and any registration in flight, and wakes SleepUnlessStopping.
  void Stop() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (registering_ != nullptr) registering_->TryCancel();
    changed_.SignalAll();
  }

  // Returns false, at once, when the program is stopping.
  bool SleepUnlessStopping(absl::Duration duration) {
    absl::Time deadline = absl::Now() + duration;
    absl::MutexLock lock(&mu_);
    while (!stopping_ && absl::Now() < deadline) changed_.WaitWithDeadline(&mu_, deadline);
    return !stopping_;
  }

  absl::Status Register(const std::string& kubelet_socket) {
    // A fresh channel each time: one kept from before a kubelet restart would still be in its
    // reconnect backoff when the new kubelet.sock appears.
    auto registration = v1beta1::Registration::NewStub(
        grpc::CreateChannel("unix://" + kubelet_socket, grpc::InsecureChannelCredentials()));
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_endpoint("stub.sock");
    request.set_resource_name(config_.resource);
    *request.mutable_options() = Options();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRegisterDeadline);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::CancelledError("stopping");
      registering_ = &context;  // So that Stop() can cancel it.
    }
    v1beta1::Empty response;
    grpc::Status status = registration->Register(&context, request, &response);
    absl::MutexLock lock(&mu_);
    registering_ = nullptr;
    if (status.ok()) return absl::OkStatus();
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* response) override {
    *response = Options();
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    // What this stream has told its client, so each health change is judged against it.
    std::optional<std::set<std::string>> told;
    uint64_t told_generation = 0;
    while (true) {
      v1beta1::ListAndWatchResponse response;
      {
        absl::MutexLock lock(&mu_);
        // IsCancelled is polled: it is how a client's cancel, or the end of a server being
        // replaced, reaches a handler that is waiting here.
        while (told && !stopping_ && generation_ == told_generation && !context->IsCancelled()) {
          changed_.WaitWithTimeout(&mu_, kTick);
        }
        if (stopping_) return grpc::Status::OK;
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
        for (const std::string& id : ids_) {
          bool diff_only = told && config_.defect == "diff-listandwatch";
          if (diff_only && told->contains(id) == unhealthy_.contains(id)) continue;
          AddDevice(id, response);
        }
        if (config_.defect == "duplicate-ids") AddDevice(ids_.front(), response);
        told = unhealthy_;
        told_generation = generation_;
      }
      if (!writer->Write(response)) return grpc::Status::CANCELLED;
    }
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override {
    if (config_.defect == "unserved-preferred") {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "GetPreferredAllocation");
    }
    for (const v1beta1::ContainerPreferredAllocationRequest& wanted :
         request->container_requests()) {
      auto* answer = response->add_container_responses();
      const auto& available = wanted.available_deviceids();
      size_t size = static_cast<size_t>(std::max(wanted.allocation_size(), 0));
      if (config_.defect == "wrong-preferred") {
        int first = std::max(0, available.size() - static_cast<int>(size));
        for (int i = first; i < available.size(); ++i) answer->add_deviceids(available[i]);
        continue;
      }
      std::set<std::string> chosen;
      auto choose = [&](const std::string& id) {
        if (chosen.insert(id).second) answer->add_deviceids(id);
      };
      for (const std::string& id : wanted.must_include_deviceids()) choose(id);
      for (const std::string& id : available) {
        if (chosen.size() >= size) break;
        choose(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    if (config_.defect == "crash-on-unexpected" && request->container_requests_size() > 1) {
      Log(absl::StrCat("Allocate for ", request->container_requests_size(),
                       " containers; aborting (defect crash-on-unexpected)"));
      std::abort();
    }
    for (const v1beta1::ContainerAllocateRequest& container : request->container_requests()) {
      auto* answer = response->add_container_responses();
      for (const std::string& id : container.devices_ids()) {
        if (std::find(ids_.begin(), ids_.end(), id) == ids_.end()) {
          Log(absl::StrCat("Allocate: unknown device \"", id, "\""));
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              absl::StrCat("unknown device ID \"", id, "\""));
        }
        v1beta1::DeviceSpec* spec = answer->add_devices();
        bool bad = config_.defect == "bad-allocate";
        spec->set_container_path(absl::StrCat(bad ? "dev/" : "/dev/", id));
        spec->set_host_path("/dev/null");
        spec->set_permissions(bad ? "rwx" : "rw");
      }
      std::string joined = absl::StrJoin(container.devices_ids(), ",");
      (*answer->mutable_envs())["STUB_DEVICES"] = joined;
      Log(absl::StrCat("Allocate: container ", response->container_responses_size() - 1, ": [",
                       joined, "]"));
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  static v1beta1::DevicePluginOptions Options() {
    v1beta1::DevicePluginOptions options;
    options.set_pre_start_required(true);
    options.set_get_preferred_allocation_available(true);
    return options;
  }

  void AddDevice(const std::string& id, v1beta1::ListAndWatchResponse& response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1beta1::Device* device = response.add_devices();
    device->set_id(id);
    device->set_health(unhealthy_.contains(id) ? "Unhealthy" : "Healthy");
    device->mutable_topology()->add_nodes()->set_id(0);
  }

  const Config& config_;
  std::vector<std::string> ids_;  // Fixed at construction.

  absl::Mutex mu_;
  absl::CondVar changed_;  // Signalled on a health change and on Stop().
  std::set<std::string> unhealthy_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // Bumped on each change to unhealthy_.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* registering_ ABSL_GUARDED_BY(mu_) = nullptr;
};

std::set<std::string> ReadUnhealthy(const std::string& path) {
  std::set<std::string> ids;
  if (path.empty()) return ids;
  std::ifstream in(path);  // A missing file lists nothing: every device is healthy.
  for (std::string line; std::getline(in, line);) {
    size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    ids.insert(line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin));
  }
  return ids;
}

// The gRPC server on the plugin's socket, and the identity of the socket file it made. Used by
// main() until the supervisor thread starts, by that thread alone, then by main() after it ends.
class Endpoint {
 public:
  Endpoint(const Config& config, StubPlugin& plugin)
      : config_(config),
        plugin_(plugin),
        path_(config.kubelet_root + "/device-plugins/stub.sock") {}

  const std::string& path() const { return path_; }

  // True while the socket file it made is still at its path.
  bool Intact() const { return server_ != nullptr && StatFile(path_) == socket_id_; }

  absl::Status Serve() {
    if (StatFile(path_).has_value()) {
      // gRPC would unlink a leftover socket by itself; stale-socket checks first so that it fails
      // the way a plugin that bind()s without removing the leftover does.
      if (config_.defect == "stale-socket") {
        return absl::AlreadyExistsError(
            absl::StrCat("cannot listen on ", path_,
                         ": a file is already there (bind: Address already in use)"));
      }
      std::error_code ignored;  // Serving, just below, reports a leftover that could not go.
      std::filesystem::remove(path_, ignored);  // Left by an instance killed with SIGKILL.
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + path_, grpc::InsecureServerCredentials());
    builder.RegisterService(&plugin_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return absl::UnavailableError(absl::StrCat("cannot listen on ", path_));
    socket_id_ = StatFile(path_);
    Log(absl::StrCat("serving ", config_.resource, " on ", path_));
    return absl::OkStatus();
  }

  void Shutdown() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    server_.reset();
  }

 private:
  const Config& config_;
  StubPlugin& plugin_;
  const std::string path_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<FileId> socket_id_;
};

// The plugin's clock: every 100 ms, re-reads the health file, serves a fresh socket when the
// kubelet has removed its own, and registers when it must (at start, and after a kubelet restart).
void Supervise(const Config& config, StubPlugin& plugin, Endpoint& endpoint) {
  const std::string kubelet_socket = config.kubelet_root + "/device-plugins/kubelet.sock";
  std::optional<FileId> kubelet_seen = StatFile(kubelet_socket);
  bool need_register = true;
  bool registered_once = false;
  absl::Time next_attempt = absl::InfinitePast();
  do {
    plugin.SetUnhealthy(ReadUnhealthy(config.health_file));
    if (!endpoint.Intact()) {
      // A restarting kubelet removes the plugin's socket, and dials it back while handling
      // Register: serve a fresh socket before registering again.
      Log(absl::StrCat(endpoint.path(), " was removed; serving again"));
      endpoint.Shutdown();
      if (absl::Status served = endpoint.Serve(); !served.ok()) {
        Log(served.message());
        continue;  // Tries again on the next tick.
      }
      need_register = true;
    }
    std::optional<FileId> kubelet_now = StatFile(kubelet_socket);
    if (kubelet_now.has_value() && kubelet_now != kubelet_seen) need_register = true;
    kubelet_seen = kubelet_now;
    if (registered_once && config.defect == "no-reregister") need_register = false;
    if (!need_register || absl::Now() < next_attempt) continue;
    if (absl::Status status = plugin.Register(kubelet_socket); status.ok()) {
      Log(absl::StrCat("registered ", config.resource, " with the kubelet"));
      need_register = false;
      registered_once = true;
    } else {
      Log(absl::StrCat("registration failed: ", status.ToString()));
      next_attempt = absl::Now() + kRegisterRetry;
    }
  } while (plugin.SleepUnlessStopping(kTick));
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Config> config = ParseFlags(argc, argv);
  if (!config.has_value()) return 2;

  // Signals are taken by sigwait() below; block them before any thread starts (gRPC's included),
  // so every thread inherits the mask and none runs a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  StubPlugin plugin(*config);
  plugin.SetUnhealthy(ReadUnhealthy(config->health_file));  // The first list already knows.
  Endpoint endpoint(*config, plugin);
  if (absl::Status served = endpoint.Serve(); !served.ok()) {
    Log(served.message());
    return 1;
  }
  std::thread supervisor([&] { Supervise(*config, plugin, endpoint); });

  int received = 0;
  sigwait(&signals, &received);
  Log(absl::StrCat("received ", strsignal(received), "; stopping"));
  plugin.Stop();
  supervisor.join();
  // gRPC's Shutdown unlinks the socket file itself; socket-left keeps a second name for it across
  // the shutdown, so its streams end exactly as in a correct plugin and only the file stays.
  const std::string kept = endpoint.path() + ".kept";
  bool keep = config->defect == "socket-left" && link(endpoint.path().c_str(), kept.c_str()) == 0;
  endpoint.Shutdown();
  if (keep) {
    std::rename(kept.c_str(), endpoint.path().c_str());
  } else {
    std::error_code ignored;  // Already gone is fine.
    std::filesystem::remove(endpoint.path(), ignored);
  }
  Log("exiting");
  return 0;
}
