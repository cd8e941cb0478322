// dra_admission_benchmark measures, in one run, admitting a pod that needs 2 devices through
// Dynamic Resource Allocation against the same pod through the device-plugin path, and both
// against the machine's floors measured in the same run (a gRPC unary call over a unix socket, a
// durable 4 KiB file write). Targets (issue 19): DRA Admit <= 3 x the device-plugin Admit and
// <= 4 x the durable-write floor, DRA Delete <= 3 x the device-plugin Delete.
//
// The DRA pod has one pod claim from examples/dra-driver/manifests' ResourceClaimTemplate (2
// devices, a CEL selector on capacity, a matchAttribute constraint, an opaque config).
// PodManager::Admit runs end to end: the claim created from the template, allocated and reserved;
// DraManager::PrepareResources journalling the claim (unsynced: the store's reservation, durable
// already, stands in for the record) before NodePrepareResources over a
// unix socket to an SDK DraRunner (which GETs the claim from the local resource API over HTTPS and
// records it in its own checkpoint before and, synced, after its driver's Prepare) and after it
// (made durable by the pod's record). The device-plugin pod asks for 2 devices: Allocate over a
// unix socket to an SDK PluginRunner, then the journal. Each admission is followed by the pod's
// deletion (timed apart). A breakdown of the DRA steps follows. One node in-process, wired as
// kdp-manager is, with the plugin and the driver in-process too and equally thin (8 devices each;
// a CDI device ID per device, no CDI spec file written).
//
// Usage: dra_admission_benchmark [--benchmark_* flags] [--kdp_dir=DIR] [--kdp_skip_breakdown]
//        [--kdp_allow_tmpfs]
// --kdp_dir: where the temporary kubelet root goes (default $TMPDIR, else /tmp); tmpfs is refused
// (its fsyncs cost nothing) unless --kdp_allow_tmpfs, which shows what is left without the disk.
// Exit status: 0 when everything was measured (a missed target prints FAIL but is not an error),
// 1 when a measurement could not be made, 2 on a bad argument. docs/benchmarks.md has figures.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_stats.h"
#include "bench/summary_reporter.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kdp/admin/v1/admin.grpc.pb.h"
#include "kdp/device_plugin.h"
#include "kdp/dra_driver.h"
#include "kdp/plugin_runner.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/controlplane/resourceapi/kubeconfig.h"
#include "manager/src/controlplane/resourceapi/local_api.h"
#include "manager/src/controlplane/resourceapi/persistence.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/plugin_watcher_handler.h"
#include "manager/src/dra/manager.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "manager/src/pod/pod.h"
#include "manager/src/pod/pod_manifest.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/state/state_store.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace admin = kdp::admin::v1;

constexpr char kNodeName[] = "node-a";
constexpr char kNamespace[] = "default";
// The example driver's name and class, so the example manifests apply unchanged.
constexpr char kDriverName[] = "gpu.example.com", kTemplateName[] = "two-gpus";
constexpr char kPodClaimName[] = "gpus", kResource[] = "example.com/gpu";
constexpr int kDevices = 8, kDevicesPerPod = 2;
// Wall time of admissions (each followed by its deletion) per repetition, and the fewest.
constexpr auto kRepetitionTime = std::chrono::milliseconds(1000);
constexpr size_t kMinAdmissions = 20;
constexpr int kRepetitions = 5;
constexpr size_t kFloorBytes = 4096;
constexpr absl::Duration kCompactionDelay = absl::Seconds(1);  // main.cc's default

constexpr char kGrpcFloorName[] = "floor/grpc_unary_sync",
               kDurableFloorName[] = "floor/durable_write_4KiB";
constexpr char kDpAdmitName[] = "device_plugin/admit_then_delete",
               kDraAdmitName[] = "dra/admit_then_delete";

// The device plugin: 8 GPUs carrying what DefaultAllocate() merges (two device nodes, a mount, an
// env, a CDI name), as admission_benchmark's.
class BenchPlugin final : public DevicePlugin {
 public:
  BenchPlugin() : DevicePlugin(kResource) {}

  absl::StatusOr<std::vector<Device>> Discover() override {
    std::vector<Device> devices;
    for (int i = 0; i < kDevices; ++i) {
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
      device.cdi_devices = {absl::StrCat(kResource, "=", device.id)};
    }
    return devices;
  }
};

