// The topology manager's policies (the kubelet's pkg/kubelet/cm/topologymanager policy.go,
// policy_none.go, policy_best_effort.go, policy_restricted.go, policy_single_numa_node.go and
// policy_options.go): the hint types providers return, the --topology-manager-policy and
// --topology-manager-policy-options flags, the start-up check of the machine, and Merge, which
// turns every provider's hints into one best hint and the admit decision. The scopes
// (topology_manager.h) call Merge once per container or once per pod.
//
// Merge reproduces upstream's algorithm exactly (policy.go's filterProvidersHints and HintMerger;
// KEP-3545 for prefer-closest):
//   1. Flatten the providers: a provider with no hints at all gives one {nil, preferred}; per
//      resource, a nil list gives {nil, preferred} ("don't care"), an empty list gives
//      {nil, not preferred} ("cannot satisfy"), else its hints.
//   2. single-numa-node keeps only preferred hints that are nil or name exactly one node.
//   3. Every combination taking one hint per resource is merged: the AND of the non-nil masks and
//      the machine's default affinity (all nodes); preferred only when every hint is preferred
//      and every non-nil mask is the same mask. Empty results are discarded.
//   4. The best merged hint: preferred beats non-preferred; two preferred hints keep the narrower
//      mask (or, with prefer-closest-numa-nodes outside single-numa-node, the one with the
//      smaller average NUMA distance among masks of the same size); two non-preferred hints keep
//      the one whose size is closest to, and not above, the largest of the per-resource narrowest
//      hint sizes. Nothing left: {default affinity, not preferred}.
//   5. single-numa-node turns a best mask equal to the default affinity into nil.
//   6. none: {nil, not preferred}, admitted. best-effort: always admitted. restricted and
//      single-numa-node: admitted only when the best hint is preferred.
//
// Thread-safety: stateless functions and value types; safe to call concurrently.
#ifndef KDP_MANAGER_SRC_TOPOLOGYMANAGER_POLICY_H_
#define KDP_MANAGER_SRC_TOPOLOGYMANAGER_POLICY_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/src/topologymanager/numa_mask.h"

namespace kdp::manager {

// The rejection a restricted or single-numa-node policy gives (the kubelet's
// TopologyAffinityError: the pod status reason and the event message).
inline constexpr char kTopologyAffinityErrorReason[] = "TopologyAffinityError";
inline constexpr char kTopologyAffinityErrorMessage[] =
    "Resources cannot be allocated with Topology locality";

// The most NUMA nodes a machine may have under a policy other than none, unless the
// max-allowable-numa-nodes option raises it (it cannot lower it).
inline constexpr int kDefaultMaxAllowableNumaNodes = 8;

// One possible placement: the NUMA nodes an allocation would use, and whether that is as good as
// the resource allows (the narrowest possible). A nil affinity means "no NUMA preference".
struct TopologyHint {
  std::optional<NumaMask> numa_affinity = std::nullopt;
  bool preferred = false;

  // The kubelet's rendering of a hint, "{<mask> <preferred>}", the mask as
  // NumaMask::ToBitString(): "{01 true}", "{<nil> false}".
  std::string ToString() const;

  friend bool operator==(const TopologyHint& a, const TopologyHint& b) = default;
};

// One provider's answer: resource name → hints. nullopt for a resource: no NUMA preference; an
// empty list: no placement can satisfy it. A provider with nothing to say returns an empty map.
using ProviderHints = std::map<std::string, std::optional<std::vector<TopologyHint>>>;

// --topology-manager-policy.
enum class TopologyPolicy { kNone, kBestEffort, kRestricted, kSingleNumaNode };

// "none", "best-effort", "restricted" or "single-numa-node".
const char* TopologyPolicyName(TopologyPolicy policy);

// Parses a policy name (case-sensitive). INVALID_ARGUMENT otherwise, with the kubelet's text:
//   invalid configuration: topologyManagerPolicy (--topology-manager-policy) "<text>" must be one
//   of: ["none" "best-effort" "restricted" "single-numa-node"]
[[nodiscard]] absl::StatusOr<TopologyPolicy> ParseTopologyPolicy(std::string_view text);

// --topology-manager-policy-options (the kubelet's PolicyOptions).
struct TopologyPolicyOptions {
  // prefer-closest-numa-nodes: among preferred masks of the same size, pick the one with the
  // smallest average distance between its nodes instead of the lowest-numbered one. Ignored by
  // single-numa-node. Requires the machine's NUMA distances (ValidateNumaInfo).
  bool prefer_closest_numa_nodes = false;
  // max-allowable-numa-nodes: the most NUMA nodes allowed under a policy other than none; at
  // least kDefaultMaxAllowableNumaNodes.
  int max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes;

