// The topology manager end to end: kdp-manager (--topology-manager-policy/-scope, the machine read
// from the same hwloc XML as the plugin) with kdp-gpu-plugin on the bundled dual-socket fixture
// (8 GPUs, 4 per NUMA node), pods admitted with kdpctl.
#include <set>
#include <string>
#include <vector>

#include "tests/integration/e2e_fixture.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

class TopologyE2E : public E2ETest {
 protected:
  void Start(const std::string& policy, const std::string& scope = "container") {
    StartManager({"--topology-xml", Fixture(), "--topology-manager-policy", policy,
                  "--topology-manager-scope", scope});
    StartGpuPlugin();
    ASSERT_TRUE(WaitForAllocatable("example.com/gpu", 8, 8)) << manager_->Output();
  }

  // Device ID → its NUMA nodes, from kdpctl status.
  std::map<std::string, std::vector<int>> DeviceNodes() {
    std::map<std::string, std::vector<int>> out;
    nlohmann::json gpu = Resource("example.com/gpu");
    for (const auto& device : gpu["devices"]) {
      out[device["id"]] = device["numa"].get<std::vector<int>>();
    }
    return out;
  }

  // The NUMA nodes the devices of `container` (index in the apply output) sit on.
  std::set<int> NodesOf(const nlohmann::json& applied, size_t container) {
    std::map<std::string, std::vector<int>> nodes = DeviceNodes();
    std::set<int> out;
    for (const auto& id : applied["containers"][container]["devices"]["example.com/gpu"]) {
      for (int node : nodes[id.get<std::string>()]) out.insert(node);
    }
    return out;
  }

  static std::string TwoContainerPod(const std::string& name, int first, int second) {
    return absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", name, "\nspec:\n  containers:\n",
        "  - name: a\n    resources:\n      limits:\n", "        example.com/gpu: ", first, "\n",
        "  - name: b\n    resources:\n      limits:\n", "        example.com/gpu: ", second, "\n");
  }
};

TEST_F(TopologyE2E, SingleNumaNodePlacesFourGpusOnOneNodeAndRejectsFive) {
  Start("single-numa-node");
  KdpctlResult four = Apply(GpuPod("four", 4));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  ASSERT_EQ(four.json["admitted"], true) << four.out;
  EXPECT_EQ(NodesOf(four.json, 0).size(), 1u) << four.out;
  const nlohmann::json& hint = four.json["containers"][0]["numa_affinity"];
  EXPECT_EQ(hint["numa_nodes"].size(), 1u) << four.out;
  EXPECT_EQ(hint["preferred"], true) << four.out;

  KdpctlResult five = Apply(GpuPod("five", 5));
  EXPECT_EQ(five.exit_code, 1) << five.out;
  EXPECT_EQ(five.json["admitted"], false) << five.out;
  EXPECT_EQ(five.json["reason"], "TopologyAffinityError") << five.out;
  EXPECT_THAT(five.json["message"].get<std::string>(),
              HasSubstr("Resources cannot be allocated with Topology locality"));
  // The rejected pod holds nothing: the other node's four GPUs are still free.
  KdpctlResult other = Apply(GpuPod("other-four", 4));
  ASSERT_EQ(other.json["admitted"], true) << other.out;
  EXPECT_EQ(NodesOf(other.json, 0).size(), 1u) << other.out;
  EXPECT_NE(NodesOf(other.json, 0), NodesOf(four.json, 0));
}

TEST_F(TopologyE2E, BestEffortAdmitsFiveGpusAcrossBothNodes) {
  Start("best-effort");
  KdpctlResult five = Apply(GpuPod("five", 5));
  ASSERT_EQ(five.exit_code, 0) << five.out << five.err;
  ASSERT_EQ(five.json["admitted"], true) << five.out;
  EXPECT_EQ(NodesOf(five.json, 0), (std::set<int>{0, 1})) << five.out;
  EXPECT_EQ(five.json["containers"][0]["numa_affinity"]["numa_nodes"],
            nlohmann::json::array({0, 1}))
      << five.out;
}

