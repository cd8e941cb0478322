// DeviceHealthTracker: the kubelet's HandleWatchResourcesStream (stream messages applied to the
// health cache, the pods whose prepared claims hold a changed device reported, stream end clears
// the driver) and UpdateAllocatedResourcesStatus (entry names "claim:<name>" and
// "claim:<name>/<request>", request and subrequest filtering, resource IDs from the first CDI ID
// or <driver>/<pool>/<device>, duplicates removed, stale health Unknown, app containers only),
// over a real ClaimInfoCache and an injected clock.
#include "manager/src/dra/device_health_tracker.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::dra {
namespace {

using ::kdp::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kNamespace[] = "default";

state::Device Dev(const std::string& name, std::vector<std::string> requests,
                  std::vector<std::string> cdi_ids) {
  state::Device device;
  device.pool_name = "pool";
  device.device_name = name;
  device.request_names = std::move(requests);
  device.cdi_device_ids = std::move(cdi_ids);
  return device;
}

WatchedDeviceHealth Wire(const std::string& device, WireHealthStatus health,
                         const std::string& message = "") {
  return {.pool_name = "pool",
          .device_name = device,
          .health = health,
          .last_updated_time = 0,
          .health_check_timeout_seconds = 0,
          .message = message};
}

ResourceHealth Res(const std::string& id, const std::string& health,
                   const std::string& message = "") {
  return {.resource_id = id, .health = health, .message = message};
}

class Notified {
 public:
  void Record(std::vector<std::string> uids) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(uids));
  }
  std::vector<std::vector<std::string>> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<std::string>> calls_ ABSL_GUARDED_BY(mu_);
};

class DeviceHealthTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cache = ClaimInfoCache::Create(dir_.path());
    ASSERT_TRUE(cache.ok()) << cache.status();
    claims_ = *std::move(cache);
    tracker_ = std::make_unique<DeviceHealthTracker>(DeviceHealthTrackerOptions{
        .claims = claims_.get(),
        .health = {.state_file = dir_.Path(kHealthStateFileName), .clock = [this] { return now_; }},
        .on_pods_changed = [this](std::vector<std::string> uids) {
          notified_.Record(std::move(uids));
        }});
  }

  void AddClaim(const std::string& name, std::vector<std::string> pods,
                std::map<std::string, std::vector<state::Device>> devices) {
    state::ClaimInfoState claim;
    claim.claim_uid = name + "-uid";
    claim.claim_name = name;
    claim.namespace_ = kNamespace;
    claim.pod_uids.insert(pods.begin(), pods.end());
    for (auto& [driver, list] : devices) claim.driver_state[driver].devices = std::move(list);
    ASSERT_TRUE(claims_
                    ->WithLock([&](ClaimInfoCache::Contents& contents) {
                      contents.Add(ClaimInfo::FromState(claim));
                      return absl::OkStatus();
                    })
                    .ok());
  }

  TempDir dir_;
  absl::Time now_ = absl::FromUnixSeconds(1750000000);
  std::unique_ptr<ClaimInfoCache> claims_;
  Notified notified_;
  std::unique_ptr<DeviceHealthTracker> tracker_;
};

TEST_F(DeviceHealthTrackerTest, ChangedDevicesNotifyThePodsUsingThem) {
  AddClaim("a", {"pod-2", "pod-1"}, {{kDriver, {Dev("gpu-0", {}, {})}}});
  AddClaim("b", {"pod-3"}, {{kDriver, {Dev("gpu-1", {}, {})}}});
  // Same device name, other driver: not affected.
  AddClaim("c", {"pod-4"}, {{"other.example.com", {Dev("gpu-0", {}, {})}}});

  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kHealthy)});
  EXPECT_THAT(notified_.calls(), ElementsAre(ElementsAre("pod-1", "pod-2")));
  // Nothing changed: nobody is told.
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kHealthy)});
  EXPECT_EQ(notified_.calls().size(), 1u);
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kHealthy),
                                         Wire("gpu-1", WireHealthStatus::kUnhealthy, "ECC")});
  EXPECT_THAT(notified_.calls()[1], ElementsAre("pod-3"));
  // A device nobody uses changes: no notification.
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kHealthy),
                                         Wire("gpu-1", WireHealthStatus::kUnhealthy, "ECC"),
                                         Wire("gpu-9", WireHealthStatus::kUnhealthy)});
  EXPECT_EQ(notified_.calls().size(), 2u);
}

TEST_F(DeviceHealthTrackerTest, StreamEndForgetsTheDriver) {
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kUnhealthy, "ECC")});
  EXPECT_EQ(tracker_->cache().GetHealthInfo(kDriver, "pool", "gpu-0").health,
            DeviceHealthStatus::kUnhealthy);
  tracker_->HandleHealthStreamEnd(kDriver);
  EXPECT_EQ(tracker_->cache().GetHealthInfo(kDriver, "pool", "gpu-0").health,
            DeviceHealthStatus::kUnknown);
  EXPECT_THAT(tracker_->Summary(), IsEmpty());
}