  friend bool operator==(const TopologyPolicyOptions& a, const TopologyPolicyOptions& b) = default;
};

// Parses the flag's "key=value,key=value" (the kubelet's map flag: pairs split at ',' and at the
// first '=', keys and values trimmed of spaces, empty pairs skipped, a later key overrides an
// earlier one) and then the options as TopologyPolicyOptionsFromMap does. "" gives the defaults.
// INVALID_ARGUMENT "malformed pair, expect string=string" for a pair without '=', else as below.
[[nodiscard]] absl::StatusOr<TopologyPolicyOptions> ParseTopologyPolicyOptions(
    std::string_view text);

// The kubelet's NewPolicyOptions over the configuration file's map. INVALID_ARGUMENT, in key
// order, with the kubelet's texts:
//   unknown Topology Manager Policy option: "<key>"
//   bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "<v>": invalid
//   syntax                      (Go's ParseBool: 1 t T TRUE true True 0 f F FALSE false False)
//   unable to convert policy option to integer "max-allowable-numa-nodes": strconv.Atoi: parsing
//   "<v>": invalid syntax       (or "value out of range" beyond 64 bits)
//   the minimum value of "max-allowable-numa-nodes" should not be less than 8
// A value above the int range is clamped to INT_MAX (Go's int is 64-bit; no machine tells them
// apart). A value above 8 is accepted with the kubelet's warning logged.
[[nodiscard]] absl::StatusOr<TopologyPolicyOptions> TopologyPolicyOptionsFromMap(
    const std::map<std::string, std::string>& options);

// The kubelet's start-up checks (topologymanager.NewManager) of `numa` under `policy`; OK for
// policy none whatever the rest (upstream skips them). Otherwise, in upstream's order:
//   INVALID_ARGUMENT when options.max_allowable_numa_nodes < 8 (text as above), or when
//     numa.nodes has a number outside 0..1023 or a duplicate (kdp's check);
//   FAILED_PRECONDITION "cannot discover NUMA topology: error getting NUMA distances: ..." when
//     prefer-closest-numa-nodes is set and a distance between two nodes is unknown (0 or
//     missing), as the kubelet fails when cadvisor has none;
//   FAILED_PRECONDITION "unsupported on machines with more than <max> NUMA Nodes".
[[nodiscard]] absl::Status ValidateNumaInfo(TopologyPolicy policy,
                                            const TopologyPolicyOptions& options,
                                            const NumaInfo& numa);

// The outcome of a merge: the hint the scope stores for the container(s) and hands to the
// providers' allocation, and whether the pod may be admitted.
struct PolicyDecision {
  TopologyHint best = {};
  bool admit = false;

  friend bool operator==(const PolicyDecision& a, const PolicyDecision& b) = default;
};

// Merges `providers` (one ProviderHints per hint provider, in any order: the result does not
// depend on it) under `policy` as described at the top of this file. `numa` is the machine as
// validated by ValidateNumaInfo (its nodes are the default affinity). Cost: the product of the
// hint-list lengths.
PolicyDecision Merge(TopologyPolicy policy, const TopologyPolicyOptions& options,
                     const NumaInfo& numa, const std::vector<ProviderHints>& providers);

// The steps of Merge, exposed for the tests that port upstream's unit tests one function at a
// time. Not for other callers.
namespace internal {

// Step 1 (filterProvidersHints): one hint list per resource, providers in order, resources in
// name order.
std::vector<std::vector<TopologyHint>> FilterProvidersHints(
    const std::vector<ProviderHints>& providers);
// Step 2 (filterSingleNumaHints).
std::vector<std::vector<TopologyHint>> FilterSingleNumaHints(
    const std::vector<std::vector<TopologyHint>>& hints);
// The largest, over the lists, of the size of the list's narrowest non-nil mask (0 if none).
int MaxOfMinAffinityCounts(const std::vector<std::vector<TopologyHint>>& hints);

// Steps 3-4 (HintMerger). `numa` is borrowed for the merger's lifetime.
class HintMerger {
 public:
  HintMerger(const NumaInfo& numa, std::vector<std::vector<TopologyHint>> hints,
             TopologyPolicy policy, const TopologyPolicyOptions& options);

  // Upstream's compare: returns `current` or `candidate`, whichever is better (`current` may be
  // null: no best yet). REQUIRES: candidate != nullptr and candidate->numa_affinity is set.
  const TopologyHint* Compare(const TopologyHint* current, const TopologyHint* candidate) const;
  // The best merged hint over every combination.
  TopologyHint Merge() const;

  int best_non_preferred_affinity_count() const { return best_non_preferred_affinity_count_; }
  void set_best_non_preferred_affinity_count(int count) {
    best_non_preferred_affinity_count_ = count;
  }

 private:
  const TopologyHint* CompareMasks(const TopologyHint* current,
                                   const TopologyHint* candidate) const;

  const NumaInfo& numa_;
  std::vector<std::vector<TopologyHint>> hints_;
  bool prefer_closest_;
  int best_non_preferred_affinity_count_;
};

}  // namespace internal
}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_TOPOLOGYMANAGER_POLICY_H_
