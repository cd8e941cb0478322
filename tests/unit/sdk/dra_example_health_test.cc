// The example DRA driver's --health-file (examples/dra-driver) through the SDK's health stream:
// GpuDraDriver on the bundled 8-GPU topology, served by a real DraRunner on a unix socket in a
// temporary kubelet root (FakeKubeClient as the API server), read by a v1 DRAResourceHealth client
// as the kubelet reads it.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "examples/dra-driver/gpu_dra_driver.h"
#include "kdp/health_file.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"

namespace kdp::example {
namespace {

using ::testing::HasSubstr;

const std::string kTopology =
    std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";

// Device name -> "<health>[:<message>]" (the wire enum's number), for one message.
using Health = std::map<std::string, std::string>;

class ExampleHealthTest : public ::testing::Test {
 protected:
  ExampleHealthTest() : client_(std::make_shared<testing::FakeKubeClient>()) {}

  // The driver with the health file watched as kdp::RunDraDriver() watches its --health-file.
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> MakeDriver() {
    absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver = NewGpuDraDriver(
        {.gpus = {.topology_xml = kTopology}, .cdi_root = dir_.Path("cdi"), .node_name = "node-a"});
    if (!driver.ok()) return driver;
    absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watcher =
        HealthFileWatcher::Watch(HealthFile(), **driver);
    if (!watcher.ok()) return watcher.status();
    watcher_ = *std::move(watcher);
    return driver;
  }

  void StartRunner(std::unique_ptr<CdiDraDriver> driver) {
    absl::StatusOr<std::unique_ptr<DraRunner>> runner = internal::CreateDraRunnerWithClient(
        {.kubelet_root = dir_.path(), .node_name = "node-a", .publish_resource_slices = false},
        std::move(driver), client_);
    ASSERT_TRUE(runner.ok()) << runner.status();
    ASSERT_TRUE((*runner)->Start().ok());
    runner_ = *std::move(runner);
    stub_ = ::v1::DRAResourceHealth::NewStub(
        DialUnixSocket(dir_.Path("plugins/gpu.example.com/dra.sock")));
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    reader_ = stub_->NodeWatchResources(&context_, ::v1::NodeWatchResourcesRequest());
  }

  // The first message after which `done` holds, or the last one read when the stream ends first.
  template <typename Condition>
  Health ReadUntil(Condition done) {
    Health health;
    ::v1::NodeWatchResourcesResponse response;
    while (reader_->Read(&response)) {
      health.clear();
      for (const auto& device : response.devices()) {
        EXPECT_EQ(device.device().pool_name(), "node-a");
        std::string text = absl::StrCat(device.health());
        if (!device.message().empty()) absl::StrAppend(&text, ":", device.message());
        health[device.device().device_name()] = text;
      }
      if (done(health)) break;
    }
    return health;
  }

  void TearDown() override {
    if (reader_ == nullptr) return;
    runner_->Stop();  // Ends the stream.
    ::v1::NodeWatchResourcesResponse response;
    while (reader_->Read(&response)) {
    }
    (void)reader_->Finish();
  }

  std::string HealthFile() const { return dir_.Path("unhealthy"); }
  void WriteHealthFile(const std::string& text) {
    ASSERT_TRUE(WriteFileDurably(HealthFile() + ".tmp", text).ok());
    ASSERT_EQ(std::rename((HealthFile() + ".tmp").c_str(), HealthFile().c_str()), 0);
  }

  kdp::testing::TempDir dir_;
  std::shared_ptr<testing::FakeKubeClient> client_;
  std::unique_ptr<HealthFileWatcher> watcher_;
  std::unique_ptr<DraRunner> runner_;
  std::unique_ptr<::v1::DRAResourceHealth::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<::v1::NodeWatchResourcesResponse>> reader_;
};

TEST_F(ExampleHealthTest, GpusListedInTheHealthFileAreUnhealthyFromTheFirstMessage) {
  WriteHealthFile("# broken\ngpu1\ngpu3::1\n");
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver = MakeDriver();
  ASSERT_TRUE(driver.ok()) << driver.status();
  StartRunner(*std::move(driver));
  Health first = ReadUntil([](const Health&) { return true; });
  ASSERT_EQ(first.size(), 8u);
  const std::string listed = "2:listed in " + HealthFile();
  EXPECT_EQ(first["gpu0"], "1");
  EXPECT_EQ(first["gpu1"], listed);
  EXPECT_EQ(first["gpu2"], "1");
  EXPECT_EQ(first["gpu3"], listed);
}

TEST_F(ExampleHealthTest, EditsOfTheHealthFileReachTheStream) {
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver = MakeDriver();  // No file: all healthy.
  ASSERT_TRUE(driver.ok()) << driver.status();
  StartRunner(*std::move(driver));
  Health first = ReadUntil([](const Health&) { return true; });
  ASSERT_EQ(first.size(), 8u);
  for (const auto& [gpu, health] : first) EXPECT_EQ(health, "1") << gpu;

  WriteHealthFile("gpu5\n");
  Health broken = ReadUntil([](const Health& h) { return h.count("gpu5") && h.at("gpu5") != "1"; });
  EXPECT_EQ(broken["gpu5"], "2:listed in " + HealthFile());
  EXPECT_EQ(broken["gpu4"], "1");

  ASSERT_EQ(std::remove(HealthFile().c_str()), 0);  // Missing file: all healthy again.
  Health healed = ReadUntil([](const Health& h) { return h.count("gpu5") && h.at("gpu5") == "1"; });
  EXPECT_EQ(healed["gpu5"], "1");
}

TEST_F(ExampleHealthTest, AnUnreadableHealthFileFailsCreate) {
  ASSERT_TRUE(MakeDirectories(HealthFile()).ok());  // A directory cannot be read as a file.
  absl::StatusOr<std::unique_ptr<CdiDraDriver>> driver = MakeDriver();
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), HasSubstr(HealthFile()));
}

}  // namespace
}  // namespace kdp::example
