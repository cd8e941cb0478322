// One kdp-manager's parts wired in order (node.h).
#include "manager/src/node/node.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/absl_view.h"
#include "common/cli_flags.h"
#include "common/grpc_server.h"
#include "common/logging.h"
#include "common/metrics_server.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/controlplane/resourceapi/local_api.h"
#include "manager/src/controlplane/resourceapi/persistence.h"
#include "manager/src/controlplane/resourceapi/server.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceclaim/device_taint_eviction.h"
#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/plugin_watcher_handler.h"
#include "manager/src/dra/manager.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "manager/src/dra/reconciler.h"
#include "manager/src/events/event_recorder.h"
#include "manager/src/lifecycle/pod_admission.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/node/state_metrics.h"
#include "manager/src/nodestatus/node_status.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/podresources/podresources_server.h"
#include "manager/src/state/state_store.h"
#include "manager/src/status/status_manager.h"
#include "manager/src/topologymanager/topology_manager.h"

namespace kdp::manager {
namespace {

// `status` with `context` before its message, the code kept ("<context>: <message>").
absl::Status Annotate(const absl::Status& status, std::string_view context) {
  return absl::Status(status.code(), absl::StrCat(Sv(context), ": ", status.message()));
}

// The topology manager's configuration from the options; the machine's NUMA nodes and distances
// come from `options.read_machine` (hwloc on the live host, or `topology_xml`), as the kubelet's
// come from cadvisor. `numa_cpus` receives each node's CPUs (for kdpctl topology).
absl::StatusOr<TopologyManagerConfig> TopologyConfig(const ManagerOptions& options,
                                                     std::map<int, std::vector<int>>* numa_cpus) {
  TopologyManagerConfig config;
  KDP_ASSIGN_OR_RETURN(config.policy, ParseTopologyPolicy(options.topology_policy));
  KDP_ASSIGN_OR_RETURN(config.scope, ParseTopologyScope(options.topology_scope));
  // As the kubelet: under policy none the options are not looked at.
  if (config.policy != TopologyPolicy::kNone) {
    KDP_ASSIGN_OR_RETURN(config.options,
                         ParseTopologyPolicyOptions(options.topology_policy_options));
  }
  absl::StatusOr<MachineNuma> machine =
      options.read_machine ? options.read_machine(options.topology_xml)
                           : absl::StatusOr<MachineNuma>(absl::UnimplementedError(
                                 "no reader of the machine's topology was configured"));
  if (!machine.ok()) {
    // Policy none never looks at the machine (the kubelet's NewManager returns before it): a host
    // hwloc cannot read must not stop a manager that was not asked for topology.
    if (config.policy != TopologyPolicy::kNone) return machine.status();
    KDP_LOG_WARNING("Cannot read the machine's NUMA topology; policy none does not need it", "err",
                    machine.status().message());
    return config;
  }
  config.numa = std::move(machine->numa);
  *numa_cpus = std::move(machine->cpus);
  // The kubelet's start-up checks (at most max-allowable-numa-nodes nodes, known distances for
  // prefer-closest-numa-nodes), before any state is opened.
  KDP_RETURN_IF_ERROR(ValidateNumaInfo(config.policy, config.options, config.numa));
  return config;
}

// INVALID_ARGUMENT naming `flag` unless `value` keeps `rule` (main's flags check the same).
absl::Status CheckDuration(std::string_view flag, absl::Duration value, cli::DurationRule rule) {
  if (value == absl::InfiniteDuration() || value < absl::ZeroDuration() ||
      (rule == cli::DurationRule::kPositive && value == absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(flag), " ", absl::FormatDuration(value), ": must be ",
                     rule == cli::DurationRule::kPositive ? "positive" : "finite, not negative"));
  }
  return absl::OkStatus();
}

// Resolves what main leaves to the node (an absolute root, the host name) and checks the rest.
absl::Status ResolveOptions(ManagerOptions* options) {
  if (options->kubelet_root.empty() || options->kubelet_root.find('\0') != std::string::npos) {
    // "" would put device-plugins/ and kdp/ at the file system's root.
    return absl::InvalidArgumentError("--kubelet-root: must be a directory path, not empty");
  }
  if (options->kubelet_root[0] != '/') {
    // Absolute, as the kubelet requires its socket directory to be: plugins are handed absolute
    // socket paths (plugins_registry endpoints) and must find them whatever their working
    // directory.
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kubelet-root ", options->kubelet_root,
                       " is relative and the working directory is unknown"));
    }
    options->kubelet_root = absl::StrCat(cwd, "/", options->kubelet_root);
  }
  if (options->node_name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) options->node_name = host;
    // Node names are DNS subdomains: lower case, as the kubelet's --hostname-override default.
    for (char& c : options->node_name) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  using cli::DurationRule;
  for (const auto& [flag, value, rule] :
       {std::tuple{"--dial-timeout", options->dial_timeout, DurationRule::kPositive},
        std::tuple{"--call-timeout", options->call_timeout, DurationRule::kPositive},
        std::tuple{"--pre-start-timeout", options->pre_start_timeout, DurationRule::kPositive},
        std::tuple{"--endpoint-grace-period", options->endpoint_grace_period,
                   DurationRule::kNonNegative},
        std::tuple{"--compaction-delay", options->compaction_delay, DurationRule::kNonNegative},
        std::tuple{"--dra-call-timeout", options->dra_call_timeout, DurationRule::kPositive},
        std::tuple{"--dra-reconcile-period", options->dra_reconcile_period,
                   DurationRule::kPositive}}) {
    KDP_RETURN_IF_ERROR(CheckDuration(flag, value, rule));
  }
  if (options->resource_api_port < 0 || options->resource_api_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--resource-api-port ", options->resource_api_port, ": must be in 0..65535"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Node>> Node::Create(ManagerOptions options) {
  return Create(std::move(options), StepObserver());
}

