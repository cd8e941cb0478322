#include "manager/src/status/status_manager.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;
using ::kdp::testing::TempDir;
using resourceapi::Kind;
using ::testing::HasSubstr;

AdmittedPod OnePod(const std::string& name, const std::string& uid) {
  AdmittedPod admitted;
  admitted.pod.namespace_ = "default";
  admitted.pod.name = name;
  admitted.pod.uid = uid;
  admitted.pod.containers = {{.name = "main", .extended_resources = {{"example.com/gpu", 1}}}};
  admitted.containers = {
      {.spec = admitted.pod.containers[0], .devices = {{"example.com/gpu", {"gpu0"}}}}};
  return admitted;
}

class StatusManagerTest : public ::testing::Test {
 protected:
  StatusManagerOptions Options() {
    return {.node_name = "node-a",
            .pods =
                [this] {
                  absl::MutexLock lock(&mu_);
                  return pods_;
                },
            .pod = [this](const std::string& namespace_,
                          const std::string& name) -> std::optional<AdmittedPod> {
              absl::MutexLock lock(&mu_);
              ++pod_lookups_;
              for (const AdmittedPod& pod : pods_) {
                if (pod.pod.namespace_ == namespace_ && pod.pod.name == name) return pod;
              }
              return std::nullopt;
            },
            .health =
                [this](const std::string&, const std::string&) {
                  absl::MutexLock lock(&mu_);
                  return health_;
                },
            .sync_period = absl::Milliseconds(10),
            .now = nullptr};
  }
  void SetPods(std::vector<AdmittedPod> pods) {
    absl::MutexLock lock(&mu_);
    pods_ = std::move(pods);
  }
  void SetHealth(std::string health) {
    absl::MutexLock lock(&mu_);
    health_ = std::move(health);
  }
  std::vector<Json> Events() { return store_.List(Kind::kEvent, "").items; }

  absl::Mutex mu_;
  std::vector<AdmittedPod> pods_ ABSL_GUARDED_BY(mu_);
  std::string health_ ABSL_GUARDED_BY(mu_) = "Healthy";
  int pod_lookups_ ABSL_GUARDED_BY(mu_) = 0;
  resourceapi::ObjectStore store_{resourceapi::StoreOptions{.node_name = "node-a"}};
  EventRecorder events_{&store_};
};

// After an admission or a deletion only that pod is synced: O(1) in the pods the manager runs.
TEST_F(StatusManagerTest, SyncPodWritesOrDeletesThatPodOnly) {
  StatusManager manager(&store_, &events_, Options());
  SetPods({OnePod("a", "uid-a"), OnePod("b", "uid-b")});
  EXPECT_EQ(manager.SyncPod("default", "a"), 1);
  EXPECT_TRUE(store_.Get(Kind::kPod, "default", "a").ok());
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "b").ok()) << "left to the periodic Sync";
  EXPECT_EQ(manager.SyncPod("default", "a"), 0) << "unchanged";
  {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(pod_lookups_, 2) << "one lookup per call, never a list";
  }
  EXPECT_EQ(manager.Sync(), 1);  // b
  SetPods({OnePod("b", "uid-b")});
  EXPECT_EQ(manager.SyncPod("default", "a"), 1);  // a is gone: its API object too
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "a").ok());
  EXPECT_TRUE(store_.Get(Kind::kPod, "default", "b").ok());
  EXPECT_EQ(manager.SyncPod("default", "never-there"), 0);
}

TEST_F(StatusManagerTest, ThePodsTheManagerRunsAreThePodsOfTheApi) {
  StatusManager manager(&store_, &events_, Options());
  EXPECT_EQ(manager.Sync(), 0);
  EXPECT_TRUE(store_.List(Kind::kPod, "").items.empty());

  SetPods({OnePod("a", "uid-a")});
  EXPECT_EQ(manager.Sync(), 1);
  absl::StatusOr<Json> a = store_.Get(Kind::kPod, "default", "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)["status"]["phase"], "Running");
  EXPECT_EQ((*a)["metadata"]["uid"], "uid-a");
  ASSERT_EQ(Events().size(), 1u);
  EXPECT_EQ(Events()[0]["reason"], "Scheduled");
  EXPECT_EQ(Events()[0]["message"], "Successfully assigned default/a to node-a");
  EXPECT_EQ(Events()[0]["involvedObject"]["uid"], "uid-a");
  EXPECT_EQ(Events()[0]["source"]["component"], "default-scheduler");

  // Nothing changed: no write.
  const int64_t rv = store_.ResourceVersion();
  EXPECT_EQ(manager.Sync(), 0);
  EXPECT_EQ(store_.ResourceVersion(), rv);

  // The device turned unhealthy: the status says so.
  SetHealth("Unhealthy");
  EXPECT_EQ(manager.Sync(), 1);
  EXPECT_EQ((*store_.Get(Kind::kPod, "default",
                         "a"))["status"]["containerStatuses"][0]["allocatedResourcesStatus"][0]
                              ["resources"][0]["health"],
            "Unhealthy");

  // A terminating pod stays until its deletion completes; then it goes.
  std::vector<AdmittedPod> terminating = {OnePod("a", "uid-a")};
  terminating[0].pod.terminating = true;
  SetPods(terminating);
  EXPECT_EQ(manager.Sync(), 0);
  EXPECT_TRUE(store_.Get(Kind::kPod, "default", "a").ok());
  SetPods({});
  EXPECT_EQ(manager.Sync(), 1);
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "a").ok());
}

