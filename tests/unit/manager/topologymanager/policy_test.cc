// Ports of the kubelet's topology-manager policy tests (pkg/kubelet/cm/topologymanager:
// policy_test.go, policy_best_effort_test.go, policy_restricted_test.go,
// policy_single_numa_node_test.go, policy_none_test.go, policy_options_test.go and the NewManager
// cases of topology_manager_test.go), case by case with upstream's names, plus kdp's cases for
// NUMA node numbers beyond 63.
#include "manager/src/topologymanager/policy.h"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;
using Hints = std::vector<TopologyHint>;

TopologyHint H(std::initializer_list<int> nodes, bool preferred) {
  return TopologyHint{.numa_affinity = NumaMask::Of(nodes), .preferred = preferred};
}
TopologyHint Nil(bool preferred) {
  return TopologyHint{.numa_affinity = std::nullopt, .preferred = preferred};
}
TopologyHint All(const NumaInfo& numa, bool preferred) {
  return TopologyHint{.numa_affinity = numa.DefaultAffinity(), .preferred = preferred};
}

struct MergeCase {
  std::string name;
  std::vector<ProviderHints> providers;
  TopologyHint expected;
};

NumaInfo TwoNodes() { return NumaInfo{.nodes = {0, 1}, .distances = {{10, 11}, {11, 10}}}; }

NumaInfo FourNodes() {
  return NumaInfo{
      .nodes = {0, 1, 2, 3},
      .distances = {{10, 11, 12, 12}, {11, 10, 12, 12}, {12, 12, 10, 11}, {12, 12, 11, 10}}};
}

NumaInfo EightNodes() {
  return NumaInfo{.nodes = {0, 1, 2, 3, 4, 5, 6, 7},
                  .distances = {{10, 11, 12, 12, 30, 30, 30, 30},
                                {11, 10, 12, 12, 30, 30, 30, 30},
                                {12, 12, 10, 11, 30, 30, 30, 30},
                                {12, 12, 11, 10, 30, 30, 30, 30},
                                {30, 30, 30, 30, 10, 11, 12, 12},
                                {30, 30, 30, 30, 11, 10, 12, 12},
                                {30, 30, 30, 30, 12, 12, 10, 11},
                                {30, 30, 30, 30, 12, 12, 13, 10}}};
}

// policy_test.go commonPolicyMergeTestCases.
std::vector<MergeCase> CommonCases() {
  return {
      {"Two providers, 1 hint each, same mask, both preferred 1/2",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({0}, true)}}}},
       H({0}, true)},
      {"Two providers, 1 hint each, same mask, both preferred 2/2",
       {{{"resource1", Hints{H({1}, true)}}}, {{"resource2", Hints{H({1}, true)}}}},
       H({1}, true)},
      {"Two providers, 1 no hints, 1 single hint preferred 1/2",
       {{}, {{"resource", Hints{H({0}, true)}}}},
       H({0}, true)},
      {"Two providers, 1 no hints, 1 single hint preferred 2/2",
       {{}, {{"resource", Hints{H({1}, true)}}}},
       H({1}, true)},
      {"Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
       {{{"resource1", Hints{H({0}, true), H({1}, true)}}}, {{"resource2", Hints{H({0}, true)}}}},
       H({0}, true)},
      {"Two providers, 1 with 2 hints, 1 with single hint matching 2/2",
       {{{"resource1", Hints{H({0}, true), H({1}, true)}}}, {{"resource2", Hints{H({1}, true)}}}},
       H({1}, true)},
      {"Two providers, both with 2 hints, matching narrower preferred hint from both",
       {{{"resource1", Hints{H({0}, true), H({1}, true)}}},
        {{"resource2", Hints{H({0}, true), H({0, 1}, false)}}}},
       H({0}, true)},
      {"Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
       {{{"resource1", Hints{H({1}, true), H({0, 1}, false)}}},
        {{"resource2", Hints{H({0}, true), H({1}, true), H({0, 1}, false)}}}},
       H({1}, true)},
      {"Multiple resources, same provider",
       {{{"resource1", Hints{H({1}, true), H({0, 1}, false)}},
         {"resource2", Hints{H({0}, true), H({1}, true), H({0, 1}, false)}}}},
       H({1}, true)},
  };
}