absl::StatusOr<std::unique_ptr<Node>> Node::Create(ManagerOptions options, StepObserver observer) {
  if (absl::Status resolved = ResolveOptions(&options); !resolved.ok()) {
    KDP_LOG_ERROR("Invalid manager options", "err", resolved.message());
    return resolved;
  }
  std::unique_ptr<Node> node(new Node(std::move(options), std::move(observer)));
  absl::MutexLock lock(&node->mu_);
  if (absl::Status opened = node->OpenLocked(); !opened.ok()) {
    node->StopLocked();
    return opened;
  }
  return node;
}

Node::Node(ManagerOptions options, StepObserver observer)
    : options_(std::move(options)),
      observer_(std::move(observer)),
      plugins_dir_(absl::StrCat(options_.kubelet_root, "/device-plugins")),
      podresources_dir_(absl::StrCat(options_.kubelet_root, "/pod-resources")),
      admin_dir_(absl::StrCat(options_.kubelet_root, "/kdp")),
      registration_socket_(absl::StrCat(plugins_dir_, "/kubelet.sock")),
      podresources_socket_(absl::StrCat(podresources_dir_, "/kubelet.sock")),
      admin_socket_(absl::StrCat(admin_dir_, "/manager.sock")),
      metrics_(std::make_unique<ManagerMetrics>(&registry_)) {}

Node::~Node() { Stop(); }

void Node::Reached(std::string_view step) const {
  if (observer_) observer_(step);
}

int Node::metrics_port() const {
  absl::MutexLock lock(&mu_);
  return metrics_server_ != nullptr ? metrics_server_->port() : 0;
}

