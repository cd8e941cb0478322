// The local resource API's lists and watches over real HTTP: watch-list as client-go's reflector
// sends it, paged lists with continue, resourceVersion semantics, the watch limit, clean ends
// at timeoutSeconds and at Stop(), and the Node's labels.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/server.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/resourceapi/api_server_fixture.h"
#include "tests/unit/manager/resourceapi/test_tls.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
constexpr char kWatchList[] =
    "/apis/resource.k8s.io/v1/resourceslices?allowWatchBookmarks=true&fieldSelector=spec.driver%3D"
    "gpu.example.com%2Cspec.nodeName%3Dnode-1&resourceVersionMatch=NotOlderThan&"
    "sendInitialEvents=true&timeout=8m43s&timeoutSeconds=523&watch=true";

Json Slice(const std::string& name, const std::string& driver = "gpu.example.com") {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", "node-1"},
            {"pool", {{"name", "node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {{{"name", "dev-0"}}}}}}};
}

// A watch read on its own thread: the events it received, in order.
class WatchClient {
 public:
  WatchClient(int port, std::string path, httplib::Headers headers = {})
      : client_(testing::NewHttpsClient(port)) {
    client_->set_bearer_token_auth(testing::kApiToken);
    client_->set_read_timeout(60, 0);
    thread_ = std::thread([this, path, headers] {
      auto read = [this](const char* data, size_t size) {
        absl::MutexLock lock(&mu_);
        buffer_.append(data, size);
        size_t newline;
        while ((newline = buffer_.find('\n')) != std::string::npos) {
          std::string line = buffer_.substr(0, newline);
          buffer_.erase(0, newline + 1);
          if (!line.empty()) events_.push_back(Json::parse(line, nullptr, false));
        }
        return !cancel_;
      };
      httplib::Result r = client_->Get(path, headers, read);
      // A connection that never got an answer is tried again, as client-go's reflector does: the
      // server gives a TLS handshake its read timeout (5 s), which 20 handshakes at once under
      // ThreadSanitizer, with a build beside them, can pass.
      while (!r && Count() == 0) {
        absl::SleepFor(absl::Milliseconds(100));
        {
          absl::MutexLock lock(&mu_);
          if (cancel_) break;  // checked after the sleep: the destructor's stop() came first
          buffer_.clear();     // a torn first answer's bytes
        }
        r = client_->Get(path, headers, read);
      }
      absl::MutexLock lock(&mu_);
      status_ = r ? r->status : -1;
      complete_ = static_cast<bool>(r);
      done_ = true;
    });
  }
  ~WatchClient() {
    {
      absl::MutexLock lock(&mu_);
      cancel_ = true;
    }
    client_->stop();
    thread_.join();
  }
  std::vector<std::string> Summary() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const Json& e : events_) {
      out.push_back(absl::StrCat(e["type"].get<std::string>(), " ",
                                 e["object"]["metadata"].value("name", "")));
    }
    return out;
  }
  size_t Count() {
    absl::MutexLock lock(&mu_);
    return events_.size();
  }
  Json Event(size_t i) {
    absl::MutexLock lock(&mu_);
    return events_.at(i);
  }
  bool Done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  int status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  bool complete() {
    absl::MutexLock lock(&mu_);
    return complete_;
  }

 private:
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  absl::Mutex mu_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  std::vector<Json> events_ ABSL_GUARDED_BY(mu_);
  bool cancel_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool complete_ ABSL_GUARDED_BY(mu_) = false;
  int status_ ABSL_GUARDED_BY(mu_) = 0;
};

class ServerWatchTest : public ::testing::Test {
 protected:
  void StartServer(ResourceApiServerOptions options) {
    options.token = testing::kApiToken;
    options.tls = testing::TestCertificates();
    options.watch.future_resource_version_wait = absl::Milliseconds(50);
    server_ = std::make_unique<ResourceApiServer>(&store_, options);
    ASSERT_TRUE(server_->Start().ok());
    client_ = testing::NewHttpsClient(server_->port());
    client_->set_bearer_token_auth(testing::kApiToken);
  }
  void SetUp() override { StartServer({.threads = 32}); }
  void TearDown() override { server_->Stop(); }

  std::pair<int, Json> Get(const std::string& path) {
    httplib::Result r = client_->Get(path);
    if (!r) return {0, nullptr};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }
  void Create(const Json& slice) {
    httplib::Result r = client_->Post(kSlices, slice.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
  }

  ObjectStore store_{StoreOptions{.node_name = "node-1",
                                  .node_labels = {{"cloud.google.com/gke-tpu-topology", "2x2"}}}};
  std::unique_ptr<ResourceApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerWatchTest, WatchListAsClientGoSendsIt) {
  Create(Slice("mine-a"));
  Create(Slice("theirs", "tpu.example.com"));
  WatchClient watch(server_->port(), kWatchList);
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Count() >= 2; }, absl::Seconds(10)));
  EXPECT_THAT(watch.Summary(), ElementsAre("ADDED mine-a", "BOOKMARK "));
  EXPECT_EQ(watch.Event(1)["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true");
  // The driver's own POST reaches its informer (else it would POST a second slice next sync).
  Create(Slice("mine-b"));
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Count() >= 3; }, absl::Seconds(10)));
  EXPECT_THAT(watch.Summary(), ElementsAre("ADDED mine-a", "BOOKMARK ", "ADDED mine-b"));
  EXPECT_EQ(server_->active_watches(), 1);
}

