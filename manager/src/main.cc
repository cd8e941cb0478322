// kdp-manager: a stand-in for the kubelet's device manager on one node. See docs/manager.md.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "common/log_flags.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/metrics_server.h"
#include "common/periodic_thread.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "kdp/topology.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/devicemanager/plugin_watcher_handler.h"
#include "manager/src/dra/manager.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "manager/src/events/event_recorder.h"
#include "manager/src/manager_metrics.h"
#include "manager/src/nodestatus/node_status.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "manager/src/pod_admission.h"
#include "manager/src/pod_manager.h"
#include "manager/src/podresources/podresources_server.h"
#include "manager/src/resourceapi/local_api.h"
#include "manager/src/resourceapi/persistence.h"
#include "manager/src/resourceapi/server.h"
#include "manager/src/resourceapi/store.h"
#include "manager/src/resourceapi/validation.h"
#include "manager/src/resourceclaim/pod_claim_controller.h"
#include "manager/src/state/state_store.h"
#include "manager/src/status/status_manager.h"
#include "manager/src/topologymanager/topology_manager.h"

namespace {

std::unique_ptr<grpc::Server> Serve(const std::string& socket, grpc::Service* service) {
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = kdp::ServeOnUnixSocket(socket, service);
  if (!server.ok()) {
    KDP_LOG_ERROR("Cannot serve", "err", server.status().message());
    return nullptr;
  }
  return *std::move(server);
}

// The machine's NUMA nodes and SLIT distances (0 where unknown) as the topology manager sees them.
kdp::manager::NumaInfo NumaInfoOf(const kdp::Topology& machine) {
  std::vector<int> nodes;
  for (const kdp::NumaNode& node : machine.numa_nodes()) nodes.push_back(node.os_index);
  return kdp::manager::NumaInfo::FromDistances(
      std::move(nodes), [&machine](int from, int to) { return machine.NumaDistance(from, to); });
}

// The topology manager's configuration from the flags; the machine's NUMA nodes and distances come
// from hwloc (the live host, or `topology_xml`), as the kubelet's come from cadvisor. `numa_cpus`
// receives each node's CPUs (for kdpctl topology).
absl::StatusOr<kdp::manager::TopologyManagerConfig> TopologyConfig(
    const std::string& policy, const std::string& scope, const std::string& policy_options,
    const std::string& topology_xml, std::map<int, std::vector<int>>* numa_cpus) {
  kdp::manager::TopologyManagerConfig config;
  KDP_ASSIGN_OR_RETURN(config.policy, kdp::manager::ParseTopologyPolicy(policy));
  KDP_ASSIGN_OR_RETURN(config.scope, kdp::manager::ParseTopologyScope(scope));
  // As the kubelet: under policy none the options are not looked at.
  if (config.policy != kdp::manager::TopologyPolicy::kNone) {
    KDP_ASSIGN_OR_RETURN(config.options, kdp::manager::ParseTopologyPolicyOptions(policy_options));
  }
  absl::StatusOr<std::unique_ptr<kdp::Topology>> machine =
      topology_xml.empty() ? kdp::Topology::FromHost() : kdp::Topology::FromXmlFile(topology_xml);
  if (!machine.ok()) {
    // Policy none never looks at the machine (the kubelet's NewManager returns before it): a host
    // hwloc cannot read must not stop a manager that was not asked for topology.
    if (config.policy != kdp::manager::TopologyPolicy::kNone) return machine.status();
    KDP_LOG_WARNING("Cannot read the machine's NUMA topology; policy none does not need it", "err",
                    machine.status().message());
    return config;
  }
  config.numa = NumaInfoOf(**machine);
  for (const kdp::NumaNode& node : (*machine)->numa_nodes()) {
    (*numa_cpus)[node.os_index] = node.cpus;
  }
  // The kubelet's start-up checks (at most max-allowable-numa-nodes nodes, known distances for
  // prefer-closest-numa-nodes), before any state is opened.
  KDP_RETURN_IF_ERROR(kdp::manager::ValidateNumaInfo(config.policy, config.options, config.numa));
  return config;
}

// The kubelet's DRA reconcile loop: every `period`, terminating pods finish their deletion (a
// driver that failed NodeUnprepareResources, a deletion cut by a crash), then claims still
// referencing pods that are no longer active are unprepared (pods deleted while the manager was
// down, failed rejections).
class DraReconciler {
 public:
  DraReconciler(kdp::manager::dra::DraManager* dra, kdp::manager::PodManager* pods,
                absl::Duration period)
      : dra_(dra), pods_(pods), period_(period) {}
  ~DraReconciler() { Stop(); }