// policy_test.go (*bestEffortPolicy).mergeTestCases, also run for restricted.
std::vector<MergeCase> BestEffortCases(const NumaInfo& numa) {
  const ProviderHints best_non_preferred_first = {
      {"resource1", Hints{H({0, 1, 2, 3}, false), H({0, 1}, false)}}};
  return {
      {"Two providers, 2 hints each, same mask (some with different bits), same preferred",
       {{{"resource1", Hints{H({0, 1}, true), H({0, 2}, true)}}},
        {{"resource2", Hints{H({0, 1}, true), H({0, 2}, true)}}}},
       H({0, 1}, true)},
      {"TopologyHint not set", {}, All(numa, true)},
      {"HintProvider returns empty non-nil map[string][]TopologyHint", {{}}, All(numa, true)},
      {"HintProvider returns -nil map[string][]TopologyHint from provider",
       {{{"resource", std::nullopt}}},
       All(numa, true)},
      {"HintProvider returns empty non-nil map[string][]TopologyHint from provider",
       {{{"resource", Hints{}}}},
       All(numa, false)},
      {"Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
       {{{"resource", Hints{Nil(true)}}}},
       All(numa, true)},
      {"Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
       {{{"resource", Hints{Nil(false)}}}},
       All(numa, false)},
      {"Two providers, 1 hint each, no common mask",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({1}, true)}}}},
       All(numa, false)},
      {"Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({0}, false)}}}},
       H({0}, false)},
      {"Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
       {{{"resource1", Hints{H({1}, true)}}}, {{"resource2", Hints{H({1}, false)}}}},
       H({1}, false)},
      {"Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({0, 1}, true)}}}},
       H({0}, false)},
      {"Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
       {{{"resource1", Hints{H({0}, true), H({1}, true)}}},
        {{"resource2", Hints{H({0, 1}, false)}}}},
       H({0}, false)},
      {"Two providers, 1 hint each, 1 wider mask, both preferred 2/2",
       {{{"resource1", Hints{H({1}, true)}}}, {{"resource2", Hints{H({0, 1}, true)}}}},
       H({1}, false)},
      {"bestNonPreferredAffinityCount (1)",
       {best_non_preferred_first, {{"resource2", Hints{H({0, 1}, false)}}}},
       H({0, 1}, false)},
      {"bestNonPreferredAffinityCount (2)",
       {best_non_preferred_first, {{"resource2", Hints{H({0, 3}, false)}}}},
       H({0, 3}, false)},
      {"bestNonPreferredAffinityCount (3)",
       {best_non_preferred_first, {{"resource2", Hints{H({1, 2}, false)}}}},
       H({1, 2}, false)},
      {"bestNonPreferredAffinityCount (4)",
       {best_non_preferred_first, {{"resource2", Hints{H({2, 3}, false)}}}},
       H({2, 3}, false)},
  };
}

const ProviderHints kFiveSecond = {{"resource2", Hints{H({1, 2}, false), H({2, 3}, false)}}};
const ProviderHints kSixSecond = {{"resource2", Hints{H({1, 2, 3}, false), H({1, 2}, false),
                                                      H({1, 3}, false), H({2, 3}, false)}}};
const ProviderHints kFiveSixFirst = {
    {"resource1", Hints{H({0, 1, 2, 3}, false), H({0, 1}, false)}}};

// policy_test.go (*bestEffortPolicy).mergeTestCasesNoPolicies.
std::vector<MergeCase> NoPolicyOptionCases() {
  return {
      {"bestNonPreferredAffinityCount (5)", {kFiveSixFirst, kFiveSecond}, H({1, 2}, false)},
      {"bestNonPreferredAffinityCount (6)", {kFiveSixFirst, kSixSecond}, H({1, 2}, false)},
  };
}

// policy_test.go (*bestEffortPolicy).mergeTestCasesClosestNUMA (eight nodes).
std::vector<MergeCase> ClosestNumaCases() {
  return {
      {"Two providers, 2 hints each, same mask (some with different bits), same preferred",
       {{{"resource1", Hints{H({0, 4}, true), H({0, 2}, true)}}},
        {{"resource2", Hints{H({0, 4}, true), H({0, 2}, true)}}}},
       H({0, 2}, true)},
      {"Two providers, 2 hints each, different mask",
       {{{"resource1", Hints{H({4}, true), H({0, 2}, true)}}},
        {{"resource2", Hints{H({4}, true), H({0, 2}, true)}}}},
       H({4}, true)},
      {"bestNonPreferredAffinityCount (5)", {kFiveSixFirst, kFiveSecond}, H({2, 3}, false)},
      {"bestNonPreferredAffinityCount (6)", {kFiveSixFirst, kSixSecond}, H({2, 3}, false)},
  };
}