// The DRA driver: the same 8 GPUs published with the example driver's attributes and capacity
// (what the template's selector and constraint read); Prepare answers one CDI device ID per
// allocated device, "<vendor>/gpu=<claim UID>-<device>" as the example driver names them, without
// writing the CDI spec (the device plugin above writes none either).
class BenchDraDriver final : public DraDriver {
 public:
  BenchDraDriver() : DraDriver(kDriverName) {}

  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override {
    std::map<std::string, PrepareResult> results;
    for (const Claim& claim : claims) {
      PrepareResult& result = results[claim.ref.uid];
      for (const AllocatedDevice& device : claim.results) {
        result.devices.push_back({.requests = {device.request},
                                  .pool = device.pool,
                                  .device = device.device,
                                  .cdi_device_ids = {absl::StrCat(
                                      kDriverName, "/gpu=", claim.ref.uid, "-", device.device)},
                                  .share_id = device.share_id});
      }
    }
    return results;
  }

  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override {
    std::map<std::string, absl::Status> results;
    for (const ClaimRef& claim : claims) results[claim.uid] = absl::OkStatus();
    return results;
  }

  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    std::vector<DraDevice> devices;
    for (int i = 0; i < kDevices; ++i) {
      devices.push_back({.name = absl::StrCat("gpu", i),
                         .attributes = {{"index", int64_t{i}},
                                        {"uuid", absl::StrFormat("GPU-%08d-bench", i)},
                                        {"numaNode", int64_t{i % 2}},
                                        {"model", std::string("Bench GPU")},
                                        {"driverVersion", VersionValue{"1.0.0"}}},
                         .capacity = {{"memory", "16Gi"}}});
    }
    return devices;
  }
};

// The floor server: GetDevicePluginOptions answering at once, on the sync API.
class FloorService final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
};

std::string PodName(bool dra, int64_t n) { return absl::StrCat(dra ? "dra-" : "dp-", n); }

// A UUID v4 for `n` (kdpctl makes random ones; the value does not matter to admission).
std::string UidFor(uint64_t n) {
  return absl::StrFormat("%08x-%04x-4%03x-8000-%012x", n * 2654435761u >> 32 & 0xffffffff,
                         n & 0xffff, n >> 16 & 0xfff, n);
}

// The two shapes of the same pod, as kdpctl apply -f sends it: one container using 2 devices, by
// extended resource or by a claim from the template.
std::string BenchPodManifest(bool dra, int64_t n) {
  const std::string resources =
      dra ? absl::StrFormat(
                "  resourceClaims:\n  - name: %s\n    resourceClaimTemplateName: %s\n"
                "  containers:\n  - name: trainer\n    image: registry.example.com/trainer:1.0\n"
                "    resources:\n      claims:\n      - name: %s\n",
                kPodClaimName, kTemplateName, kPodClaimName)
          : absl::StrFormat(
                "  containers:\n  - name: trainer\n    image: registry.example.com/trainer:1.0\n"
                "    resources:\n      limits:\n        %s: %d\n",
                kResource, kDevicesPerPod);
  return absl::StrFormat(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n  uid: %s\nspec:\n%s",
      PodName(dra, n), kNamespace, UidFor(static_cast<uint64_t>(n)), resources);
}

// The pod as kdpctl parses it, for PodManager::Admit.
absl::StatusOr<manager::Pod> BenchPod(bool dra, int64_t n) {
  return manager::ParsePodManifest(BenchPodManifest(dra, n), PodName(dra, n));
}

// Checks what an admitted container got: 2 devices of the resource, or 2 CDI IDs of the driver.
absl::Status CheckAdmitted(bool dra, const manager::AdmittedPod& pod) {
  if (pod.containers.size() != 1) return absl::InternalError("admitted pod has no container");
  const manager::AdmittedContainer& container = pod.containers[0];
  size_t got = 0;
  if (dra) {
    for (const std::string& id : container.options.cdi_devices) {
      if (absl::StartsWith(id, absl::StrCat(kDriverName, "/gpu="))) ++got;
    }
  } else {
    auto it = container.devices.find(kResource);
    if (it != container.devices.end()) got = it->second.size();
  }
  if (got != kDevicesPerPod) {
    return absl::InternalError(
        absl::StrCat(pod.pod.name, " got ", got, " devices, not ", kDevicesPerPod));
  }
  return absl::OkStatus();
}

