// Issue 6: a DRA driver built on client-go and the Go kubelet-plugin helper runs unchanged against
// kdp-manager. GoStyleDriver (go_style_driver.h) makes the calls such drivers make, in their order
// and wire formats (as observed from real Go drivers on helper v0.32-v0.37), against the real
// kdp-manager process and kdpctl in a temporary kubelet root:
//   0. watches deliver each event at once although the client accepts gzip, as Go's transport
//      always does (otherwise the watch-list never syncs and nothing below can work);
//   1. helper v0.36/v0.37 (v1): watch-list, GET node, POST protobuf 201 with the full echo; a pod's
//      claim is prepared (claim GET with the kubelet's UID, CDI IDs in the container) and
//      unprepared with the pod, after which the claim GET answers 404;
//   2. a device removed: PUT protobuf 200, the informer sees MODIFIED, the store the new list;
//   3. helper v0.32/v0.33 (v1beta1 only): LIST + WATCH, everything under /v1beta1/, slices with
//      `basic`, admission works the same;
//   4. the manager restarting wipes the node's slices; the driver's informer reconnects, sees the
//      slice DELETED and publishes it again;
//   5. a device going unhealthy on the health stream (which sends full lists at once and on every
//      change) shows in kdpctl get pods and kdpctl status.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tests/integration/dra_fixture.h"
#include "tests/integration/go_style_driver.h"

namespace kdp::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;

constexpr char kNode[] = "node-1";
constexpr char kDriver[] = "gpu.go.example.com";
constexpr char kSelector[] = "spec.driver%3Dgpu.go.example.com%2Cspec.nodeName%3Dnode-1";

GoDevice Gpu(int index) {
  return GoDevice{.name = absl::StrCat("gpu-", index),
                  .ints = {{"index", index}},
                  .bools = {{"mig", index % 2 == 1}},
                  .strings = {{"model", "H100"}},
                  .versions = {{"driverVersion", "550.54.15"}},
                  .capacity = {{"memory", "80Gi"}}};
}

std::vector<GoDevice> Gpus(int count) {
  std::vector<GoDevice> devices;
  for (int i = 0; i < count; ++i) devices.push_back(Gpu(i));
  return devices;
}

// The query of `path` as ordered key=value pairs, with the watch timeouts checked (client-go's
// reflector: timeoutSeconds in [300, 600), `timeout` the same in Go duration form) and replaced
// by "T" and "S".
std::vector<std::string> QueryOf(const std::string& path) {
  std::vector<std::string> out;
  const size_t question = path.find('?');
  if (question == std::string::npos) return out;
  std::string timeout;
  for (absl::string_view pair : absl::StrSplit(path.substr(question + 1), '&')) {
    std::string item(pair);
    if (absl::StartsWith(item, "timeout=")) {
      timeout = item.substr(8);
      item = "timeout=T";
    } else if (absl::StartsWith(item, "timeoutSeconds=")) {
      int64_t seconds = 0;
      EXPECT_TRUE(absl::SimpleAtoi(item.substr(15), &seconds)) << path;
      EXPECT_GE(seconds, 300) << path;
      EXPECT_LT(seconds, 600) << path;
      EXPECT_EQ(timeout, GoDurationString(seconds)) << path;
      item = "timeoutSeconds=S";
    }
    out.push_back(item);
  }
  return out;
}

std::string PathOf(const ApiCall& call) { return call.path.substr(0, call.path.find('?')); }

bool IsWatch(const ApiCall& call) { return absl::StrContains(call.path, "watch=true"); }

// Index of the first call after `from` that `match` accepts; -1 when none.
template <typename Match>
int FindCall(const std::vector<ApiCall>& calls, Match match, int from = 0) {
  for (int i = from; i < static_cast<int>(calls.size()); ++i) {
    if (match(calls[i])) return i;
  }
  return -1;
}

// True when some object in `json` has a string value containing `device` and one equal to
// `health` (how kdpctl status reports a device's health, whatever its layout).
bool MentionsHealth(const nlohmann::json& json, const std::string& device,
                    const std::string& health) {
  if (json.is_array()) {
    for (const auto& item : json) {
      if (MentionsHealth(item, device, health)) return true;
    }
    return false;
  }
  if (!json.is_object()) return false;
  bool names = false, has_health = false;
  for (const auto& [key, value] : json.items()) {
    if (value.is_string() && absl::StrContains(value.get<std::string>(), device)) names = true;
    if (value.is_string() && value.get<std::string>() == health) has_health = true;
    if (MentionsHealth(value, device, health)) return true;
  }
  return names && has_health;
}