// policy_single_numa_node_test.go (*singleNumaNodePolicy).mergeTestCases.
std::vector<MergeCase> SingleNumaNodeCases() {
  return {
      {"TopologyHint not set", {}, Nil(true)},
      {"HintProvider returns empty non-nil map[string][]TopologyHint", {{}}, Nil(true)},
      {"HintProvider returns -nil map[string][]TopologyHint from provider",
       {{{"resource", std::nullopt}}},
       Nil(true)},
      {"HintProvider returns empty non-nil map[string][]TopologyHint from provider",
       {{{"resource", Hints{}}}},
       Nil(false)},
      {"Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
       {{{"resource", Hints{Nil(true)}}}},
       Nil(true)},
      {"Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
       {{{"resource", Hints{Nil(false)}}}},
       Nil(false)},
      {"Two providers, 1 hint each, no common mask",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({1}, true)}}}},
       Nil(false)},
      {"Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
       {{{"resource1", Hints{H({0}, true)}}}, {{"resource2", Hints{H({0}, false)}}}},
       Nil(false)},
      {"Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
       {{{"resource1", Hints{H({1}, true)}}}, {{"resource2", Hints{H({1}, false)}}}},
       Nil(false)},
      {"Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
       {{{"resource1", Hints{H({0}, true), H({1}, true)}}},
        {{"resource2", Hints{H({0, 1}, false)}}}},
       Nil(false)},
      {"Single NUMA hint generation",
       {{{"resource1", Hints{H({0, 1}, true)}},
         {"resource2", Hints{H({0}, true), H({1}, true), H({0, 1}, false)}}}},
       Nil(false)},
      {"One no-preference provider",
       {{{"resource1", Hints{H({0}, true), H({1}, true), H({0, 1}, false)}}}, {}},
       H({0}, true)},
  };
}

std::vector<MergeCase> Concat(std::initializer_list<std::vector<MergeCase>> lists) {
  std::vector<MergeCase> all;
  for (const std::vector<MergeCase>& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

// upstream testPolicyMerge, plus the admit result each policy's canAdmitPodResult gives.
void ExpectMerges(TopologyPolicy policy, const TopologyPolicyOptions& options, const NumaInfo& numa,
                  const std::vector<MergeCase>& cases) {
  for (const MergeCase& c : cases) {
    const PolicyDecision decision = Merge(policy, options, numa, c.providers);
    EXPECT_EQ(decision.best, c.expected)
        << TopologyPolicyName(policy) << ": " << c.name << ": got " << decision.best.ToString()
        << ", want " << c.expected.ToString();
    const bool admit = policy == TopologyPolicy::kBestEffort || c.expected.preferred;
    EXPECT_EQ(decision.admit, admit) << TopologyPolicyName(policy) << ": " << c.name;
  }
}

// policy_best_effort_test.go TestPolicyBestEffortMerge.
TEST(Merge, BestEffortPolicy) {
  const NumaInfo numa = FourNodes();
  ExpectMerges(TopologyPolicy::kBestEffort, {}, numa,
               Concat({CommonCases(), BestEffortCases(numa), NoPolicyOptionCases()}));
}

// policy_best_effort_test.go TestPolicyBestEffortMergeClosestNUMA.
TEST(Merge, BestEffortPolicyPreferClosestNumaNodes) {
  const NumaInfo numa = EightNodes();
  ExpectMerges(TopologyPolicy::kBestEffort, {.prefer_closest_numa_nodes = true}, numa,
               Concat({CommonCases(), BestEffortCases(numa), ClosestNumaCases()}));
}

// policy_restricted_test.go TestPolicyRestrictedMerge.
TEST(Merge, RestrictedPolicy) {
  const NumaInfo numa = FourNodes();
  ExpectMerges(TopologyPolicy::kRestricted, {}, numa,
               Concat({CommonCases(), BestEffortCases(numa), NoPolicyOptionCases()}));
}

// policy_restricted_test.go TestPolicyRestrictedMergeClosestNUMA.
TEST(Merge, RestrictedPolicyPreferClosestNumaNodes) {
  const NumaInfo numa = EightNodes();
  ExpectMerges(TopologyPolicy::kRestricted, {.prefer_closest_numa_nodes = true}, numa,
               Concat({CommonCases(), BestEffortCases(numa), ClosestNumaCases()}));
}

// policy_single_numa_node_test.go TestPolicySingleNumaNodeMerge (run on two and four nodes).
TEST(Merge, SingleNumaNodePolicy) {
  for (const NumaInfo& numa : {TwoNodes(), FourNodes()}) {
    ExpectMerges(TopologyPolicy::kSingleNumaNode, {}, numa,
                 Concat({CommonCases(), SingleNumaNodeCases()}));
  }
}

// prefer-closest-numa-nodes does not apply to single-numa-node (NewHintMerger).
TEST(Merge, SingleNumaNodePolicyIgnoresPreferClosest) {
  const NumaInfo numa = EightNodes();
  ExpectMerges(TopologyPolicy::kSingleNumaNode, {.prefer_closest_numa_nodes = true}, numa,
               Concat({CommonCases(), SingleNumaNodeCases()}));
  // Closest would pick {4} and {0} alike (one node each); both policies keep the lower number.
  const PolicyDecision decision =
      Merge(TopologyPolicy::kSingleNumaNode, {.prefer_closest_numa_nodes = true}, numa,
            {{{"gpu", Hints{H({4}, true), H({0}, true)}}}});
  EXPECT_EQ(decision.best, H({0}, true));
}

// policy_none_test.go TestPolicyNoneMerge / TestPolicyNoneCanAdmitPodResult.
TEST(Merge, NonePolicyAdmitsWithoutAffinity) {
  const NumaInfo numa = TwoNodes();
  const PolicyDecision admitted{.best = TopologyHint{}, .admit = true};
  EXPECT_EQ(Merge(TopologyPolicy::kNone, {}, numa, {}), admitted);  // merged empty providers hints
  EXPECT_EQ(Merge(TopologyPolicy::kNone, {}, numa, {{{"resource", Hints{H({0, 1}, true)}}}}),
            admitted);  // a single provider with a single preferred resource
  EXPECT_EQ(Merge(TopologyPolicy::kNone, {}, numa, {{{"resource", Hints{H({0, 1}, false)}}}}),
            admitted);  // a single provider with a single non-preferred resource
  EXPECT_EQ(Merge(TopologyPolicy::kNone, {}, numa, {{{"resource", Hints{}}}}), admitted);
}

// The can-admit tables of policy_best_effort_test.go, policy_restricted_test.go and
// policy_single_numa_node_test.go, through Merge: a non-preferred best hint is admitted only by
// best-effort.
TEST(Merge, OnlyBestEffortAdmitsANonPreferredHint) {
  const NumaInfo numa = TwoNodes();
  const std::vector<ProviderHints> cannot = {{{"resource", Hints{}}}};
  EXPECT_TRUE(Merge(TopologyPolicy::kBestEffort, {}, numa, cannot).admit);
  EXPECT_FALSE(Merge(TopologyPolicy::kRestricted, {}, numa, cannot).admit);
  EXPECT_FALSE(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, cannot).admit);
  const std::vector<ProviderHints> fine = {{{"resource", Hints{H({1}, true)}}}};
  EXPECT_TRUE(Merge(TopologyPolicy::kBestEffort, {}, numa, fine).admit);
  EXPECT_TRUE(Merge(TopologyPolicy::kRestricted, {}, numa, fine).admit);
  EXPECT_TRUE(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, fine).admit);
}