// One kdp-manager on its own kubelet root, wired as manager/src/main.cc wires it (without the
// 60 s orphan reconciler, the topology manager's policy "none" and PodResources), with the
// device plugin and the DRA driver running in-process and registered.
class Node {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Start(const std::string& root) {
    std::unique_ptr<Node> node(new Node(root));
    KDP_RETURN_IF_ERROR(node->Wire());
    return node;
  }

  ~Node() {
    // The drivers go first (as pods of a node being drained), then main.cc's order.
    if (dra_runner_ != nullptr) dra_runner_->Stop();
    if (plugin_runner_ != nullptr) plugin_runner_->Stop();
    if (admin_server_ != nullptr) admin_server_->Shutdown(absl::ToChronoTime(absl::Now()));
    if (plugin_manager_ != nullptr) plugin_manager_->Stop();
    if (devices_ != nullptr) devices_->Stop();
    if (dra_plugins_ != nullptr) dra_plugins_->Stop();
    if (api_ != nullptr) api_->Stop();
    if (persister_ != nullptr) persister_->Stop();
    if (store_ != nullptr) store_->Close();
  }

  manager::PodManager& pods() { return *pods_; }
  manager::resourceclaim::PodClaimController& claims() { return *claims_; }
  manager::resourceapi::StorePersister& persister() { return *persister_; }
  int64_t Next() { return next_pod_++; }

  // Admits `pod`; an error when it is rejected or did not get its devices.
  absl::Status AdmitOrError(bool dra, manager::Pod pod) {
    KDP_ASSIGN_OR_RETURN(manager::AdmitResult result, pods_->Admit(std::move(pod)));
    if (!result.admitted) {
      return absl::InternalError(
          absl::StrCat("pod rejected: ", result.reason, ": ", result.message));
    }
    return CheckAdmitted(dra, result.pod);
  }

  // kdpctl apply -f of `manifest` through the admin API over gRPC; an error when the call fails
  // or a pod is rejected.
  absl::Status Apply(const std::string& manifest, const std::string& source) {
    grpc::ClientContext context;
    admin::ApplyRequest request;
    request.set_manifest(manifest);
    request.set_source(source);
    admin::ApplyResponse response;
    grpc::Status status = admin_stub_->Apply(&context, request, &response);
    std::string error = status.error_message();
    for (const admin::AppliedObject& object : response.objects()) {
      if (object.result() == "rejected") error = "rejected: " + object.pod().message();
    }
    return error.empty() ? absl::OkStatus() : absl::InternalError(source + ": " + error);
  }

 private:
  explicit Node(std::string root) : root_(std::move(root)) {}

