// kdp::HealthFileWatcher (kdp/health_file.h): parsing, polling, the thread, and Watch() applied to
// a DevicePlugin and to a DraDriver.
#include "kdp/health_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "kdp/dra_driver.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  ASSERT_TRUE(file.good()) << path;
}

TEST(ParseHealthFile, IgnoresCommentsBlankLinesAndWhitespace) {
  EXPECT_THAT(ParseHealthFile("gpu1\n# gpu2 is fine\n\n  gpu3 \t\r\ngpu1\n  # gpu4\n"),
              UnorderedElementsAre("gpu1", "gpu3"));
  EXPECT_THAT(ParseHealthFile(""), IsEmpty());
}

TEST(ParseHealthFile, ReplicaIdNamesItsGpu) {
  EXPECT_THAT(ParseHealthFile("gpu3::1\ngpu3::2\ngpu4"), UnorderedElementsAre("gpu3", "gpu4"));
  EXPECT_EQ(PhysicalId("gpu3::1"), "gpu3");
  EXPECT_EQ(PhysicalId("gpu3"), "gpu3");
}

// Records every report of a HealthFileWatcher.
class Reports {
 public:
  HealthFileWatcher::Callback Callback() {
    return [this](const std::set<std::string>& unhealthy) {
      absl::MutexLock lock(&mu_);
      reports_.push_back(unhealthy);
    };
  }
  std::vector<std::set<std::string>> Get() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::set<std::string>> reports_ ABSL_GUARDED_BY(mu_);
};

TEST(HealthFileWatcher, PollReportsOnlyChangesAndMissingFileIsAllHealthy) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  Reports reports;
  HealthFileWatcher watcher(path, reports.Callback());

  ASSERT_TRUE(watcher.Poll().ok());  // Missing: all healthy, as before: no report.
  WriteText(path, "gpu1\ngpu3\n");
  ASSERT_TRUE(watcher.Poll().ok());
  ASSERT_TRUE(watcher.Poll().ok());
  WriteText(path, "gpu3\n# gpu1 repaired\ngpu1\n");  // Same set: no report.
  ASSERT_TRUE(watcher.Poll().ok());
  WriteText(path, "gpu3\n");
  ASSERT_TRUE(watcher.Poll().ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_TRUE(watcher.Poll().ok());

  EXPECT_THAT(reports.Get(), ElementsAre(std::set<std::string>{"gpu1", "gpu3"},
                                         std::set<std::string>{"gpu3"}, IsEmpty()));
}

TEST(HealthFileWatcher, UnreadableFileIsAnErrorAndKeepsTheLastState) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  Reports reports;
  HealthFileWatcher watcher(path, reports.Callback());
  WriteText(path, "gpu2\n");
  ASSERT_TRUE(watcher.Poll().ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);  // A directory cannot be read, even by root.

  absl::Status status = watcher.Poll();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(reports.Get(), ElementsAre(std::set<std::string>{"gpu2"}));
}

TEST(HealthFileWatcher, ThreadReportsEditsUntilStopped) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  absl::Notification saw_gpu2;
  HealthFileWatcher watcher(path, [&](const std::set<std::string>& unhealthy) {
    if (unhealthy == std::set<std::string>{"gpu2"} && !saw_gpu2.HasBeenNotified()) {
      saw_gpu2.Notify();
    }
  });
  ASSERT_TRUE(watcher.Start(absl::Milliseconds(5)).ok());
  EXPECT_EQ(watcher.Start().code(), absl::StatusCode::kFailedPrecondition);
  WriteText(path, "gpu2\n");
  EXPECT_TRUE(saw_gpu2.WaitForNotificationWithTimeout(absl::Seconds(30)));
  watcher.Stop();
  watcher.Stop();  // Idempotent.
  EXPECT_EQ(watcher.Start().code(), absl::StatusCode::kFailedPrecondition);
}

// A plugin with two GPUs of two replicas each.
class TwoGpus : public DevicePlugin {
 public:
  TwoGpus() : DevicePlugin("example.com/gpu") {}
  absl::StatusOr<std::vector<Device>> Discover() override {
    std::vector<Device> devices;
    for (const char* gpu : {"gpu0", "gpu1"}) {
      for (const std::string& id : ReplicaIds(gpu, 2)) devices.push_back({.id = id});
    }
    return devices;
  }
};

std::vector<std::string> UnhealthyIds(const DevicePlugin& plugin) {
  std::vector<std::string> ids;
  for (const Device& device : plugin.Devices()) {
    if (device.health == Health::kUnhealthy) ids.push_back(device.id);
  }
  return ids;
}

TEST(HealthFileWatcher, WatchAppliesTheFileToAPluginsReplicasAndOutlivesIt) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  WriteText(path, "gpu1\n");
  auto plugin = std::make_unique<TwoGpus>();
  // Applied before discovery: remembered until the devices exist.
  absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watcher =
      HealthFileWatcher::Watch(path, *plugin, absl::Hours(1));
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  ASSERT_TRUE(plugin->Publish().ok());
  EXPECT_THAT(UnhealthyIds(*plugin), ElementsAre("gpu1::0", "gpu1::1"));
  WriteText(path, "gpu0::1\n");  // A replica's ID names its GPU.
  ASSERT_TRUE((*watcher)->Poll().ok());
  EXPECT_THAT(UnhealthyIds(*plugin), ElementsAre("gpu0::0", "gpu0::1"));
  plugin.reset();  // The watcher holds the device state, not the plugin.
  WriteText(path, "gpu1\n");
  EXPECT_TRUE((*watcher)->Poll().ok());
}

TEST(HealthFileWatcher, WatchFailsOnAnUnreadableFile) {
  kdp::testing::TempDir dir;
  TwoGpus plugin;
  EXPECT_EQ(HealthFileWatcher::Watch(dir.path(), plugin).status().code(),
            absl::StatusCode::kUnavailable);
}

class OneGpuDriver : public DraDriver {
 public:
  OneGpuDriver() : DraDriver("gpu.example.com") {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override { return {}; }
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
    return {};
  }
  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    return std::vector<DraDevice>{{.name = "gpu0"}, {.name = "gpu1"}};
  }
};

TEST(HealthFileWatcher, WatchReportsADriversListedDevicesUnhealthy) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("unhealthy");
  WriteText(path, "gpu1\ngpu9\n");
  auto driver = std::make_unique<OneGpuDriver>();
  absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watcher =
      HealthFileWatcher::Watch(path, *driver, absl::Hours(1));
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  // No list was read: the file's IDs are remembered until one is (kdp/health.h; what the
  // health stream then reports is tested in dra_health_service_test.cc).
  ASSERT_TRUE(driver->Devices().empty());
  EXPECT_TRUE(driver->SetUnhealthyDevices({"gpu0"}, "listed").ok());
  driver.reset();
  EXPECT_TRUE((*watcher)->Poll().ok());
}

}  // namespace
}  // namespace kdp
