// WatchStream over a real ObjectStore: watch-list replay and its bookmark, classic watches from a
// resourceVersion, selectors (objects entering and leaving the selection), version conversion,
// bookmarks, heartbeats, timeouts and the errors the watch cache gives.
#include "manager/src/controlplane/resourceapi/watch.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

Json LabeledSlice(const std::string& name, const std::string& driver, const std::string& node,
                  const Json& labels = Json::object()) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices",
             {{{"name", "dev-0"},
               {"attributes", {{"index", {{"int", 0}}}}},
               {"capacity", {{"memory", {{"value", "80Gi"}}}}}}}}}}};
}

ListWatchOptions Options(std::map<std::string, std::string> params,
                         std::string_view version = "v1") {
  params["watch"] = "true";
  absl::StatusOr<ListWatchOptions> options =
      ParseListWatchOptions(params, InfoOf(Kind::kResourceSlice), version);
  EXPECT_TRUE(options.ok()) << options.status();
  return options.ok() ? *options : ListWatchOptions{};
}

// The events of one output, parsed.
std::vector<Json> Events(const std::string& data) {
  std::vector<Json> events;
  for (absl::string_view line : absl::StrSplit(data, '\n', absl::SkipEmpty())) {
    events.push_back(Json::parse(line));
  }
  return events;
}

std::vector<std::string> Summary(const std::vector<Json>& events) {
  std::vector<std::string> out;
  for (const Json& e : events) {
    out.push_back(e["type"].get<std::string>() + " " +
                  e["object"]["metadata"].value("name", std::string()));
  }
  return out;
}

class WatchStreamTest : public ::testing::Test {
 protected:
  void Create(const Json& object) { ASSERT_TRUE(store_.Create(Kind::kResourceSlice, object).ok()); }
  WatchTimings Fast() {
    return WatchTimings{.bookmark_interval = absl::Hours(1),
                        .heartbeat_interval = absl::Hours(1),
                        .future_resource_version_wait = absl::Milliseconds(50)};
  }
  ObjectStore store_{StoreOptions{.node_name = "node-1"}};
};

constexpr char kMine[] = "spec.driver=gpu.example.com,spec.nodeName=node-1";

