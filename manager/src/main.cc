// kdp-manager: a stand-in for the kubelet's device manager on one node. See docs/manager.md.
//
// main parses the flags into ManagerOptions, blocks the signals it waits for, and runs a Node
// (manager/src/node/node.h), which wires and orders everything else.
#include <malloc.h>
#include <signal.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cli_flags.h"
#include "common/log_flags.h"
#include "common/logging.h"
#include "kdp/topology.h"
#include "manager/src/controlplane/resourceapi/validation.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/node/manager_options.h"
#include "manager/src/node/node.h"

namespace {

// The machine as hwloc sees it (the live host, or an hwloc XML file such as the fake topologies
// the example plugins run on): its NUMA nodes, their SLIT distances (0 where unknown) and CPUs.
absl::StatusOr<kdp::manager::MachineNuma> ReadMachine(const std::string& topology_xml) {
  absl::StatusOr<std::unique_ptr<kdp::Topology>> machine =
      topology_xml.empty() ? kdp::Topology::FromHost() : kdp::Topology::FromXmlFile(topology_xml);
  if (!machine.ok()) return machine.status();
  const kdp::Topology& topology = **machine;
  kdp::manager::MachineNuma result;
  std::vector<int> nodes;
  for (const kdp::NumaNode& node : topology.numa_nodes()) {
    nodes.push_back(node.os_index);
    result.cpus[node.os_index] = node.cpus;
  }
  result.numa = kdp::manager::NumaInfo::FromDistances(
      std::move(nodes), [&topology](int from, int to) { return topology.NumaDistance(from, to); });
  return result;
}

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
      "kdpctl; PodResources v1 is served on <kubelet-root>/pod-resources/kubelet.sock.\n"
      "Durations are written as the kubelet's flags take them (30s, 500ms, 5m, 1h30m); a bare\n"
      "number is seconds."};
  kdp::cli::AddVersionFlag(app, "kdp-manager");
  kdp::manager::ManagerOptions options{.read_machine = ReadMachine};
  kdp::log::LogFlags log_flags;
  std::string node_labels_text;
  app.add_option("--kubelet-root", options.kubelet_root,
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
             "--metrics-address", options.metrics_address,
             "host:port ([::1]:port for IPv6) serving Prometheus /metrics (kubelet metric "
             "names: kubelet_device_plugin_*, dra_*; plus kdp_manager_*), /healthz and /readyz "
             "(fail while kubelet.sock is not served or the last state write failed) and "
             "/livez; "
             "port 0 picks a free port (logged as \"serving metrics\"); \"\" disables. "
             "When the default's port is taken the manager runs without metrics; an "
             "address given explicitly must be bindable")
          ->capture_default_str();
  using kdp::cli::AddDurationOption;
  using kdp::cli::DurationRule;
  AddDurationOption(app, "--dial-timeout", &options.dial_timeout,
                    "How long dialing a registering plugin and getting its options may take");
  AddDurationOption(app, "--call-timeout", &options.call_timeout,
                    "Deadline of Allocate and GetPreferredAllocation calls to plugins");
  AddDurationOption(app, "--pre-start-timeout", &options.pre_start_timeout,
                    "Deadline of PreStartContainer calls");
  AddDurationOption(app, "--endpoint-grace-period", &options.endpoint_grace_period,
                    "How long a resource whose plugin disconnected (or that was read back from "
                    "the checkpoint) keeps its capacity, with allocatable 0, before it is removed",
                    DurationRule::kNonNegative);
  AddDurationOption(app, "--compaction-delay", &options.compaction_delay,
                    "Longest time between a change and its rewrite into "
                    "kubelet_internal_checkpoint and kdp/pods.json (every change is durable at "
                    "once in kdp/journal)",
                    DurationRule::kNonNegative);
  app.add_flag("--strict-checkpoint", options.strict_checkpoint,
               "Refuse to start when the checkpoint or the pod store cannot be read, instead of "
               "keeping the file aside (<file>.corrupt-<time>) and starting without it as the "
               "kubelet does");
  app.add_option("--topology-manager-policy", options.topology_policy,
                 "The kubelet's topology manager policy: none, best-effort, restricted or "
                 "single-numa-node. Other than none, every admission merges the device plugins' "
                 "NUMA hints and places devices by the result; restricted and single-numa-node "
                 "reject pods that cannot be aligned (TopologyAffinityError)")
      ->check(CLI::IsMember({"none", "best-effort", "restricted", "single-numa-node"}))
      ->capture_default_str();
  app.add_option("--topology-manager-scope", options.topology_scope,
                 "container: align each container on its own; pod: align the whole pod's devices "
                 "together (ignored under policy none)")
      ->check(CLI::IsMember({"container", "pod"}))
      ->capture_default_str();
  app.add_option("--topology-manager-policy-options", options.topology_policy_options,
                 "The kubelet's policy options, key=value[,key=value]: "
                 "prefer-closest-numa-nodes=true, max-allowable-numa-nodes=N (default 8); "
                 "ignored under policy none");
  app.add_option(
      "--topology-xml", options.topology_xml,
      "Read the machine's NUMA nodes and distances from this hwloc XML file (lstopo --of "
      "xml), e.g. the fake topology the example plugins run on; default: this host");
  app.add_option("--node-name", options.node_name,
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
  app.add_option("--resource-api-port", options.resource_api_port,
                 "Loopback TCP port of the local Kubernetes API (HTTPS); 0: the previous run's "
                 "port when free (so running drivers keep working), else a free one (the "
                 "kubeconfig names it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  AddDurationOption(app, "--dra-call-timeout", &options.dra_call_timeout,
                    "Deadline of NodePrepareResources and NodeUnprepareResources calls (the "
                    "kubelet's 45s)");
  AddDurationOption(app, "--dra-reconcile-period", &options.dra_reconcile_period,
                    "How often terminating pods finish their deletion and claims of pods that are "
                    "gone are unprepared (the kubelet's 60s)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Prints the help, the version or the error; any bad usage exits 2, as kdpctl and the
    // examples do.
    return app.exit(error) == 0 ? 0 : 2;
  }
  options.metrics_address_required = metrics_address_flag->count() > 0;
  // Checked while parsing (above).
  options.node_labels = *kdp::manager::resourceapi::ParseNodeLabels(node_labels_text);
  if (absl::Status applied = kdp::log::ApplyLogFlags(log_flags); !applied.ok()) {
    KDP_LOG_ERROR("Invalid logging flags", "err", applied.message());
    return 2;
  }

  // A client that closes its TLS connection while an answer is written makes SSL_write raise
  // SIGPIPE (OpenSSL writes with write(2), not send(MSG_NOSIGNAL)); the write's EPIPE is the
  // answer, as in any server, never the end of the manager.
  signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait() below; block them before any thread starts (Node::Create
  // starts the metrics server and the compaction thread), so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Create and Start log what failed, in the kubelet's words where it has them.
  absl::StatusOr<std::unique_ptr<kdp::manager::Node>> node =
      kdp::manager::Node::Create(std::move(options));
  if (!node.ok()) return 1;
  if (absl::Status started = (*node)->Start(); !started.ok()) return 1;

  int received = 0;
  sigwait(&signals, &received);
  KDP_LOG_INFO("Signal received; shutting down", "signal", strsignal(received));
  (*node)->Stop();
  KDP_LOG_INFO("kdp-manager stopped");
  return 0;
}
