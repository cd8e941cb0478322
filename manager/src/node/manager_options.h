// ManagerOptions: everything kdp-manager's flags configure, as one value that main fills from the
// command line (manager/src/main.cc) and Node::Create validates. Tests build one with designated
// initialisers over a temporary kubelet root.
//
// A plain value type: copyable; not thread-safe to mutate while shared. `read_machine` is called
// once, from Node::Create.
#ifndef KDP_MANAGER_SRC_NODE_MANAGER_OPTIONS_H_
#define KDP_MANAGER_SRC_NODE_MANAGER_OPTIONS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "manager/src/devicemanager/plugin_observer.h"
#include "manager/src/dra/plugin/driver_observer.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/topologymanager/numa_mask.h"

namespace kdp::manager {

// The machine's NUMA nodes as the topology manager sees them, and each node's CPUs (kdpctl
// topology, the Node's cpu capacity).
struct MachineNuma {
  NumaInfo numa;
  std::map<int, std::vector<int>> cpus;
};

// Reads the machine: the live host when `topology_xml` is "", else that hwloc XML file. main's
// reader is kdp::Topology (hwloc, the SDK's); the manager's library does not link hwloc.
using MachineReader = std::function<absl::StatusOr<MachineNuma>(const std::string& topology_xml)>;

struct ManagerOptions {
  // --kubelet-root: device-plugins/, pod-resources/, plugins_registry/ and kdp/ (admin socket,
  // lock, pod store, journal) live under it. A relative path is made absolute by Node::Create
  // (plugins are handed absolute socket paths). Never empty.
  std::string kubelet_root = "/var/lib/kubelet";

  // --metrics-address: host:port of /metrics, /healthz, /readyz and /livez; port 0 picks a free
  // port; "" disables.
  std::string metrics_address = kDefaultMetricsAddress;
  // True when the address was given explicitly: then it must be bindable (Create fails), where
  // the default's port being taken only costs the metrics (a warning).
  bool metrics_address_required = false;

  // --dial-timeout: dialing a registering plugin and getting its options.
  absl::Duration dial_timeout = absl::Seconds(10);
  // --call-timeout: deadline of Allocate and GetPreferredAllocation.
  absl::Duration call_timeout = absl::Seconds(30);
  // --pre-start-timeout: deadline of PreStartContainer.
  absl::Duration pre_start_timeout = absl::Seconds(30);
  // --endpoint-grace-period: how long a disconnected resource keeps its capacity (allocatable 0);
  // zero removes it at once.
  absl::Duration endpoint_grace_period = absl::Minutes(5);
  // --compaction-delay: longest time between a change and its rewrite into the checkpoint and
  // kdp/pods.json (the journal has it at once); zero compacts after every change.
  absl::Duration compaction_delay = absl::Seconds(1);
  // --strict-checkpoint: refuse to start (DATA_LOSS) when the checkpoint or the pod store cannot
  // be read, instead of keeping the file aside and starting without it.
  bool strict_checkpoint = false;

  // --topology-manager-policy, --topology-manager-scope, --topology-manager-policy-options, in
  // the kubelet's spelling ("none", "container", "key=value,...").
  std::string topology_policy = "none";
  std::string topology_scope = "container";
  std::string topology_policy_options;
  // --topology-xml: the machine's NUMA nodes from this hwloc XML file; "" reads this host.
  std::string topology_xml;
  // Reads the machine (with `topology_xml`). Unset, or failing: no NUMA nodes known, which only
  // policy none accepts (a warning), as the kubelet's NewManager never looks under policy none.
  MachineReader read_machine;

  // --node-name: the node this manager stands for; "" is the host name in lower case.
  std::string node_name;
  // --node-labels, parsed: labels of the local resource API's Node (the kubelet's well-known
  // labels are added to them).
  std::map<std::string, std::string> node_labels;
  // --resource-api-port: loopback TCP port of the local Kubernetes API; 0 reuses the previous
  // run's port when free, else any free one.
  int resource_api_port = 0;

  // --dra-call-timeout: deadline of NodePrepareResources and NodeUnprepareResources.
  absl::Duration dra_call_timeout = absl::Seconds(45);
  // --dra-reconcile-period: how often terminating pods finish and orphaned claims are unprepared.
  absl::Duration dra_reconcile_period = absl::Seconds(60);

  // Not a flag: told of every exchange with a device plugin (kdp-conformance embeds a Node with
  // one). nullptr: nobody. Borrowed; must outlive the Node.
  DevicePluginObserver* device_plugin_observer = nullptr;
  // Not a flag: told of every exchange with a DRA driver (registrations, prepare and unprepare
  // calls, health messages). nullptr: nobody. Borrowed; must outlive the Node.
  dra::DraDriverObserver* dra_driver_observer = nullptr;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_NODE_MANAGER_OPTIONS_H_