// The scenario: GPUs 4+4 on two nodes. The hints are what the device manager gives for
// 4 GPUs ({0}, {1} preferred; {0,1} not) and for 5 (only {0,1}, preferred: the narrowest).
TEST(Merge, FourGpusFitOneNodeFiveAreRejectedBySingleNumaNode) {
  const NumaInfo numa = TwoNodes();
  const std::vector<ProviderHints> four = {
      {{"nvidia.com/gpu", Hints{H({0}, true), H({1}, true), H({0, 1}, false)}}}};
  const std::vector<ProviderHints> five = {{{"nvidia.com/gpu", Hints{H({0, 1}, true)}}}};

  EXPECT_EQ(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, four),
            (PolicyDecision{.best = H({0}, true), .admit = true}));
  EXPECT_EQ(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, five),
            (PolicyDecision{.best = Nil(false), .admit = false}));
  EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, five),
            (PolicyDecision{.best = H({0, 1}, true), .admit = true}));
  EXPECT_EQ(Merge(TopologyPolicy::kRestricted, {}, numa, five),
            (PolicyDecision{.best = H({0, 1}, true), .admit = true}));
}

// single-numa-node turns the default affinity into nil, so on a one-node machine even a fitting
// preferred hint comes back nil (but admitted).
TEST(Merge, SingleNumaNodeOnOneNodeMachineGivesNilPreferred) {
  const NumaInfo numa{.nodes = {0}};
  EXPECT_EQ(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, {{{"gpu", Hints{H({0}, true)}}}}),
            (PolicyDecision{.best = Nil(true), .admit = true}));
  EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, {{{"gpu", Hints{H({0}, true)}}}}),
            (PolicyDecision{.best = H({0}, true), .admit = true}));
}

