// HealthInfoCache: the kubelet's healthinfo_test.go scenarios (reads of unknown and stale
// devices, full-list updates, timed-out unreported devices, per-device timeouts, messages,
// clearDriver) and the dra_health_state file (Go's bytes, written only on change, broken files
// ignored), with an injected clock.
#include "manager/src/dra/health_info.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::dra {
namespace {

using ::kdp::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kGpuDriver[] = "gpu.example.com";
constexpr char kPool[] = "node-a";

DeviceHealth Device(const std::string& name, DeviceHealthStatus health,
                    const std::string& message = "",
                    absl::Duration timeout = kDefaultHealthTimeout) {
  DeviceHealth device;
  device.pool_name = kPool;
  device.device_name = name;
  device.health = health;
  device.health_check_timeout = timeout;
  device.message = message;
  return device;
}

std::vector<std::string> Names(const std::vector<DeviceHealth>& devices) {
  std::vector<std::string> names;
  for (const DeviceHealth& device : devices) names.push_back(device.device_name);
  return names;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

class HealthInfoCacheTest : public ::testing::Test {
 protected:
  HealthInfoCacheOptions Options() {
    return {.state_file = dir_.Path(kHealthStateFileName), .clock = [this] { return now_; }};
  }
  void Advance(absl::Duration d) { now_ += d; }

  TempDir dir_;
  absl::Time now_ = absl::FromUnixSeconds(1750000000);
};

TEST_F(HealthInfoCacheTest, NeverReportedDeviceIsUnknown) {
  HealthInfoCache cache(Options());
  DeviceHealth health = cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0");
  EXPECT_EQ(health.health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(health.pool_name, kPool);
  EXPECT_EQ(health.device_name, "gpu-0");
  EXPECT_FALSE(Exists(dir_.Path(kHealthStateFileName)));
}

TEST_F(HealthInfoCacheTest, ReportIsStoredWithTheCachesClockAndChangesAreReturned) {
  HealthInfoCache cache(Options());
  DeviceHealth reported = Device("gpu-0", DeviceHealthStatus::kHealthy, "ok");
  reported.last_updated = absl::FromUnixSeconds(5);  // the driver's time is not kept
  auto changed = cache.UpdateHealthInfo(
      kGpuDriver, {reported, Device("gpu-1", DeviceHealthStatus::kUnhealthy, "ECC")});
  EXPECT_THAT(Names(changed), ElementsAre("gpu-0", "gpu-1"));
  EXPECT_EQ(changed[0].last_updated, now_);
  DeviceHealth got = cache.GetHealthInfo(kGpuDriver, kPool, "gpu-1");
  EXPECT_EQ(got.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(got.message, "ECC");
  EXPECT_EQ(got.last_updated, now_);
  EXPECT_EQ(cache.GetHealthInfo("other.example.com", kPool, "gpu-1").health,
            DeviceHealthStatus::kUnknown);

  // The same report again: nothing changed, but the time is refreshed.
  Advance(absl::Seconds(20));
  EXPECT_THAT(
      cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy, "ok"),
                                          Device("gpu-1", DeviceHealthStatus::kUnhealthy, "ECC")}),
      IsEmpty());
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").last_updated, now_);
}

TEST_F(HealthInfoCacheTest, HealthMessageAndTimeoutChangesCount) {
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  EXPECT_THAT(
      Names(cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kUnhealthy)})),
      ElementsAre("gpu-0"));
  EXPECT_THAT(Names(cache.UpdateHealthInfo(
                  kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kUnhealthy, "fan")})),
              ElementsAre("gpu-0"));
  EXPECT_THAT(
      Names(cache.UpdateHealthInfo(
          kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kUnhealthy, "fan", absl::Seconds(90))})),
      ElementsAre("gpu-0"));
}

TEST_F(HealthInfoCacheTest, StaleEntryReadsUnknownWithoutMessage) {
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver,
                         {Device("gpu-0", DeviceHealthStatus::kUnhealthy, "ECC"),
                          Device("gpu-1", DeviceHealthStatus::kHealthy, "", absl::Seconds(60))});
  Advance(absl::Seconds(30));  // exactly the timeout: still counts
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health, DeviceHealthStatus::kUnhealthy);
  Advance(absl::Seconds(1));
  DeviceHealth stale = cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0");
  EXPECT_EQ(stale.health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(stale.message, "");
  // The device's own timeout (health_check_timeout_seconds) applies.
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-1").health, DeviceHealthStatus::kHealthy);
  Advance(absl::Seconds(30));
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-1").health, DeviceHealthStatus::kUnknown);
}