TEST_F(ServerWatchTest, EveryChangeReachesEveryWatchThatSelectsIt) {
  std::vector<std::unique_ptr<WatchClient>> watches;
  for (int i = 0; i < 20; ++i)
    watches.push_back(std::make_unique<WatchClient>(server_->port(), kWatchList));
  // 20 TLS handshakes and 20 new workers: 4.5 s alone under ThreadSanitizer, over 10 s with a
  // build beside it (a handshake over the server's 5 s is retried by WatchClient). A bound on
  // waiting, not on speed.
  ASSERT_TRUE(
      kdp::testing::WaitUntil([&] { return server_->active_watches() == 20; }, absl::Seconds(60)));
  Create(Slice("s1"));
  Json updated = *store_.Get(Kind::kResourceSlice, "", "s1");
  updated["spec"]["devices"][0]["name"] = "dev-1";
  httplib::Result put =
      client_->Put(absl::StrCat(kSlices, "/s1"), updated.dump(), "application/json");
  ASSERT_TRUE(put);
  ASSERT_EQ(put->status, 200);
  ASSERT_EQ(client_->Delete(absl::StrCat(kSlices, "/s1"))->status, 200);
  for (auto& watch : watches) {
    ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch->Count() >= 4; }, absl::Seconds(10)));
    EXPECT_THAT(watch->Summary(),
                ElementsAre("BOOKMARK ", "ADDED s1", "MODIFIED s1", "DELETED s1"));
  }
}

// kubectl get -w: a watch asked for as a Table gets one-row Tables, the column definitions in
// the first event only.
TEST_F(ServerWatchTest, ATableWatchSendsOneRowTablesAsKubectlGetWatchReadsThem) {
  WatchClient watch(server_->port(), absl::StrCat(kSlices, "?watch=true"),
                    {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_TRUE(
      kdp::testing::WaitUntil([&] { return server_->active_watches() == 1; }, absl::Seconds(10)));
  Create(Slice("first"));
  Create(Slice("second"));
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Count() >= 2; }, absl::Seconds(10)));
  const Json first = watch.Event(0);
  const Json second = watch.Event(1);
  EXPECT_EQ(first["type"], "ADDED");
  EXPECT_EQ(first["object"]["kind"], "Table");
  EXPECT_EQ(first["object"]["apiVersion"], "meta.k8s.io/v1");
  ASSERT_TRUE(first["object"]["columnDefinitions"].is_array());
  EXPECT_EQ(first["object"]["columnDefinitions"][0]["name"], "Name");
  ASSERT_EQ(first["object"]["rows"].size(), 1u);
  EXPECT_EQ(first["object"]["rows"][0]["cells"][0], "first");
  EXPECT_FALSE(second["object"]["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_TRUE(second["object"]["columnDefinitions"].is_null());
  EXPECT_EQ(second["object"]["rows"][0]["cells"][0], "second");
}

TEST_F(ServerWatchTest, WatchOfANamedObject) {
  Create(Slice("a"));
  Create(Slice("b"));
  WatchClient watch(server_->port(), absl::StrCat(kSlices, "/a?watch=true"));
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Count() >= 1; }, absl::Seconds(10)));
  EXPECT_THAT(watch.Summary(), ElementsAre("ADDED a"));
}

TEST_F(ServerWatchTest, WatchEndsCleanlyAtTimeoutSeconds) {
  WatchClient watch(server_->port(), absl::StrCat(kSlices, "?watch=true&timeoutSeconds=1"));
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Done(); }, absl::Seconds(10)));
  EXPECT_TRUE(watch.complete());
  EXPECT_EQ(watch.status(), 200);
  EXPECT_TRUE(
      kdp::testing::WaitUntil([&] { return server_->active_watches() == 0; }, absl::Seconds(5)));
}

TEST_F(ServerWatchTest, StopEndsOpenWatchesCleanly) {
  WatchClient watch(server_->port(), kWatchList);
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Count() >= 1; }, absl::Seconds(10)));
  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  ASSERT_TRUE(kdp::testing::WaitUntil([&] { return watch.Done(); }, absl::Seconds(10)));
  EXPECT_TRUE(watch.complete());  // the last chunk came: not a broken connection
  EXPECT_EQ(watch.status(), 200);
}