TEST_F(WatchStreamTest, WatchListReplaysMatchingObjectsThenInitialEventsEndBookmark) {
  Create(LabeledSlice("mine-a", "gpu.example.com", "node-1"));
  Create(LabeledSlice("other-driver", "tpu.example.com", "node-1"));
  Create(LabeledSlice("other-node", "gpu.example.com", "node-2"));
  Create(LabeledSlice("mine-b", "gpu.example.com", "node-1"));
  WatchStream stream(&store_, {},
                     Options({{"fieldSelector", kMine},
                              {"sendInitialEvents", "true"},
                              {"resourceVersionMatch", "NotOlderThan"},
                              {"allowWatchBookmarks", "true"}}),
                     Fast());
  ASSERT_TRUE(stream.Start().ok());
  WatchStream::Output out = stream.Next(absl::Milliseconds(10));
  std::vector<Json> events = Events(out.data);
  EXPECT_THAT(Summary(events), ElementsAre("ADDED mine-a", "ADDED mine-b", "BOOKMARK "));
  ASSERT_EQ(events.size(), 3u);
  const Json& bookmark = events[2]["object"];
  EXPECT_EQ(bookmark["kind"], "ResourceSlice");
  EXPECT_EQ(bookmark["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(bookmark["metadata"]["resourceVersion"], std::to_string(store_.ResourceVersion()));
  EXPECT_EQ(bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_FALSE(out.ended);

  // Live: the driver's own new slice arrives; a slice of another driver does not.
  Create(LabeledSlice("other-2", "tpu.example.com", "node-1"));
  Create(LabeledSlice("mine-c", "gpu.example.com", "node-1"));
  EXPECT_THAT(Summary(Events(stream.Next(absl::Seconds(5)).data)), ElementsAre("ADDED mine-c"));
}

TEST_F(WatchStreamTest, WatchListOfAnEmptySelectionSendsOnlyTheBookmark) {
  Create(LabeledSlice("other", "tpu.example.com", "node-1"));
  WatchStream stream(&store_, {},
                     Options({{"fieldSelector", kMine},
                              {"sendInitialEvents", "true"},
                              {"resourceVersionMatch", "NotOlderThan"},
                              {"allowWatchBookmarks", "true"},
                              {"resourceVersion", ""}}),
                     Fast());
  ASSERT_TRUE(stream.Start().ok());
  EXPECT_THAT(Summary(Events(stream.Next(absl::Milliseconds(10)).data)), ElementsAre("BOOKMARK "));
}

TEST_F(WatchStreamTest, ClassicWatchFromAResourceVersionSendsOnlyLaterEvents) {
  Create(LabeledSlice("before", "gpu.example.com", "node-1"));
  const int64_t listed = store_.ResourceVersion();
  Create(LabeledSlice("after", "gpu.example.com", "node-1"));
  WatchStream stream(&store_, {},
                     Options({{"fieldSelector", kMine},
                              {"resourceVersion", std::to_string(listed)},
                              {"allowWatchBookmarks", "true"}}),
                     Fast());
  ASSERT_TRUE(stream.Start().ok());
  EXPECT_THAT(Summary(Events(stream.Next(absl::Milliseconds(10)).data)),
              ElementsAre("ADDED after"));

  Json changed = *store_.Get(Kind::kResourceSlice, "", "before");
  changed["spec"]["devices"][0]["name"] = "dev-9";
  ASSERT_TRUE(store_.Update(Kind::kResourceSlice, changed).ok());
  std::vector<Json> modified = Events(stream.Next(absl::Seconds(5)).data);
  EXPECT_THAT(Summary(modified), ElementsAre("MODIFIED before"));
  EXPECT_EQ(modified[0]["object"]["spec"]["devices"][0]["name"], "dev-9");
  EXPECT_EQ(modified[0]["object"]["metadata"]["resourceVersion"],
            std::to_string(store_.ResourceVersion()));

  ASSERT_TRUE(store_.Delete(Kind::kResourceSlice, "", "after").ok());
  std::vector<Json> deleted = Events(stream.Next(absl::Seconds(5)).data);
  EXPECT_THAT(Summary(deleted), ElementsAre("DELETED after"));
  EXPECT_EQ(deleted[0]["object"]["metadata"]["resourceVersion"],
            std::to_string(store_.ResourceVersion()));
  EXPECT_EQ(stream.resource_version(), store_.ResourceVersion());
}

TEST_F(WatchStreamTest, WatchWithoutResourceVersionStartsWithTheCurrentState) {
  Create(LabeledSlice("a", "gpu.example.com", "node-1"));
  for (const char* rv : {"", "0"}) {
    SCOPED_TRACE(rv);
    WatchStream stream(&store_, {}, Options({{"resourceVersion", rv}}), Fast());
    ASSERT_TRUE(stream.Start().ok());
    EXPECT_THAT(Summary(Events(stream.Next(absl::Milliseconds(10)).data)), ElementsAre("ADDED a"));
  }
  // sendInitialEvents=false: from now, no state.
  WatchStream from_now(
      &store_, {},
      Options({{"sendInitialEvents", "false"}, {"resourceVersionMatch", "NotOlderThan"}}), Fast());
  ASSERT_TRUE(from_now.Start().ok());
  EXPECT_THAT(Events(from_now.Next(absl::Milliseconds(10)).data), IsEmpty());
}

TEST_F(WatchStreamTest, ObjectsLeavingAndEnteringTheSelectionAreDeletedAndAdded) {
  Create(LabeledSlice("s", "gpu.example.com", "node-1", {{"tier", "gold"}}));
  WatchStream stream(&store_, {},
                     Options({{"labelSelector", "tier=gold"},
                              {"resourceVersion", std::to_string(store_.ResourceVersion())}}),
                     Fast());
  ASSERT_TRUE(stream.Start().ok());
  Json object = *store_.Get(Kind::kResourceSlice, "", "s");
  object["metadata"]["labels"]["tier"] = "silver";
  ASSERT_TRUE(store_.Update(Kind::kResourceSlice, object).ok());
  std::vector<Json> left = Events(stream.Next(absl::Seconds(5)).data);
  EXPECT_THAT(Summary(left), ElementsAre("DELETED s"));
  EXPECT_EQ(left[0]["object"]["metadata"]["labels"]["tier"], "silver");

  object = *store_.Get(Kind::kResourceSlice, "", "s");
  object["metadata"]["labels"]["tier"] = "gold";
  ASSERT_TRUE(store_.Update(Kind::kResourceSlice, object).ok());
  EXPECT_THAT(Summary(Events(stream.Next(absl::Seconds(5)).data)), ElementsAre("ADDED s"));
}

TEST_F(WatchStreamTest, EventsAreInTheUrlsVersion) {
  Create(LabeledSlice("a", "gpu.example.com", "node-1"));
  WatchStream stream(&store_, WatchTarget{.kind = Kind::kResourceSlice, .version = "v1beta1"},
                     Options({}, "v1beta1"), Fast());
  ASSERT_TRUE(stream.Start().ok());
  std::vector<Json> events = Events(stream.Next(absl::Milliseconds(10)).data);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["object"]["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(events[0]["object"]["spec"]["devices"][0]["basic"]["capacity"]["memory"]["value"],
            "80Gi");
}

TEST_F(WatchStreamTest, OnlyTheWatchedKindAndNamespace) {
  Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "c"}, {"namespace", "team-a"}}},
                {"spec", {{"devices", {{"requests", Json::array()}}}}}};
  WatchStream stream(
      &store_, WatchTarget{.kind = Kind::kResourceClaim, .version = "v1", .namespace_ = "team-a"},
      Options({{"resourceVersion", std::to_string(store_.ResourceVersion())}}), Fast());
  ASSERT_TRUE(stream.Start().ok());
  Create(LabeledSlice("a", "gpu.example.com", "node-1"));
  Json other = claim;
  other["metadata"]["namespace"] = "team-b";
  ASSERT_TRUE(store_.Create(Kind::kResourceClaim, other).ok());
  ASSERT_TRUE(store_.Create(Kind::kResourceClaim, claim).ok());
  EXPECT_THAT(Summary(Events(stream.Next(absl::Seconds(5)).data)), ElementsAre("ADDED c"));
}