// The result does not depend on the order of the providers (upstream iterates Go maps).
TEST(Merge, ProviderOrderDoesNotMatter) {
  const NumaInfo numa = FourNodes();
  const std::vector<ProviderHints> providers = {
      kFiveSixFirst,
      kSixSecond,
      {{"resource3", Hints{H({1, 2}, false), H({0, 1, 2, 3}, false)}}},
      {},
  };
  std::vector<size_t> order = {0, 1, 2, 3};
  int permutations = 0;
  do {
    std::vector<ProviderHints> ordered;
    for (size_t i : order) ordered.push_back(providers[i]);
    EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, ordered),
              (PolicyDecision{.best = H({1, 2}, false), .admit = true}));
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 24);
}

// kdp: nodes beyond 63 (hwloc's GPU memory nodes 250-255) merge like any other.
TEST(Merge, HighNodeNumbers) {
  const NumaInfo numa{.nodes = {0, 1, 250, 251}};
  const std::vector<ProviderHints> providers = {
      {{"gpu", Hints{H({250}, true), H({251}, true), H({250, 251}, false)}}},
      {{"nic", Hints{H({251}, true), H({0}, true)}}}};
  EXPECT_EQ(Merge(TopologyPolicy::kSingleNumaNode, {}, numa, providers).best, H({251}, true));
  EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, providers).best, H({251}, true));
  // A provider without preference leaves the default affinity: all four nodes.
  EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, {{}}).best, H({0, 1, 250, 251}, true));
  // No common node: the default affinity, not preferred.
  EXPECT_EQ(Merge(TopologyPolicy::kRestricted, {}, numa,
                  {{{"gpu", Hints{H({250}, true)}}}, {{"nic", Hints{H({1}, true)}}}}),
            (PolicyDecision{.best = H({0, 1, 250, 251}, false), .admit = false}));
}

// kdp: prefer-closest reads distances by node number on sparse numbering.
TEST(Merge, PreferClosestOnSparseNodes) {
  const NumaInfo numa = NumaInfo::FromDistances({0, 2, 250, 251}, [](int from, int to) {
    if (from == to) return 10;
    if ((from == 0 && to == 2) || (from == 2 && to == 0)) return 12;
    if ((from == 250 && to == 251) || (from == 251 && to == 250)) return 11;
    return 20;
  });
  const std::vector<ProviderHints> providers = {
      {{"gpu", Hints{H({0, 2}, true), H({250, 251}, true), H({0, 250}, true)}}}};
  EXPECT_EQ(
      Merge(TopologyPolicy::kBestEffort, {.prefer_closest_numa_nodes = true}, numa, providers).best,
      H({250, 251}, true));
  EXPECT_EQ(Merge(TopologyPolicy::kBestEffort, {}, numa, providers).best, H({0, 2}, true));
}

// policy_test.go TestMaxOfMinAffinityCounts.
TEST(MaxOfMinAffinityCounts, UpstreamCases) {
  using internal::MaxOfMinAffinityCounts;
  EXPECT_EQ(MaxOfMinAffinityCounts({}), 0);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({}, true)}}), 0);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({0}, true)}}), 1);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({0, 1}, true)}}), 2);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({0, 1}, true), H({0, 1, 2}, true)}}), 2);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({0, 1}, true), H({0, 1, 2}, true)}, {H({0, 1, 2}, true)}}),
            3);
  EXPECT_EQ(MaxOfMinAffinityCounts({{H({0, 1}, true), H({0, 1, 2}, true)},
                                    {H({0, 1, 2}, true), H({0, 1, 2, 3}, true)}}),
            3);
  // Nil hints do not count.
  EXPECT_EQ(MaxOfMinAffinityCounts({{Nil(true)}, {Nil(false), H({5, 6}, false)}}), 2);
}