absl::Status Node::LockRootLocked() {
  for (const std::string& dir : {plugins_dir_, podresources_dir_, admin_dir_,
                                 absl::StrCat(options_.kubelet_root, "/plugins_registry")}) {
    if (absl::Status made = MakeDirectories(dir, 0750); !made.ok()) {
      KDP_LOG_ERROR("Cannot create directory", "dir", dir, "err", made.message());
      return Annotate(made, absl::StrCat("creating ", dir));
    }
  }
  // One manager per root: a second one would remove the first one's sockets and move its files.
  const std::string lock_path = absl::StrCat(admin_dir_, "/manager.lock");
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    if (lock_fd_ >= 0) {
      char buf[32] = {};
      ssize_t n = ::pread(lock_fd_, buf, sizeof(buf) - 1, 0);
      if (n > 0) holder = std::string(buf, static_cast<size_t>(n));
      ::close(lock_fd_);
      lock_fd_ = -1;
    }
    if (holder.empty()) holder = "unknown";
    KDP_LOG_ERROR("Another kdp-manager is running on this kubelet root", "root",
                  options_.kubelet_root, "lock", lock_path, "pid", holder);
    return absl::FailedPreconditionError(
        absl::StrCat("another kdp-manager (pid ", holder,
                     ") is running on this kubelet root: ", lock_path, " is locked"));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    KDP_LOG_WARNING("Cannot write our pid into the lock file", "lock", lock_path);
  }
  return absl::OkStatus();
}

