#include "manager/src/status/pod_object.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

AdmittedPod TrainingPod() {
  AdmittedPod admitted;
  Pod& pod = admitted.pod;
  pod.namespace_ = "ml";
  pod.name = "train";
  pod.uid = "uid-1";
  pod.init_containers = {{.name = "warmup", .kind = ContainerKind::kInit},
                         {.name = "proxy", .kind = ContainerKind::kSidecar}};
  pod.containers = {{.name = "main",
                     .kind = ContainerKind::kApp,
                     .extended_resources = {{"example.com/gpu", 2}},
                     .other_limits = {{"cpu", "2"}},
                     .claims = {{.name = "gpus", .request = ""}}}};
  pod.resource_claims = {{.name = "gpus", .resource_claim_template_name = "two-gpus"}};
  pod.resource_claim_statuses = {{"gpus", "train-gpus-abcde"}};
  for (const Container* c : ContainersInAdmissionOrder(pod)) {
    AdmittedContainer container{.spec = *c};
    if (c->name == "main") container.devices = {{"example.com/gpu", {"gpu0", "gpu1"}}};
    admitted.containers.push_back(std::move(container));
  }
  return admitted;
}

TEST(PodObject, IsARunningPodAsTheKubeletWritesIt) {
  const absl::Time started = absl::FromUnixSeconds(1700000000);
  Json pod = PodObject(TrainingPod(), "node-a", started,
                       [](const std::string& resource, const std::string& id) {
                         return id == "gpu1" ? "Unhealthy" : "Healthy";
                       });
  EXPECT_EQ(pod["metadata"]["name"], "train");
  EXPECT_EQ(pod["metadata"]["namespace"], "ml");
  EXPECT_EQ(pod["metadata"]["uid"], "uid-1");
  EXPECT_EQ(pod["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(pod["spec"]["nodeName"], "node-a");
  // Requests are defaulted from limits, as the API server does.
  const Json& main = pod["spec"]["containers"][0];
  EXPECT_EQ(main["resources"]["limits"], Json::parse(R"({"cpu": "2", "example.com/gpu": "2"})"));
  EXPECT_EQ(main["resources"]["requests"], main["resources"]["limits"]);
  EXPECT_EQ(main["resources"]["claims"], Json::parse(R"([{"name": "gpus"}])"));
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 2u);
  EXPECT_FALSE(pod["spec"]["initContainers"][0].contains("restartPolicy"));
  EXPECT_EQ(pod["spec"]["initContainers"][1]["restartPolicy"], "Always");
  EXPECT_EQ(pod["spec"]["resourceClaims"],
            Json::parse(R"([{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])"));

  const Json& status = pod["status"];
  EXPECT_EQ(status["phase"], "Running");
  std::vector<std::string> conditions;
  for (const Json& c : status["conditions"]) {
    EXPECT_EQ(c["status"], "True");
    conditions.push_back(c["type"]);
  }
  EXPECT_THAT(conditions,
              ::testing::UnorderedElementsAre("PodReadyToStartContainers", "Initialized", "Ready",
                                              "ContainersReady", "PodScheduled"));
  EXPECT_EQ(status["qosClass"], "Burstable");
  // The init container ran to completion; the sidecar and the app container run.
  EXPECT_EQ(status["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  EXPECT_TRUE(status["initContainerStatuses"][1]["state"].contains("running"));
  const Json& main_status = status["containerStatuses"][0];
  EXPECT_EQ(main_status["ready"], true);
  EXPECT_EQ(main_status["restartCount"], 0);
  EXPECT_EQ(main_status["allocatedResourcesStatus"], Json::parse(R"([{"name": "example.com/gpu",
      "resources": [{"resourceID": "gpu0", "health": "Healthy"},
                    {"resourceID": "gpu1", "health": "Unhealthy"}]}])"));
  EXPECT_EQ(status["resourceClaimStatuses"],
            Json::parse(R"([{"name": "gpus", "resourceClaimName": "train-gpus-abcde"}])"));
}

TEST(QosClass, FollowsCpuAndMemoryLimits) {
  Pod pod;
  pod.containers = {{.name = "a"}};
  EXPECT_EQ(QosClass(pod), "BestEffort");
  pod.containers[0].extended_resources = {{"example.com/gpu", 1}};
  EXPECT_EQ(QosClass(pod), "BestEffort");  // extended resources do not count
  pod.containers[0].other_limits = {{"cpu", "1"}};
  EXPECT_EQ(QosClass(pod), "Burstable");
  pod.containers[0].other_limits["memory"] = "1Gi";
  EXPECT_EQ(QosClass(pod), "Guaranteed");
  pod.containers.push_back({.name = "b"});
  EXPECT_EQ(QosClass(pod), "Burstable");
}

}  // namespace
}  // namespace kdp::manager