  absl::Status Wire() {
    const std::string plugins_dir = root_ + "/device-plugins";
    const std::string admin_dir = root_ + "/kdp";
    for (const std::string& dir :
         {plugins_dir, root_ + "/pod-resources", admin_dir, root_ + "/plugins_registry"}) {
      KDP_RETURN_IF_ERROR(MakeDirectories(dir, 0750));
    }
    manager::RestoredState restored;
    KDP_ASSIGN_OR_RETURN(
        store_,
        manager::StateStore::Open({.checkpoint_path = plugins_dir + "/kubelet_internal_checkpoint",
                                   .pods_path = admin_dir + "/pods.json",
                                   .journal_path = admin_dir + "/journal",
                                   .dra_checkpoint_path = root_ + "/dra_manager_state",
                                   .compaction_delay = kCompactionDelay,
                                   .strict = false},
                                  &restored));
    devices_ = std::make_unique<manager::DeviceManager>(manager::DeviceManagerOptions{
        .plugins_dir = plugins_dir,
        .endpoint = {.dial_timeout = absl::Seconds(10),
                     .call_timeout = absl::Seconds(30),
                     .pre_start_timeout = absl::Seconds(30)},
        .endpoint_grace_period = absl::Minutes(5),
        .housekeeping_interval = absl::Seconds(1),
        .now = {},
        .store = store_.get(),
    });
    resources_ = std::make_unique<manager::resourceapi::ObjectStore>(
        manager::resourceapi::StoreOptions{.node_name = kNodeName});
    persister_ = std::make_unique<manager::resourceapi::StorePersister>(
        admin_dir + "/resources.json", resources_.get());
    manager::resourceapi::ObjectStore* resources = resources_.get();
    dra_plugins_ =
        std::make_unique<manager::dra::DraPluginManager>(manager::dra::DraPluginManagerOptions{
            .call_timeout = absl::Seconds(45),
            .wiping_delay = absl::Seconds(30),
            .wipe_resource_slices = [resources](const std::string& driver) {
              resources->DeleteSlices(kNodeName, driver);
            }});
    claim_getter_ = std::make_unique<manager::resourceclaim::StoreClaimGetter>(resources);
    KDP_ASSIGN_OR_RETURN(
        dra_, manager::dra::DraManager::Create({.state_dir = root_,
                                                .claims = claim_getter_.get(),
                                                .plugins = dra_plugins_.get(),
                                                .store = store_.get(),
                                                .restored_claims = std::move(restored.dra_claims),
                                                .sync_reference_before_prepare = false}));
    claims_ = std::make_unique<manager::resourceclaim::PodClaimController>(resources, dra_.get());
    pods_ =
        std::make_unique<manager::PodManager>(devices_.get(), store_.get(), nullptr, claims_.get());
    devices_->SetActivePodsSource(pods_.get());
    devices_->Restore(restored.devices);
    pods_->Restore(std::move(restored.pods));
    manager::DeviceManager* devices = devices_.get();
    manager::PodManager* pods = pods_.get();
    manager::dra::DraManager* dra = dra_.get();
    store_->StartCompaction([devices, pods, dra] {
      return manager::StateSnapshot{.devices = devices->CheckpointData(),
                                    .pods = pods->Pods(),
                                    .dra_claims = dra->ClaimStates()};
    });

    manager::resourceapi::LocalApiOptions api_options;
    api_options.kubelet_root = root_;
    KDP_ASSIGN_OR_RETURN(api_, manager::resourceapi::LocalApi::Start(resources, api_options));
    kubeconfig_ = api_->kubeconfig_path();
    persister_->Start();

    plugin_manager_ = std::make_unique<manager::pluginmanager::PluginManager>(
        manager::pluginmanager::PluginManagerOptions{
            .dir = root_ + "/plugins_registry",
            .timeouts = {},
            .initial_backoff = absl::Milliseconds(500),
            .max_backoff = absl::Minutes(2) + absl::Seconds(2)});
    dp_handler_ = std::make_unique<manager::DevicePluginWatcherHandler>(
        devices, [devices](const std::string& resource, const std::string& socket) {
          devices->DeregisterPlugin(resource, socket);
        });
    plugin_manager_->AddHandler(manager::pluginmanager::kDevicePlugin, dp_handler_.get());
    plugin_manager_->AddHandler(manager::pluginmanager::kDRAPlugin, dra_plugins_.get());
    admin_service_ = std::make_unique<manager::AdminServer>(
        pods, devices,
        manager::AdminDraSources{.resources = resources,
                                 .claims = claims_.get(),
                                 .dra = dra_.get(),
                                 .dra_plugins = dra_plugins_.get(),
                                 .plugins = plugin_manager_.get(),
                                 .persister = persister_.get(),
                                 .resource_api_url = api_->url(),
                                 .kubeconfig = kubeconfig_});
    KDP_RETURN_IF_ERROR(devices_->Start());
    KDP_RETURN_IF_ERROR(plugin_manager_->Start());
    const std::string admin_socket = admin_dir + "/manager.sock";
    KDP_ASSIGN_OR_RETURN(admin_server_, ServeOnUnixSocket(admin_socket, admin_service_.get()));
    admin_stub_ = admin::Admin::NewStub(DialUnixSocket(admin_socket));

    // The device plugin registers on kubelet.sock, the DRA driver through plugins_registry.
    std::vector<std::unique_ptr<DevicePlugin>> plugins;
    plugins.push_back(std::make_unique<BenchPlugin>());
    KDP_ASSIGN_OR_RETURN(plugin_runner_,
                         PluginRunner::Create({.kubelet_root = root_}, std::move(plugins)));
    KDP_RETURN_IF_ERROR(plugin_runner_->Start());
    KDP_ASSIGN_OR_RETURN(
        dra_runner_, DraRunner::Create(
                         {.kubelet_root = root_, .node_name = kNodeName, .kubeconfig = kubeconfig_},
                         std::make_unique<BenchDraDriver>()));
    KDP_RETURN_IF_ERROR(dra_runner_->Start());
    if (!dra_runner_->WaitForRegistration(absl::Seconds(30))) {
      return absl::DeadlineExceededError("the DRA driver was not registered within 30 s");
    }
    // Nothing to wait on but the registry and the store: poll until both inventories are there.
    for (const absl::Time deadline = absl::Now() + absl::Seconds(30); absl::Now() < deadline;
         absl::SleepFor(absl::Milliseconds(10))) {
      bool listed = false;
      for (const manager::ResourceDevices& r : devices_->Resources()) {
        listed |= r.name == kResource && r.connected && r.allocatable() == kDevices;
      }
      size_t published = 0;
      absl::StatusOr<std::vector<manager::resourceapi::ResourceSlice>> slices =
          resources_->ListSlices(kNodeName, kDriverName);
      if (slices.ok()) {
        for (const auto& slice : *slices) published += slice.spec.devices.size();
      }
      if (listed && published == kDevices) return absl::OkStatus();
    }
    return absl::DeadlineExceededError(
        absl::StrCat("devices not listed or slices not published on ", root_));
  }