  void Start() {
    thread_.Start(
        period_,
        [this] {
          pods_->FinishTerminating();
          pods_->WithActivePodsSettled([this](const std::set<std::string>& active) {
            if (absl::Status reconciled = dra_->ReconcileOrphans(active); !reconciled.ok()) {
              KDP_LOG_WARNING("Unpreparing claims of pods that are gone failed; will retry", "err",
                              reconciled.message());
            }
          });
        },
        /*run_at_start=*/true);
  }
  void Stop() { thread_.Stop(); }

 private:
  kdp::manager::dra::DraManager* const dra_;
  kdp::manager::PodManager* const pods_;
  const absl::Duration period_;
  kdp::PeriodicThread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  // One malloc arena instead of one per core × 8: the manager's ~80 threads mostly wait, and with
  // many arenas the per-admission temporaries leave each arena fragmented (bench/
  // footprint_benchmark: 125 → 100 MiB at 10,000 allocations).
  mallopt(M_ARENA_MAX, 1);
  CLI::App app{
      "kdp-manager: a kubelet-faithful device manager and DRA manager for one node. Device\n"
      "plugins register on <kubelet-root>/device-plugins/kubelet.sock, DRA drivers (and device\n"
      "plugins) through <kubelet-root>/plugins_registry, exactly as with a kubelet; a local\n"
      "Kubernetes API over HTTPS on loopback (kubeconfig with its CA and token in\n"
      "<kubelet-root>/kdp/kubeconfig) stands in for the API server; pods are admitted with\n"
      "kdpctl; PodResources v1 is served on <kubelet-root>/pod-resources/kubelet.sock."};
  std::string kubelet_root = "/var/lib/kubelet";
  kdp::log::LogFlags log_flags;
  std::string metrics_address = kdp::manager::kDefaultMetricsAddress;
  double dial_timeout_s = 10, call_timeout_s = 30, pre_start_timeout_s = 30;
  std::string grace_period = "5m";
  std::string compaction_delay = "1s";
  bool strict_checkpoint = false;
  std::string topology_policy = "none";
  std::string topology_scope = "container";
  std::string topology_policy_options;
  std::string topology_xml;
  std::string node_name;
  std::string node_labels_text;
  int resource_api_port = 0;
  std::string dra_reconcile_period = "60s";
  double dra_call_timeout_s = 45;
  auto duration_check = [](const std::string& text) -> std::string {
    absl::Duration d;
    if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
      return "must be a non-negative duration such as 300ms, 30s, 5m or 1h30m";
    }
    return "";
  };
  app.add_option("--kubelet-root", kubelet_root,
                 "Root directory; device-plugins/, pod-resources/, plugins_registry/ and the admin "
                 "socket kdp/manager.sock live under it")
      ->capture_default_str()
      ->check([](const std::string& text) -> std::string {
        // "" would put device-plugins/ and kdp/ at the file system's root.
        return text.empty() || text.find('\0') != std::string::npos
                   ? "must be a directory path, not empty"
                   : "";
      });
  kdp::log::AddLogFlags(app, &log_flags);
  CLI::Option* metrics_address_flag =
      app.add_option(
             "--metrics-address", metrics_address,
             "host:port ([::1]:port for IPv6) serving Prometheus /metrics (kubelet metric "
             "names: kubelet_device_plugin_*, dra_*; plus kdp_manager_*), /healthz and /readyz "
             "(fail while kubelet.sock is not served or the last state write failed) and "
             "/livez; "
             "port 0 picks a free port (logged as \"serving metrics\"); \"\" disables. "
             "When the default's port is taken the manager runs without metrics; an "
             "address given explicitly must be bindable")
          ->capture_default_str();
  app.add_option("--dial-timeout", dial_timeout_s,
                 "Seconds to dial a registering plugin and get its options")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--call-timeout", call_timeout_s,
                 "Deadline in seconds of Allocate and GetPreferredAllocation calls to plugins")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pre-start-timeout", pre_start_timeout_s,
                 "Deadline in seconds of PreStartContainer calls")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--endpoint-grace-period", grace_period,
                 "How long a resource whose plugin disconnected (or that was read back from the "
                 "checkpoint) keeps its capacity, with allocatable 0, before it is removed")
      ->check(duration_check)
      ->capture_default_str();
  app.add_option("--compaction-delay", compaction_delay,
                 "Longest time between a change and its rewrite into kubelet_internal_checkpoint "
                 "and kdp/pods.json (every change is durable at once in kdp/journal)")
      ->check(duration_check)
      ->capture_default_str();
  app.add_flag("--strict-checkpoint", strict_checkpoint,
               "Refuse to start when the checkpoint or the pod store cannot be read, instead of "
               "keeping the file aside (<file>.corrupt-<time>) and starting without it as the "
               "kubelet does");
  app.add_option("--topology-manager-policy", topology_policy,
                 "The kubelet's topology manager policy: none, best-effort, restricted or "
                 "single-numa-node. Other than none, every admission merges the device plugins' "
                 "NUMA hints and places devices by the result; restricted and single-numa-node "
                 "reject pods that cannot be aligned (TopologyAffinityError)")
      ->check(CLI::IsMember({"none", "best-effort", "restricted", "single-numa-node"}))
      ->capture_default_str();
  app.add_option("--topology-manager-scope", topology_scope,
                 "container: align each container on its own; pod: align the whole pod's devices "
                 "together (ignored under policy none)")
      ->check(CLI::IsMember({"container", "pod"}))
      ->capture_default_str();
  app.add_option("--topology-manager-policy-options", topology_policy_options,
                 "The kubelet's policy options, key=value[,key=value]: "
                 "prefer-closest-numa-nodes=true, max-allowable-numa-nodes=N (default 8); "
                 "ignored under policy none");
  app.add_option(
      "--topology-xml", topology_xml,
      "Read the machine's NUMA nodes and distances from this hwloc XML file (lstopo --of "
      "xml), e.g. the fake topology the example plugins run on; default: this host");
  app.add_option("--node-name", node_name,
                 "The node this manager stands for: ResourceSlices' nodeName, the Node of the "
                 "local resource API; default: the host name");
  app.add_option("--node-labels", node_labels_text,
                 "Labels of the local resource API's Node, key=value[,key=value] (some drivers "
                 "read their hardware type from them); kubernetes.io/hostname, os and arch are "
                 "added as the kubelet adds them")
      ->check([](const std::string& text) -> std::string {
        absl::StatusOr<std::map<std::string, std::string>> labels =
            kdp::manager::resourceapi::ParseNodeLabels(text);
        return labels.ok() ? "" : std::string(labels.status().message());
      });
  app.add_option("--resource-api-port", resource_api_port,
                 "Loopback TCP port of the local Kubernetes API (HTTPS); 0: the previous run's "
                 "port when free (so running drivers keep working), else a free one (the "
                 "kubeconfig names it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--dra-call-timeout", dra_call_timeout_s,
                 "Deadline in seconds of NodePrepareResources and NodeUnprepareResources calls "
                 "(the kubelet's 45)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--dra-reconcile-period", dra_reconcile_period,
                 "How often terminating pods finish their deletion and claims of pods that are "
                 "gone are unprepared (the kubelet's 60s)")
      ->capture_default_str()
      ->check([](const std::string& text) -> std::string {
        absl::Duration d;
        if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
          return "must be a positive duration such as 30s or 1m";
        }
        return "";
      });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Prints the help or the error; any bad usage exits 2, as kdpctl and the examples do.
    return app.exit(error) == 0 ? 0 : 2;
  }
  if (kubelet_root[0] != '/') {
    // Absolute, as the kubelet requires its socket directory to be: plugins are handed absolute
    // socket paths (plugins_registry endpoints) and must find them whatever their working
    // directory.
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) {
      KDP_LOG_ERROR("--kubelet-root is relative and the working directory is unknown", "root",
                    kubelet_root);
      return 1;
    }
    kubelet_root = absl::StrCat(cwd, "/", kubelet_root);
  }
  if (node_name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) node_name = host;
    // Node names are DNS subdomains: lower case, as the kubelet's --hostname-override default.
    for (char& c : node_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  absl::Duration reconcile_period = absl::Seconds(60);
  (void)absl::ParseDuration(dra_reconcile_period, &reconcile_period);
  absl::Duration grace = absl::Minutes(5), compaction = absl::Seconds(1);
  (void)absl::ParseDuration(grace_period, &grace);
  (void)absl::ParseDuration(compaction_delay, &compaction);

  if (absl::Status applied = kdp::log::ApplyLogFlags(log_flags); !applied.ok()) {
    KDP_LOG_ERROR("Invalid logging flags", "err", applied.message());
    return 2;
  }

  // A client that closes its TLS connection while an answer is written makes SSL_write raise
  // SIGPIPE (OpenSSL writes with write(2), not send(MSG_NOSIGNAL)); the write's EPIPE is the
  // answer, as in any server, never the end of the manager.
  signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string plugins_dir = absl::StrCat(kubelet_root, "/device-plugins");
  const std::string podresources_dir = absl::StrCat(kubelet_root, "/pod-resources");
  const std::string admin_dir = absl::StrCat(kubelet_root, "/kdp");
  for (const std::string& dir : {plugins_dir, podresources_dir, admin_dir,
                                 absl::StrCat(kubelet_root, "/plugins_registry")}) {
    if (absl::Status made = kdp::MakeDirectories(dir, 0750); !made.ok()) {
      KDP_LOG_ERROR("Cannot create directory", "dir", dir, "err", made.message());
      return 1;
    }
  }

  // One manager per root: a second one would remove the first one's sockets and move its files.
  const std::string lock_path = absl::StrCat(admin_dir, "/manager.lock");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    if (lock_fd >= 0) {
      char buf[32] = {};
      ssize_t n = ::pread(lock_fd, buf, sizeof(buf) - 1, 0);
      if (n > 0) holder = std::string(buf, static_cast<size_t>(n));
    }
    KDP_LOG_ERROR("Another kdp-manager is running on this kubelet root", "root", kubelet_root,
                  "lock", lock_path, "pid", holder.empty() ? "unknown" : holder);
    return 1;
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd, 0) != 0 || ::pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
    KDP_LOG_WARNING("Cannot write our pid into the lock file", "lock", lock_path);
  }

  // Metrics first, so that a bad --metrics-address fails before any state is touched. The
  // server renders `registry`; the gauges read from the state are added once it exists.
  kdp::metrics::Registry registry;
  const kdp::manager::ManagerMetrics manager_metrics(&registry);
  absl::StatusOr<std::unique_ptr<kdp::metrics::MetricsServer>> metrics_server =
      kdp::metrics::StartMetricsServer({.address = metrics_address, .registry = &registry},
                                       /*required=*/metrics_address_flag->count() > 0,
                                       "kdp-manager");
  if (!metrics_server.ok()) {
    KDP_LOG_ERROR("Cannot serve metrics", "address", metrics_address, "err",
                  metrics_server.status().message());
    return 1;
  }

  // Before the state is opened: a bad configuration leaves the journal and checkpoint untouched.
  std::map<int, std::vector<int>> numa_cpus;  // NUMA node → its CPUs, for GetTopology
  absl::StatusOr<kdp::manager::TopologyManagerConfig> topology_config = TopologyConfig(
      topology_policy, topology_scope, topology_policy_options, topology_xml, &numa_cpus);
  if (!topology_config.ok()) {
    KDP_LOG_ERROR("Invalid topology manager configuration", "err",
                  topology_config.status().message());
    return 1;
  }
  kdp::manager::RestoredState restored;
  absl::StatusOr<std::unique_ptr<kdp::manager::StateStore>> store = kdp::manager::StateStore::Open(
      {.checkpoint_path = absl::StrCat(plugins_dir, "/kubelet_internal_checkpoint"),
       .pods_path = absl::StrCat(admin_dir, "/pods.json"),
       .journal_path = absl::StrCat(admin_dir, "/journal"),
       .compaction_delay = compaction,
       .strict = strict_checkpoint},
      &restored);
  if (!store.ok()) {
    KDP_LOG_ERROR("Cannot restore state", "err", store.status().ToString());
    return 1;
  }
  kdp::manager::DeviceManager devices({
      .plugins_dir = plugins_dir,
      .endpoint = {.dial_timeout = absl::Seconds(dial_timeout_s),
                   .call_timeout = absl::Seconds(call_timeout_s),
                   .pre_start_timeout = absl::Seconds(pre_start_timeout_s)},
      .endpoint_grace_period = grace,
      .housekeeping_interval = absl::Seconds(1),
      .now = {},
      .store = store->get(),
      .numa_nodes = topology_config->numa.nodes,
      .metrics = &manager_metrics,
  });
  absl::StatusOr<kdp::manager::TopologyManager> topology =
      kdp::manager::TopologyManager::Create(*topology_config, {&devices});
  if (!topology.ok()) {
    KDP_LOG_ERROR("Topology manager cannot start", "err", topology.status().message());
    return 1;
  }
  KDP_LOG_INFO("Topology manager", "policy",
               kdp::manager::TopologyPolicyName(topology_config->policy), "scope",
               kdp::manager::TopologyScopeName(topology_config->scope), "numaNodes",
               absl::StrJoin(topology_config->numa.nodes, ","));
  // The local resource API: the stand-in for the API server that DRA drivers and kdpctl use.
  kdp::manager::resourceapi::ObjectStore resources(
      {.node_name = node_name,
       .node_labels = *kdp::manager::resourceapi::ParseNodeLabels(node_labels_text)});
  const std::string resources_path = absl::StrCat(admin_dir, "/resources.json");
  if (absl::Status loaded =
          kdp::manager::resourceapi::StorePersister::Load(resources_path, &resources);
      !loaded.ok()) {
    KDP_LOG_ERROR("Cannot restore the resource API's objects", "err", loaded.ToString());
    return 1;
  }
  // As a starting kubelet: the node's ResourceSlices go; running drivers publish them again when
  // they are registered anew.
  if (int wiped = resources.DeleteSlices(node_name); wiped > 0) {
    KDP_LOG_INFO("Deleted the node's ResourceSlices at start", "node", node_name, "slices", wiped);
  }
  kdp::manager::resourceapi::StorePersister persister(resources_path, &resources);
  kdp::manager::dra::DraPluginManager dra_plugins({
      .call_timeout = absl::Seconds(dra_call_timeout_s),
      .wiping_delay = absl::Seconds(30),
      .wipe_resource_slices =
          [&resources, node_name](const std::string& driver) {
            int wiped = resources.DeleteSlices(node_name, driver);
            KDP_LOG_INFO(
                "Deleted the ResourceSlices of a DRA driver with no connected instance for 30s",
                "driver", driver, "slices", wiped);
          },
      .grpc_durations = manager_metrics.dra_grpc_operations_duration,
  });
  kdp::manager::resourceclaim::StoreClaimGetter claim_getter(&resources);
  absl::StatusOr<std::unique_ptr<kdp::manager::dra::DraManager>> dra =
      kdp::manager::dra::DraManager::Create({.state_dir = kubelet_root,
                                             .claims = &claim_getter,
                                             .plugins = &dra_plugins,
                                             .on_pod_health_changed =
                                                 [](std::vector<std::string> pod_uids) {
                                                   // The kubelet's pod status sync: kdpctl reads
                                                   // the status when asked, so telling is all there
                                                   // is to do.
                                                   KDP_LOG_INFO(
                                                       "Health of allocated DRA devices changed",
                                                       "pods", absl::StrJoin(pod_uids, ","));
                                                 },
                                             .metrics = &manager_metrics});
  if (!dra.ok()) {
    KDP_LOG_ERROR("DRA manager cannot start", "err", dra.status().ToString());
    return 1;
  }
  // The drivers' health streams feed the DRA manager; they stop before it goes, whichever way
  // main returns.
  dra_plugins.SetHealthStreamHandler((*dra)->health_stream_handler());
  absl::Cleanup stop_health_streams = [&dra_plugins] { dra_plugins.Stop(); };
  kdp::manager::resourceclaim::PodClaimController claim_controller(&resources, dra->get());
  kdp::manager::PodManager pods(&devices, store->get(), &*topology, &claim_controller);
  devices.SetActivePodsSource(&pods);
  // Allocations first, then the pods that hold them; then garbage collection may run.
  devices.Restore(restored.devices);
  if (restored.foreign_checkpoint) {
    // A checkpoint from elsewhere (a kubelet's, copied in): its pods are adopted, recorded like
    // admissions, so that their allocations stay rather than being collected as garbage.
    std::set<std::string> known;
    for (const kdp::manager::Pod& pod : restored.pods) known.insert(pod.uid);
    for (kdp::manager::Pod& pod : kdp::manager::PodsForCheckpointEntries(restored.devices, known)) {
      if (absl::Status recorded = (*store)->RecordPodAdmitted(pod, {}); !recorded.ok()) {
        KDP_LOG_ERROR("Cannot record an adopted pod", "err", recorded.ToString());
        return 1;
      }
      KDP_LOG_INFO("Adopted a pod found only in the checkpoint", "pod",
                   absl::StrCat(pod.namespace_, "/", pod.name), "podUID", pod.uid);
      restored.pods.push_back(std::move(pod));
    }
  }
  pods.Restore(std::move(restored.pods));
  (*store)->StartCompaction([&devices, &pods] {
    return kdp::manager::StateSnapshot{.devices = devices.CheckpointData(), .pods = pods.Pods()};
  });
  // The compaction thread reads `devices` and `pods`: it ends before they are destroyed.
  absl::Cleanup close_store = [&store] { (*store)->Close(); };
  // Claims of pods that went while the manager was down are unprepared now and then every
  // period (the kubelet's reconcile loop), once the pod source is ready (above).
  DraReconciler reconciler(dra->get(), &pods, reconcile_period);

  // The pods the manager runs, as Pods in the local API (the kubelet's status manager), with the
  // events the scheduler and the kubelet post about them.
  kdp::manager::EventRecorder events(&resources);
  kdp::manager::StatusManager pod_status(
      &resources, &events,
      {.node_name = node_name,
       .pods = [&pods] { return pods.List(); },
       .health = [&devices](const std::string& resource, const std::string& id) -> std::string {
         for (const auto& entry : devices.SharedResources()) {
           if (entry->name != resource) continue;
           auto device = entry->devices.find(id);
           if (device == entry->devices.end()) return "Unknown";
           return device->second.healthy ? "Healthy" : "Unhealthy";
         }
         return "Unknown";
       },
       .refused_pods_path = absl::StrCat(admin_dir, "/refused-pods.json")});
  if (absl::Status loaded = pod_status.LoadRefused(); !loaded.ok()) {
    KDP_LOG_ERROR("Cannot read the refused pods", "err", loaded.ToString());
    return 1;
  }
  // Pods created and deleted through the local API take kdpctl's path: one admission.
  kdp::manager::PodAdmission admission(
      &pods,
      {.node_name = node_name, .status = &pod_status, .events = &events, .persister = &persister});
  absl::StatusOr<std::unique_ptr<kdp::manager::resourceapi::LocalApi>> local_api =
      kdp::manager::resourceapi::LocalApi::Start(&resources, [&] {
        kdp::manager::resourceapi::LocalApiOptions options;
        options.kubelet_root = kubelet_root;
        options.port = resource_api_port;
        options.server.pods = &admission;
        return options;
      }());
  if (!local_api.ok()) {
    KDP_LOG_ERROR("Local resource API failed to start", "err", local_api.status().ToString());
    return 1;
  }
  const std::string kubeconfig = (*local_api)->kubeconfig_path();
  // The Node's status as the kubelet reports it: machine resources (the CPUs of the topology the
  // manager uses, fake or live) and every device-plugin resource's capacity and allocatable.
  kdp::manager::MachineResources machine = kdp::manager::ReadMachineResources(kubelet_root);
  int64_t topology_cpus = 0;
  for (const auto& [node, cpus] : numa_cpus) topology_cpus += static_cast<int64_t>(cpus.size());
  if (topology_cpus > 0) machine.cpus = topology_cpus;
  kdp::manager::NodeStatusUpdater node_status(
      &resources, {.node_name = node_name,
                   .machine = machine,
                   .info = kdp::manager::ReadNodeSystemInfo(
                       kdp::manager::resourceapi::ResourceApiServerOptions().kubernetes_version,
                       absl::StrCat("kdp://", KDP_VERSION)),
                   .device_capacity = [&devices] { return devices.GetCapacity(); }});
  persister.Start();

  kdp::manager::pluginmanager::PluginManager plugin_manager(
      {.dir = absl::StrCat(kubelet_root, "/plugins_registry"),
       .timeouts = {},
       .initial_backoff = absl::Milliseconds(500),
       .max_backoff = absl::Minutes(2) + absl::Seconds(2)});
  kdp::manager::DevicePluginWatcherHandler device_plugin_handler(
      &devices, [&devices](const std::string& resource, const std::string& socket) {
        devices.DeregisterPlugin(resource, socket);
      });
  plugin_manager.AddHandler(kdp::manager::pluginmanager::kDevicePlugin, &device_plugin_handler);
  plugin_manager.AddHandler(kdp::manager::pluginmanager::kDRAPlugin, &dra_plugins);

  kdp::manager::PodResourcesServer podresources(
      &pods, &devices,
      [&claim_controller](const kdp::manager::Pod& pod) { return claim_controller.Describe(pod); });
  kdp::manager::AdminServer admin(&pods, &devices,
                                  {.resources = &resources,
                                   .claims = &claim_controller,
                                   .dra = dra->get(),
                                   .dra_plugins = &dra_plugins,
                                   .plugins = &plugin_manager,
                                   .persister = &persister,
                                   .resource_api_url = (*local_api)->url(),
                                   .kubeconfig = kubeconfig,
                                   .numa_cpus = std::move(numa_cpus),
                                   .admission = &admission});

  if (absl::Status started = devices.Start(); !started.ok()) {
    KDP_LOG_ERROR("Device manager failed to start", "err", started.ToString());
    return 1;
  }
  if (absl::Status started = plugin_manager.Start(); !started.ok()) {
    KDP_LOG_ERROR("Plugin watcher failed to start", "err", started.ToString());
    devices.Stop();
    return 1;
  }
  reconciler.Start();
  node_status.Start();
  pod_status.Start();
  const std::string podresources_socket = absl::StrCat(podresources_dir, "/kubelet.sock");
  const std::string admin_socket = absl::StrCat(admin_dir, "/manager.sock");
  auto podresources_server = Serve(podresources_socket, &podresources);
  auto admin_server = Serve(admin_socket, &admin);
  if (podresources_server == nullptr || admin_server == nullptr) {
    devices.Stop();
    return 1;
  }
  // Scrapes read the state through these callbacks: the server stops before any of it goes.
  kdp::manager::AddStateMetrics(&registry, metrics_server->get(), &devices, &pods, dra->get(),
                                store->get());
  absl::Cleanup stop_metrics = [&metrics_server] {
    if (*metrics_server != nullptr) (*metrics_server)->Stop();
  };
  KDP_LOG_INFO("kdp-manager ready", "kubeletRoot", kubelet_root, "node", node_name, "admin",
               admin_socket, "podResources", podresources_socket, "resourceApi",
               (*local_api)->url(), "kubeconfig", kubeconfig);

  int received = 0;
  sigwait(&signals, &received);
  KDP_LOG_INFO("Signal received; shutting down", "signal", strsignal(received));
  // Plugins first: stopping the endpoints cancels their calls in flight, so an admission waiting
  // on a hung plugin ends now instead of holding the admin server's shutdown for its deadline.
  plugin_manager.Stop();
  reconciler.Stop();
  node_status.Stop();
  pod_status.Stop();
  devices.Stop();
  auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(2);
  admin_server->Shutdown(deadline);
  podresources_server->Shutdown(deadline);
  (void)kdp::RemoveSocketIfPresent(admin_socket);
  (void)kdp::RemoveSocketIfPresent(podresources_socket);
  dra_plugins.Stop();
  (*local_api)->Stop();
  persister.Stop();
  // Always on a clean shutdown: the checkpoint and the pod store hold the whole state.
  (*store)->Close();
  KDP_LOG_INFO("kdp-manager stopped");
  return 0;
}