TEST_F(WatchStreamTest, TooOldResourceVersionIsOneExpiredErrorEvent) {
  ObjectStore small(StoreOptions{.node_name = "node-1", .event_log_capacity = 2});
  for (const char* name : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(
        small.Create(Kind::kResourceSlice, LabeledSlice(name, "gpu.example.com", "node-1")).ok());
  }
  WatchStream stream(&small, {}, Options({{"resourceVersion", "1"}}), Fast());
  ASSERT_TRUE(stream.Start().ok());
  WatchStream::Output out = stream.Next(absl::Milliseconds(10));
  std::vector<Json> events = Events(out.data);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  EXPECT_EQ(events[0]["object"]["reason"], "Expired");
  EXPECT_THAT(events[0]["object"]["message"].get<std::string>(),
              ::testing::StartsWith("too old resource version: 1 ("));
  EXPECT_TRUE(out.ended);
  EXPECT_TRUE(stream.Next(absl::Milliseconds(1)).ended);
}

TEST_F(WatchStreamTest, FutureResourceVersionTimesOutWith504) {
  WatchStream stream(&store_, {},
                     Options({{"resourceVersion", std::to_string(store_.ResourceVersion() + 5)}}),
                     Fast());
  absl::Status started = stream.Start();
  EXPECT_EQ(HttpCode(started), 504);
  EXPECT_EQ(Reason(started), "Timeout");
  EXPECT_THAT(std::string(started.message()), ::testing::HasSubstr("Too large resource version"));
}

TEST_F(WatchStreamTest, PeriodicBookmarksOnlyWhenAllowed) {
  WatchTimings timings = Fast();
  timings.bookmark_interval = absl::Milliseconds(20);
  const std::string rv = std::to_string(store_.ResourceVersion());
  WatchStream with(&store_, {}, Options({{"resourceVersion", rv}, {"allowWatchBookmarks", "1"}}),
                   timings);
  WatchStream without(&store_, {}, Options({{"resourceVersion", rv}}), timings);
  ASSERT_TRUE(with.Start().ok());
  ASSERT_TRUE(without.Start().ok());
  Create(LabeledSlice("x", "tpu.example.com", "node-9"));  // moves the resourceVersion
  std::vector<Json> events;
  for (int i = 0; i < 100 && (events.empty() || events.back()["type"] != "BOOKMARK"); ++i) {
    for (Json& e : Events(with.Next(absl::Milliseconds(50)).data)) events.push_back(std::move(e));
  }
  ASSERT_THAT(Summary(events), ElementsAre("ADDED x", "BOOKMARK "));
  EXPECT_EQ(events.back()["object"]["metadata"]["resourceVersion"],
            std::to_string(store_.ResourceVersion()));
  EXPECT_FALSE(events.back()["object"]["metadata"].contains("annotations"));
  for (int i = 0; i < 3; ++i) {
    std::string data = without.Next(absl::Milliseconds(30)).data;
    EXPECT_EQ(data.find("BOOKMARK"), std::string::npos);
  }
}

TEST_F(WatchStreamTest, IdleStreamSendsNewlineHeartbeats) {
  WatchTimings timings = Fast();
  timings.heartbeat_interval = absl::Milliseconds(20);
  WatchStream stream(&store_, {},
                     Options({{"resourceVersion", std::to_string(store_.ResourceVersion())}}),
                     timings);
  ASSERT_TRUE(stream.Start().ok());
  std::string data;
  for (int i = 0; i < 100 && data.empty(); ++i) data = stream.Next(absl::Milliseconds(50)).data;
  EXPECT_EQ(data, "\n");
}

TEST_F(WatchStreamTest, EndsAtTimeoutSeconds) {
  WatchStream stream(&store_, {},
                     Options({{"resourceVersion", std::to_string(store_.ResourceVersion())},
                              {"timeoutSeconds", "1"}}),
                     Fast());
  ASSERT_TRUE(stream.Start().ok());
  const absl::Time start = absl::Now();
  bool ended = false;
  while (!ended && absl::Now() - start < absl::Seconds(10)) {
    ended = stream.Next(absl::Milliseconds(200)).ended;
  }
  EXPECT_TRUE(ended);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));
}

}  // namespace
}  // namespace kdp::manager::resourceapi
