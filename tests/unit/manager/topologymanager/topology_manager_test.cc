#include "manager/src/topologymanager/topology_manager.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A provider answering from tables and recording every call.
class FakeProvider : public HintProvider {
 public:
  ProviderHints GetTopologyHints(const Pod&, const Container& container) override {
    calls.push_back("hints:" + container.name);
    return container_hints[container.name];
  }
  ProviderHints GetPodTopologyHints(const Pod&) override {
    calls.push_back("pod-hints");
    return pod_hints;
  }
  absl::Status Allocate(const Pod&, const Container& container,
                        const std::optional<NumaMask>& affinity) override {
    calls.push_back("allocate:" + container.name);
    affinities[container.name] = affinity;
    if (fail_allocate == container.name) return absl::ResourceExhaustedError("no devices left");
    return absl::OkStatus();
  }

  std::map<std::string, ProviderHints> container_hints;
  ProviderHints pod_hints;
  std::string fail_allocate;
  std::vector<std::string> calls;
  std::map<std::string, std::optional<NumaMask>> affinities;
};

Pod TwoContainerPod() {
  Pod pod;
  pod.name = "p";
  pod.uid = "uid-1";
  pod.init_containers.push_back({.name = "init",
                                 .kind = ContainerKind::kInit,
                                 .extended_resources = {{"example.com/gpu", 1}},
                                 .other_limits = {}});
  pod.containers.push_back({.name = "main",
                            .kind = ContainerKind::kApp,
                            .extended_resources = {{"example.com/gpu", 2}},
                            .other_limits = {}});
  return pod;
}

TopologyManagerConfig Config(TopologyPolicy policy, TopologyScope scope) {
  return {.policy = policy,
          .scope = scope,
          .options = {},
          .numa = NumaInfo::FromDistances({0, 1}, [](int a, int b) { return a == b ? 10 : 20; })};
}

TopologyHint Hint(std::initializer_list<int> nodes, bool preferred) {
  return {.numa_affinity = NumaMask::Of(nodes), .preferred = preferred};
}

