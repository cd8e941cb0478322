#include "manager/src/nodestatus/node_status.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

const MachineResources kMachine = {.cpus = 16,
                                   .memory_bytes = int64_t{64} * 1024 * 1024 * 1024,
                                   .ephemeral_storage_bytes = int64_t{100} * 1000 * 1000 * 1000,
                                   .max_pods = 110};

TEST(NodeStatusJson, ReportsMachineAndDevicePluginResourcesAsTheKubelet) {
  const absl::Time since = absl::FromUnixSeconds(1700000000);
  Json status = NodeStatusJson(
      "node-a", kMachine,
      {{.name = "example.com/gpu", .capacity = 8, .allocatable = 7, .removed = false},
       {.name = "example.com/fpga", .capacity = 0, .allocatable = 0, .removed = true}},
      {.kernel_version = "6.1.0", .kubelet_version = "v1.34.0", .architecture = "amd64"},
      since + absl::Seconds(30), since);
  EXPECT_EQ(status["capacity"],
            Json::parse(R"({"cpu": "16", "memory": "64Gi", "ephemeral-storage": "97656250Ki",
                            "pods": "110", "example.com/gpu": "8", "example.com/fpga": "0"})"));
  // Allocatable: healthy devices only; memory less the 100Mi hard eviction threshold.
  EXPECT_EQ(status["allocatable"],
            Json::parse(R"({"cpu": "16", "memory": "65436Mi", "ephemeral-storage": "97656250Ki",
                            "pods": "110", "example.com/gpu": "7", "example.com/fpga": "0"})"));
  ASSERT_EQ(status["conditions"].size(), 4u);
  const Json& ready = status["conditions"][3];
  EXPECT_EQ(ready["type"], "Ready");
  EXPECT_EQ(ready["status"], "True");
  EXPECT_EQ(ready["reason"], "KubeletReady");
  EXPECT_EQ(ready["message"], "kubelet is posting ready status");
  EXPECT_EQ(ready["lastHeartbeatTime"], "2023-11-14T22:13:50Z");
  EXPECT_EQ(ready["lastTransitionTime"], "2023-11-14T22:13:20Z");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(status["conditions"][i]["status"], "False");
  EXPECT_EQ(status["addresses"], Json::parse(R"([{"type": "InternalIP", "address": "127.0.0.1"},
                            {"type": "Hostname", "address": "node-a"}])"));
  EXPECT_EQ(status["nodeInfo"]["kubeletVersion"], "v1.34.0");
  EXPECT_EQ(status["nodeInfo"]["operatingSystem"], "linux");
  EXPECT_EQ(status["nodeInfo"]["architecture"], "amd64");
}

TEST(ReadMachineResources, ReadsTheLiveHost) {
  MachineResources machine = ReadMachineResources("/");
  EXPECT_GT(machine.cpus, 0);
  EXPECT_GT(machine.memory_bytes, 0);
  EXPECT_GT(machine.ephemeral_storage_bytes, 0);
  NodeSystemInfo info = ReadNodeSystemInfo("v1.34.0", "kdp://0.1.0");
  EXPECT_FALSE(info.kernel_version.empty());
  EXPECT_FALSE(info.os_image.empty());
  EXPECT_THAT(info.architecture, ::testing::AnyOf("amd64", "arm64"));
}

class NodeStatusUpdaterTest : public ::testing::Test {
 protected:
  NodeStatusUpdaterOptions Options() {
    return {.node_name = "node-a",
            .machine = kMachine,
            .info = {},
            .device_capacity =
                [this] {
                  absl::MutexLock lock(&mu_);
                  return devices_;
                },
            .sync_period = absl::Milliseconds(10),
            .report_period = absl::Minutes(5),
            .now =
                [this] {
                  absl::MutexLock lock(&mu_);
                  return now_;
                }};
  }
  void SetDevices(std::vector<ResourceCapacity> devices) {
    absl::MutexLock lock(&mu_);
    devices_ = std::move(devices);
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  Json NodeStatus() { return (*store_.Get(resourceapi::Kind::kNode, "", "node-a"))["status"]; }

  absl::Mutex mu_;
  std::vector<ResourceCapacity> devices_ ABSL_GUARDED_BY(mu_);
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1700000000);
  resourceapi::ObjectStore store_{resourceapi::StoreOptions{.node_name = "node-a"}};
};

TEST_F(NodeStatusUpdaterTest, WritesOnlyWhatChangedOrWhenTheReportIsDue) {
  NodeStatusUpdater updater(&store_, Options());
  EXPECT_TRUE(updater.Sync());
  const int64_t written = store_.ResourceVersion();
  EXPECT_EQ(NodeStatus()["capacity"]["cpu"], "16");
  EXPECT_FALSE(NodeStatus()["capacity"].contains("example.com/gpu"));

  // Nothing changed but the clock: no write, no watch event.
  Advance(absl::Seconds(10));
  EXPECT_FALSE(updater.Sync());
  EXPECT_EQ(store_.ResourceVersion(), written);

  // A plugin registered 4 devices, one unhealthy.
  SetDevices({{.name = "example.com/gpu", .capacity = 4, .allocatable = 3, .removed = false}});
  EXPECT_TRUE(updater.Sync());
  EXPECT_EQ(NodeStatus()["capacity"]["example.com/gpu"], "4");
  EXPECT_EQ(NodeStatus()["allocatable"]["example.com/gpu"], "3");
  EXPECT_GT(store_.ResourceVersion(), written);

  // Five minutes on: the heartbeat is renewed even though nothing else changed.
  const Json before = NodeStatus()["conditions"][3];
  Advance(absl::Minutes(5));
  EXPECT_TRUE(updater.Sync());
  const Json after = NodeStatus()["conditions"][3];
  EXPECT_NE(after["lastHeartbeatTime"], before["lastHeartbeatTime"]);
  EXPECT_EQ(after["lastTransitionTime"], before["lastTransitionTime"]);
}

TEST_F(NodeStatusUpdaterTest, TheLoopPicksUpChangesUntilStopped) {
  NodeStatusUpdater updater(&store_, Options());
  updater.Start();
  SetDevices({{.name = "example.com/gpu", .capacity = 2, .allocatable = 2, .removed = false}});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!NodeStatus()["capacity"].contains("example.com/gpu") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(NodeStatus()["capacity"]["example.com/gpu"], "2");
  updater.Stop();
  updater.Stop();
}

}  // namespace
}  // namespace kdp::manager
