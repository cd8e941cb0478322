// TopologyManager is kdp-manager's stand-in for the kubelet's topology manager admit handler
// (pkg/kubelet/cm/topologymanager: scope_container.go, scope_pod.go, scope_none.go): for each pod
// it asks every hint provider for NUMA hints, merges them under the configured policy, rejects the
// pod with TopologyAffinityError when the policy says so, and otherwise has each provider allocate
// the pod's containers (init containers first) with the merged affinity.
//   - policy "none": no hints; containers are allocated without affinity (the none scope).
//   - scope "container": one merge per container, in admission order, each just before that
//     container's allocation (so it sees the devices earlier containers took).
//   - scope "pod": one merge for the whole pod (GetPodTopologyHints), the same affinity for every
//     container.
//
// Thread-safety: Admit() keeps no state of its own, so admissions of pods that share no resource
// run it concurrently (PodManager serialises those that share one: their hints come from the same
// free devices); providers must be safe to call from any admitting thread.
#ifndef KDP_MANAGER_SRC_TOPOLOGYMANAGER_TOPOLOGY_MANAGER_H_
#define KDP_MANAGER_SRC_TOPOLOGYMANAGER_TOPOLOGY_MANAGER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/pod/pod.h"
#include "manager/src/topologymanager/policy.h"

namespace kdp::manager {

// Which unit the topology manager aligns (--topology-manager-scope).
enum class TopologyScope { kContainer, kPod };

// "container" or "pod".
const char* TopologyScopeName(TopologyScope scope);
// Parses "container" or "pod"; INVALID_ARGUMENT naming `text` and the valid values otherwise.
absl::StatusOr<TopologyScope> ParseTopologyScope(std::string_view text);

// A source of NUMA hints that also allocates (the kubelet's HintProvider: the device manager
// here; the CPU and memory managers are not emulated).
class HintProvider {
 public:
  virtual ~HintProvider() = default;
  virtual ProviderHints GetTopologyHints(const Pod& pod, const Container& container) = 0;
  virtual ProviderHints GetPodTopologyHints(const Pod& pod) = 0;
  // Allocates for the container with the merged affinity (nullopt: none).
  virtual absl::Status Allocate(const Pod& pod, const Container& container,
                                const std::optional<NumaMask>& affinity) = 0;
};

struct TopologyManagerConfig {
  TopologyPolicy policy = TopologyPolicy::kNone;
  TopologyScope scope = TopologyScope::kContainer;
  TopologyPolicyOptions options = {};
  // The machine's NUMA nodes and distances (the kubelet's cadvisor view).
  NumaInfo numa = {};
};

struct TopologyAdmission {
  bool admitted = false;
  // When rejected: the kubelet's reason ("TopologyAffinityError", "UnexpectedAdmissionError")
  // and message.
  std::string reason;
  std::string message;
  // Container name → the merged hint it was allocated with (absent under policy "none").
  std::map<std::string, TopologyHint> hints;
};

class TopologyManager {
 public:
  // Validates the configuration as the kubelet does at start: a policy other than "none" on a
  // machine with more NUMA nodes than max-allowable-numa-nodes is refused (the error names both).
  // `providers` are borrowed and must outlive the manager.
  static absl::StatusOr<TopologyManager> Create(TopologyManagerConfig config,
                                                std::vector<HintProvider*> providers);

  const TopologyManagerConfig& config() const { return config_; }

  // Admits `pod`: hints, merge, and every container's allocation, as described above. A provider's
  // allocation error rejects the pod with UnexpectedAdmissionError ("Allocate failed due to <err>,
  // which is unexpected"); containers allocated before it keep their devices (the caller releases
  // them, as the kubelet's garbage collection would).
  TopologyAdmission Admit(const Pod& pod);

 private:
  TopologyManager(TopologyManagerConfig config, std::vector<HintProvider*> providers)
      : config_(std::move(config)), providers_(std::move(providers)) {}

  TopologyManagerConfig config_;
  std::vector<HintProvider*> providers_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_TOPOLOGYMANAGER_TOPOLOGY_MANAGER_H_