  const std::string root_;
  std::string kubeconfig_;
  std::unique_ptr<manager::StateStore> store_;
  std::unique_ptr<manager::DeviceManager> devices_;
  std::unique_ptr<manager::resourceapi::ObjectStore> resources_;
  std::unique_ptr<manager::resourceapi::StorePersister> persister_;
  std::unique_ptr<manager::dra::DraPluginManager> dra_plugins_;
  std::unique_ptr<manager::resourceclaim::StoreClaimGetter> claim_getter_;
  std::unique_ptr<manager::dra::DraManager> dra_;
  std::unique_ptr<manager::resourceclaim::PodClaimController> claims_;
  std::unique_ptr<manager::PodManager> pods_;
  std::unique_ptr<manager::resourceapi::LocalApi> api_;
  std::unique_ptr<manager::pluginmanager::PluginManager> plugin_manager_;
  std::unique_ptr<manager::DevicePluginWatcherHandler> dp_handler_;
  std::unique_ptr<manager::AdminServer> admin_service_;
  std::unique_ptr<grpc::Server> admin_server_;
  std::unique_ptr<admin::Admin::Stub> admin_stub_;
  std::unique_ptr<PluginRunner> plugin_runner_;
  std::unique_ptr<DraRunner> dra_runner_;
  int64_t next_pod_ = 0;
};

struct Case {
  Node* node = nullptr;
  bool dra = false;
};

// For kRepetitionTime, admissions of a new pod each followed by its deletion, timed apart:
// PodManager::Admit of the pod as kdpctl parses it, then PodManager::Delete.
// Manual time: the mean admission; counters: its p50/p99, the deletion's mean, p50 and p99.
void BM_AdmitThenDelete(benchmark::State& state, const Case* c) {
  std::vector<double> admit_us, delete_us;
  for (auto _ : state) {
    const Clock::time_point until = Clock::now() + kRepetitionTime;
    while (Clock::now() < until || admit_us.size() < kMinAdmissions) {
      const int64_t n = c->node->Next();
      absl::StatusOr<manager::Pod> pod = BenchPod(c->dra, n);
      const Clock::time_point start = Clock::now();
      absl::Status status =
          pod.ok() ? c->node->AdmitOrError(c->dra, *std::move(pod)) : pod.status();
      const Clock::time_point admitted_at = Clock::now();
      if (status.ok()) status = c->node->pods().Delete(kNamespace, PodName(c->dra, n)).status();
      const Clock::time_point deleted_at = Clock::now();
      if (!status.ok()) {
        state.SkipWithError(status.ToString().c_str());
        return;
      }
      admit_us.push_back(Micros(admitted_at - start));
      delete_us.push_back(Micros(deleted_at - admitted_at));
    }
    state.SetIterationTime(Summarize(admit_us).mean / 1e6);
  }
  const Stats admit = Summarize(admit_us);
  const Stats del = Summarize(delete_us);
  state.counters["admissions"] = static_cast<double>(admit_us.size());
  state.counters["p50_us"] = admit.p50;
  state.counters["p99_us"] = admit.p99;
  state.counters["del_us"] = del.mean;
  state.counters["del_p50_us"] = del.p50;
  state.counters["del_p99_us"] = del.p99;
}

