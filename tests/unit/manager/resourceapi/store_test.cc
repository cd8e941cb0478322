#include "manager/src/controlplane/resourceapi/store.h"

#include <set>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json NodeSlice(const std::string& name, const std::string& node, const std::string& driver) {
  Json slice = {
      {"metadata", Json::object()},
      {"spec",
       {{"driver", driver},
        {"nodeName", node},
        {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices", {{{"name", "dev-0"}, {"capacity", {{"mem", {{"value", "2048Ki"}}}}}}}}}}};
  if (name.back() == '-') {
    slice["metadata"]["generateName"] = name;
  } else {
    slice["metadata"]["name"] = name;
  }
  return slice;
}

Json NamespacedClaim(const std::string& ns, const std::string& name) {
  return {{"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}}}}}}}};
}

ObjectStore MakeStoreWithFixedClock() {
  return ObjectStore(StoreOptions{.node_name = "node-1",
                                  .node_labels = {{"example.com/tpu", "v5"}},
                                  .event_log_capacity = 100,
                                  .now = [] { return absl::FromUnixSeconds(1700000000); }});
}

int64_t Rv(const Json& object) {
  return std::stoll(object["metadata"]["resourceVersion"].get<std::string>());
}

TEST(ObjectStore, NodeExistsWithStableUidAndLabels) {
  ObjectStore store = MakeStoreWithFixedClock();
  absl::StatusOr<Json> node = store.Get(Kind::kNode, "", "node-1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["uid"], store.node_uid());
  EXPECT_EQ((*node)["metadata"]["labels"]["kubernetes.io/hostname"], "node-1");
  EXPECT_EQ((*node)["metadata"]["labels"]["example.com/tpu"], "v5");
  EXPECT_EQ(store.node_uid(), MakeStoreWithFixedClock().node_uid());
  EXPECT_NE(store.node_uid(), ObjectStore(StoreOptions{.node_name = "node-2"}).node_uid());
  EXPECT_THAT(store.node_uid(),
              ::testing::MatchesRegex(
                  "[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_EQ(Reason(store.Create(Kind::kNode, Json::object()).status()), "MethodNotAllowed");
}

TEST(ObjectStore, CreateSetsSystemFields) {
  ObjectStore store = MakeStoreWithFixedClock();
  absl::StatusOr<Json> created =
      store.Create(Kind::kResourceSlice, NodeSlice("node-1-drv-", "node-1", "drv.example.com"));
  ASSERT_TRUE(created.ok()) << created.status();
  const Json& meta = (*created)["metadata"];
  EXPECT_THAT(meta["name"].get<std::string>(),
              ::testing::MatchesRegex("node-1-drv-[bcdfghjklmnpqrstvwxz2456789]{5}"));
  EXPECT_THAT(meta["uid"].get<std::string>(),
              ::testing::MatchesRegex(
                  "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_EQ(meta["creationTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ((*created)["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ((*created)["kind"], "ResourceSlice");
  EXPECT_EQ((*created)["spec"]["devices"][0]["capacity"]["mem"]["value"], "2Mi");  // canonical
  EXPECT_EQ(Rv(*created), store.ResourceVersion());
  EXPECT_EQ(*store.Get(Kind::kResourceSlice, "", meta["name"].get<std::string>()), *created);
}

TEST(ObjectStore, GenerateNamePrefixIsCutTo58) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json slice = NodeSlice(std::string(70, 'a') + "-", "node-1", "drv.example.com");
  absl::StatusOr<Json> created = store.Create(Kind::kResourceSlice, slice);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["name"].get<std::string>().size(), 63u);
}

TEST(ObjectStore, ResourceVersionIsOneGlobalMonotonicCounter) {
  ObjectStore store = MakeStoreWithFixedClock();
  int64_t last = store.ResourceVersion();
  Json a = *store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "d.example.com"));
  EXPECT_GT(Rv(a), last);
  Json c = *store.Create(Kind::kResourceClaim, NamespacedClaim("default", "c"));
  EXPECT_GT(Rv(c), Rv(a));
  a["spec"]["pool"]["generation"] = 2;
  Json a2 = *store.Update(Kind::kResourceSlice, a);
  EXPECT_GT(Rv(a2), Rv(c));
  EXPECT_EQ(a2["metadata"]["generation"], 2);  // spec changed
  EXPECT_EQ(store.ResourceVersion(), Rv(a2));
  EXPECT_EQ(store.List(Kind::kResourceSlice, "").resource_version, Rv(a2));
}

TEST(ObjectStore, CreateErrors) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "d.example.com")).ok());
  absl::Status dup =
      store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "d.example.com")).status();
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.message(), "resourceslices.resource.k8s.io \"a\" already exists");
  Json with_rv = NodeSlice("b", "node-1", "d.example.com");
  with_rv["metadata"]["resourceVersion"] = "5";
  EXPECT_EQ(Reason(store.Create(Kind::kResourceSlice, with_rv).status()), "BadRequest");
  Json no_name = NodeSlice("b", "node-1", "d.example.com");
  no_name["metadata"].erase("name");
  EXPECT_THAT(std::string(store.Create(Kind::kResourceSlice, no_name).status().message()),
              HasSubstr("metadata.name: Required value: name or generateName is required"));
}

TEST(ObjectStore, UpdateConflictsOnStaleResourceVersion) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json a = *store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "d.example.com"));
  Json stale = a;
  a["spec"]["pool"]["generation"] = 2;
  ASSERT_TRUE(store.Update(Kind::kResourceSlice, a).ok());
  stale["spec"]["pool"]["generation"] = 3;
  absl::Status s = store.Update(Kind::kResourceSlice, stale).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Reason(s), "Conflict");
  EXPECT_EQ(HttpCode(s), 409);
  EXPECT_EQ(s.message(),
            "Operation cannot be fulfilled on resourceslices.resource.k8s.io \"a\": the object "
            "has been modified; please apply your changes to the latest version and try again");
  // Without a resourceVersion the update is unconditional.
  stale["metadata"].erase("resourceVersion");
  absl::StatusOr<Json> forced = store.Update(Kind::kResourceSlice, stale);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["spec"]["pool"]["generation"], 3);
  EXPECT_EQ(
      Reason(
          store.Update(Kind::kResourceSlice, NodeSlice("zzz", "node-1", "d.example.com")).status()),
      "NotFound");
}