TEST_F(TopologyE2E, RestrictedRejectsWhatFragmentationForcesAcrossNodes) {
  Start("restricted");
  // Three GPUs on one node, two on the other: three more fit no single node any more, although
  // each node's device population could hold them, so the only hint ({0,1}) is not preferred.
  KdpctlResult a = Apply(GpuPod("a", 3));
  ASSERT_EQ(a.json["admitted"], true) << a.out;
  KdpctlResult b = Apply(GpuPod("b", 2));
  ASSERT_EQ(b.json["admitted"], true) << b.out;
  EXPECT_NE(NodesOf(a.json, 0), NodesOf(b.json, 0));
  KdpctlResult c = Apply(GpuPod("c", 3));
  EXPECT_EQ(c.json["admitted"], false) << c.out;
  EXPECT_EQ(c.json["reason"], "TopologyAffinityError") << c.out;
  // Two still fit the second node: admitted there.
  KdpctlResult d = Apply(GpuPod("d", 2));
  ASSERT_EQ(d.json["admitted"], true) << d.out;
  EXPECT_EQ(NodesOf(d.json, 0), NodesOf(b.json, 0)) << d.out;
}

TEST_F(TopologyE2E, PodScopeAlignsTheWholePod) {
  Start("single-numa-node", "pod");
  // Six GPUs for the pod fit no node of 4.
  KdpctlResult pod = Apply(TwoContainerPod("three-and-three", 3, 3));
  EXPECT_EQ(pod.json["admitted"], false) << pod.out;
  EXPECT_EQ(pod.json["reason"], "TopologyAffinityError") << pod.out;
  KdpctlResult fits = Apply(TwoContainerPod("two-and-two", 2, 2));
  ASSERT_EQ(fits.json["admitted"], true) << fits.out;
  std::set<int> nodes = NodesOf(fits.json, 0);
  std::set<int> second = NodesOf(fits.json, 1);
  nodes.insert(second.begin(), second.end());
  EXPECT_EQ(nodes.size(), 1u) << fits.out;
  EXPECT_EQ(fits.json["containers"][0]["numa_affinity"],
            fits.json["containers"][1]["numa_affinity"]);
}

TEST_F(TopologyE2E, ContainerScopeAlignsEachContainerOnItsOwn) {
  Start("single-numa-node", "container");
  KdpctlResult pod = Apply(TwoContainerPod("three-and-three", 3, 3));
  ASSERT_EQ(pod.json["admitted"], true) << pod.out;
  EXPECT_EQ(NodesOf(pod.json, 0).size(), 1u) << pod.out;
  EXPECT_EQ(NodesOf(pod.json, 1).size(), 1u) << pod.out;
  EXPECT_NE(NodesOf(pod.json, 0), NodesOf(pod.json, 1)) << pod.out;
}

TEST_F(TopologyE2E, BestEffortPodScopeGivesEveryContainerThePodsAffinity) {
  Start("best-effort", "pod");
  KdpctlResult pod = Apply(TwoContainerPod("three-and-three", 3, 3));
  ASSERT_EQ(pod.json["admitted"], true) << pod.out;
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(pod.json["containers"][c]["numa_affinity"]["numa_nodes"],
              nlohmann::json::array({0, 1}))
        << pod.out;
    EXPECT_EQ(pod.json["containers"][c]["numa_affinity"]["preferred"], true) << pod.out;
  }
}