TEST_F(HealthInfoCacheTest, ZeroTimeoutMeansTheDefault) {
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver,
                         {Device("gpu-0", DeviceHealthStatus::kHealthy, "", absl::ZeroDuration())});
  Advance(absl::Seconds(30));
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health, DeviceHealthStatus::kHealthy);
  Advance(absl::Seconds(1));
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health, DeviceHealthStatus::kUnknown);
}

TEST_F(HealthInfoCacheTest, UnreportedDeviceTurnsUnknownOnlyOnceItsTimeoutPassed) {
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy),
                                      Device("gpu-1", DeviceHealthStatus::kUnhealthy, "ECC")});
  Advance(absl::Seconds(20));
  // gpu-1 is missing from the report but not timed out yet: kept as it was.
  EXPECT_THAT(cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)}),
              IsEmpty());
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-1").health, DeviceHealthStatus::kUnhealthy);
  Advance(absl::Seconds(11));  // 31 s since gpu-1 was last reported
  auto changed =
      cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  ASSERT_THAT(changed, SizeIs(1));
  EXPECT_EQ(changed[0].device_name, "gpu-1");
  EXPECT_EQ(changed[0].health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(changed[0].message, "");
  EXPECT_EQ(changed[0].last_updated, now_);
  // Already Unknown: not reported as changed again.
  Advance(absl::Seconds(40));
  EXPECT_THAT(cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)}),
              IsEmpty());
  EXPECT_THAT(cache.Snapshot().at(kGpuDriver), SizeIs(2));  // the entry stays, as in the kubelet
}

TEST_F(HealthInfoCacheTest, ClearDriverForgetsOnlyThatDriver) {
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  cache.UpdateHealthInfo("nic.example.com", {Device("nic-0", DeviceHealthStatus::kHealthy)});
  cache.ClearDriver(kGpuDriver);
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache.GetHealthInfo("nic.example.com", kPool, "nic-0").health,
            DeviceHealthStatus::kHealthy);
  HealthInfoCache reloaded(Options());
  EXPECT_FALSE(reloaded.Snapshot().contains(kGpuDriver));
  EXPECT_TRUE(reloaded.Snapshot().contains("nic.example.com"));
}

TEST_F(HealthInfoCacheTest, FileHasTheKubeletsLayout) {
  now_ = absl::FromUnixNanos(int64_t{1750000000} * 1000000000 + 123456700);
  HealthInfoCache cache(Options());
  cache.UpdateHealthInfo(kGpuDriver,
                         {Device("gpu-1", DeviceHealthStatus::kUnhealthy, "ECC <3>"),
                          Device("gpu-0", DeviceHealthStatus::kHealthy, "", absl::Seconds(60))});
  absl::StatusOr<std::string> file = ReadFile(dir_.Path(kHealthStateFileName));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file,
            "{\"gpu.example.com\":{\"Devices\":{"
            "\"node-a/gpu-0\":{\"PoolName\":\"node-a\",\"DeviceName\":\"gpu-0\",\"Health\":"
            "\"Healthy\",\"LastUpdated\":\"2025-06-15T15:06:40.1234567Z\",\"HealthCheckTimeout\":"
            "60000000000,\"Message\":\"\"},"
            "\"node-a/gpu-1\":{\"PoolName\":\"node-a\",\"DeviceName\":\"gpu-1\",\"Health\":"
            "\"Unhealthy\",\"LastUpdated\":\"2025-06-15T15:06:40.1234567Z\",\"HealthCheckTimeout\":"
            "30000000000,\"Message\":\"ECC \\u003c3\\u003e\"}}}}");
}

TEST_F(HealthInfoCacheTest, RestartRestoresTheReportedHealth) {
  {
    HealthInfoCache cache(Options());
    cache.UpdateHealthInfo(
        kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kUnhealthy, "ECC", absl::Seconds(45))});
  }
  Advance(absl::Seconds(40));
  HealthInfoCache restarted(Options());
  DeviceHealth got = restarted.GetHealthInfo(kGpuDriver, kPool, "gpu-0");
  EXPECT_EQ(got.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(got.message, "ECC");
  EXPECT_EQ(got.health_check_timeout, absl::Seconds(45));
  EXPECT_EQ(got.last_updated, now_ - absl::Seconds(40));
  Advance(absl::Seconds(6));
  EXPECT_EQ(restarted.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health,
            DeviceHealthStatus::kUnknown);
}

TEST_F(HealthInfoCacheTest, FileIsWrittenOnlyWhenSomethingChanged) {
  HealthInfoCache cache(Options());
  const std::string path = dir_.Path(kHealthStateFileName);
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  ASSERT_TRUE(Exists(path));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  cache.ClearDriver("never-reported.example.com");
  EXPECT_FALSE(Exists(path));
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kUnhealthy)});
  EXPECT_TRUE(Exists(path));
  EXPECT_EQ(cache.save_failures(), 0);
}

