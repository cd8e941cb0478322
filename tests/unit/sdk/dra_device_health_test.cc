#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sdk/src/dra/device_health.h"

namespace kdp::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<DraDevice> Named(const std::vector<std::string>& names) {
  std::vector<DraDevice> devices;
  for (const std::string& name : names) {
    devices.push_back(DraDevice{.name = name, .attributes = {}, .capacity = {}});
  }
  return devices;
}

DeviceHealthEntry Entry(std::string device, Health health, std::string message = "") {
  return {.device = std::move(device), .health = health, .message = std::move(message)};
}

class CountingSubscriber final : public DeviceHealthSubscriber {
 public:
  void OnHealthChanged() override { ++calls; }
  int calls = 0;  // Called under the table's lock; read by the test thread only after it.
};

absl::Status SetOne(DeviceHealthTable& table, std::string device, Health health,
                    std::string message) {
  return table.Set(absl::MakeConstSpan(&device, 1), health, message);
}

TEST(DeviceHealthTable, PublishedDevicesStartHealthyInNameOrder) {
  DeviceHealthTable table("gpu.example.com");
  EXPECT_THAT(table.Snapshot(), IsEmpty());
  table.SetDevices(Named({"gpu-1", "gpu-0"}));
  EXPECT_THAT(table.Snapshot(),
              ElementsAre(Entry("gpu-0", Health::kHealthy), Entry("gpu-1", Health::kHealthy)));
}

TEST(DeviceHealthTable, HealthSetHoldsAcrossListsRemovedDevicesDropFromTheReport) {
  DeviceHealthTable table("gpu.example.com");
  table.SetDevices(Named({"gpu-0", "gpu-1"}));
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnhealthy, "ECC errors").ok());
  ASSERT_TRUE(SetOne(table, "gpu-1", Health::kUnhealthy, "fan").ok());
  table.SetDevices(Named({"gpu-0", "gpu-2"}));
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-0", Health::kUnhealthy, "ECC errors"),
                                            Entry("gpu-2", Health::kHealthy)));
  // A device that comes back has what was set for it (kdp/health.h: the rule DevicePlugin has).
  table.SetDevices(Named({"gpu-0", "gpu-1", "gpu-2"}));
  EXPECT_EQ(table.Snapshot()[1], Entry("gpu-1", Health::kUnhealthy, "fan"));
}

TEST(DeviceHealthTable, HealthOfADeviceNotListedYetIsRememberedUntilItIs) {
  DeviceHealthTable table("gpu.example.com");
  CountingSubscriber subscriber;
  table.Subscribe(&subscriber);
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnhealthy, "before discovery").ok());
  EXPECT_THAT(table.Snapshot(), IsEmpty());
  EXPECT_EQ(subscriber.calls, 1);  // Nothing reported changed: no message.
  table.SetDevices(Named({"gpu-0", "gpu-1"}));
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-0", Health::kUnhealthy, "before discovery"),
                                            Entry("gpu-1", Health::kHealthy)));
  table.Unsubscribe(&subscriber);
}

TEST(DeviceHealthTable, SetUnhealthyStatesTheWholeSetAndClearsTheRest) {
  DeviceHealthTable table("gpu.example.com");
  table.SetDevices(Named({"gpu-0", "gpu-1", "gpu-2"}));
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnknown, "lost").ok());
  ASSERT_TRUE(table.SetUnhealthy({"gpu-1", "gpu-9"}, "listed in f").ok());
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-0", Health::kHealthy),
                                            Entry("gpu-1", Health::kUnhealthy, "listed in f"),
                                            Entry("gpu-2", Health::kHealthy)));
  table.SetDevices(Named({"gpu-9"}));  // Named while unlisted: applies once listed.
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-9", Health::kUnhealthy, "listed in f")));
  ASSERT_TRUE(table.SetUnhealthy({}, "listed in f").ok());
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-9", Health::kHealthy)));
  EXPECT_EQ(table.SetUnhealthy({"gpu-9"}, "\xff").code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceHealthTable, SetErrors) {
  DeviceHealthTable table("gpu.example.com");
  table.SetDevices(Named({"gpu-0"}));
  absl::Status bad_status = SetOne(table, "gpu-0", static_cast<Health>(7), "");
  EXPECT_EQ(bad_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_status.message(), HasSubstr("7 is not a kdp::Health value"));
  EXPECT_THAT(bad_status.message(), HasSubstr("gpu.example.com"));
  EXPECT_THAT(bad_status.message(), HasSubstr("\"gpu-0\""));
  absl::Status bad_message = SetOne(table, "gpu-0", Health::kUnhealthy, "\xff\xfe");
  EXPECT_EQ(bad_message.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_message.message(), HasSubstr("UTF-8"));
  // One bad ID of several: nothing is set.
  const std::vector<std::string> both = {"gpu-0", "gpu-1"};
  EXPECT_FALSE(table.Set(both, static_cast<Health>(7), "").ok());
  // Nothing failed was recorded.
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-0", Health::kHealthy)));
  EXPECT_TRUE(SetOne(table, "gpu-0", Health::kUnknown, "lost: \xc3\xa9tat").ok());
  EXPECT_THAT(table.Snapshot(), ElementsAre(Entry("gpu-0", Health::kUnknown, "lost: \xc3\xa9tat")));
}

TEST(DeviceHealthTable, SubscribersAreSignalledOnlyOnChanges) {
  DeviceHealthTable table("gpu.example.com");
  CountingSubscriber subscriber;
  table.Subscribe(&subscriber);
  EXPECT_EQ(subscriber.calls, 1);  // At once, so the stream sends the current list.
  table.SetDevices(Named({"gpu-0", "gpu-1"}));
  EXPECT_EQ(subscriber.calls, 2);
  table.SetDevices(Named({"gpu-1", "gpu-0"}));  // Same set.
  EXPECT_EQ(subscriber.calls, 2);
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnhealthy, "hot").ok());
  EXPECT_EQ(subscriber.calls, 3);
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnhealthy, "hot").ok());  // Same report.
  EXPECT_EQ(subscriber.calls, 3);
  ASSERT_TRUE(SetOne(table, "gpu-0", Health::kUnhealthy, "hotter").ok());
  EXPECT_EQ(subscriber.calls, 4);
  table.SetDevices(Named({"gpu-0", "gpu-2"}));  // Same size, other names.
  EXPECT_EQ(subscriber.calls, 5);
  EXPECT_EQ(table.generation(), 4);  // Subscribe's signal is the subscriber's own.
  table.Unsubscribe(&subscriber);
  table.SetDevices(Named({}));
  EXPECT_EQ(subscriber.calls, 5);
  EXPECT_EQ(table.generation(), 5);
}

TEST(IsValidUtf8, AcceptsWellFormedAndRejectsTheRest) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ASCII"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9"));               // é
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));           // €
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x94\xa5"));       // U+1F525
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));       // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));                  // continuation first
  EXPECT_FALSE(IsValidUtf8("\xc3"));                  // truncated
  EXPECT_FALSE(IsValidUtf8("\xc3("));                 // bad continuation
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));          // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));      // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf8\x88\x80\x80\x80"));  // 5-byte form
}

}  // namespace
}  // namespace kdp::internal