TEST(ObjectStore, NoOpUpdateKeepsResourceVersionAndMetadataChangeKeepsGeneration) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json a = *store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "d.example.com"));
  Json same = *store.Update(Kind::kResourceSlice, a);
  EXPECT_EQ(same, a);
  a["metadata"]["labels"] = {{"x", "y"}};
  Json labelled = *store.Update(Kind::kResourceSlice, a);
  EXPECT_GT(Rv(labelled), Rv(same));
  EXPECT_EQ(labelled["metadata"]["generation"], 1);
  EXPECT_EQ(labelled["metadata"]["uid"], same["metadata"]["uid"]);
}

TEST(ObjectStore, ClaimSpecIsImmutableAndStatusGoesThroughStatus) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json c = *store.Create(Kind::kResourceClaim, NamespacedClaim("default", "c"));
  Json changed = c;
  changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2;
  absl::Status s = store.Update(Kind::kResourceClaim, changed).status();
  EXPECT_EQ(Reason(s), "Invalid");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("spec: Invalid value: \"object\": field is immutable"));

  Json with_status = c;
  with_status["status"] = Json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}})");
  // A plain update drops status changes; /status takes them.
  EXPECT_FALSE(store.Update(Kind::kResourceClaim, with_status)->contains("status"));
  absl::StatusOr<Json> updated = store.UpdateStatus(Kind::kResourceClaim, with_status);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-0");
  // A set allocation cannot be changed.
  Json realloc = *updated;
  realloc["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-1";
  EXPECT_THAT(std::string(store.UpdateStatus(Kind::kResourceClaim, realloc).status().message()),
              HasSubstr("status.allocation: Invalid value: \"object\": field is immutable"));
  EXPECT_EQ(Reason(store.UpdateStatus(Kind::kResourceSlice, with_status).status()),
            "MethodNotAllowed");
}