TEST_F(TopologyE2E, RestrictedPodScopeRejectsWhatOnlyFitsSplitAcrossNodes) {
  Start("restricted", "pod");
  // Three GPUs on one node and two on the other leave one and two free.
  ASSERT_EQ(Apply(GpuPod("a", 3)).json["admitted"], true);
  ASSERT_EQ(Apply(GpuPod("b", 2)).json["admitted"], true);
  // Two plus one fit no single node: the pod's only hint spans both, not preferred.
  KdpctlResult split = Apply(TwoContainerPod("two-and-one", 2, 1));
  EXPECT_EQ(split.json["admitted"], false) << split.out;
  EXPECT_EQ(split.json["reason"], "TopologyAffinityError") << split.out;
  // One plus one fit the node with two free.
  KdpctlResult fits = Apply(TwoContainerPod("one-and-one", 1, 1));
  ASSERT_EQ(fits.json["admitted"], true) << fits.out;
  std::set<int> nodes = NodesOf(fits.json, 0);
  std::set<int> second = NodesOf(fits.json, 1);
  nodes.insert(second.begin(), second.end());
  EXPECT_EQ(nodes.size(), 1u) << fits.out;
}

TEST_F(TopologyE2E, ALaterContainersRejectionReleasesTheEarlierContainersDevices) {
  Start("single-numa-node", "container");
  // The first container (3) fits node 0; the second (5) fits no node.
  KdpctlResult pod = Apply(TwoContainerPod("three-then-five", 3, 5));
  EXPECT_EQ(pod.json["admitted"], false) << pod.out;
  EXPECT_EQ(pod.json["reason"], "TopologyAffinityError") << pod.out;
  EXPECT_EQ(Resource("example.com/gpu")["allocated"], 0);
  // Both nodes are whole again.
  ASSERT_EQ(Apply(GpuPod("a", 4)).json["admitted"], true);
  ASSERT_EQ(Apply(GpuPod("b", 4)).json["admitted"], true);
}

TEST_F(TopologyE2E, AZeroRequestGetsHintsAsOnAKubelet) {
  Start("restricted");
  // gpu: 0 still yields hints (every mask, single nodes preferred): the merge picks node 0.
  KdpctlResult pod = Apply(GpuPod("zero", 0));
  ASSERT_EQ(pod.json["admitted"], true) << pod.out;
  EXPECT_EQ(pod.json["containers"][0]["numa_affinity"]["numa_nodes"], nlohmann::json::array({0}))
      << pod.out;
  EXPECT_EQ(pod.json["containers"][0]["numa_affinity"]["preferred"], true) << pod.out;
}

TEST_F(TopologyE2E, PolicyNoneStartsWhereTheMachineCannotBeRead) {
  StartManager({"--topology-xml", Root() + "/missing.xml"});
  EXPECT_EQ(Status()["topology_policy"], "none");
  auto run = RunCommand({KDP_MANAGER_BIN, "--kubelet-root", Root() + "/other", "--topology-xml",
                         Root() + "/missing.xml", "--topology-manager-policy", "best-effort"},
                        absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1);
  EXPECT_THAT(run->err + run->out, HasSubstr("missing.xml"));
}

TEST_F(TopologyE2E, StatusShowsTheTopologyManagerAndTheMachinesNodes) {
  Start("best-effort", "pod");
  nlohmann::json status = Status();
  EXPECT_EQ(status["topology_policy"], "best-effort");
  EXPECT_EQ(status["topology_scope"], "pod");
  EXPECT_EQ(status["numa_nodes"], nlohmann::json::array({0, 1}));
}

TEST_F(TopologyE2E, PolicyNoneRecordsNoAffinity) {
  Start("none");
  KdpctlResult four = Apply(GpuPod("four", 4));
  ASSERT_EQ(four.json["admitted"], true) << four.out;
  EXPECT_TRUE(four.json["containers"][0]["numa_affinity"].is_null()) << four.out;
  // The plugin's preferred allocation still keeps four GPUs on one node.
  EXPECT_EQ(NodesOf(four.json, 0).size(), 1u) << four.out;
}

TEST_F(TopologyE2E, AnUnknownPolicyIsRefusedNamingTheFlag) {
  auto run =
      RunCommand({KDP_MANAGER_BIN, "--kubelet-root", Root(), "--topology-manager-policy", "strict"},
                 absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->exit_code, 0);
  EXPECT_THAT(run->err + run->out, HasSubstr("--topology-manager-policy"));
}

}  // namespace
}  // namespace kdp::testing