// Runs `call` once per iteration; adds this repetition's per-call p50 and p99 (µs) as counters.
template <typename Call>
void TimeCalls(benchmark::State& state, Call call) {
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    if (absl::Status status = call(); !status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    micros.push_back(Micros(Clock::now() - start));
  }
  const Stats stats = Summarize(std::move(micros));
  state.counters["p50_us"] = stats.p50;
  state.counters["p99_us"] = stats.p99;
}

void BM_GrpcFloor(benchmark::State& state, v1beta1::DevicePlugin::Stub* stub) {
  TimeCalls(state, [stub] {
    grpc::ClientContext context;
    v1beta1::DevicePluginOptions response;
    grpc::Status status = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &response);
    return status.ok() ? absl::OkStatus() : absl::UnavailableError(status.error_message());
  });
}

// A whole small file made durable: temporary file, fsync, rename, fsync of the directory (what
// each dra_manager_state and SDK checkpoint write costs at least).
void BM_DurableWriteFloor(benchmark::State& state, const std::string* path) {
  const std::string content(kFloorBytes, 'd');
  TimeCalls(state, [&] { return WriteFileDurably(*path, content); });
}

// Prints the table and ratios; returns the verdict sentence, or an error when a figure it needs
// is missing.
absl::StatusOr<std::string> PrintSummary(const SummaryReporter& reporter) {
  using Figure = SummaryReporter::Figure;
  absl::PrintF("\n== Summary: medians over repetitions, µs ==\n%-58s %9s %9s %9s\n", "figure",
               "mean", "p50", "p99");
  const Figure* grpc =
      reporter.Print("floor: gRPC unary, sync, unix socket, empty", kGrpcFloorName);
  const Figure* durable = reporter.Print(
      "floor: 4 KiB durable write (temp, fsync, rename, dir fsync)", kDurableFloorName);
  const Figure* dp = reporter.Print("device plugin: PodManager::Admit, 2 devices", kDpAdmitName,
                                    "device plugin: PodManager::Delete");
  const Figure* dra = reporter.Print("DRA: PodManager::Admit, 1 claim of 2 devices", kDraAdmitName,
                                     "DRA: PodManager::Delete (unprepare, claim deleted)");

  auto ratio = [](const Figure* f, const Figure* base, const char* key = nullptr) {
    if (f == nullptr || base == nullptr) return std::string("n/a");
    const double a = key == nullptr ? f->mean_us : f->Counter(key);
    const double b = key == nullptr ? base->mean_us : base->Counter(key);
    return b <= 0 ? std::string("n/a") : absl::StrFormat("%.2f", a / b);
  };
  absl::PrintF("\n%-58s %9s %9s %9s\n", "ratio", "mean", "p50", "p99");
  auto row = [&](const std::string& label, const Figure* f, const Figure* base) {
    absl::PrintF("%-58s %9s %9s %9s\n", label, ratio(f, base), ratio(f, base, "p50_us"),
                 ratio(f, base, "p99_us"));
  };
  row("DRA / device plugin, Admit", dra, dp);
  if (dra != nullptr && dp != nullptr) {
    absl::PrintF("%-58s %9s %9s %9s\n", "DRA / device plugin, Delete", ratio(dra, dp, "del_us"),
                 ratio(dra, dp, "del_p50_us"), ratio(dra, dp, "del_p99_us"));
  }
  row("device plugin Admit / gRPC floor", dp, grpc);
  row("DRA Admit / gRPC floor", dra, grpc);
  row("device plugin Admit / durable-write floor", dp, durable);
  row("DRA Admit / durable-write floor", dra, durable);
  if (dp == nullptr || dra == nullptr || grpc == nullptr || durable == nullptr) {
    return absl::UnavailableError("a figure of the comparison was not measured");
  }
  // Issue 19's targets, on the means.
  const double admit_ratio = dra->mean_us / dp->mean_us;
  const double durable_ratio = dra->mean_us / durable->mean_us;
  const double delete_ratio = dra->Counter("del_us") / dp->Counter("del_us");
  auto verdict = [](double ratio, double target) {
    return absl::StrFormat("%.2f (target <= %.0f) %s", ratio, target,
                           ratio <= target ? "PASS" : "FAIL");
  };
  return absl::StrFormat(
      "DRA Admit %.1f us vs device-plugin Admit %.1f us: ratio %s; vs durable-write floor "
      "(%.1f us): %s; DRA Delete %.1f us vs device-plugin Delete %.1f us: ratio %s; gRPC floor "
      "%.1f us",
      dra->mean_us, dp->mean_us, verdict(admit_ratio, 3), durable->mean_us,
      verdict(durable_ratio, 4), dra->Counter("del_us"), dp->Counter("del_us"),
      verdict(delete_ratio, 3), grpc->mean_us);
}