TEST_F(ServerWatchTest, WatchesBeyondTheLimitAre429AndShortRequestsStillServed) {
  server_->Stop();
  StartServer({.threads = 4, .max_watches = 1});
  WatchClient first(server_->port(), kWatchList);
  ASSERT_TRUE(
      kdp::testing::WaitUntil([&] { return server_->active_watches() == 1; }, absl::Seconds(10)));
  auto [code, status] = Get(absl::StrCat(kSlices, "?watch=true"));
  EXPECT_EQ(code, 429);
  EXPECT_EQ(status["reason"], "TooManyRequests");
  EXPECT_EQ(status["details"]["retryAfterSeconds"], 1);
  EXPECT_EQ(Get("/api/v1/nodes/node-1").first, 200);
}

TEST_F(ServerWatchTest, PagedListWithContinue) {
  for (const char* name : {"e", "a", "d", "b", "c"}) Create(Slice(name));
  std::vector<std::string> names;
  std::string path = absl::StrCat(kSlices, "?limit=2");
  std::string list_rv;
  for (int page = 0; page < 10; ++page) {
    auto [code, list] = Get(path);
    ASSERT_EQ(code, 200) << list.dump();
    for (const Json& item : list["items"]) names.push_back(item["metadata"]["name"]);
    if (list_rv.empty()) list_rv = list["metadata"]["resourceVersion"];
    EXPECT_EQ(list["metadata"]["resourceVersion"], list_rv);
    if (!list["metadata"].contains("continue")) break;
    EXPECT_EQ(list["metadata"]["remainingItemCount"], 5 - static_cast<int>(names.size()));
    path = absl::StrCat(kSlices,
                        "?limit=2&continue=", list["metadata"]["continue"].get<std::string>());
  }
  EXPECT_THAT(names, ElementsAre("a", "b", "c", "d", "e"));

  // A slice changed between pages: the next page would not be consistent.
  auto [code, first] = Get(absl::StrCat(kSlices, "?limit=2"));
  ASSERT_EQ(code, 200);
  Create(Slice("f"));
  auto [expired_code, expired] = Get(absl::StrCat(
      kSlices, "?limit=2&continue=", first["metadata"]["continue"].get<std::string>()));
  EXPECT_EQ(expired_code, 410);
  EXPECT_EQ(expired["reason"], "Expired");
  // resourceVersion=0 is served whole, as the watch cache does, whatever the limit.
  auto [zero_code, zero] = Get(absl::StrCat(kSlices, "?limit=2&resourceVersion=0"));
  EXPECT_EQ(zero_code, 200);
  EXPECT_EQ(zero["items"].size(), 6u);
  EXPECT_FALSE(zero["metadata"].contains("continue"));
}

TEST_F(ServerWatchTest, ListResourceVersionSemantics) {
  Create(Slice("a"));
  const int64_t now = store_.ResourceVersion();
  EXPECT_EQ(
      Get(absl::StrCat(kSlices, "?resourceVersion=", now, "&resourceVersionMatch=Exact")).first,
      200);
  EXPECT_EQ(Get(absl::StrCat(kSlices, "?resourceVersion=", now)).first, 200);
  auto [future_code, future] = Get(
      absl::StrCat(kSlices, "?resourceVersion=", now + 10, "&resourceVersionMatch=NotOlderThan"));
  EXPECT_EQ(future_code, 504);
  EXPECT_EQ(future["reason"], "Timeout");
  Create(Slice("b"));
  auto [old_code, old] =
      Get(absl::StrCat(kSlices, "?resourceVersion=", now, "&resourceVersionMatch=Exact"));
  EXPECT_EQ(old_code, 410);
  EXPECT_EQ(old["reason"], "Expired");
  auto [invalid_code, invalid] = Get(absl::StrCat(kSlices, "?sendInitialEvents=true"));
  EXPECT_EQ(invalid_code, 422);
  EXPECT_EQ(invalid["details"]["kind"], "ListOptions");
}

TEST_F(ServerWatchTest, NodeHasAStableUidAndTheGivenLabels) {
  auto [code, node] = Get("/api/v1/nodes/node-1");
  ASSERT_EQ(code, 200);
  EXPECT_EQ(node["metadata"]["uid"], store_.node_uid());
  EXPECT_EQ(node["metadata"]["uid"], ObjectStore(StoreOptions{.node_name = "node-1"}).node_uid());
  EXPECT_EQ(node["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"], "2x2");
  EXPECT_EQ(node["metadata"]["labels"]["kubernetes.io/hostname"], "node-1");
  EXPECT_EQ(Get("/api/v1/nodes/node-2").first, 404);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