absl::Status Node::OpenLocked() {
  KDP_RETURN_IF_ERROR(LockRootLocked());
  Reached("lock");

  // Metrics first, so that a bad --metrics-address fails before any state is touched. The
  // server renders `registry_`; the gauges read from the state are added once it serves.
  absl::StatusOr<std::unique_ptr<metrics::MetricsServer>> metrics_server =
      metrics::StartMetricsServer({.address = options_.metrics_address, .registry = &registry_},
                                  options_.metrics_address_required, "kdp-manager");
  if (!metrics_server.ok()) {
    KDP_LOG_ERROR("Cannot serve metrics", "address", options_.metrics_address, "err",
                  metrics_server.status().message());
    return metrics_server.status();
  }
  metrics_server_ = *std::move(metrics_server);
  Reached("metrics");

  // Before the state is opened: a bad configuration leaves the journal and checkpoint untouched.
  absl::StatusOr<TopologyManagerConfig> topology_config = TopologyConfig(options_, &numa_cpus_);
  if (!topology_config.ok()) {
    KDP_LOG_ERROR("Invalid topology manager configuration", "err",
                  topology_config.status().message());
    return Annotate(topology_config.status(), "topology manager configuration");
  }
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(
      {.checkpoint_path = absl::StrCat(plugins_dir_, "/kubelet_internal_checkpoint"),
       .pods_path = absl::StrCat(admin_dir_, "/pods.json"),
       .journal_path = absl::StrCat(admin_dir_, "/journal"),
       .dra_checkpoint_path = absl::StrCat(options_.kubelet_root, "/", dra::kCheckpointFileName),
       .compaction_delay = options_.compaction_delay,
       .strict = options_.strict_checkpoint},
      &restored);
  if (!store.ok()) {
    KDP_LOG_ERROR("Cannot restore state", "err", store.status().ToString());
    return store.status();
  }
  store_ = *std::move(store);
  Reached("state");

  devices_ = std::make_unique<DeviceManager>(DeviceManagerOptions{
      .plugins_dir = plugins_dir_,
      .endpoint = {.dial_timeout = options_.dial_timeout,
                   .call_timeout = options_.call_timeout,
                   .pre_start_timeout = options_.pre_start_timeout,
                   .observer = options_.device_plugin_observer},
      .endpoint_grace_period = options_.endpoint_grace_period,
      .housekeeping_interval = absl::Seconds(1),
      .now = {},
      .store = store_.get(),
      .numa_nodes = topology_config->numa.nodes,
      .metrics = metrics_.get(),
  });
  absl::StatusOr<TopologyManager> topology =
      TopologyManager::Create(*topology_config, {devices_.get()});
  if (!topology.ok()) {
    KDP_LOG_ERROR("Topology manager cannot start", "err", topology.status().message());
    return Annotate(topology.status(), "topology manager");
  }
  topology_ = std::make_unique<TopologyManager>(*std::move(topology));
  KDP_LOG_INFO("Topology manager", "policy", TopologyPolicyName(topology_config->policy), "scope",
               TopologyScopeName(topology_config->scope), "numaNodes",
               absl::StrJoin(topology_config->numa.nodes, ","));

  // The local resource API: the stand-in for the API server that DRA drivers and kdpctl use.
  resources_ = std::make_unique<resourceapi::ObjectStore>(resourceapi::StoreOptions{
      .node_name = options_.node_name, .node_labels = options_.node_labels});
  const std::string resources_path = absl::StrCat(admin_dir_, "/resources.json");
  if (absl::Status loaded = resourceapi::StorePersister::Load(resources_path, resources_.get());
      !loaded.ok()) {
    KDP_LOG_ERROR("Cannot restore the resource API's objects", "err", loaded.ToString());
    return loaded;
  }
  // As a starting kubelet: the node's ResourceSlices go; running drivers publish them again when
  // they are registered anew.
  if (int wiped = resources_->DeleteSlices(options_.node_name); wiped > 0) {
    KDP_LOG_INFO("Deleted the node's ResourceSlices at start", "node", options_.node_name, "slices",
                 wiped);
  }
  persister_ = std::make_unique<resourceapi::StorePersister>(resources_path, resources_.get());
  dra_plugins_ = std::make_unique<dra::DraPluginManager>(dra::DraPluginManagerOptions{
      .call_timeout = options_.dra_call_timeout,
      .wiping_delay = absl::Seconds(30),
      .wipe_resource_slices =
          [resources = resources_.get(),
           node_name = options_.node_name](const std::string& driver) {
            int wiped = resources->DeleteSlices(node_name, driver);
            KDP_LOG_INFO(
                "Deleted the ResourceSlices of a DRA driver with no connected instance for 30s",
                "driver", driver, "slices", wiped);
          },
      .grpc_durations = metrics_->dra_grpc_operations_duration,
      .observer = options_.dra_driver_observer,
  });
  claim_getter_ = std::make_unique<resourceclaim::StoreClaimGetter>(resources_.get());
  absl::StatusOr<std::unique_ptr<dra::DraManager>> dra =
      dra::DraManager::Create({.state_dir = options_.kubelet_root,
                               .claims = claim_getter_.get(),
                               .plugins = dra_plugins_.get(),
                               .on_pod_health_changed =
                                   [](std::vector<std::string> pod_uids) {
                                     // The kubelet's pod status sync: kdpctl reads the status when
                                     // asked, so telling is all there is to do.
                                     KDP_LOG_INFO("Health of allocated DRA devices changed", "pods",
                                                  absl::StrJoin(pod_uids, ","));
                                   },
                               .metrics = metrics_.get(),
                               .store = store_.get(),
                               .restored_claims = std::move(restored.dra_claims),
                               // PodClaimController: reservations durable before a prepare.
                               .sync_reference_before_prepare = false});
  if (!dra.ok()) {
    KDP_LOG_ERROR("DRA manager cannot start", "err", dra.status().ToString());
    return Annotate(dra.status(), "DRA manager");
  }
  dra_ = *std::move(dra);
  // The drivers' health streams feed the DRA manager; Stop stops them before it goes.
  dra_plugins_->SetHealthStreamHandler(dra_->health_stream_handler());
  claim_controller_ =
      std::make_unique<resourceclaim::PodClaimController>(resources_.get(), dra_.get());
  pods_ = std::make_unique<PodManager>(devices_.get(), store_.get(), topology_.get(),
                                       claim_controller_.get());
  devices_->SetActivePodsSource(pods_.get());
  KDP_RETURN_IF_ERROR(RestoreLocked(std::move(restored)));
  Reached("restored");

  // Claims of pods that went while the manager was down are unprepared at Start and then every
  // period (the kubelet's reconcile loop), once the pod source is ready (above).
  reconciler_ =
      std::make_unique<dra::DraReconciler>(dra_.get(), pods_.get(), options_.dra_reconcile_period);
  // Pods using a device that gains a NoExecute taint they do not tolerate are evicted, as the
  // device taint eviction controller does; checked each second when the resource API changed.
  taint_evictor_ = std::make_unique<resourceclaim::DeviceTaintEvictor>(
      resources_.get(), pods_.get(), absl::Seconds(1));
  // The pods the manager runs, as Pods in the local API (the kubelet's status manager), with the
  // events the scheduler and the kubelet post about them.
  events_ = std::make_unique<EventRecorder>(resources_.get());
  pod_status_ = std::make_unique<StatusManager>(
      resources_.get(), events_.get(),
      StatusManagerOptions{
          .node_name = options_.node_name,
          .pods = [pods = pods_.get()] { return pods->List(); },
          .pod = [pods = pods_.get()](
                     const std::string& namespace_,
                     const std::string& name) { return pods->Get(namespace_, name); },
          .health = [devices = devices_.get()](const std::string& resource,
                                               const std::string& id) -> std::string {
            for (const auto& entry : devices->SharedResources()) {
              if (entry->name != resource) continue;
              auto device = entry->devices.find(id);
              if (device == entry->devices.end()) return "Unknown";
              return device->second.healthy ? "Healthy" : "Unhealthy";
            }
            return "Unknown";
          },
          .refused_pods_path = absl::StrCat(admin_dir_, "/refused-pods.json")});
  if (absl::Status loaded = pod_status_->LoadRefused(); !loaded.ok()) {
    KDP_LOG_ERROR("Cannot read the refused pods", "err", loaded.ToString());
    return loaded;
  }
  // Pods created and deleted through the local API take kdpctl's path: one admission.
  admission_ = std::make_unique<PodAdmission>(pods_.get(),
                                              PodAdmissionOptions{.node_name = options_.node_name,
                                                                  .status = pod_status_.get(),
                                                                  .events = events_.get(),
                                                                  .persister = persister_.get()});
  return absl::OkStatus();
}