TEST(ObjectStore, FieldSelectors) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("b", "node-1", "b.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("c", "node-2", "a.example.com")).ok());
  auto names = [&](const std::string& selector) {
    absl::StatusOr<FieldSelector> fs =
        FieldSelector::Parse(selector, InfoOf(Kind::kResourceSlice), "v1");
    EXPECT_TRUE(fs.ok()) << fs.status();
    std::vector<std::string> out;
    for (const Json& o :
         store.List(Kind::kResourceSlice, "", {.fields = *fs, .labels = {}}).items) {
      out.push_back(o["metadata"]["name"]);
    }
    return out;
  };
  EXPECT_THAT(names(""), ::testing::ElementsAre("a", "b", "c"));
  EXPECT_THAT(names("spec.nodeName=node-1"), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(names("spec.nodeName==node-1,spec.driver=a.example.com"),
              ::testing::ElementsAre("a"));
  EXPECT_THAT(names("spec.driver!=a.example.com"), ::testing::ElementsAre("b"));
  EXPECT_THAT(names("metadata.name=c"), ::testing::ElementsAre("c"));

  absl::Status bad =
      FieldSelector::Parse("spec.pool=x", InfoOf(Kind::kResourceSlice), "v1beta1").status();
  EXPECT_EQ(Reason(bad), "BadRequest");
  EXPECT_EQ(bad.message(),
            "field label not supported for resource.k8s.io/v1beta1, Kind=ResourceSlice: spec.pool");
  EXPECT_EQ(
      FieldSelector::Parse("spec.nodeName", InfoOf(Kind::kResourceSlice), "v1").status().message(),
      "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'");
  EXPECT_EQ(
      FieldSelector::Parse("spec.x=y", InfoOf(Kind::kResourceClaim), "v1").status().message(),
      "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"");
}

TEST(ObjectStore, LabelSelectorsAndNamespaces) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json c1 = NamespacedClaim("ns1", "c");
  c1["metadata"]["labels"] = {{"app", "x"}};
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, c1).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, NamespacedClaim("ns2", "c")).ok());
  EXPECT_EQ(store.List(Kind::kResourceClaim, "").items.size(), 2u);
  EXPECT_EQ(store.List(Kind::kResourceClaim, "ns2").items.size(), 1u);
  ListOptions app{.fields = {}, .labels = *LabelSelector::Parse("app=x")};
  EXPECT_EQ(store.List(Kind::kResourceClaim, "", app).items.size(), 1u);
  ListOptions not_app{.fields = {}, .labels = *LabelSelector::Parse("app!=x")};
  EXPECT_EQ(store.List(Kind::kResourceClaim, "", not_app).items[0]["metadata"]["namespace"], "ns2");
  EXPECT_EQ(Reason(LabelSelector::Parse("app in (x)").status()), "BadRequest");
}

TEST(ObjectStore, DeleteAndDeleteCollection) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("b", "node-1", "b.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("c", "node-2", "a.example.com")).ok());
  ListOptions node1{
      .fields = *FieldSelector::Parse("spec.nodeName=node-1,spec.driver!=b.example.com",
                                      InfoOf(Kind::kResourceSlice), "v1"),
      .labels = {}};
  ListResult deleted = store.DeleteCollection(Kind::kResourceSlice, "", node1);
  ASSERT_EQ(deleted.items.size(), 1u);
  EXPECT_EQ(deleted.items[0]["metadata"]["name"], "a");
  EXPECT_EQ(store.List(Kind::kResourceSlice, "").items.size(), 2u);

  absl::StatusOr<DeleteResult> one = store.Delete(Kind::kResourceSlice, "", "b");
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->deleted);
  EXPECT_EQ(one->object["metadata"]["resourceVersion"], std::to_string(store.ResourceVersion()));
  EXPECT_EQ(Reason(store.Delete(Kind::kResourceSlice, "", "b").status()), "NotFound");
  EXPECT_EQ(store.Delete(Kind::kResourceSlice, "", "c", {.uid = "other", .resource_version = ""})
                .status()
                .code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(store.DeleteSlices("node-2"), 1);
  EXPECT_TRUE(store.List(Kind::kResourceSlice, "").items.empty());
}