class GoDriverContract : public DraE2ETest {
 protected:
  void TearDown() override {
    for (auto& driver : drivers_) driver->Stop();
  }

  void StartGoManager() {
    StartManager({"--node-name", kNode, "--node-labels", "example.com/tpu-topology=2x2",
                  "--topology-xml", Fixture()});
  }

  GoStyleDriver* StartGoDriver(GoApiFlavour flavour, std::vector<GoDevice> devices = Gpus(4),
                               std::vector<GoCounterSet> counter_sets = {}) {
    drivers_.push_back(std::make_unique<GoStyleDriver>(
        GoStyleDriverOptions{.driver_name = kDriver,
                             .node_name = kNode,
                             .kubelet_root = Root(),
                             .flavour = flavour,
                             .devices = std::move(devices),
                             .counter_sets = std::move(counter_sets),
                             .binary_name = "gpu-kubelet-plugin"}));
    absl::Status started = drivers_.back()->Start();
    EXPECT_TRUE(started.ok()) << started;
    return drivers_.back().get();
  }

  // Published, and the `posts` POSTs that published are in the driver's call log: the informer
  // may see a slice before the driver has read the POST's response and recorded the call.
  bool WaitPublished(const GoStyleDriver& driver, int posts = 1) {
    return WaitUntil([&] {
      if (!driver.registered() || !driver.published()) return false;
      const std::vector<ApiCall> calls = driver.calls();
      return std::count_if(calls.begin(), calls.end(),
                           [](const ApiCall& call) { return call.method == "POST"; }) >= posts;
    });
  }

  std::string Diagnostics(const GoStyleDriver& driver) {
    std::string out = "--- driver calls ---\n";
    for (const ApiCall& call : driver.calls()) {
      absl::StrAppend(&out, call.method, " ", call.path, " [", call.content_type, "] -> ",
                      call.status, " [", call.response_content_type, "; encoding ",
                      call.response_content_encoding, "] ", call.response.substr(0, 300), "\n");
    }
    absl::StrAppend(&out, "--- informer events ---\n");
    for (const InformerEvent& event : driver.events()) {
      absl::StrAppend(&out, event.type, " ", event.name, " rv=", event.resource_version,
                      event.from_relist ? " (relist)" : "", "\n");
    }
    absl::StrAppend(&out, "--- driver log ---\n", absl::StrJoin(driver.logs(), "\n"),
                    "\n--- manager ---\n", manager_ ? manager_->Output() : "");
    return out;
  }

  // DeviceClass, template of `count` devices, and pod `pod` using it; the pod's apply answer.
  nlohmann::json AdmitPod(const std::string& pod, int count) {
    return ApplyPod(absl::StrCat(DeviceClass(kDriver, kDriver), "---\n",
                                 ClaimTemplate(pod + "-gpus", count, "", kDriver), "---\n",
                                 ClaimPod(pod, pod + "-gpus")));
  }

  // The CDI IDs GoStyleDriver answers for a claim: "<driver>/gpu=<claim uid>-<device>".
  static std::vector<std::string> ExpectedCdiIds(const nlohmann::json& claim) {
    std::vector<std::string> ids;
    for (const auto& device : claim["devices"]) {
      ids.push_back(absl::StrCat(kDriver, "/gpu=", claim["claim_uid"].get<std::string>(), "-",
                                 device["device"].get<std::string>()));
    }
    return ids;
  }

  // NodePrepareResources for claim default/`name` with `uid`, sent to the driver's socket as the
  // kubelet sends it (v1beta1: both flavours serve it); the claim's error, or the RPC's.
  static std::string PrepareError(const GoStyleDriver& driver, const std::string& name,
                                  const std::string& uid) {
    auto stub = drav1beta1::DRAPlugin::NewStub(
        grpc::CreateChannel("unix:" + driver.dra_socket(), grpc::InsecureChannelCredentials()));
    drav1beta1::NodePrepareResourcesRequest request;
    auto* claim = request.add_claims();
    claim->set_namespace_("default");
    claim->set_name(name);
    claim->set_uid(uid);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    drav1beta1::NodePrepareResourcesResponse response;
    grpc::Status status = stub->NodePrepareResources(&context, request, &response);
    if (!status.ok()) return "rpc failed: " + status.error_message();
    const auto found = response.claims().find(uid);
    return found == response.claims().end() ? "no answer for the claim" : found->second.error();
  }