// Allocations first, then the pods that hold them; then garbage collection may run, and
// compaction: its thread reads the devices and the pods.
absl::Status Node::RestoreLocked(RestoredState restored) {
  devices_->Restore(restored.devices);
  if (restored.foreign_checkpoint) {
    // A checkpoint from elsewhere (a kubelet's, copied in): its pods are adopted, recorded like
    // admissions, so that their allocations stay rather than being collected as garbage.
    std::set<std::string> known;
    for (const Pod& pod : restored.pods) known.insert(pod.uid);
    for (Pod& pod : PodsForCheckpointEntries(restored.devices, known)) {
      if (absl::Status recorded = store_->RecordPodAdmitted(pod, {}); !recorded.ok()) {
        KDP_LOG_ERROR("Cannot record an adopted pod", "err", recorded.ToString());
        return Annotate(recorded, absl::StrCat("adopting pod ", pod.uid, " from the checkpoint"));
      }
      KDP_LOG_INFO("Adopted a pod found only in the checkpoint", "pod",
                   absl::StrCat(pod.namespace_, "/", pod.name), "podUID", pod.uid);
      restored.pods.push_back(std::move(pod));
    }
  }
  pods_->Restore(std::move(restored.pods));
  store_->StartCompaction([devices = devices_.get(), pods = pods_.get(), dra = dra_.get()] {
    return StateSnapshot{.devices = devices->CheckpointData(),
                         .pods = pods->Pods(),
                         .dra_claims = dra->ClaimStates()};
  });
  return absl::OkStatus();
}