// The steps of a DRA admission and deletion one by one, medians of `samples` µs, each pod going
// through the claim controller (not PodManager): Reserve (claim from the template, CEL
// allocation, reservation), Prepare (DraManager: journal records around NodePrepareResources,
// whose driver side GETs the claim and writes its own checkpoint twice), Unprepare, Release; and
// one GET of a claim through the SDK's API client, as the driver does it.
absl::Status PrintBreakdown(Node& node, const std::string& kubeconfig_path) {
  constexpr int kSamples = 50;
  std::vector<double> reserve, flush, prepare, unprepare, release, get;
  KDP_ASSIGN_OR_RETURN(internal::KubeConfig config, internal::LoadKubeConfigFile(kubeconfig_path));
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<internal::KubeClient> client,
                       internal::KubeClient::Create(std::move(config)));
  for (int i = 0; i < kSamples; ++i) {
    KDP_ASSIGN_OR_RETURN(manager::Pod pod, BenchPod(true, node.Next()));
    Clock::time_point t[7];
    t[0] = Clock::now();
    KDP_RETURN_IF_ERROR(node.claims().Reserve(&pod));
    t[1] = Clock::now();
    KDP_RETURN_IF_ERROR(node.persister().Flush());
    t[2] = Clock::now();
    KDP_RETURN_IF_ERROR(node.claims().Prepare(pod));
    t[3] = Clock::now();
    KDP_RETURN_IF_ERROR(
        client
            ->Get(absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", kNamespace,
                               "/resourceclaims/", pod.resource_claim_statuses[kPodClaimName]))
            .status());
    t[4] = Clock::now();
    KDP_RETURN_IF_ERROR(node.claims().Unprepare(pod));
    t[5] = Clock::now();
    node.claims().Release(pod);
    t[6] = Clock::now();
    reserve.push_back(Micros(t[1] - t[0]));
    flush.push_back(Micros(t[2] - t[1]));
    prepare.push_back(Micros(t[3] - t[2]));
    get.push_back(Micros(t[4] - t[3]));
    unprepare.push_back(Micros(t[5] - t[4]));
    release.push_back(Micros(t[6] - t[5]));
  }
  absl::PrintF("\n== DRA steps timed from outside the manager's code, %d samples, µs ==\n",
               kSamples);
  absl::PrintF("%-72s %9s %9s\n", "step", "p50", "p99");
  auto print = [](const std::string& label, std::vector<double> values) {
    const Stats stats = Summarize(std::move(values));
    absl::PrintF("%-72s %9.1f %9.1f\n", label, stats.p50, stats.p99);
  };
  print("Reserve: claim from template, CEL allocation, status + reservedFor", reserve);
  print("resource store write after it (Prepare makes it before calling drivers)", flush);
  print("Prepare: DraManager::PrepareResources (record + the RPC + record)", prepare);
  print("a GET of the claim as the driver does it (SDK client, kept connection)", get);
  print("Unprepare: DraManager::UnprepareResources (the RPC + record)", unprepare);
  print("Release: reservation dropped, generated claim deleted", release);
  return absl::OkStatus();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "dra_admission_benchmark: %s\n", what.c_str());
  return 1;
}