  // Admission, preparation and clean-up of one pod, the same for every flavour: the claim is
  // read with the kubelet's UID through `version`, the container gets the driver's CDI IDs, and
  // after the pod is deleted the driver unprepares and the claim GET answers 404.
  void AdmitPrepareAndDelete(GoStyleDriver& driver, const std::string& version);

  std::vector<std::unique_ptr<GoStyleDriver>> drivers_;
};

void GoDriverContract::AdmitPrepareAndDelete(GoStyleDriver& driver, const std::string& version) {
  const nlohmann::json pod = AdmitPod("go-trainer", 2);
  ASSERT_EQ(pod.value("admitted", false), true) << pod.dump() << Diagnostics(driver);
  ASSERT_THAT(pod["claims"], SizeIs(1)) << pod.dump();
  const nlohmann::json& claim = pod["claims"][0];
  const std::string claim_uid = claim["claim_uid"];
  const std::string claim_name = claim["claim_name"];
  ASSERT_THAT(claim["devices"], SizeIs(2)) << pod.dump();
  for (const auto& device : claim["devices"]) {
    EXPECT_EQ(device["driver"], kDriver);
    EXPECT_EQ(device["pool"], kNode);
  }
  const std::vector<std::string> cdi_ids = ExpectedCdiIds(claim);
  EXPECT_THAT(ClaimCdiIds(pod), UnorderedElementsAreArray(cdi_ids));
  std::map<std::string, nlohmann::json> listed = ListedPods();
  ASSERT_EQ(listed.count("go-trainer"), 1u);
  EXPECT_THAT(ContainerCdiDevices(listed["go-trainer"], "main"),
              UnorderedElementsAreArray(cdi_ids));

  // The driver read the claim through the API and found the UID the kubelet side sent.
  const std::map<std::string, GoPreparedClaim> prepared = driver.prepared_claims();
  ASSERT_EQ(prepared.count(claim_uid), 1u) << Diagnostics(driver);
  const GoPreparedClaim& record = prepared.at(claim_uid);
  EXPECT_EQ(record.api, version);
  EXPECT_EQ(record.namespace_, "default");
  EXPECT_EQ(record.name, claim_name);
  EXPECT_EQ(record.api_uid, claim_uid);
  EXPECT_THAT(record.devices, SizeIs(2));
  const std::string claim_path = absl::StrCat("/apis/resource.k8s.io/", version,
                                              "/namespaces/default/resourceclaims/", claim_name);
  const std::vector<ApiCall> calls = driver.calls();
  const int get_claim =
      FindCall(calls, [&](const ApiCall& c) { return c.method == "GET" && c.path == claim_path; });
  ASSERT_GE(get_claim, 0) << Diagnostics(driver);
  EXPECT_EQ(calls[get_claim].status, 200);

  // The UID check is against what the API answers: a kubelet naming another UID is refused.
  EXPECT_THAT(PrepareError(driver, claim_name, "00000000-0000-0000-0000-000000000000"),
              HasSubstr("claim UID mismatch"));
  EXPECT_EQ(driver.prepared_claims().size(), 1u);

  // The pod goes: NodeUnprepareResources, and the generated claim is deleted with it.
  KdpctlResult deleted = DeletePod("go-trainer");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_TRUE(WaitUntil([&] {
    std::vector<std::string> unprepared = driver.unprepared();
    return std::find(unprepared.begin(), unprepared.end(), version + ":" + claim_uid) !=
           unprepared.end();
  })) << Diagnostics(driver);
  EXPECT_TRUE(driver.prepared_claims().empty());
  EXPECT_TRUE(WaitUntil([&] { return driver.GetClaim("default", claim_name).status == 404; }))
      << Diagnostics(driver);
}