TEST_F(HealthInfoCacheTest, BrokenFileIsIgnoredAndReplaced) {
  const std::string path = dir_.Path(kHealthStateFileName);
  ASSERT_TRUE(WriteFileDurably(path, "{\"gpu.example.com\": [").ok());
  HealthInfoCache cache(Options());
  EXPECT_THAT(cache.Snapshot(), IsEmpty());
  cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  HealthInfoCache reloaded(Options());
  EXPECT_EQ(reloaded.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health,
            DeviceHealthStatus::kHealthy);
}

TEST_F(HealthInfoCacheTest, FailedWriteIsCounted) {
  HealthInfoCache cache(
      {.state_file = dir_.Path("missing-dir/dra_health_state"), .clock = [this] { return now_; }});
  auto changed =
      cache.UpdateHealthInfo(kGpuDriver, {Device("gpu-0", DeviceHealthStatus::kHealthy)});
  EXPECT_THAT(changed, SizeIs(1));  // the cache itself is updated
  EXPECT_EQ(cache.save_failures(), 1);
  EXPECT_EQ(cache.GetHealthInfo(kGpuDriver, kPool, "gpu-0").health, DeviceHealthStatus::kHealthy);
}

TEST(DecodeHealthState, ReadsWhatGoWritesInAnyZone) {
  auto decoded = DecodeHealthState(
      "{\"d\":{\"Devices\":{\"p/x\":{\"PoolName\":\"p\",\"DeviceName\":\"x\",\"Health\":"
      "\"Unhealthy\",\"LastUpdated\":\"2025-06-15T17:06:40.5+02:00\",\"HealthCheckTimeout\":0}}},"
      "\"e\":{\"Devices\":null},\"f\":{\"Devices\":{\"p/y\":{\"Health\":\"Sick\"}}}}");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const DeviceHealth& x = decoded->at("d").at("p/x");
  EXPECT_EQ(x.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(x.last_updated, absl::FromUnixMillis(int64_t{1750000000500}));
  EXPECT_EQ(x.health_check_timeout, absl::ZeroDuration());
  EXPECT_EQ(x.message, "");
  EXPECT_THAT(decoded->at("e"), IsEmpty());
  EXPECT_EQ(decoded->at("f").at("p/y").health, DeviceHealthStatus::kUnknown);
  EXPECT_TRUE(DecodeHealthState("null").ok());
  EXPECT_EQ(DecodeHealthState("[]").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeHealthState("{\"d\":{\"Devices\":{\"k\":{\"LastUpdated\":\"yesterday\"}}}}")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TruncateHealthMessage, CutsTo1021BytesAndAnEllipsis) {
  EXPECT_EQ(TruncateHealthMessage(std::string(1024, 'a')), std::string(1024, 'a'));
  std::string cut = TruncateHealthMessage(std::string(1025, 'b'));
  EXPECT_EQ(cut.size(), 1024u);
  EXPECT_EQ(cut, std::string(1021, 'b') + "...");
}

TEST(BuildDeviceHealth, AppliesTheKubeletsDefaults) {
  WatchedDeviceHealth wire{.pool_name = "p",
                           .device_name = "d",
                           .health = WireHealthStatus::kUnhealthy,
                           .last_updated_time = 1750000000,
                           .health_check_timeout_seconds = 0,
                           .message = std::string(2000, 'm')};
  DeviceHealth device = BuildDeviceHealth(wire);
  EXPECT_EQ(device.pool_name, "p");
  EXPECT_EQ(device.device_name, "d");
  EXPECT_EQ(device.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(device.health_check_timeout, absl::Seconds(30));
  EXPECT_EQ(device.message.size(), kResourceHealthMessageMaxLength);
  wire.health_check_timeout_seconds = -5;
  EXPECT_EQ(BuildDeviceHealth(wire).health_check_timeout, absl::Seconds(30));
  wire.health_check_timeout_seconds = 7;
  wire.health = WireHealthStatus::kHealthy;
  EXPECT_EQ(BuildDeviceHealth(wire).health_check_timeout, absl::Seconds(7));
  EXPECT_EQ(BuildDeviceHealth(wire).health, DeviceHealthStatus::kHealthy);
  wire.health = WireHealthStatus::kUnknown;
  EXPECT_EQ(BuildDeviceHealth(wire).health, DeviceHealthStatus::kUnknown);
  EXPECT_STREQ(DeviceHealthStatusName(DeviceHealthStatus::kUnhealthy), "Unhealthy");
}

}  // namespace
}  // namespace kdp::manager::dra