TEST_F(StatusManagerTest, APodOfTheSameNameWithAnotherUidReplacesTheOld) {
  StatusManager manager(&store_, &events_, Options());
  SetPods({OnePod("a", "uid-1")});
  manager.Sync();
  SetPods({OnePod("a", "uid-2")});
  manager.Sync();
  EXPECT_EQ((*store_.Get(Kind::kPod, "default", "a"))["metadata"]["uid"], "uid-2");
}

TEST_F(StatusManagerTest, APodAnApiClientSentKeepsItsMetadataAndSpec) {
  StatusManager manager(&store_, &events_, Options());
  const Json sent = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "a"},
        {"namespace", "default"},
        {"uid", "client-made"},
        {"labels", {{"app", "train"}}},
        {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "main"},
           {"image", "registry.example.com/train:1"},
           {"resources", {{"limits", {{"example.com/gpu", "1"}}}}}}}},
        {"nodeName", "elsewhere"}}}};
  AdmittedPod pod = OnePod("a", "uid-a");
  pod.pod.api_object = sent.dump();
  SetPods({pod});
  EXPECT_EQ(manager.Sync(), 1);
  absl::StatusOr<Json> a = manager.Get("default", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  // The client's labels, annotations, image; the manager's uid, binding, defaults and status.
  EXPECT_EQ((*a)["metadata"]["labels"]["app"], "train");
  EXPECT_EQ((*a)["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            "{}");
  EXPECT_EQ((*a)["metadata"]["uid"], "uid-a");
  EXPECT_EQ((*a)["spec"]["containers"][0]["image"], "registry.example.com/train:1");
  EXPECT_FALSE((*a)["spec"]["containers"][0]["resources"].contains("requests"));
  EXPECT_EQ((*a)["spec"]["nodeName"], "node-a");
  EXPECT_EQ((*a)["spec"]["restartPolicy"], "Always");
  EXPECT_EQ((*a)["status"]["phase"], "Running");

  // Gone: the object; a pod of that name from kdpctl (no client object) has none of it.
  SetPods({});
  EXPECT_EQ(manager.Sync(), 1);
  SetPods({OnePod("a", "uid-a")});
  manager.Sync();
  EXPECT_FALSE((*manager.Get("default", "a"))["metadata"].contains("labels"));
}

// A refused pod is an acknowledged Pod: it is on disk before it is shown, comes back in a new
// manager (a restart), and its deletion is on disk before it is gone. A file that is not the
// manager's is refused, naming it; a refusal that cannot be written is not shown.
TEST_F(StatusManagerTest, RefusedPodsAreKeptAcrossARestartUntilDeleted) {
  TempDir dir;
  const std::string path = dir.path() + "/refused-pods.json";
  StatusManagerOptions options = Options();
  options.refused_pods_path = path;
  const Json sent = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "big", "namespace": "default", "labels": {"app": "x"}},
      "spec": {"containers": [{"name": "main", "image": "busybox"}]}})");
  {
    StatusManager first(&store_, &events_, options);
    ASSERT_TRUE(first.LoadRefused().ok());  // no file yet: none
    AdmitResult refused{.admitted = false,
                        .reason = "OutOfexample.com/gpu",
                        .message = "Node didn't have enough resource: example.com/gpu",
                        .pod = OnePod("big", "uid-big")};
    ASSERT_TRUE(first.RecordRejected(refused, sent).ok());
    AdmitResult other{.admitted = false,
                      .reason = "UnexpectedAdmissionError",
                      .message = "no healthy devices",
                      .pod = OnePod("other", "uid-other")};
    ASSERT_TRUE(first.RecordRejected(other, nullptr).ok());
    ASSERT_TRUE(first.DeleteRejected("default", "other").ok());
  }
  // A restarted manager: a new API (store) and status manager over the same file.
  resourceapi::ObjectStore restarted_store{resourceapi::StoreOptions{.node_name = "node-a"}};
  StatusManager second(&restarted_store, nullptr, options);
  absl::Status loaded = second.LoadRefused();
  ASSERT_TRUE(loaded.ok()) << loaded;
  absl::StatusOr<Json> big = second.Rejected("default", "big");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)["metadata"]["uid"], "uid-big");
  EXPECT_EQ((*big)["metadata"]["labels"]["app"], "x");
  EXPECT_EQ((*big)["status"]["phase"], "Failed");
  EXPECT_EQ((*big)["status"]["reason"], "OutOfexample.com/gpu");
  EXPECT_TRUE(absl::IsNotFound(second.Rejected("default", "other").status()));
  second.Sync();  // kept, though the manager runs no such pod
  EXPECT_TRUE(restarted_store.Get(Kind::kPod, "default", "big").ok());
  ASSERT_TRUE(second.DeleteRejected("default", "big").ok());
  {
    resourceapi::ObjectStore third_store{resourceapi::StoreOptions{.node_name = "node-a"}};
    StatusManager third(&third_store, nullptr, options);
    ASSERT_TRUE(third.LoadRefused().ok());
    EXPECT_TRUE(absl::IsNotFound(third.Rejected("default", "big").status()));
  }

  // Damaged: refused, naming the file (the manager does not start).
  ASSERT_TRUE(WriteFileDurably(path, "[{\"kind\": \"Pod\"}]").ok());
  absl::Status damaged = StatusManager(&restarted_store, nullptr, options).LoadRefused();
  EXPECT_TRUE(absl::IsDataLoss(damaged)) << damaged;
  EXPECT_THAT(damaged.message(), HasSubstr(path));

  // Not writable (the file's directory is gone): the refusal is an error and is not shown.
  options.refused_pods_path = dir.path() + "/missing/refused-pods.json";
  StatusManager unwritable(&restarted_store, nullptr, options);
  AdmitResult lost{.admitted = false,
                   .reason = "UnexpectedAdmissionError",
                   .message = "x",
                   .pod = OnePod("lost", "uid-lost")};
  EXPECT_FALSE(unwritable.RecordRejected(lost, nullptr).ok());
  EXPECT_FALSE(restarted_store.Get(Kind::kPod, "default", "lost").ok());
}