// Go's http.Transport asks for gzip on every request (client-go leaves DisableCompression off).
// A watch must still deliver each event as it happens: the API server does not compress watch
// streams, and a compressor that buffers holds the watch-list's initial-events-end BOOKMARK back,
// so the informer never syncs and the driver never publishes (as seen with real Go drivers).
TEST_F(GoDriverContract, WatchEventsArriveAtOnceWhenTheClientAcceptsGzip) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  const auto credentials = ApiCredentials();
  GoRestClient client(
      {.server = credentials.first, .token = credentials.second, .ca_pem = ApiCa()});
  absl::Mutex mu;
  std::string received;
  std::thread watcher([&] {
    (void)client.Stream(
        absl::StrCat("/apis/resource.k8s.io/v1/resourceslices?allowWatchBookmarks=true&",
                     "resourceVersionMatch=NotOlderThan&sendInitialEvents=true&",
                     "timeout=5m0s&timeoutSeconds=300&watch=true"),
        [&](std::string_view data) {
          absl::MutexLock lock(&mu);
          received.append(data);
          return true;
        });
  });
  const bool arrived = WaitUntil(
      [&] {
        absl::MutexLock lock(&mu);
        return absl::StrContains(received, "k8s.io/initial-events-end");
      },
      absl::Seconds(5));
  client.CancelStream();
  watcher.join();
  const std::vector<ApiCall> calls = client.calls();
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].status, 200);
  EXPECT_TRUE(arrived) << "no initial-events-end BOOKMARK within 5 s with Accept-Encoding: gzip; "
                       << "the answer had Content-Type \"" << calls[0].response_content_type
                       << "\", Content-Encoding \"" << calls[0].response_content_encoding << "\"";
}

TEST_F(GoDriverContract, V1DriverPublishesPreparesAndUnpreparesAsTheContractSays) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1);
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);

  // Helper v0.36/v0.37 at start-up: watch-list, GET node, POST (protobuf), nothing else before.
  const std::vector<ApiCall> calls = driver->calls();
  ASSERT_GE(calls.size(), 3u) << Diagnostics(*driver);
  EXPECT_EQ(calls[0].method, "GET");
  EXPECT_EQ(PathOf(calls[0]), "/apis/resource.k8s.io/v1/resourceslices");
  EXPECT_THAT(QueryOf(calls[0].path),
              ElementsAre("allowWatchBookmarks=true", absl::StrCat("fieldSelector=", kSelector),
                          "resourceVersionMatch=NotOlderThan", "sendInitialEvents=true",
                          "timeout=T", "timeoutSeconds=S", "watch=true"));
  EXPECT_EQ(calls[0].status, 200);
  EXPECT_EQ(calls[1].method, "GET");
  EXPECT_EQ(calls[1].path, "/api/v1/nodes/node-1");
  EXPECT_EQ(calls[1].status, 200) << calls[1].response;
  EXPECT_EQ(calls[2].method, "POST");
  EXPECT_EQ(calls[2].path, "/apis/resource.k8s.io/v1/resourceslices");
  EXPECT_EQ(calls[2].content_type, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(calls[2].status, 201) << calls[2].response;

  // The echo is the whole object with what the server assigns.
  const nlohmann::json node = nlohmann::json::parse(calls[1].response);
  const nlohmann::json echo = nlohmann::json::parse(calls[2].response);
  const nlohmann::json& meta = echo["metadata"];
  const std::string name = meta.value("name", "");
  EXPECT_THAT(name, StartsWith("00000-gpu.go.example.com-node-1-"));
  EXPECT_GT(name.size(), driver->generate_name().size()) << name;
  EXPECT_EQ(meta.value("generateName", ""), driver->generate_name());
  EXPECT_FALSE(meta.value("uid", "").empty()) << echo.dump();
  EXPECT_FALSE(meta.value("resourceVersion", "").empty()) << echo.dump();
  EXPECT_TRUE(meta.contains("generation") && meta["generation"].is_number()) << echo.dump();
  EXPECT_FALSE(meta.value("creationTimestamp", "").empty()) << echo.dump();
  ASSERT_THAT(meta["ownerReferences"], SizeIs(1)) << echo.dump();
  EXPECT_EQ(meta["ownerReferences"][0], nlohmann::json({{"apiVersion", "v1"},
                                                        {"kind", "Node"},
                                                        {"name", kNode},
                                                        {"uid", node["metadata"]["uid"]},
                                                        {"controller", true}}));
  EXPECT_EQ(echo["spec"]["driver"], kDriver);
  EXPECT_EQ(echo["spec"]["nodeName"], kNode);
  EXPECT_EQ(echo["spec"]["pool"],
            nlohmann::json({{"name", kNode}, {"generation", 1}, {"resourceSliceCount", 1}}));
  EXPECT_TRUE(DevicesMatch(echo["spec"], Gpus(4), "v1")) << echo.dump();
  EXPECT_THAT(driver->logs(), Not(Contains(HasSubstr("some fields were dropped"))));

  // The informer synced on the initial-events-end bookmark and saw its own slice by the watch.
  const std::vector<InformerEvent> events = driver->events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].type, "BOOKMARK");
  EXPECT_EQ(events[0].object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [&](const InformerEvent& e) {
    return e.type == "ADDED" && e.name == name && !e.from_relist;
  })) << Diagnostics(*driver);

  // The slice is in the store, as any client lists it.
  HttpResponse list = Api("GET", "/apis/resource.k8s.io/v1/resourceslices");
  ASSERT_EQ(list.status, 200) << list.body;
  nlohmann::json stored;
  for (const auto& item : list.json["items"]) {
    if (item["metadata"]["name"] == name) stored = item;
  }
  ASSERT_TRUE(stored.is_object()) << list.body;
  EXPECT_TRUE(DevicesMatch(stored["spec"], Gpus(4), "v1")) << stored.dump();

  ASSERT_NO_FATAL_FAILURE(AdmitPrepareAndDelete(*driver, "v1"));
}

