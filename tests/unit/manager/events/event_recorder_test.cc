#include "manager/src/events/event_recorder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;
using resourceapi::Kind;

TEST(EventRecorder, WritesCoreEventsAndCountsRepeats) {
  resourceapi::ObjectStore store(resourceapi::StoreOptions{.node_name = "node-a"});
  absl::Time now = absl::FromUnixSeconds(1700000000);
  EventRecorder recorder(&store, [&now] { return now; });
  const ObjectReference pod = {.kind = "Pod", .namespace_ = "ml", .name = "p", .uid = "u1"};
  recorder.Record(pod, {.component = "kubelet", .host = "node-a"}, kEventWarning,
                  "UnexpectedAdmissionError", "Allocate failed");
  std::vector<Json> events = store.List(Kind::kEvent, "ml").items;
  ASSERT_EQ(events.size(), 1u);
  const Json& event = events[0];
  EXPECT_THAT(event["metadata"]["name"].get<std::string>(), ::testing::StartsWith("p."));
  EXPECT_EQ(event["involvedObject"],
            Json::parse(R"({"kind": "Pod", "namespace": "ml", "name": "p", "uid": "u1",
                            "apiVersion": "v1"})"));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "UnexpectedAdmissionError");
  EXPECT_EQ(event["source"], Json::parse(R"({"component": "kubelet", "host": "node-a"})"));
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], "2023-11-14T22:13:20Z");

  now += absl::Seconds(5);
  recorder.Record(pod, {.component = "kubelet", .host = "node-a"}, kEventWarning,
                  "UnexpectedAdmissionError", "Allocate failed");
  events = store.List(Kind::kEvent, "ml").items;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(events[0]["lastTimestamp"], "2023-11-14T22:13:25Z");
  EXPECT_EQ(events[0]["firstTimestamp"], "2023-11-14T22:13:20Z");

  // A Node's events go to "default", without a namespace in involvedObject.
  recorder.Record({.kind = "Node", .namespace_ = "", .name = "node-a", .uid = "node-a"},
                  {.component = "kubelet", .host = "node-a"}, kEventNormal, "NodeReady",
                  "Node node-a status is now: NodeReady");
  events = store.List(Kind::kEvent, "default").items;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0]["involvedObject"].contains("namespace"));

  // Field selectors as kubectl describe sends them (an empty namespace matches a missing one).
  absl::StatusOr<resourceapi::FieldSelector> selector = resourceapi::FieldSelector::Parse(
      "involvedObject.name=node-a,involvedObject.namespace=,involvedObject.kind=Node,"
      "involvedObject.uid=node-a",
      resourceapi::InfoOf(Kind::kEvent), "v1");
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(store.List(Kind::kEvent, "", {.fields = *selector}).items.size(), 1u);
}

TEST(EventRecorder, KeepsAtMostItsLimitDeletingTheOldest) {
  resourceapi::ObjectStore store(resourceapi::StoreOptions{.node_name = "node-a"});
  EventRecorder recorder(&store, nullptr, /*max_events=*/3);
  for (int i = 0; i < 5; ++i) {
    recorder.Record({.kind = "Pod", .namespace_ = "ml", .name = "p" + std::to_string(i)},
                    {.component = "kubelet", .host = "node-a"}, kEventNormal, "Started", "x");
  }
  std::vector<std::string> names;
  for (const Json& event : store.List(Kind::kEvent, "ml").items) {
    names.push_back(event["involvedObject"]["name"]);
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("p2", "p3", "p4"));
}

}  // namespace
}  // namespace kdp::manager