TEST(TopologyManager, PolicyNoneAllocatesInAdmissionOrderWithoutHints) {
  FakeProvider provider;
  auto manager = TopologyManager::Create(Config(TopologyPolicy::kNone, TopologyScope::kContainer),
                                         {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  EXPECT_TRUE(admission.admitted);
  EXPECT_THAT(provider.calls, ElementsAre("allocate:init", "allocate:main"));
  EXPECT_EQ(provider.affinities["main"], std::nullopt);
  EXPECT_THAT(admission.hints, IsEmpty());
}

TEST(TopologyManager, ContainerScopeMergesEachContainerJustBeforeItsAllocation) {
  FakeProvider provider;
  provider.container_hints["init"] = {{"example.com/gpu", std::vector{Hint({1}, true)}}};
  provider.container_hints["main"] = {
      {"example.com/gpu", std::vector{Hint({0}, true), Hint({0, 1}, false)}}};
  auto manager = TopologyManager::Create(
      Config(TopologyPolicy::kSingleNumaNode, TopologyScope::kContainer), {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  ASSERT_TRUE(admission.admitted) << admission.message;
  EXPECT_THAT(provider.calls,
              ElementsAre("hints:init", "allocate:init", "hints:main", "allocate:main"));
  EXPECT_EQ(provider.affinities["init"], NumaMask::Of({1}));
  EXPECT_EQ(provider.affinities["main"], NumaMask::Of({0}));
  EXPECT_EQ(admission.hints["main"], Hint({0}, true));
}

TEST(TopologyManager, ARejectedContainerIsNotAllocatedAndStoresNoHint) {
  FakeProvider provider;
  provider.container_hints["init"] = {{"example.com/gpu", std::vector{Hint({0}, true)}}};
  // Only a two-node hint: single-numa-node cannot admit it.
  provider.container_hints["main"] = {{"example.com/gpu", std::vector{Hint({0, 1}, true)}}};
  auto manager = TopologyManager::Create(
      Config(TopologyPolicy::kSingleNumaNode, TopologyScope::kContainer), {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  EXPECT_FALSE(admission.admitted);
  EXPECT_EQ(admission.reason, "TopologyAffinityError");
  EXPECT_EQ(admission.message, "Resources cannot be allocated with Topology locality");
  EXPECT_THAT(provider.calls, ElementsAre("hints:init", "allocate:init", "hints:main"));
  EXPECT_TRUE(admission.hints.contains("init"));
  EXPECT_FALSE(admission.hints.contains("main"));
}

TEST(TopologyManager, PodScopeMergesOnceAndGivesEveryContainerTheSameAffinity) {
  FakeProvider provider;
  provider.pod_hints = {{"example.com/gpu", std::vector{Hint({1}, true), Hint({0, 1}, false)}}};
  auto manager = TopologyManager::Create(Config(TopologyPolicy::kRestricted, TopologyScope::kPod),
                                         {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  ASSERT_TRUE(admission.admitted) << admission.message;
  EXPECT_THAT(provider.calls, ElementsAre("pod-hints", "allocate:init", "allocate:main"));
  EXPECT_EQ(provider.affinities["init"], NumaMask::Of({1}));
  EXPECT_EQ(provider.affinities["main"], NumaMask::Of({1}));
}

TEST(TopologyManager, PodScopeRejectionAllocatesNothing) {
  FakeProvider provider;
  provider.pod_hints = {{"example.com/gpu", std::vector<TopologyHint>{}}};  // cannot satisfy
  auto manager = TopologyManager::Create(Config(TopologyPolicy::kRestricted, TopologyScope::kPod),
                                         {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  EXPECT_FALSE(admission.admitted);
  EXPECT_EQ(admission.reason, "TopologyAffinityError");
  EXPECT_THAT(provider.calls, ElementsAre("pod-hints"));
  EXPECT_THAT(admission.hints, IsEmpty());
}

TEST(TopologyManager, BestEffortAdmitsWhatItCannotAlign) {
  FakeProvider provider;
  provider.pod_hints = {{"example.com/gpu", std::vector<TopologyHint>{}}};
  auto manager = TopologyManager::Create(Config(TopologyPolicy::kBestEffort, TopologyScope::kPod),
                                         {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  EXPECT_TRUE(admission.admitted);
  EXPECT_FALSE(admission.hints["main"].preferred);
}

TEST(TopologyManager, AnAllocationErrorIsTheKubeletsUnexpectedAdmissionError) {
  FakeProvider provider;
  provider.fail_allocate = "main";
  auto manager = TopologyManager::Create(
      Config(TopologyPolicy::kBestEffort, TopologyScope::kContainer), {&provider});
  ASSERT_TRUE(manager.ok()) << manager.status();
  TopologyAdmission admission = manager->Admit(TwoContainerPod());
  EXPECT_FALSE(admission.admitted);
  EXPECT_EQ(admission.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(admission.message, "Allocate failed due to no devices left, which is unexpected");
}

TEST(TopologyManager, RefusesAPolicyOnAMachineWithMoreThanEightNumaNodes) {
  FakeProvider provider;
  TopologyManagerConfig config = Config(TopologyPolicy::kBestEffort, TopologyScope::kContainer);
  config.numa = NumaInfo::FromDistances({0, 1, 2, 3, 4, 5, 6, 7, 8},
                                        [](int a, int b) { return a == b ? 10 : 20; });
  auto refused = TopologyManager::Create(config, {&provider});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("more than 8 NUMA Nodes"));
  config.options.max_allowable_numa_nodes = 16;
  EXPECT_TRUE(TopologyManager::Create(config, {&provider}).ok());
  config.policy = TopologyPolicy::kNone;
  config.options.max_allowable_numa_nodes = 8;
  EXPECT_TRUE(TopologyManager::Create(config, {&provider}).ok());
}

TEST(TopologyScope, ParsesItsNamesAndRejectsOthersWithTheKubeletsText) {
  EXPECT_EQ(ParseTopologyScope("pod").value(), TopologyScope::kPod);
  EXPECT_EQ(ParseTopologyScope("container").value(), TopologyScope::kContainer);
  EXPECT_STREQ(TopologyScopeName(TopologyScope::kPod), "pod");
  auto bad = ParseTopologyScope("node");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("topologyManagerScope (--topology-manager-scope)"));
  EXPECT_THAT(bad.status().message(), HasSubstr("\"node\""));
}

}  // namespace
}  // namespace kdp::manager