// NVIDIA's driver against a 1.35 API server publishes MIG devices as partitionable devices: the
// counter set of each GPU in a slice of its own, the GPU and its MIG devices (consuming the
// counters) in another, both with resourceSliceCount 2, as protobuf. The manager stores both and
// allocates from them: two 3g.40gb devices fit on the GPU together, the whole GPU then does not.
TEST_F(GoDriverContract, SplitSlicesWithCountersArePublishedAndAllocatedFrom) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  auto device = [](std::string name, std::string profile, std::string memory, std::string slices) {
    GoDevice d{.name = std::move(name),
               .ints = {{"index", 0}},
               .strings = {{"profile", std::move(profile)}},
               .capacity = {{"memory", memory}}};
    d.counter_set = "gpu-0-counter-set";
    d.consumes = {{"memory", memory}, {"multiprocessors", std::move(slices)}};
    return d;
  };
  GoStyleDriver* driver =
      StartGoDriver(GoApiFlavour::kV1,
                    {device("gpu-0", "whole", "80Gi", "98"),
                     device("gpu-0-mig-3g-40gb-0", "3g.40gb", "40Gi", "42"),
                     device("gpu-0-mig-3g-40gb-1", "3g.40gb", "40Gi", "42")},
                    {GoCounterSet{.name = "gpu-0-counter-set",
                                  .counters = {{"memory", "80Gi"}, {"multiprocessors", "98"}}}});
  ASSERT_TRUE(WaitPublished(*driver, /*posts=*/2)) << Diagnostics(*driver);
  const std::vector<ApiCall> calls = driver->calls();
  int posts = 0;
  for (const ApiCall& call : calls) {
    if (call.method != "POST") continue;
    ++posts;
    EXPECT_EQ(call.content_type, "application/vnd.kubernetes.protobuf");
    EXPECT_EQ(call.status, 201) << call.response;
  }
  EXPECT_EQ(posts, 2) << Diagnostics(*driver);
  HttpResponse list = Api("GET", "/apis/resource.k8s.io/v1/resourceslices");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_THAT(list.json["items"], SizeIs(2)) << list.body;
  int counter_slices = 0;
  for (const auto& item : list.json["items"]) {
    const nlohmann::json& spec = item["spec"];
    EXPECT_EQ(spec["pool"]["resourceSliceCount"], 2) << item.dump();
    if (spec.contains("sharedCounters")) {
      ++counter_slices;
      EXPECT_FALSE(spec.contains("devices")) << item.dump();
      EXPECT_EQ(spec["sharedCounters"][0]["counters"]["multiprocessors"]["value"], "98");
    } else {
      EXPECT_EQ(spec["devices"][1]["consumesCounters"][0]["counterSet"], "gpu-0-counter-set");
    }
  }
  EXPECT_EQ(counter_slices, 1);

  const std::string profile = "device.attributes[\"gpu.go.example.com\"].profile";
  KdpctlResult objects =
      Apply(absl::StrCat(DeviceClass(kDriver, kDriver), "---\n",
                         ClaimTemplate("migs", 2, profile + " == \"3g.40gb\"", kDriver), "---\n",
                         ClaimTemplate("whole", 1, profile + " == \"whole\"", kDriver)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  nlohmann::json migs = ApplyPod(ClaimPod("migs", "migs"));
  ASSERT_EQ(migs.value("admitted", false), true) << migs.dump() << Diagnostics(*driver);
  EXPECT_EQ(driver->prepared_claims().size(), 1u);  // prepared by the Go-style driver
  nlohmann::json whole = ApplyPod(ClaimPod("whole", "whole"));
  EXPECT_EQ(whole.value("admitted", true), false) << whole.dump();
  EXPECT_THAT(whole.value("message", ""), HasSubstr("without enough capacity or shared counters"));
  ASSERT_EQ(Kdpctl({"delete", "pod", "migs"}).exit_code, 0);
  nlohmann::json whole_again = ApplyPod(ClaimPod("whole-2", "whole"));
  EXPECT_EQ(whole_again.value("admitted", false), true)
      << whole_again.dump() << Diagnostics(*driver);
}

// A device that gains a NoExecute taint while a pod holds it: the manager evicts the pod (the
// device taint eviction controller's job) through the kubelet's path, so the driver is asked to
// unprepare the claim, and the pod is gone.
TEST_F(GoDriverContract, ANoExecuteTaintEvictsThePodAndTheDriverUnprepares) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1, Gpus(2));
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);
  const nlohmann::json pod = AdmitPod("evicted", 1);
  ASSERT_EQ(pod.value("admitted", false), true) << pod.dump() << Diagnostics(*driver);
  const std::string device = pod["claims"][0]["devices"][0]["device"];
  const std::string claim_uid = pod["claims"][0]["claim_uid"];
  ASSERT_EQ(driver->prepared_claims().count(claim_uid), 1u);

  std::vector<GoDevice> tainted = Gpus(2);
  for (GoDevice& d : tainted) {
    if (d.name == device) d.taints = {{"example.com/xid-79", "NoExecute"}};
  }
  driver->UpdateDevices(tainted);
  ASSERT_TRUE(WaitUntil([&] { return ListedPods().count("evicted") == 0; }, absl::Seconds(20)))
      << Diagnostics(*driver);
  EXPECT_TRUE(WaitUntil([&] { return driver->prepared_claims().count(claim_uid) == 0; }))
      << Diagnostics(*driver);
  EXPECT_THAT(driver->unprepared(), Contains(HasSubstr(claim_uid)));
  // A new pod is allocated the untainted GPU only.
  const nlohmann::json next = AdmitPod("next", 1);
  ASSERT_EQ(next.value("admitted", false), true) << next.dump();
  EXPECT_NE(next["claims"][0]["devices"][0]["device"], device);
}