TEST_F(StatusManagerTest, ARefusedPodIsFailedWithTheKubeletsReasonUntilDeleted) {
  StatusManager manager(&store_, &events_, Options());
  AdmitResult refused{.admitted = false,
                      .reason = "UnexpectedAdmissionError",
                      .message = "Allocate failed due to no healthy devices present",
                      .pod = OnePod("big", "uid-big")};
  ASSERT_TRUE(manager.RecordRejected(refused, nullptr).ok());
  // Sync keeps it, though the manager does not run it.
  manager.Sync();
  absl::StatusOr<Json> big = manager.Rejected("default", "big");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)["status"]["phase"], "Failed");
  EXPECT_EQ((*big)["status"]["reason"], "UnexpectedAdmissionError");
  EXPECT_EQ((*big)["status"]["message"],
            "Pod was rejected: Allocate failed due to no healthy devices present");
  EXPECT_EQ((*big)["spec"]["nodeName"], "node-a");
  EXPECT_EQ((*big)["metadata"]["uid"], "uid-big");

  // The scheduler's refusal: Pending, unschedulable, not bound.
  AdmitResult unschedulable{.admitted = false,
                            .reason = "FailedScheduling",
                            .message = "0/1 nodes are available: claim x cannot be allocated",
                            .pod = OnePod("claimer", "uid-c")};
  ASSERT_TRUE(manager.RecordRejected(unschedulable, nullptr).ok());
  absl::StatusOr<Json> claimer = manager.Rejected("default", "claimer");
  ASSERT_TRUE(claimer.ok());
  EXPECT_EQ((*claimer)["status"]["phase"], "Pending");
  EXPECT_EQ((*claimer)["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ((*claimer)["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ((*claimer)["status"]["conditions"][0]["reason"], "Unschedulable");
  EXPECT_FALSE((*claimer)["spec"].contains("nodeName"));

  // Deleted: gone from the API, and no longer a refused pod.
  absl::StatusOr<Json> deleted = manager.DeleteRejected("default", "big");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ((*deleted)["metadata"]["uid"], "uid-big");
  EXPECT_FALSE(store_.Get(Kind::kPod, "default", "big").ok());
  EXPECT_TRUE(absl::IsNotFound(manager.Rejected("default", "big").status()));
  EXPECT_TRUE(absl::IsNotFound(manager.DeleteRejected("default", "big").status()));
  EXPECT_TRUE(manager.Rejected("default", "claimer").ok());
}

}  // namespace
}  // namespace kdp::manager