absl::Status Node::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the node on ", options_.kubelet_root,
                     started_ ? " was started already" : " is stopped; create a new one"));
  }
  started_ = true;
  if (absl::Status served = StartLocked(); !served.ok()) {
    StopLocked();
    return served;
  }
  return absl::OkStatus();
}

absl::Status Node::StartLocked() {
  resourceapi::LocalApiOptions api_options;
  api_options.kubelet_root = options_.kubelet_root;
  api_options.port = options_.resource_api_port;
  api_options.server.pods = admission_.get();
  absl::StatusOr<std::unique_ptr<resourceapi::LocalApi>> local_api =
      resourceapi::LocalApi::Start(resources_.get(), std::move(api_options));
  if (!local_api.ok()) {
    KDP_LOG_ERROR("Local resource API failed to start", "err", local_api.status().ToString());
    return Annotate(local_api.status(), "local resource API");
  }
  local_api_ = *std::move(local_api);
  Reached("resource-api");
  // The Node's status as the kubelet reports it: machine resources (the CPUs of the topology the
  // manager uses, fake or live) and every device-plugin resource's capacity and allocatable.
  MachineResources machine = ReadMachineResources(options_.kubelet_root);
  int64_t topology_cpus = 0;
  for (const auto& [node, cpus] : numa_cpus_) topology_cpus += static_cast<int64_t>(cpus.size());
  if (topology_cpus > 0) machine.cpus = topology_cpus;
  node_status_ = std::make_unique<NodeStatusUpdater>(
      resources_.get(),
      NodeStatusUpdaterOptions{
          .node_name = options_.node_name,
          .machine = machine,
          .info = ReadNodeSystemInfo(resourceapi::ResourceApiServerOptions().kubernetes_version,
                                     absl::StrCat("kdp://", Sv(cli::Version()))),
          .device_capacity = [devices = devices_.get()] { return devices->GetCapacity(); }});
  persister_->Start();

  device_plugin_handler_ = std::make_unique<DevicePluginWatcherHandler>(
      devices_.get(),
      [devices = devices_.get()](const std::string& resource, const std::string& socket) {
        devices->DeregisterPlugin(resource, socket);
      },
      options_.device_plugin_observer);
  plugin_manager_ =
      std::make_unique<pluginmanager::PluginManager>(pluginmanager::PluginManagerOptions{
          .dir = absl::StrCat(options_.kubelet_root, "/plugins_registry"),
          .timeouts = {},
          .initial_backoff = absl::Milliseconds(500),
          .max_backoff = absl::Minutes(2) + absl::Seconds(2)});
  plugin_manager_->AddHandler(pluginmanager::kDevicePlugin, device_plugin_handler_.get());
  plugin_manager_->AddHandler(pluginmanager::kDRAPlugin, dra_plugins_.get());

  podresources_ = std::make_unique<PodResourcesServer>(
      pods_.get(), devices_.get(),
      [claims = claim_controller_.get()](const Pod& pod) { return claims->Describe(pod); });
  admin_ =
      std::make_unique<AdminServer>(pods_.get(), devices_.get(),
                                    AdminDraSources{.resources = resources_.get(),
                                                    .claims = claim_controller_.get(),
                                                    .dra = dra_.get(),
                                                    .dra_plugins = dra_plugins_.get(),
                                                    .plugins = plugin_manager_.get(),
                                                    .persister = persister_.get(),
                                                    .resource_api_url = local_api_->url(),
                                                    .kubeconfig = local_api_->kubeconfig_path(),
                                                    .numa_cpus = numa_cpus_,
                                                    .admission = admission_.get()});

  // kubelet.sock is served before the plugins_registry watcher starts: a device plugin found
  // there registers against it.
  if (absl::Status started = devices_->Start(); !started.ok()) {
    KDP_LOG_ERROR("Device manager failed to start", "err", started.ToString());
    return Annotate(started, absl::StrCat("device manager on ", registration_socket_));
  }
  Reached("registration");
  if (absl::Status started = plugin_manager_->Start(); !started.ok()) {
    KDP_LOG_ERROR("Plugin watcher failed to start", "err", started.ToString());
    return Annotate(started,
                    absl::StrCat("plugin watcher on ", options_.kubelet_root, "/plugins_registry"));
  }
  Reached("plugin-watcher");
  reconciler_->Start();
  taint_evictor_->Start();
  node_status_->Start();
  pod_status_->Start();
  Reached("loops");
  for (auto [socket, service, server, step] :
       {std::tuple{&podresources_socket_, static_cast<grpc::Service*>(podresources_.get()),
                   &podresources_server_, "podresources"},
        std::tuple{&admin_socket_, static_cast<grpc::Service*>(admin_.get()), &admin_server_,
                   "admin"}}) {
    absl::StatusOr<std::unique_ptr<grpc::Server>> served = ServeOnUnixSocket(*socket, service);
    if (!served.ok()) {
      KDP_LOG_ERROR("Cannot serve", "err", served.status().message());
      return Annotate(served.status(), absl::StrCat("serving ", *socket));
    }
    *server = *std::move(served);
    Reached(step);
  }
  // Scrapes read the state through these callbacks: the server stops before any of it goes.
  AddStateMetrics(&registry_, metrics_server_.get(), devices_.get(), pods_.get(), dra_.get(),
                  store_.get());
  Reached("ready");
  KDP_LOG_INFO("kdp-manager ready", "kubeletRoot", options_.kubelet_root, "node",
               options_.node_name, "admin", admin_socket_, "podResources", podresources_socket_,
               "resourceApi", local_api_->url(), "kubeconfig", local_api_->kubeconfig_path());
  return absl::OkStatus();
}