TEST_F(GoDriverContract, UpdatedDevicesArePutAsProtobufAndSeenModified) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1);
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);
  const std::map<std::string, nlohmann::json> published = driver->slices();
  const std::string name = published.begin()->first;
  const nlohmann::json before = published.begin()->second;

  driver->UpdateDevices(Gpus(3));  // gpu-3 removed
  // Seen MODIFIED, and the PUT recorded (the informer may see it before the driver records it).
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<InformerEvent> events = driver->events();
    const std::vector<ApiCall> calls = driver->calls();
    return driver->published() &&
           std::any_of(events.begin(), events.end(),
                       [&](const InformerEvent& e) {
                         return e.type == "MODIFIED" && e.name == name && !e.from_relist;
                       }) &&
           std::any_of(calls.begin(), calls.end(),
                       [](const ApiCall& c) { return c.method == "PUT"; });
  })) << Diagnostics(*driver);

  const std::vector<ApiCall> calls = driver->calls();
  const int put = FindCall(calls, [](const ApiCall& c) { return c.method == "PUT"; });
  ASSERT_GE(put, 0) << Diagnostics(*driver);
  EXPECT_EQ(calls[put].path, "/apis/resource.k8s.io/v1/resourceslices/" + name);
  EXPECT_EQ(calls[put].content_type, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(calls[put].status, 200) << calls[put].response;
  const nlohmann::json echo = nlohmann::json::parse(calls[put].response);
  EXPECT_EQ(echo["metadata"]["name"], name);
  EXPECT_EQ(echo["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_EQ(echo["metadata"]["creationTimestamp"], before["metadata"]["creationTimestamp"]);
  EXPECT_NE(echo["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
  EXPECT_TRUE(DevicesMatch(echo["spec"], Gpus(3), "v1")) << echo.dump();
  // One update: the pool generation is kept, and nothing is created twice.
  EXPECT_EQ(echo["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(),
                          [](const ApiCall& c) { return c.method == "POST"; }),
            1);

  HttpResponse stored = Api("GET", "/apis/resource.k8s.io/v1/resourceslices/" + name);
  ASSERT_EQ(stored.status, 200) << stored.body;
  EXPECT_TRUE(DevicesMatch(stored.json["spec"], Gpus(3), "v1")) << stored.body;
}

TEST_F(GoDriverContract, V1beta1OnlyDriverListsWatchesAndIsAdmittedTheSame) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1beta1Only);
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);
  EXPECT_EQ(driver->api_version(), "v1beta1");

  // LIST limit=500&resourceVersion=0, then WATCH from the list's resourceVersion; GET node and
  // POST once the informer synced.
  const std::vector<ApiCall> calls = driver->calls();
  ASSERT_GE(calls.size(), 4u) << Diagnostics(*driver);
  EXPECT_EQ(PathOf(calls[0]), "/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_THAT(QueryOf(calls[0].path), ElementsAre(absl::StrCat("fieldSelector=", kSelector),
                                                  "limit=500", "resourceVersion=0"));
  ASSERT_EQ(calls[0].status, 200) << calls[0].response;
  const std::string list_rv =
      nlohmann::json::parse(calls[0].response)["metadata"].value("resourceVersion", "");
  const int watch = FindCall(calls, IsWatch);
  ASSERT_GT(watch, 0) << Diagnostics(*driver);
  EXPECT_EQ(PathOf(calls[watch]), "/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_THAT(
      QueryOf(calls[watch].path),
      ElementsAre("allowWatchBookmarks=true", absl::StrCat("fieldSelector=", kSelector),
                  "resourceVersion=" + list_rv, "timeout=T", "timeoutSeconds=S", "watch=true"));
  EXPECT_EQ(calls[watch].status, 200);
  const int node =
      FindCall(calls, [](const ApiCall& c) { return c.path == "/api/v1/nodes/node-1"; });
  const int post = FindCall(calls, [](const ApiCall& c) { return c.method == "POST"; });
  ASSERT_GT(node, 0);
  ASSERT_GT(post, node);
  EXPECT_EQ(calls[post].path, "/apis/resource.k8s.io/v1beta1/resourceslices");
  EXPECT_EQ(calls[post].content_type, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(calls[post].status, 201) << calls[post].response;
  const nlohmann::json echo = nlohmann::json::parse(calls[post].response);
  const std::string name = echo["metadata"].value("name", "");
  EXPECT_THAT(name, StartsWith("node-1-gpu.go.example.com-"));

  // A v1beta1 GET shows the devices in `basic`.
  HttpResponse stored = Api("GET", "/apis/resource.k8s.io/v1beta1/resourceslices/" + name);
  ASSERT_EQ(stored.status, 200) << stored.body;
  ASSERT_THAT(stored.json["spec"]["devices"], SizeIs(4)) << stored.body;
  for (const auto& device : stored.json["spec"]["devices"]) {
    EXPECT_TRUE(device.contains("basic")) << device.dump();
  }
  EXPECT_TRUE(DevicesMatch(stored.json["spec"], Gpus(4), "v1beta1")) << stored.body;

  ASSERT_NO_FATAL_FAILURE(AdmitPrepareAndDelete(*driver, "v1beta1"));
  for (const ApiCall& call : driver->calls()) {
    if (absl::StartsWith(call.path, "/apis/")) {
      EXPECT_THAT(call.path, StartsWith("/apis/resource.k8s.io/v1beta1/")) << call.path;
    }
  }
}

TEST_F(GoDriverContract, RestartedManagerWipesTheSliceAndTheDriverPublishesItAgain) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1);
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);
  const std::string old_name = driver->slices().begin()->first;

  ASSERT_NO_FATAL_FAILURE(StopManager(SIGTERM));
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  const absl::Time restarted = absl::Now();
  // The start wiped the slice; the informer reconnects, sees it gone and the driver re-creates.
  // The informer may see the new slice before the driver has read the POST's answer and recorded
  // the call: wait for both.
  auto post_count = [&] {
    const std::vector<ApiCall> calls = driver->calls();
    return std::count_if(calls.begin(), calls.end(),
                         [](const ApiCall& c) { return c.method == "POST"; });
  };
  ASSERT_TRUE(WaitUntil([&] {
    const std::map<std::string, nlohmann::json> slices = driver->slices();
    return driver->published() && slices.count(old_name) == 0 && post_count() >= 2;
  })) << Diagnostics(*driver);
  EXPECT_LT(absl::Now() - restarted, absl::Seconds(10));
  const std::vector<InformerEvent> events = driver->events();
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [&](const InformerEvent& e) {
    return e.type == "DELETED" && e.name == old_name;
  })) << Diagnostics(*driver);
  const std::vector<ApiCall> calls = driver->calls();
  std::vector<int> posts;
  for (const ApiCall& call : calls) {
    if (call.method == "POST") posts.push_back(call.status);
  }
  EXPECT_THAT(posts, ElementsAre(201, 201)) << Diagnostics(*driver);

  // The store holds exactly the new slice; the manager registered the driver again.
  HttpResponse list = Api("GET", "/apis/resource.k8s.io/v1/resourceslices");
  ASSERT_EQ(list.status, 200) << list.body;
  std::vector<std::string> names;
  for (const auto& item : list.json["items"]) {
    if (item["spec"]["driver"] == kDriver) names.push_back(item["metadata"]["name"]);
  }
  EXPECT_THAT(names, ElementsAre(driver->slices().begin()->first));
  EXPECT_TRUE(WaitUntil([&] { return driver->get_info_calls() >= 2 && DriverConnected(kDriver); }))
      << Diagnostics(*driver);
}

