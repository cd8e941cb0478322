#include "sdk/src/deviceplugin/device_state.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"

namespace kdp::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

Device MakeDevice(const std::string& id, Health health = Health::kHealthy) {
  Device device;
  device.id = id;
  device.health = health;
  return device;
}

// "id:H" or "id:U" for each device, in order: easy to compare in assertions.
std::vector<std::string> Summary(const std::vector<Device>& devices) {
  std::vector<std::string> out;
  for (const Device& device : devices) {
    out.push_back(device.id + (device.health == Health::kHealthy ? ":H" : ":U"));
  }
  return out;
}

// Records every snapshot it receives.
class RecordingSubscriber final : public DeviceSubscriber {
 public:
  void OnDevices(DeviceSnapshot snapshot) override {
    absl::MutexLock lock(&mu_);
    received_.push_back(Summary(snapshot->devices));
  }

  std::vector<std::vector<std::string>> received() const {
    absl::MutexLock lock(&mu_);
    return received_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<std::string>> received_ ABSL_GUARDED_BY(mu_);
};

TEST(DeviceState, ReplacePublishesTheInventory) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b", Health::kUnhealthy)}).ok());
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H", "b:U"));
  EXPECT_EQ(state.generation(), 1);
}

TEST(DeviceState, ReplaceRejectsAnEmptyIdAndKeepsThePreviousInventory) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  absl::Status status = state.Replace({MakeDevice("b"), MakeDevice("")});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("example.com/gpu"));
  EXPECT_THAT(status.message(), HasSubstr("empty ID"));
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H"));
  EXPECT_EQ(state.generation(), 1);
}

TEST(DeviceState, ReplaceRejectsDuplicateIdsAndKeepsThePreviousInventory) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  absl::Status status = state.Replace({MakeDevice("b"), MakeDevice("c"), MakeDevice("b")});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("\"b\""));
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H"));
  EXPECT_EQ(state.generation(), 1);
}

TEST(DeviceState, HealthOverridesSurviveReplace) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b")}).ok());
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kUnhealthy, "").ok());
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b"), MakeDevice("c")}).ok());
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:U", "b:H", "c:H"));
}

TEST(DeviceState, OverrideWinsOverDiscoveredHealth) {
  DeviceState state("example.com/gpu");
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kHealthy, "").ok());
  ASSERT_TRUE(state.Replace({MakeDevice("a", Health::kUnhealthy)}).ok());
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H"));
}

TEST(DeviceState, OverridesForUnknownIdsApplyWhenDiscoveredLater) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  EXPECT_TRUE(state.SetHealth({"later"}, Health::kUnhealthy, "").ok());
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H"));
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("later")}).ok());
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:H", "later:U"));
}

TEST(DeviceState, UnchangedHealthPublishesNothing) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b", Health::kUnhealthy)}).ok());
  RecordingSubscriber subscriber;
  state.Subscribe(&subscriber);
  const int generation = state.generation();

  EXPECT_TRUE(state.SetHealth({"a"}, Health::kHealthy, "").ok());
  EXPECT_TRUE(state.SetHealth({"b"}, Health::kUnhealthy, "").ok());
  EXPECT_TRUE(state.SetHealth({"unknown"}, Health::kUnhealthy, "").ok());
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b", Health::kUnhealthy)}).ok());

  EXPECT_EQ(state.generation(), generation);
  EXPECT_THAT(subscriber.received(), SizeIs(1));  // Only the snapshot from Subscribe.
  state.Unsubscribe(&subscriber);
}

TEST(DeviceState, SubscribeDeliversTheCurrentSnapshotFirstThenEachChange) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b")}).ok());
  RecordingSubscriber subscriber;
  state.Subscribe(&subscriber);
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kUnhealthy, "").ok());
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b"), MakeDevice("c")}).ok());
  EXPECT_TRUE(state.SetHealth({"a", "c"}, Health::kUnhealthy, "").ok());

  EXPECT_THAT(subscriber.received(),
              ElementsAre(ElementsAre("a:H", "b:H"), ElementsAre("a:U", "b:H"),
                          ElementsAre("a:U", "b:H", "c:H"), ElementsAre("a:U", "b:H", "c:U")));
  state.Unsubscribe(&subscriber);
}

TEST(DeviceState, SubscribeBeforeAnyReplaceDeliversAnEmptyList) {
  DeviceState state("example.com/gpu");
  RecordingSubscriber subscriber;
  state.Subscribe(&subscriber);
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  EXPECT_THAT(subscriber.received(), ElementsAre(IsEmpty(), ElementsAre("a:H")));
  state.Unsubscribe(&subscriber);
}

TEST(DeviceState, EverySubscriberReceivesEachChange) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  RecordingSubscriber first;
  RecordingSubscriber second;
  state.Subscribe(&first);
  state.Subscribe(&second);
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kUnhealthy, "").ok());
  EXPECT_THAT(first.received(), ElementsAre(ElementsAre("a:H"), ElementsAre("a:U")));
  EXPECT_THAT(second.received(), ElementsAre(ElementsAre("a:H"), ElementsAre("a:U")));
  state.Unsubscribe(&first);
  state.Unsubscribe(&second);
}

TEST(DeviceState, UnsubscribeStopsDelivery) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  RecordingSubscriber gone;
  RecordingSubscriber staying;
  state.Subscribe(&gone);
  state.Subscribe(&staying);
  state.Unsubscribe(&gone);
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kUnhealthy, "").ok());
  ASSERT_TRUE(state.Replace({MakeDevice("a"), MakeDevice("b")}).ok());

  EXPECT_THAT(gone.received(), ElementsAre(ElementsAre("a:H")));
  EXPECT_THAT(staying.received(), SizeIs(3));
  state.Unsubscribe(&staying);
}

TEST(DeviceState, SnapshotsAreImmutableAcrossChanges) {
  DeviceState state("example.com/gpu");
  ASSERT_TRUE(state.Replace({MakeDevice("a")}).ok());
  DeviceSnapshot before = state.Snapshot();
  EXPECT_TRUE(state.SetHealth({"a"}, Health::kUnhealthy, "").ok());
  EXPECT_THAT(Summary(before->devices), ElementsAre("a:H"));
  EXPECT_THAT(Summary(state.Snapshot()->devices), ElementsAre("a:U"));
}

}  // namespace
}  // namespace kdp::internal