TEST(ObjectStore, FinalizersDelayDeletion) {
  ObjectStore store = MakeStoreWithFixedClock();
  Json c = NamespacedClaim("default", "c");
  c["metadata"]["finalizers"] = {"resource.kubernetes.io/delete-protection"};
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, c).ok());
  absl::StatusOr<DeleteResult> pending = store.Delete(Kind::kResourceClaim, "default", "c");
  ASSERT_TRUE(pending.ok());
  EXPECT_FALSE(pending->deleted);
  EXPECT_TRUE(pending->object["metadata"].contains("deletionTimestamp"));
  Json object = *store.Get(Kind::kResourceClaim, "default", "c");
  object["metadata"].erase("finalizers");
  ASSERT_TRUE(store.Update(Kind::kResourceClaim, object).ok());
  EXPECT_EQ(Reason(store.Get(Kind::kResourceClaim, "default", "c").status()), "NotFound");
}

TEST(ObjectStore, EventLogForWatches) {
  ObjectStore store = MakeStoreWithFixedClock();
  const int64_t start = store.ResourceVersion();
  Json a = *store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com"));
  a["spec"]["pool"]["generation"] = 2;
  ASSERT_TRUE(store.Update(Kind::kResourceSlice, a).ok());
  ASSERT_TRUE(store.Delete(Kind::kResourceSlice, "", "a").ok());
  absl::StatusOr<std::vector<WatchEvent>> events = store.EventsSince(start);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].type, WatchEvent::Type::kAdded);
  EXPECT_EQ((*events)[1].type, WatchEvent::Type::kModified);
  EXPECT_EQ((*events)[2].type, WatchEvent::Type::kDeleted);
  EXPECT_LT((*events)[0].resource_version, (*events)[1].resource_version);
  EXPECT_EQ(store.EventsSince(store.ResourceVersion())->size(), 0u);
  EXPECT_FALSE(store.WaitForEvents(store.ResourceVersion(), absl::Milliseconds(1)));

  // The log keeps 100 events: older resourceVersions are Expired.
  for (int i = 0; i < 120; ++i) {
    ASSERT_TRUE(
        store.Create(Kind::kResourceSlice, NodeSlice("s-", "node-1", "a.example.com")).ok());
  }
  absl::Status expired = store.EventsSince(start).status();
  EXPECT_EQ(Reason(expired), "Expired");
  EXPECT_EQ(HttpCode(expired), 410);
}

TEST(ObjectStore, WaitForEventsWakesOnWrite) {
  ObjectStore store = MakeStoreWithFixedClock();
  const int64_t start = store.ResourceVersion();
  std::thread writer([&] {
    ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com")).ok());
  });
  EXPECT_TRUE(store.WaitForEvents(start, absl::Seconds(30)));
  writer.join();
}

TEST(ObjectStore, TypedAccessors) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("b", "node-2", "a.example.com")).ok());
  absl::StatusOr<std::vector<ResourceSlice>> slices = store.ListSlices("node-1");
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 1u);
  EXPECT_EQ((*slices)[0].metadata.name, "a");
  EXPECT_TRUE(store.ListSlices("node-1", "other.example.com")->empty());

  Json stored = *store.Create(Kind::kResourceClaim, NamespacedClaim("default", "c"));
  stored["status"] = {{"devices", {{{"driver", "a.example.com"}, {"pool", "p"}, {"device", "d"}}}}};
  ASSERT_TRUE(store.UpdateStatus(Kind::kResourceClaim, stored).ok());
  absl::StatusOr<ResourceClaim> claim = store.GetClaim("default", "c");
  ASSERT_TRUE(claim.ok()) << claim.status();
  claim->status.allocation = AllocationResult{};
  claim->status.allocation->results.push_back({.request = "gpu",
                                               .driver = "a.example.com",
                                               .pool = "node-1",
                                               .device = "dev-0",
                                               .admin_access = std::nullopt,
                                               .share_id = std::nullopt});
  claim->status.reserved_for.push_back(
      {.api_group = "", .resource = "pods", .name = "p", .uid = "pod-uid"});
  absl::StatusOr<ResourceClaim> updated = store.UpdateClaimStatus(*claim);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->status.allocation->results[0].device, "dev-0");
  // The untyped status field is kept.
  EXPECT_EQ((*store.Get(Kind::kResourceClaim, "default", "c"))["status"]["devices"][0]["device"],
            "d");
  // The stale resourceVersion in `claim` now conflicts.
  EXPECT_EQ(Reason(store.UpdateClaimStatus(*claim).status()), "Conflict");
  EXPECT_EQ(store.ListClaims("default")->size(), 1u);
  EXPECT_EQ(store.DeleteClaim("default", "c", "wrong-uid").code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(store.DeleteClaim("default", "c", updated->metadata.uid).ok());
  EXPECT_EQ(store.GetClaim("default", "c").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.GetClaim("default", "c").status().message(),
            "resourceclaims.resource.k8s.io \"c\" not found");
}