int Main(int argc, char** argv) {
  // Interleaved repetitions by default; a later flag on the command line still wins.
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave.data());
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  const char* tmpdir = std::getenv("TMPDIR");
  std::string base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  bool skip_breakdown = false;
  bool allow_tmpfs = false;
  for (int i = 1; i < args_count; ++i) {
    const std::string arg = args[i];
    if (absl::StartsWith(arg, "--kdp_dir=")) {
      base = arg.substr(std::strlen("--kdp_dir="));
    } else if (arg == "--kdp_skip_breakdown") {
      skip_breakdown = true;
    } else if (arg == "--kdp_allow_tmpfs") {
      allow_tmpfs = true;
    } else {
      std::fprintf(stderr, "dra_admission_benchmark: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  log::SetMinLevel(log::Level::kError);

  std::string dir = base + "/kdp-dra-admission-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return Fail(absl::StrCat("mkdtemp in ", base, ": ", std::strerror(errno)));
  }
  absl::Cleanup remove_dir = [&dir] {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  };
  if (InMemory(dir) && !allow_tmpfs) {
    return Fail(absl::StrCat(dir,
                             " is in memory (tmpfs): its fsyncs cost nothing; use "
                             "--kdp_dir=<a directory on disk> or --kdp_allow_tmpfs"));
  }

  // The floors.
  FloorService floor_service;
  const std::string floor_socket = dir + "/floor.sock";
  absl::StatusOr<std::unique_ptr<grpc::Server>> floor_server =
      ServeOnUnixSocket(floor_socket, &floor_service);
  if (!floor_server.ok()) return Fail(floor_server.status().ToString());
  std::unique_ptr<v1beta1::DevicePlugin::Stub> floor_stub =
      v1beta1::DevicePlugin::NewStub(DialUnixSocket(floor_socket));
  const std::string durable_path = dir + "/floor.durable";

  // The node, its DeviceClass and ResourceClaimTemplate (the example's manifests), and one
  // admission of each shape to check the wiring before anything is timed.
  const std::string root = dir + "/root";
  absl::StatusOr<std::unique_ptr<Node>> started = Node::Start(root);
  if (!started.ok()) return Fail(started.status().ToString());
  Node& node = **started;
  const std::string manifests = std::string(KDP_SOURCE_DIR) + "/examples/dra-driver/manifests/";
  for (const char* file : {"deviceclass.yaml", "claim-template.yaml"}) {
    std::ifstream in(manifests + file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.empty()) return Fail(absl::StrCat("cannot read ", manifests, file));
    if (absl::Status applied = node.Apply(text, file); !applied.ok()) {
      return Fail(applied.ToString());
    }
  }
  for (bool dra : {false, true}) {
    absl::StatusOr<manager::Pod> pod = BenchPod(dra, node.Next());
    if (!pod.ok()) return Fail(pod.status().ToString());
    const std::string name = pod->name;
    absl::Status checked = node.AdmitOrError(dra, *std::move(pod));
    if (checked.ok()) checked = node.pods().Delete(kNamespace, name).status();
    if (!checked.ok()) return Fail(absl::StrCat("first admission: ", checked.ToString()));
  }

  const Case dp_case{.node = &node, .dra = false}, dra_case{.node = &node, .dra = true};
  auto add = [](const char* name, auto function, auto* argument) {
    return benchmark::RegisterBenchmark(name, function, argument)
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(kRepetitions)
        ->ReportAggregatesOnly(true);
  };
  add(kGrpcFloorName, BM_GrpcFloor, floor_stub.get())->UseRealTime()->MinTime(0.3);
  add(kDurableFloorName, BM_DurableWriteFloor, &durable_path)->UseRealTime()->MinTime(0.3);
  // One iteration: each repetition runs admissions for kRepetitionTime.
  add(kDpAdmitName, BM_AdmitThenDelete, &dp_case)->UseManualTime()->Iterations(1);
  add(kDraAdmitName, BM_AdmitThenDelete, &dra_case)->UseManualTime()->Iterations(1);
  SummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                 : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  absl::StatusOr<std::string> verdict = PrintSummary(reporter);
  absl::Status breakdown = skip_breakdown
                               ? absl::OkStatus()
                               : PrintBreakdown(node, manager::resourceapi::KubeconfigPath(root));
  if (!breakdown.ok()) absl::PrintF("breakdown not measured: %s\n", breakdown.ToString());
  (*floor_server)->Shutdown();
  absl::PrintF("\ndra_admission_benchmark: %s\n",
               verdict.ok() ? *verdict : std::string(verdict.status().message()));
  return verdict.ok() && breakdown.ok() ? 0 : 1;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
