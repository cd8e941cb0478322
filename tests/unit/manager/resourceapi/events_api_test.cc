// events.k8s.io/v1 Events through the REST server: the same stored objects as the core/v1
// Events, read, written, selected, watched and printed in events.k8s.io's shape.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/server.h"
#include "tests/unit/manager/resourceapi/api_server_fixture.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::ElementsAre;
using Json = nlohmann::json;

constexpr char kEvents[] = "/apis/events.k8s.io/v1/namespaces/default/events";
constexpr char kCoreEvents[] = "/api/v1/namespaces/default/events";

class EventsApiTest : public testing::ApiServerTest {};

// What the kubelet's recorder writes: an old-style core/v1 Event.
Json CoreEvent(const std::string& name) {
  return Json::parse(R"({"apiVersion": "v1", "kind": "Event",
    "metadata": {"name": ")" +
                     name + R"("},
    "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "u1"},
    "reason": "Started", "message": "Started container c", "type": "Normal",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z",
    "count": 2, "reportingComponent": "kubelet", "reportingInstance": "node-1"})");
}

// What client-go's events.k8s.io EventBroadcaster (the scheduler, Go DRA drivers) posts.
Json NewEvent(const std::string& name) {
  return Json::parse(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "default"},
    "eventTime": "2026-01-02T03:04:05.123456Z",
    "reportingController": "gpu.example.com/driver", "reportingInstance": "driver-node-1",
    "action": "Prepare", "reason": "Prepared", "type": "Normal", "note": "claim prepared",
    "regarding": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "u1"}})");
}