// policy_test.go TestCompareHintsNarrowest.
TEST(HintMerger, CompareHintsNarrowest) {
  struct Case {
    std::string description;
    int best_non_preferred_affinity_count;
    std::optional<TopologyHint> current;
    TopologyHint candidate;
    bool expect_current;
  };
  const std::vector<Case> cases = {
      {"candidate.NUMANodeAffinity.Count() == 0 (1)", -1, std::nullopt, H({}, false), true},
      {"candidate.NUMANodeAffinity.Count() == 0 (2)", -1, H({}, true), H({}, false), true},
      {"current == nil (1)", -1, std::nullopt, H({0}, true), false},
      {"current == nil (2)", -1, std::nullopt, H({0}, false), false},
      {"!current.Preferred && candidate.Preferred", -1, H({0}, false), H({0}, true), false},
      {"current.Preferred && !candidate.Preferred", -1, H({0}, true), H({0}, false), true},
      {"current.Preferred && candidate.Preferred (1)", -1, H({0}, true), H({0}, true), true},
      {"current.Preferred && candidate.Preferred (2)", -1, H({0, 1}, true), H({0}, true), false},
      {"current.Preferred && candidate.Preferred (3)", -1, H({0}, true), H({0, 1}, true), true},
      {"!current.Preferred && !candidate.Preferred (1.1)", 1, H({0, 1}, false), H({0, 1}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (1.2)", 1, H({1, 2}, false), H({0, 1}, false),
       false},
      {"!current.Preferred && !candidate.Preferred (1.3)", 1, H({0, 1}, false), H({1, 2}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (2.1)", 2, H({0, 1}, false), H({0}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (2.2)", 2, H({0, 1}, false), H({0, 1}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (2.3)", 2, H({1, 2}, false), H({0, 1}, false),
       false},
      {"!current.Preferred && !candidate.Preferred (2.4)", 2, H({0, 1}, false), H({1, 2}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (3a)", 2, H({0}, false), H({0, 1, 2}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (3b)", 2, H({0}, false), H({0, 1}, false),
       false},
      {"!current.Preferred && !candidate.Preferred (3ca.1)", 3, H({0}, false), H({0, 1}, false),
       false},
      {"!current.Preferred && !candidate.Preferred (3ca.2)", 3, H({0}, false), H({1, 2}, false),
       false},
      {"!current.Preferred && !candidate.Preferred (3ca.3)", 4, H({0, 1}, false),
       H({1, 2, 3}, false), false},
      {"!current.Preferred && !candidate.Preferred (3cb)", 4, H({1, 2, 3}, false), H({0, 1}, false),
       true},
      {"!current.Preferred && !candidate.Preferred (3cc.1)", 4, H({0, 1, 2}, false),
       H({0, 1, 2}, false), true},
      {"!current.Preferred && !candidate.Preferred (3cc.2)", 4, H({0, 1, 2}, false),
       H({1, 2, 3}, false), true},
      {"!current.Preferred && !candidate.Preferred (3cc.3)", 4, H({1, 2, 3}, false),
       H({0, 1, 2}, false), false},
  };
  const NumaInfo numa;
  for (const Case& c : cases) {
    internal::HintMerger merger(numa, {}, TopologyPolicy::kBestEffort, {});
    merger.set_best_non_preferred_affinity_count(c.best_non_preferred_affinity_count);
    const TopologyHint* current = c.current.has_value() ? &*c.current : nullptr;
    const TopologyHint* result = merger.Compare(current, &c.candidate);
    EXPECT_EQ(result, c.expect_current ? current : &c.candidate) << c.description;
  }
}

TEST(HintMerger, BestNonPreferredAffinityCountComesFromTheHints) {
  const NumaInfo numa = FourNodes();
  internal::HintMerger merger(numa, {{H({0, 1, 2, 3}, false), H({0, 1}, false)}, {H({3}, false)}},
                              TopologyPolicy::kBestEffort, {});
  EXPECT_EQ(merger.best_non_preferred_affinity_count(), 2);
}

// policy_single_numa_node_test.go TestPolicySingleNumaNodeFilterHints.
TEST(FilterSingleNumaHints, UpstreamCases) {
  using internal::FilterSingleNumaHints;
  using Lists = std::vector<Hints>;
  // filter empty resources
  EXPECT_EQ(FilterSingleNumaHints({}), Lists{});
  // filter hints with nil socket mask 1/2
  EXPECT_EQ(FilterSingleNumaHints({{Nil(false)}, {Nil(true)}}), (Lists{{}, {Nil(true)}}));
  // filter hints with nil socket mask 2/2
  EXPECT_EQ(FilterSingleNumaHints({{H({0}, true), Nil(false)}, {H({1}, true), Nil(true)}}),
            (Lists{{H({0}, true)}, {H({1}, true), Nil(true)}}));
  // filter hints with empty resource socket mask
  EXPECT_EQ(FilterSingleNumaHints({{H({1}, true), H({0}, true), Nil(false)}, {}}),
            (Lists{{H({1}, true), H({0}, true)}, {}}));
  // filter hints with wide sockemask
  EXPECT_EQ(FilterSingleNumaHints(
                {{H({0}, true), H({1}, true), H({1, 2}, false), H({0, 1, 2}, false), Nil(false)},
                 {H({1, 2}, false), H({0, 1, 2}, false), H({0, 2}, false), H({3}, false)},
                 {H({1, 2}, false), H({0, 1, 2}, false), H({0, 2}, false)}}),
            (Lists{{H({0}, true), H({1}, true)}, {}, {}}));
  // kdp: preferred multi-node and empty masks are dropped too.
  EXPECT_EQ(FilterSingleNumaHints({{H({0, 1}, true), H({}, true), H({250}, true)}}),
            (Lists{{H({250}, true)}}));
}

TEST(FilterProvidersHints, NilEmptyAndMissingHints) {
  using internal::FilterProvidersHints;
  using Lists = std::vector<Hints>;
  EXPECT_EQ(FilterProvidersHints({}), Lists{});
  // A provider with no hints at all: one preferred "any NUMA" hint.
  EXPECT_EQ(FilterProvidersHints({{}}), (Lists{{Nil(true)}}));
  // Per resource, in name order: nil list → {nil, true}; empty → {nil, false}; else the hints.
  EXPECT_EQ(FilterProvidersHints({{{"b", Hints{}}, {"a", std::nullopt}},
                                  {{"c", Hints{H({1}, true), H({0, 1}, false)}}}}),
            (Lists{{Nil(true)}, {Nil(false)}, {H({1}, true), H({0, 1}, false)}}));
}

TEST(TopologyHint, ToStringIsTheKubeletRendering) {
  EXPECT_EQ(H({0}, true).ToString(), "{01 true}");
  EXPECT_EQ(H({0, 1}, false).ToString(), "{11 false}");
  EXPECT_EQ(Nil(true).ToString(), "{<nil> true}");
  EXPECT_EQ(TopologyHint{}.ToString(), "{<nil> false}");
}

TEST(TopologyPolicy, NamesRoundTrip) {
  for (TopologyPolicy policy : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort,
                                TopologyPolicy::kRestricted, TopologyPolicy::kSingleNumaNode}) {
    absl::StatusOr<TopologyPolicy> parsed = ParseTopologyPolicy(TopologyPolicyName(policy));
    ASSERT_TRUE(parsed.ok()) << TopologyPolicyName(policy);
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_STREQ(TopologyPolicyName(TopologyPolicy::kRestricted),
               "restricted");  // TestPolicyRestrictedName
  EXPECT_STREQ(TopologyPolicyName(TopologyPolicy::kSingleNumaNode), "single-numa-node");
}

// The kubelet's configuration validation text ("invalid TopologyManagerPolicy").
TEST(TopologyPolicy, UnknownNameIsRejectedWithTheKubeletText) {
  absl::StatusOr<TopologyPolicy> parsed = ParseTopologyPolicy("invalid-policy");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "invalid configuration: topologyManagerPolicy (--topology-manager-policy) "
            "\"invalid-policy\" must be one of: [\"none\" \"best-effort\" \"restricted\" "
            "\"single-numa-node\"]");
  EXPECT_FALSE(ParseTopologyPolicy("Best-Effort").ok());
  EXPECT_FALSE(ParseTopologyPolicy("").ok());
}

TEST(TopologyPolicyOptions, ParsesTheKubeletFlag) {
  absl::StatusOr<TopologyPolicyOptions> options = ParseTopologyPolicyOptions("");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(*options, TopologyPolicyOptions{});
  EXPECT_EQ(options->max_allowable_numa_nodes, 8);

  options = ParseTopologyPolicyOptions(
      " prefer-closest-numa-nodes = true , , max-allowable-numa-nodes=16");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(*options, (TopologyPolicyOptions{.prefer_closest_numa_nodes = true,
                                             .max_allowable_numa_nodes = 16}));

  // Go's ParseBool spellings; a later pair overrides an earlier one.
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    options = ParseTopologyPolicyOptions(std::string("prefer-closest-numa-nodes=") + yes);
    ASSERT_TRUE(options.ok()) << yes;
    EXPECT_TRUE(options->prefer_closest_numa_nodes) << yes;
  }
  options =
      ParseTopologyPolicyOptions("prefer-closest-numa-nodes=true,prefer-closest-numa-nodes=False");
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->prefer_closest_numa_nodes);

  options = ParseTopologyPolicyOptions("max-allowable-numa-nodes=+9");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->max_allowable_numa_nodes, 9);
  options = ParseTopologyPolicyOptions("max-allowable-numa-nodes=99999999999");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->max_allowable_numa_nodes, INT_MAX);
}