void Node::Stop() {
  absl::MutexLock lock(&mu_);
  StopLocked();
}

void Node::StopLocked() {
  if (stopped_) return;
  stopped_ = true;
  // Plugins first: stopping the endpoints cancels their calls in flight, so an admission waiting
  // on a hung plugin ends now instead of holding the admin server's shutdown for its deadline.
  if (plugin_manager_ != nullptr) {
    plugin_manager_->Stop();
    Reached("stop plugin-watcher");
  }
  if (reconciler_ != nullptr) {
    reconciler_->Stop();
    if (taint_evictor_ != nullptr) taint_evictor_->Stop();
    if (node_status_ != nullptr) node_status_->Stop();
    if (pod_status_ != nullptr) pod_status_->Stop();
    Reached("stop loops");
  }
  if (devices_ != nullptr) {
    devices_->Stop();
    Reached("stop registration");
  }
  if (podresources_server_ != nullptr) {
    const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(2);
    if (admin_server_ != nullptr) admin_server_->Shutdown(deadline);
    podresources_server_->Shutdown(deadline);
    if (admin_server_ != nullptr) (void)RemoveSocketIfPresent(admin_socket_);
    (void)RemoveSocketIfPresent(podresources_socket_);
    Reached("stop servers");
  }
  // The drivers' health streams feed the DRA manager: they stop before it goes.
  if (dra_plugins_ != nullptr) dra_plugins_->Stop();
  if (local_api_ != nullptr) {
    local_api_->Stop();
    Reached("stop resource-api");
  }
  if (persister_ != nullptr) persister_->Stop();
  // Always on a clean shutdown: the checkpoint and the pod store hold the whole state. The
  // compaction thread reads the devices and the pods: it ends before they are destroyed.
  if (store_ != nullptr) {
    store_->Close();
    Reached("stop state");
  }
  if (metrics_server_ != nullptr) {
    metrics_server_->Stop();
    Reached("stop metrics");
  }
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    Reached("stop lock");
  }
}

}  // namespace kdp::manager