TEST_F(DeviceHealthTrackerTest, AllocatedResourcesStatusPerContainerClaim) {
  AddClaim("shared-claim", {"pod-uid"},
           {{kDriver,
             {Dev("gpu-0", {"req-a"}, {"vendor.com/gpu=gpu-0", "vendor.com/gpu=common"}),
              Dev("gpu-1", {"req-b"}, {}), Dev("gpu-2", {}, {"vendor.com/gpu=gpu-2"}),
              // Same first CDI ID as gpu-0: listed once.
              Dev("gpu-3", {"req-a"}, {"vendor.com/gpu=gpu-0"})}},
            {"nic.example.com", {Dev("nic-0", {}, {})}}});
  AddClaim("pod-gen-abc", {"pod-uid"}, {{kDriver, {Dev("gpu-7", {}, {})}}});
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kUnhealthy, "ECC"),
                                         Wire("gpu-1", WireHealthStatus::kHealthy),
                                         Wire("gpu-7", WireHealthStatus::kHealthy)});

  Pod pod;
  pod.namespace_ = kNamespace;
  pod.name = "p";
  pod.uid = "pod-uid";
  auto pod_claim = [](const std::string& name, const std::string& claim, const std::string& templ) {
    PodResourceClaim c;
    c.name = name;
    c.resource_claim_name = claim;
    c.resource_claim_template_name = templ;
    return c;
  };
  pod.resource_claims = {pod_claim("gpu", "shared-claim", ""), pod_claim("tmpl", "", "t"),
                         pod_claim("not-yet", "", "t"),
                         pod_claim("unprepared", "nobody-prepared-me", "")};
  pod.resource_claim_statuses = {{"tmpl", "pod-gen-abc"}};
  auto container = [](const std::string& name, std::vector<ContainerClaim> claims) {
    Container c;
    c.name = name;
    c.claims = std::move(claims);
    return c;
  };
  pod.containers = {container("whole", {{.name = "gpu", .request = ""}}),
                    container("req-a", {{.name = "gpu", .request = "req-a"}}),
                    container("sub", {{.name = "gpu", .request = "req-b/small"},
                                      {.name = "tmpl", .request = ""}}),
                    container("nothing", {{.name = "not-yet", .request = ""},
                                          {.name = "unprepared", .request = ""}}),
                    container("no-claims", {})};
  pod.init_containers = {container("init", {{.name = "gpu", .request = ""}})};

  AllocatedResourcesStatus status = tracker_->UpdateAllocatedResourcesStatus(pod);
  const ResourceHealth gpu0 = Res("vendor.com/gpu=gpu-0", "Unhealthy", "ECC");
  const ResourceHealth gpu1 = Res("gpu.example.com/pool/gpu-1", "Healthy");
  const ResourceHealth gpu2 = Res("vendor.com/gpu=gpu-2", "Unknown");
  const ResourceHealth nic0 = Res("nic.example.com/pool/nic-0", "Unknown");
  EXPECT_EQ(status, (AllocatedResourcesStatus{
                        {"whole", {{.name = "claim:gpu", .resources = {gpu0, gpu1, gpu2, nic0}}}},
                        {"req-a", {{.name = "claim:gpu/req-a", .resources = {gpu0, gpu2, nic0}}}},
                        {"sub",
                         {{.name = "claim:gpu/req-b/small", .resources = {gpu1, gpu2, nic0}},
                          {.name = "claim:tmpl",
                           .resources = {Res("gpu.example.com/pool/gpu-7", "Healthy")}}}}}));

  // Once the reports are older than their timeout, every device reads Unknown, no message.
  now_ += absl::Seconds(31);
  status = tracker_->UpdateAllocatedResourcesStatus(pod);
  ASSERT_EQ(status.at("req-a").size(), 1u);
  EXPECT_EQ(status.at("req-a")[0].resources[0], Res("vendor.com/gpu=gpu-0", "Unknown"));
}

TEST_F(DeviceHealthTrackerTest, SummaryShowsWhatAPodWouldSee) {
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-1", WireHealthStatus::kUnhealthy, "ECC"),
                                         Wire("gpu-0", WireHealthStatus::kHealthy)});
  WatchedDeviceHealth long_timeout = Wire("nic-0", WireHealthStatus::kUnhealthy, "link down");
  long_timeout.health_check_timeout_seconds = 120;
  tracker_->HandleHealthUpdate("nic.example.com", {long_timeout});
  const absl::Time reported = now_;
  now_ += absl::Seconds(60);
  EXPECT_THAT(tracker_->Summary(),
              ElementsAre(DeviceHealthSummary{.driver = kDriver,
                                              .pool = "pool",
                                              .device = "gpu-0",
                                              .health = "Unknown",
                                              .message = "",
                                              .last_updated = reported,
                                              .health_check_timeout = absl::Seconds(30)},
                          DeviceHealthSummary{.driver = kDriver,
                                              .pool = "pool",
                                              .device = "gpu-1",
                                              .health = "Unknown",
                                              .message = "",
                                              .last_updated = reported,
                                              .health_check_timeout = absl::Seconds(30)},
                          DeviceHealthSummary{.driver = "nic.example.com",
                                              .pool = "pool",
                                              .device = "nic-0",
                                              .health = "Unhealthy",
                                              .message = "link down",
                                              .last_updated = reported,
                                              .health_check_timeout = absl::Seconds(120)}));
}

TEST_F(DeviceHealthTrackerTest, HealthSurvivesARestart) {
  tracker_->HandleHealthUpdate(kDriver, {Wire("gpu-0", WireHealthStatus::kUnhealthy, "ECC")});
  DeviceHealthTracker restarted(
      {.claims = claims_.get(),
       .health = {.state_file = dir_.Path(kHealthStateFileName), .clock = [this] { return now_; }},
       .on_pods_changed = {}});
  EXPECT_EQ(restarted.cache().GetHealthInfo(kDriver, "pool", "gpu-0").message, "ECC");
}

}  // namespace
}  // namespace kdp::manager::dra