TEST(TopologyPolicyOptions, RejectsWithTheKubeletTexts) {
  auto error = [](std::string_view text) {
    absl::StatusOr<TopologyPolicyOptions> options = ParseTopologyPolicyOptions(text);
    EXPECT_FALSE(options.ok()) << text;
    if (!options.ok()) {
      EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    }
    return options.ok() ? std::string() : std::string(options.status().message());
  };
  EXPECT_EQ(error("unknown-option=true"),
            "unknown Topology Manager Policy option: \"unknown-option\"");
  EXPECT_EQ(error("prefer-closest-numa-nodes=not a boolean"),
            "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing "
            "\"not a boolean\": invalid syntax");
  EXPECT_EQ(error("prefer-closest-numa-nodes"), "malformed pair, expect string=string");
  EXPECT_EQ(error("max-allowable-numa-nodes=ten"),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"ten\": invalid syntax");
  EXPECT_EQ(error("max-allowable-numa-nodes="),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"\": invalid syntax");
  EXPECT_EQ(error("max-allowable-numa-nodes=99999999999999999999"),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range");
  EXPECT_EQ(error("max-allowable-numa-nodes=7"),
            "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
  EXPECT_EQ(error("max-allowable-numa-nodes=-3"),
            "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
}

TEST(TopologyPolicyOptions, FromMap) {
  absl::StatusOr<TopologyPolicyOptions> options =
      TopologyPolicyOptionsFromMap({{"prefer-closest-numa-nodes", "true"}});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(*options, (TopologyPolicyOptions{.prefer_closest_numa_nodes = true}));
  EXPECT_EQ(*TopologyPolicyOptionsFromMap({}), TopologyPolicyOptions{});
  EXPECT_FALSE(TopologyPolicyOptionsFromMap({{"fancy-new-option", "true"}}).ok());
}

NumaInfo NodesWithoutDistances(int count) {
  NumaInfo numa;
  for (int node = 0; node < count; ++node) numa.nodes.push_back(node);
  return numa;
}

// topology_manager_test.go TestNewManager: "more than 8 NUMA nodes".
TEST(ValidateNumaInfo, MoreThanMaxAllowableNodes) {
  const NumaInfo nine = NodesWithoutDistances(9);
  const absl::Status status = ValidateNumaInfo(TopologyPolicy::kBestEffort, {}, nine);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "unsupported on machines with more than 8 NUMA Nodes");
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kBestEffort, {}, NodesWithoutDistances(8)).ok());
  EXPECT_TRUE(
      ValidateNumaInfo(TopologyPolicy::kSingleNumaNode, {.max_allowable_numa_nodes = 9}, nine)
          .ok());
  const absl::Status sixteen = ValidateNumaInfo(
      TopologyPolicy::kRestricted, {.max_allowable_numa_nodes = 12}, NodesWithoutDistances(16));
  EXPECT_EQ(sixteen.message(), "unsupported on machines with more than 12 NUMA Nodes");
  // Policy none is never refused.
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kNone, {}, NodesWithoutDistances(36)).ok());
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kNone, {.max_allowable_numa_nodes = 1}, nine).ok());
}