TEST_F(EventsApiTest, ACoreEventReadsThroughEventsK8sIo) {
  ASSERT_EQ(Do("POST", kCoreEvents, CoreEvent("e1")).first, 201);
  auto [code, event] = Do("GET", std::string(kEvents) + "/e1");
  ASSERT_EQ(code, 200) << event.dump();
  EXPECT_EQ(event["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(event["kind"], "Event");
  EXPECT_EQ(event["regarding"]["name"], "p");
  EXPECT_EQ(event["note"], "Started container c");
  EXPECT_EQ(event["reason"], "Started");
  EXPECT_EQ(event["deprecatedSource"],
            Json::parse(R"({"component": "kubelet", "host": "node-1"})"));
  EXPECT_EQ(event["deprecatedFirstTimestamp"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(event["deprecatedLastTimestamp"], "2026-01-02T03:04:06Z");
  EXPECT_EQ(event["deprecatedCount"], 2);
  EXPECT_EQ(event["reportingController"], "kubelet");
  EXPECT_EQ(event["reportingInstance"], "node-1");
  EXPECT_TRUE(event["eventTime"].is_null());
  for (const char* core :
       {"involvedObject", "message", "source", "firstTimestamp", "count", "reportingComponent"}) {
    EXPECT_FALSE(event.contains(core)) << core;
  }
  // And in the list, across namespaces too.
  auto [listed, list] = Do("GET", "/apis/events.k8s.io/v1/events");
  ASSERT_EQ(listed, 200);
  EXPECT_EQ(list["kind"], "EventList");
  EXPECT_EQ(list["apiVersion"], "events.k8s.io/v1");
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["note"], "Started container c");
}

TEST_F(EventsApiTest, AnEventCreatedThroughEventsK8sIoReadsThroughCoreV1) {
  auto [code, created] = Do("POST", kEvents, NewEvent("e2"));
  ASSERT_EQ(code, 201) << created.dump();
  EXPECT_EQ(created["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(created["note"], "claim prepared");
  EXPECT_FALSE(created["metadata"].value("uid", "").empty());
  auto [got, core] = Do("GET", std::string(kCoreEvents) + "/e2");
  ASSERT_EQ(got, 200);
  EXPECT_EQ(core["apiVersion"], "v1");
  EXPECT_EQ(core["involvedObject"]["uid"], "u1");
  EXPECT_EQ(core["message"], "claim prepared");
  EXPECT_EQ(core["reportingComponent"], "gpu.example.com/driver");
  EXPECT_EQ(core["reportingInstance"], "driver-node-1");
  EXPECT_EQ(core["action"], "Prepare");
  EXPECT_EQ(core["eventTime"], "2026-01-02T03:04:05.123456Z");
  EXPECT_EQ(core["source"], Json::object());
  EXPECT_FALSE(core.contains("regarding"));
  EXPECT_FALSE(core.contains("note"));
}

TEST_F(EventsApiTest, CreateIsValidatedAsThroughTheNewApi) {
  // The new API's rules, with the API server's field paths (the internal type's).
  Json event = NewEvent("bad");
  event.erase("eventTime");
  event.erase("action");
  event["type"] = "Odd";
  event["deprecatedCount"] = 3;
  auto [code, status] = Do("POST", kEvents, event);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(status["reason"], "Invalid");
  EXPECT_EQ(status["message"],
            "Event \"bad\" is invalid: [eventTime: Required value, type: Invalid value: \"\": has "
            "invalid value: Odd, count: Invalid value: \"\": needs to be unset]");
  EXPECT_EQ(status["details"]["kind"], "Event");
  ASSERT_EQ(status["details"]["causes"].size(), 3u);
  EXPECT_EQ(status["details"]["causes"][0]["field"], "eventTime");
  // With an eventTime, the legacy rules want the reporting fields, also through core/v1.
  Json core = CoreEvent("c");
  core["eventTime"] = "2026-01-02T03:04:05.000000Z";
  core.erase("reportingComponent");
  std::tie(code, status) = Do("POST", kCoreEvents, core);
  EXPECT_EQ(code, 422);
  // IsQualifiedName("") adds its own two errors, as upstream's does.
  const std::string message = status["message"];
  EXPECT_THAT(message, ::testing::StartsWith(
                           "Event \"c\" is invalid: [reportingController: Required value, "
                           "reportingController: Invalid value: \"\": name part must be non-empty, "
                           "reportingController: Invalid value: \"\": name part must consist of"));
  EXPECT_THAT(message, ::testing::EndsWith(", action: Required value]"));
  // Core/v1 stays lenient about old-style events; the new API refuses the deprecated fields.
  EXPECT_EQ(Do("POST", kCoreEvents, CoreEvent("old")).first, 201);
  Json mixed = NewEvent("mixed");
  mixed["deprecatedSource"] = {{"component", "kubelet"}};
  std::tie(code, status) = Do("POST", kEvents, mixed);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(status["message"],
            "Event \"mixed\" is invalid: source: Invalid value: \"\": needs to be unset");
}

TEST_F(EventsApiTest, FieldSelectorsUseEventsK8sIoNames) {
  ASSERT_EQ(Do("POST", kCoreEvents, CoreEvent("e1")).first, 201);
  ASSERT_EQ(Do("POST", kEvents, NewEvent("e2")).first, 201);
  auto names = [&](const std::string& query) {
    std::vector<std::string> out;
    const Json list = Do("GET", std::string(kEvents) + "?" + query).second;
    for (const Json& item : list["items"]) {
      out.push_back(item["metadata"]["name"]);
    }
    return out;
  };
  EXPECT_THAT(names("fieldSelector=regarding.name%3Dp"), ElementsAre("e1", "e2"));
  EXPECT_THAT(names("fieldSelector=reportingController%3Dgpu.example.com/driver"),
              ElementsAre("e2"));
  EXPECT_THAT(names("fieldSelector=source%3Dkubelet"), ElementsAre("e1"));
  EXPECT_THAT(names("fieldSelector=reason%3DPrepared,type%3DNormal"), ElementsAre("e2"));
  // The core names are not events.k8s.io's, and the reverse.
  auto [code, status] = Do("GET", std::string(kEvents) + "?fieldSelector=involvedObject.name%3Dp");
  EXPECT_EQ(code, 400);
  EXPECT_EQ(status["message"], "field label not supported: involvedObject.name");
  std::tie(code, status) =
      Do("GET", std::string(kCoreEvents) + "?fieldSelector=regarding.name%3Dp");
  EXPECT_EQ(code, 400);
  EXPECT_EQ(status["message"], "field label not supported: regarding.name");
  // Core/v1's own `source` is source.component.
  std::tie(code, status) = Do("GET", std::string(kCoreEvents) + "?fieldSelector=source%3Dkubelet");
  ASSERT_EQ(code, 200);
  ASSERT_EQ(status["items"].size(), 1u);
  EXPECT_EQ(status["items"][0]["metadata"]["name"], "e1");
}

TEST_F(EventsApiTest, WatchesAndDeletesInEventsK8sIoShape) {
  ASSERT_EQ(Do("POST", kCoreEvents, CoreEvent("e1")).first, 201);
  auto r = client_->Get(std::string(kEvents) + "?watch=1&timeoutSeconds=1");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::vector<Json> events;
  for (absl::string_view line : absl::StrSplit(r->body, '\n', absl::SkipWhitespace())) {
    events.push_back(Json::parse(std::string(line)));
  }
  ASSERT_EQ(events.size(), 1u) << r->body;
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(events[0]["object"]["regarding"]["name"], "p");

  auto [code, status] = Do("DELETE", std::string(kEvents) + "/e1");
  ASSERT_EQ(code, 200) << status.dump();
  EXPECT_EQ(status["details"]["group"], "events.k8s.io");
  EXPECT_EQ(status["details"]["kind"], "events");
  EXPECT_EQ(Do("GET", std::string(kCoreEvents) + "/e1").first, 404);
}

TEST_F(EventsApiTest, PatchesASeriesAsClientGoDoes) {
  ASSERT_EQ(Do("POST", kEvents, NewEvent("e2")).first, 201);
  // client-go's event broadcaster: a strategic merge patch of the series.
  auto [code, patched] =
      Patch(std::string(kEvents) + "/e2",
            R"({"series":{"count":2,"lastObservedTime":"2026-01-02T03:05:00.000000Z"}})",
            "application/strategic-merge-patch+json");
  ASSERT_EQ(code, 200) << patched.dump();
  EXPECT_EQ(patched["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(patched["series"]["count"], 2);
  EXPECT_EQ(Do("GET", std::string(kCoreEvents) + "/e2").second["series"]["count"], 2);
}

TEST_F(EventsApiTest, DiscoveryNamesTheGroup) {
  auto [code, groups] = Do("GET", "/apis");
  ASSERT_EQ(code, 200);
  std::vector<std::string> names;
  for (const Json& group : groups["groups"]) names.push_back(group["name"]);
  EXPECT_THAT(names, ElementsAre("resource.k8s.io", "events.k8s.io"));
  EXPECT_EQ(groups["groups"][1]["preferredVersion"]["groupVersion"], "events.k8s.io/v1");
  auto [gcode, group] = Do("GET", "/apis/events.k8s.io");
  ASSERT_EQ(gcode, 200);
  EXPECT_EQ(group["kind"], "APIGroup");
  EXPECT_EQ(group["versions"].size(), 1u);
  auto [rcode, resources] = Do("GET", "/apis/events.k8s.io/v1");
  ASSERT_EQ(rcode, 200);
  EXPECT_EQ(resources["groupVersion"], "events.k8s.io/v1");
  ASSERT_EQ(resources["resources"].size(), 1u);
  const Json& events = resources["resources"][0];
  EXPECT_EQ(events["name"], "events");
  EXPECT_EQ(events["kind"], "Event");
  EXPECT_TRUE(events["namespaced"]);
  EXPECT_FALSE(events.contains("shortNames"));  // `ev` is the core resource's
  EXPECT_THAT(events["verbs"], ::testing::Contains("create"));
  EXPECT_EQ(Do("GET", "/apis/events.k8s.io/v1beta1").first, 404);
  EXPECT_EQ(Do("GET", "/apis/events.k8s.io/v1/pods").first, 404);
}

TEST_F(EventsApiTest, TablesHaveTheCoreEventColumns) {
  ASSERT_EQ(Do("POST", kEvents, NewEvent("e2")).first, 201);
  const httplib::Headers headers = {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}};
  auto events = client_->Get(std::string(kEvents), headers);
  auto core = client_->Get(std::string(kCoreEvents), headers);
  ASSERT_TRUE(events && core);
  ASSERT_EQ(events->status, 200);
  Json table = Json::parse(events->body);
  Json core_table = Json::parse(core->body);
  EXPECT_EQ(table["columnDefinitions"], core_table["columnDefinitions"]);
  ASSERT_EQ(table["rows"].size(), 1u);
  // Type, Reason, Object, Source ("<controller>, <instance>"), Message, Count, Name.
  const Json& cells = table["rows"][0]["cells"];
  EXPECT_EQ(cells[1], "Normal");
  EXPECT_EQ(cells[2], "Prepared");
  EXPECT_EQ(cells[3], "pod/p");
  EXPECT_EQ(cells[5], "gpu.example.com/driver, driver-node-1");
  EXPECT_EQ(cells[6], "claim prepared");
  EXPECT_EQ(cells[8], 1);
  EXPECT_EQ(cells[9], "e2");
  EXPECT_EQ(cells, core_table["rows"][0]["cells"]);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