// The typed reads come from decoded copies: every kind of change must reach them.
TEST(ObjectStore, TypedReadsFollowEveryChange) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, NamespacedClaim("default", "c")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("s", "node-1", "a.example.com")).ok());
  ASSERT_TRUE(store.GetClaim("default", "c").ok());  // decoded now
  ASSERT_EQ(store.ListSlices("node-1", "a.example.com")->size(), 1u);

  Json claim = *store.Get(Kind::kResourceClaim, "default", "c");
  claim["metadata"]["labels"] = {{"team", "ml"}};
  ASSERT_TRUE(store.Update(Kind::kResourceClaim, claim).ok());
  EXPECT_EQ(store.GetClaim("default", "c")->metadata.labels.at("team"), "ml");
  EXPECT_EQ(store.ListClaims("default")->at(0).metadata.labels.at("team"), "ml");
  EXPECT_THAT(*store.ListClaims("other"), ::testing::IsEmpty());

  Json slice = *store.Get(Kind::kResourceSlice, "", "s");
  slice["spec"]["devices"][0]["name"] = "dev-1";
  ASSERT_TRUE(store.Update(Kind::kResourceSlice, slice).ok());
  EXPECT_EQ(store.ListSlices("")->at(0).spec.devices.at(0).name, "dev-1");
  EXPECT_THAT(*store.ListSlices("node-2"), ::testing::IsEmpty());
  EXPECT_THAT(*store.ListSlices("node-1", "b.example.com"), ::testing::IsEmpty());

  const Json snapshot = store.Snapshot();
  ASSERT_TRUE(store.DeleteClaim("default", "c").ok());
  EXPECT_TRUE(absl::IsNotFound(store.GetClaim("default", "c").status()));
  EXPECT_EQ(store.DeleteSlices("node-1"), 1);
  EXPECT_THAT(*store.ListSlices(""), ::testing::IsEmpty());

  ASSERT_TRUE(store.Restore(snapshot).ok());
  EXPECT_EQ(store.GetClaim("default", "c")->metadata.labels.at("team"), "ml");
  EXPECT_EQ(store.ListSlices("node-1")->at(0).spec.devices.at(0).name, "dev-1");
}

TEST(ObjectStore, SnapshotAndRestore) {
  ObjectStore store = MakeStoreWithFixedClock();
  ASSERT_TRUE(store.Create(Kind::kResourceSlice, NodeSlice("a", "node-1", "a.example.com")).ok());
  ASSERT_TRUE(store.Create(Kind::kResourceClaim, NamespacedClaim("default", "c")).ok());
  Json snapshot = store.Snapshot();
  // The two, and the four system namespaces every store starts with.
  EXPECT_EQ(snapshot["objects"].size(), 6u);

  ObjectStore restored = MakeStoreWithFixedClock();
  ASSERT_TRUE(restored.Restore(snapshot).ok());
  EXPECT_EQ(restored.ResourceVersion(), store.ResourceVersion());
  EXPECT_EQ(*restored.Get(Kind::kResourceSlice, "", "a"),
            *store.Get(Kind::kResourceSlice, "", "a"));
  EXPECT_TRUE(restored.Get(Kind::kNode, "", "node-1").ok());
  Json next = *restored.Create(Kind::kResourceClaim, NamespacedClaim("default", "d"));
  EXPECT_GT(Rv(next), store.ResourceVersion());

  Json bad = snapshot;
  bad["objects"][0]["spec"]["driver"] = "";
  absl::Status s = restored.Restore(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("objects[0]"));
}

}  // namespace
}  // namespace kdp::manager::resourceapi