// The driver's side of what UnhealthyDeviceShowsInKdpctl relies on: a NodeWatchResources
// stream gets the full device list at once, and again at once on every SetHealth.
TEST_F(GoDriverContract, HealthStreamSendsTheFullListAtOnceAndOnEveryChange) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1);
  auto stub = healthv1alpha1::DRAResourceHealth::NewStub(
      grpc::CreateChannel("unix:" + driver->dra_socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = stub->NodeWatchResources(&context, healthv1alpha1::NodeWatchResourcesRequest());
  healthv1alpha1::NodeWatchResourcesResponse message;
  ASSERT_TRUE(reader->Read(&message));
  ASSERT_EQ(message.devices_size(), 4) << message.DebugString();
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  for (const auto& device : message.devices()) {
    EXPECT_EQ(device.device().pool_name(), kNode);
    EXPECT_EQ(device.health(), healthv1alpha1::HEALTHY) << device.DebugString();
    EXPECT_NEAR(device.last_updated_time(), now, 60);
  }

  driver->SetHealth("gpu-0", GoDeviceHealth::kUnhealthy);
  // The next message is the change (a periodic resend comes only every 5 s; allow one).
  bool changed = false;
  for (int i = 0; i < 2 && !changed && reader->Read(&message); ++i) {
    changed = message.devices_size() == 4 && message.devices(0).device().device_name() == "gpu-0" &&
              message.devices(0).health() == healthv1alpha1::UNHEALTHY;
  }
  ASSERT_TRUE(changed) << message.DebugString();
  EXPECT_FALSE(message.devices(0).message().empty());
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(message.devices(i).health(), healthv1alpha1::HEALTHY) << message.DebugString();
  }
  context.TryCancel();
  (void)reader->Finish();
}