// topology_manager_test.go TestNewManager: "can't get NUMA distances".
TEST(ValidateNumaInfo, PreferClosestNeedsDistances) {
  const NumaInfo no_distances = NodesWithoutDistances(1);
  const absl::Status status = ValidateNumaInfo(TopologyPolicy::kBestEffort,
                                               {.prefer_closest_numa_nodes = true}, no_distances);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("error getting NUMA distances"));
  EXPECT_THAT(status.message(), HasSubstr("cannot discover NUMA topology"));
  // Checked for single-numa-node too, although it ignores the option (upstream's NewNUMAInfo).
  EXPECT_FALSE(ValidateNumaInfo(TopologyPolicy::kSingleNumaNode,
                                {.prefer_closest_numa_nodes = true}, no_distances)
                   .ok());
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kBestEffort, {.prefer_closest_numa_nodes = true},
                               EightNodes())
                  .ok());
  NumaInfo partial = FourNodes();
  partial.distances[2][3] = 0;
  EXPECT_THAT(
      ValidateNumaInfo(TopologyPolicy::kRestricted, {.prefer_closest_numa_nodes = true}, partial)
          .message(),
      HasSubstr("from NUMA node 2 to node 3 is unknown"));
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kRestricted, {}, partial).ok());
}

TEST(ValidateNumaInfo, RejectsBadNodesAndOptions) {
  EXPECT_EQ(
      ValidateNumaInfo(TopologyPolicy::kBestEffort, {.max_allowable_numa_nodes = 4}, TwoNodes())
          .message(),
      "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
  EXPECT_EQ(ValidateNumaInfo(TopologyPolicy::kBestEffort, {}, NumaInfo{.nodes = {0, 1024}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateNumaInfo(TopologyPolicy::kBestEffort, {}, NumaInfo{.nodes = {3, 3}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateNumaInfo(TopologyPolicy::kBestEffort, {},
                               NumaInfo{.nodes = {0, 1, 250, 251, 252, 253, 254, 255}})
                  .ok());
}

TEST(TopologyAffinityError, KubeletTexts) {
  EXPECT_STREQ(kTopologyAffinityErrorReason, "TopologyAffinityError");
  EXPECT_STREQ(kTopologyAffinityErrorMessage,
               "Resources cannot be allocated with Topology locality");
}

}  // namespace
}  // namespace kdp::manager