TEST_F(GoDriverContract, UnhealthyDeviceShowsInKdpctl) {
  ASSERT_NO_FATAL_FAILURE(StartGoManager());
  GoStyleDriver* driver = StartGoDriver(GoApiFlavour::kV1);
  ASSERT_TRUE(WaitPublished(*driver)) << Diagnostics(*driver);
  ASSERT_TRUE(WaitUntil([&] { return driver->health_streams_opened() >= 1; }))
      << "the manager never opened the v1alpha1.DRAResourceHealth stream\n"
      << Diagnostics(*driver);

  // All four GPUs, so gpu-0 is among the pod's devices.
  const nlohmann::json pod = AdmitPod("go-health", 4);
  ASSERT_EQ(pod.value("admitted", false), true) << pod.dump() << Diagnostics(*driver);

  driver->SetHealth("gpu-0", GoDeviceHealth::kUnhealthy);
  nlohmann::json statuses;
  const bool shown = WaitUntil([&] {
    std::map<std::string, nlohmann::json> listed = ListedPods();
    if (listed.count("go-health") == 0) return false;
    for (const auto& container : listed["go-health"]["containers"]) {
      if (container["name"] != "main") continue;
      statuses = container.value("allocatedResourcesStatus", nlohmann::json::array());
      int unhealthy = 0, healthy = 0;
      for (const auto& status : statuses) {
        for (const auto& resource : status["resources"]) {
          const std::string id = resource.value("resourceID", "");
          const std::string health = resource.value("health", "");
          if (absl::StrContains(id, "gpu-0") && health == "Unhealthy") ++unhealthy;
          if (!absl::StrContains(id, "gpu-0") && health == "Healthy") ++healthy;
        }
      }
      return unhealthy == 1 && healthy == 3;
    }
    return false;
  });
  EXPECT_TRUE(shown) << statuses.dump() << Diagnostics(*driver);
  EXPECT_TRUE(WaitUntil([&] { return MentionsHealth(Status(), "gpu-0", "Unhealthy"); }))
      << Status().dump();
}

}  // namespace
}  // namespace kdp::testing
