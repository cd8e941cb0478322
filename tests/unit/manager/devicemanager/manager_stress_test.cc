// Concurrency stress of the device manager (run under ThreadSanitizer in CI: the `_stress_test`
// suffix): admissions and deletions through the PodManager from two threads, direct
// DeviceManager::Allocate calls for distinct pods from two more, a plugin that keeps restarting on
// new sockets (up to three instances at once, the older ones stopped or their streams ended),
// device health flipping under it, and garbage collection, capacity and checkpoint reads running
// all the while, with a real StateStore journaling every change and compacting now and then (each
// compaction must succeed). Bounded by iteration counts.
//
// What must hold at every moment (checked on every CheckpointData() snapshot, which PodDevices
// takes under one lock):
//  - no device is held by two pods, and within a pod by at most one container that still runs
//    (a finished regular init container's devices are legitimately held again by a later
//    container of the same pod: the kubelet's devicesToReuse);
//  - every allocated ID is one the resource's plugins ever listed. Not "one the resource lists
//    now": a snapshot may drop a device a pod holds (it keeps it, as in the kubelet), and health
//    flips make allocated devices unhealthy at any time, so "healthy = free ∪ allocated-healthy"
//    is a tautology and "allocated ⊆ healthy" is simply false;
//  - an allocation reported successful is recorded (its container holds exactly what it asked).
// What must hold once the threads are joined and every device is healthy again (quiescent):
//  - the allocations are exactly those of the pods still admitted, each container holding its
//    request;
//  - the manager's accounting is exact: with F = devices − distinct allocated devices, a pod
//    asking F+1 is refused with "Requested: F+1, Available: F" and a pod asking F is admitted;
//  - capacity and allocatable count every device; and at the end the journal/checkpoint read back
//    by a new StateStore equals the live state.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admission/errors.h"
#include "manager/src/devicemanager/errors.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/state/state_store.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/devicemanager/pod_test_util.h"

namespace kdp::manager {
namespace {

using devicemanager_testutil::kGpu;
using devicemanager_testutil::kNic;
using devicemanager_testutil::MakeContainer;
using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;

constexpr int kGpus = 16;
constexpr int kNics = 4;

constexpr int kRounds = 4;
constexpr int kAdmissionsPerThread = 80;  // per round, two threads
constexpr int kDirectPerThread = 100;     // per round, two threads
constexpr int kRestarts = 12;             // per round
constexpr int kHealthFlips = 200;         // per round
constexpr int kObservations = 300;        // per round (every 5th also compacts the state)

std::string GpuId(int i) { return absl::StrCat("g", i); }
std::string NicId(int i) { return absl::StrCat("n", i); }

// The node's pods for garbage collection: the PodManager's, plus the pods the direct allocators
// are working on (added before their Allocate, removed after their RemovePod).
class NodePods final : public ActivePodsSource {
 public:
  explicit NodePods(const PodManager* pods) : pods_(pods) {}
  bool SourcesReady() const override { return pods_->SourcesReady(); }
  uint64_t Generation() const override {
    absl::MutexLock lock(&mu_);
    return pods_->Generation() + removed_;
  }
  std::set<std::string> ActivePodUids() const override {
    std::set<std::string> out = pods_->ActivePodUids();
    absl::MutexLock lock(&mu_);
    out.insert(direct_.begin(), direct_.end());
    return out;
  }
  void Add(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    direct_.insert(uid);
  }
  void Remove(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    direct_.erase(uid);
    ++removed_;
  }

 private:
  const PodManager* const pods_;
  mutable absl::Mutex mu_;
  std::set<std::string> direct_ ABSL_GUARDED_BY(mu_);
  uint64_t removed_ ABSL_GUARDED_BY(mu_) = 0;
};

// A restarting GPU plugin: its live instances and the health every new instance starts with.
class GpuPlugins {
 public:
  explicit GpuPlugins(std::string plugins_dir) : dir_(std::move(plugins_dir)) {
    health_.assign(kGpus, true);
  }

  // Starts instance `n` on a new socket and registers it; retires the oldest instance beyond
  // three (stopping it, or, every other time, only ending its stream first).
  void Restart(int n) {
    const std::string name = absl::StrCat("gpu-", n, ".sock");
    auto plugin = std::make_unique<StubPlugin>(dir_ + "/" + name);
    StubPlugin* raw = plugin.get();
    std::unique_ptr<StubPlugin> retired;
    {
      absl::MutexLock lock(&mu_);
      raw->SetDevices(DevicesLocked());
      live_.push_back(std::move(plugin));
      if (live_.size() > 3) {
        retired = std::move(live_.front());
        live_.erase(live_.begin());
      }
    }
    ASSERT_TRUE(raw->Start().ok());
    absl::Status registered = StubPlugin::Register(dir_ + "/kubelet.sock", "v1beta1", name, kGpu);
    EXPECT_TRUE(registered.ok()) << registered;
    if (retired != nullptr) {
      if (n % 2 == 0) retired->EndStreams();
      retired->Stop();
    }
  }

  void SetHealth(int device, bool healthy) {
    absl::MutexLock lock(&mu_);
    health_[device] = healthy;
    for (auto& plugin : live_) plugin->SetDevices(DevicesLocked());
  }

  void AllHealthy() {
    absl::MutexLock lock(&mu_);
    health_.assign(kGpus, true);
    for (auto& plugin : live_) plugin->SetDevices(DevicesLocked());
  }

  void StopAll() {
    std::vector<std::unique_ptr<StubPlugin>> live;
    {
      absl::MutexLock lock(&mu_);
      live.swap(live_);
    }
    live.clear();
  }

 private:
  std::vector<v1beta1::Device> DevicesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<v1beta1::Device> devices;
    for (int i = 0; i < kGpus; ++i) {
      devices.push_back(MakeDevice(GpuId(i), health_[i] ? "Healthy" : "Unhealthy", {i % 2}));
    }
    return devices;
  }

  const std::string dir_;
  absl::Mutex mu_;
  std::vector<bool> health_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<StubPlugin>> live_ ABSL_GUARDED_BY(mu_);
};

// The every-moment invariants over one checkpoint snapshot; each violation as a line.
std::vector<std::string> Violations(const checkpoint::Data& data) {
  std::vector<std::string> out;
  // (resource, device) → (pod, container) holding it.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, std::string>>>
      holders;
  for (const checkpoint::Entry& entry : data.entries) {
    std::set<std::string> ids;
    for (const auto& [node, list] : entry.devices) ids.insert(list.begin(), list.end());
    for (const std::string& id : ids) {
      holders[{entry.resource_name, id}].emplace_back(entry.pod_uid, entry.container_name);
      bool known = false;
      for (int i = 0; i < kGpus; ++i)
        known = known || (entry.resource_name == kGpu && id == GpuId(i));
      for (int i = 0; i < kNics; ++i)
        known = known || (entry.resource_name == kNic && id == NicId(i));
      if (!known) out.push_back(absl::StrCat(entry.resource_name, " ", id, " was never listed"));
    }
  }
  for (const auto& [device, who] : holders) {
    std::set<std::string> pods;
    int running = 0;
    for (const auto& [pod, container] : who) {
      pods.insert(pod);
      if (!absl::StartsWith(container, "init")) ++running;
    }
    if (pods.size() > 1 || running > 1) {
      std::string list;
      for (const auto& [pod, container] : who) absl::StrAppend(&list, " ", pod, "/", container);
      out.push_back(absl::StrCat(device.first, " ", device.second, " held by", list));
    }
  }
  return out;
}

void ExpectNoViolations(const checkpoint::Data& data) {
  EXPECT_THAT(Violations(data), ::testing::IsEmpty());
}

std::vector<const Container*> AllContainers(const Pod& pod) {
  std::vector<const Container*> out;
  for (const Container& c : pod.init_containers) out.push_back(&c);
  for (const Container& c : pod.containers) out.push_back(&c);
  return out;
}

// A pod of 0–1 init containers, 0–1 sidecars and 1–2 app containers, each asking 0–2 GPUs and
// 0–1 NICs (container names say their kind: "init…" finished, the others run).
Pod RandomPod(std::mt19937& rng, const std::string& uid) {
  std::uniform_int_distribution<int> gpus(0, 2), nics(0, 1), coin(0, 1);
  auto resources = [&] {
    std::map<std::string, int64_t> r;
    if (int g = gpus(rng); g > 0) r[kGpu] = g;
    if (int n = nics(rng); n > 0) r[kNic] = n;
    return r;
  };
  Pod pod;
  pod.name = uid;
  pod.uid = uid;
  if (coin(rng))
    pod.init_containers.push_back(MakeContainer("init", ContainerKind::kInit, resources()));
  if (coin(rng)) {
    pod.init_containers.push_back(MakeContainer("side", ContainerKind::kSidecar, resources()));
  }
  const int apps = 1 + coin(rng);
  for (int i = 0; i < apps; ++i) {
    pod.containers.push_back(
        MakeContainer(absl::StrCat("app-", i), ContainerKind::kApp, resources()));
  }
  return pod;
}

// Devices `container` of `pod` holds per resource, from the manager's committed entries.
std::map<std::string, size_t> HeldCounts(const DeviceManager& dm, const std::string& pod,
                                         const std::string& container) {
  std::map<std::string, size_t> out;
  for (const PodDevicesEntry& entry : dm.ContainerEntries(pod, container)) {
    out[entry.resource_name] = DeviceIds(entry.devices).size();
  }
  return out;
}

std::map<std::string, size_t> Requested(const Container& container) {
  std::map<std::string, size_t> out;
  for (const auto& [resource, count] : container.extended_resources) {
    if (count > 0) out[resource] = static_cast<size_t>(count);
  }
  return out;
}

StateStoreOptions StoreOptions(const std::string& root) {
  return {.checkpoint_path = root + "/device-plugins/" + checkpoint::kFileName,
          .pods_path = root + "/kdp/pods.json",
          .journal_path = root + "/kdp/journal",
          .compaction_delay = absl::Milliseconds(5),
          .strict = true};
}

TEST(DeviceManagerStress, AdmissionsDeletionsPluginRestartsAndHealthFlips) {
  TempDir root;
  ASSERT_TRUE(MakeDirectories(root.Path("device-plugins")).ok());
  ASSERT_TRUE(MakeDirectories(root.Path("kdp")).ok());
  const std::string plugins_dir = root.Path("device-plugins");
  RestoredState restored;
  absl::StatusOr<std::unique_ptr<StateStore>> opened =
      StateStore::Open(StoreOptions(root.path()), &restored);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<StateStore> store = *std::move(opened);

  DeviceManager dm({.plugins_dir = plugins_dir,
                    .endpoint = {},
                    .endpoint_grace_period = absl::Minutes(5),
                    .housekeeping_interval = absl::Milliseconds(10),
                    .now = {},
                    .store = store.get()});
  PodManager pods(&dm, store.get());
  NodePods node_pods(&pods);
  dm.SetActivePodsSource(&node_pods);
  dm.Restore(restored.devices);
  pods.Restore(restored.pods);
  store->StartCompaction(
      [&] { return StateSnapshot{.devices = dm.CheckpointData(), .pods = pods.Pods()}; });
  // The compaction thread reads `dm` and `pods`: it ends before they go, however the test ends.
  absl::Cleanup close_store = [&] {
    if (store != nullptr) store->Close();
  };
  ASSERT_TRUE(dm.Start().ok());

  StubPlugin nics(plugins_dir + "/nic.sock");
  {
    std::vector<v1beta1::Device> devices;
    for (int i = 0; i < kNics; ++i) devices.push_back(MakeDevice(NicId(i)));
    nics.SetDevices(devices);
  }
  ASSERT_TRUE(nics.Start().ok());
  ASSERT_TRUE(
      StubPlugin::Register(plugins_dir + "/kubelet.sock", "v1beta1", "nic.sock", kNic).ok());
  GpuPlugins gpus(plugins_dir);
  int restarts = 0;
  gpus.Restart(restarts++);

  auto resource = [&](const std::string& name) -> std::optional<ResourceDevices> {
    for (ResourceDevices& r : dm.Resources()) {
      if (r.name == name) return std::move(r);
    }
    return std::nullopt;
  };
  auto all_healthy = [&](const std::string& name, int count) {
    std::optional<ResourceDevices> r = resource(name);
    return r.has_value() && r->connected && r->allocatable() == count && r->capacity() == count;
  };
  ASSERT_TRUE(WaitUntil([&] { return all_healthy(kGpu, kGpus) && all_healthy(kNic, kNics); }));

  std::atomic<int> admitted{0}, rejected{0}, direct_ok{0}, direct_failed{0};
  absl::Mutex reasons_mu;
  std::map<std::string, int> reasons;  // why direct allocations failed (first 40 characters)
  // Pods each admitter still has (namespace default, name = uid).
  std::vector<std::vector<std::string>> kept(2);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(1000 * round + t);
        for (int i = 0; i < kAdmissionsPerThread; ++i) {
          Pod pod = RandomPod(rng, absl::StrCat("adm-", round, "-", t, "-", i));
          absl::StatusOr<AdmitResult> result = pods.Admit(pod);
          ASSERT_TRUE(result.ok()) << result.status();
          if (result->admitted) {
            ++admitted;
            kept[t].push_back(pod.uid);
            for (const Container* c : AllContainers(pod)) {
              EXPECT_EQ(HeldCounts(dm, pod.uid, c->name), Requested(*c))
                  << "admitted pod " << pod.uid << " container " << c->name;
            }
          } else {
            ++rejected;
            EXPECT_EQ(result->reason, errors::kUnexpectedAdmissionError) << result->message;
            EXPECT_FALSE(pods.Get("default", pod.name).has_value());
          }
          if (kept[t].size() > 3 || (!kept[t].empty() && rng() % 3 == 0)) {
            const size_t victim = rng() % kept[t].size();
            absl::StatusOr<std::string> deleted = pods.Delete("default", kept[t][victim]);
            EXPECT_TRUE(deleted.ok()) << deleted.status();
            kept[t].erase(kept[t].begin() + static_cast<long>(victim));
          }
          ExpectNoViolations(dm.CheckpointData());
        }
      });
    }
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kDirectPerThread; ++i) {
          const std::string uid = absl::StrCat("direct-", round, "-", t, "-", i);
          Pod pod;
          pod.name = uid;
          pod.uid = uid;
          pod.containers.push_back(
              MakeContainer("app-0", ContainerKind::kApp, {{kGpu, 1 + i % 2}}));
          node_pods.Add(uid);
          absl::Status status = dm.Allocate(pod, pod.containers[0]);
          if (status.ok()) {
            ++direct_ok;
            EXPECT_EQ(HeldCounts(dm, uid, "app-0"), Requested(pod.containers[0]))
                << "Allocate of " << uid << " succeeded";
          } else {
            ++direct_failed;
            absl::MutexLock lock(&reasons_mu);
            ++reasons[std::string(status.message().substr(0, 40))];
          }
          ExpectNoViolations(dm.CheckpointData());
          dm.RemovePod(uid);
          node_pods.Remove(uid);
        }
      });
    }
    threads.emplace_back([&] {
      for (int i = 0; i < kRestarts; ++i) gpus.Restart(restarts++);
    });
    threads.emplace_back([&] {
      // About a quarter of the devices unhealthy at any time.
      std::mt19937 rng(7 + round);
      for (int i = 0; i < kHealthFlips; ++i) {
        gpus.SetHealth(static_cast<int>(rng() % kGpus), rng() % 4 != 0);
      }
    });
    threads.emplace_back([&] {
      for (int i = 0; i < kObservations; ++i) {
        dm.UpdateAllocatedDevices();
        for (const ResourceCapacity& c : dm.GetCapacity()) {
          EXPECT_FALSE(c.removed) << c.name;
          EXPECT_LE(c.allocatable, c.capacity) << c.name;
          EXPECT_LE(c.capacity, c.name == kGpu ? kGpus : kNics) << c.name;
        }
        ExpectNoViolations(dm.CheckpointData());
        (void)dm.Resources();
        if (i % 5 == 0) {
          absl::Status compacted = store->Compact();
          EXPECT_TRUE(compacted.ok()) << compacted;
        }
      }
    });
    for (std::thread& thread : threads) thread.join();

    // Quiescent: every device healthy again, served by the newest instance.
    gpus.AllHealthy();
    ASSERT_TRUE(WaitUntil([&] { return all_healthy(kGpu, kGpus); }));
    dm.UpdateAllocatedDevices();
    checkpoint::Data data = dm.CheckpointData();
    ExpectNoViolations(data);
    std::set<std::string> admitted_uids;
    for (const AdmittedPod& pod : pods.List()) {
      admitted_uids.insert(pod.pod.uid);
      for (const Container* c : AllContainers(pod.pod)) {
        EXPECT_EQ(HeldCounts(dm, pod.pod.uid, c->name), Requested(*c))
            << pod.pod.uid << "/" << c->name;
      }
    }
    std::set<std::string> gpus_held;
    for (const checkpoint::Entry& entry : data.entries) {
      EXPECT_TRUE(admitted_uids.contains(entry.pod_uid)) << "leaked: " << entry.pod_uid;
      if (entry.resource_name != kGpu) continue;
      for (const auto& [node, ids] : entry.devices) gpus_held.insert(ids.begin(), ids.end());
    }
    for (const ResourceCapacity& c : dm.GetCapacity()) {
      EXPECT_EQ(c.capacity, c.name == kGpu ? kGpus : kNics) << c.name;
      EXPECT_EQ(c.allocatable, c.capacity) << c.name;
    }
    // The accounting probe.
    const int free_gpus = kGpus - static_cast<int>(gpus_held.size());
    Pod probe;
    probe.name = probe.uid = absl::StrCat("probe-", round);
    probe.containers.push_back(
        MakeContainer("app-0", ContainerKind::kApp, {{kGpu, free_gpus + 1}}));
    absl::StatusOr<AdmitResult> too_many = pods.Admit(probe);
    ASSERT_TRUE(too_many.ok());
    EXPECT_FALSE(too_many->admitted);
    EXPECT_EQ(too_many->message,
              errors::AllocateFailed(errors::DevicesUnavailable(kGpu, free_gpus + 1, free_gpus)));
    if (free_gpus > 0) {
      probe.containers[0].extended_resources[kGpu] = free_gpus;
      absl::StatusOr<AdmitResult> exact = pods.Admit(probe);
      ASSERT_TRUE(exact.ok());
      EXPECT_TRUE(exact->admitted) << exact->message;
      EXPECT_TRUE(pods.Delete("default", probe.name).ok());
    }
    // All but one of each admitter's pods go before the next round.
    for (std::vector<std::string>& mine : kept) {
      while (mine.size() > 1) {
        EXPECT_TRUE(pods.Delete("default", mine.back()).ok());
        mine.pop_back();
      }
    }
  }
  std::cout << "admitted " << admitted << ", rejected " << rejected << ", direct allocations "
            << direct_ok << " ok, " << direct_failed << " failed, " << restarts
            << " plugin instances" << std::endl;
  for (const auto& [reason, count] : reasons) std::cout << "  " << count << " x " << reason << "\n";
  EXPECT_GT(admitted.load(), 0);
  EXPECT_GT(rejected.load() + direct_failed.load(), 0) << "the stress never hit a refusal";
  EXPECT_GT(direct_ok.load(), 0);

  // What a restart would read back is the live state.
  ASSERT_TRUE(store->Compact().ok());
  const checkpoint::Data live = dm.CheckpointData();
  std::vector<Pod> live_pods = pods.Pods();
  store->Close();
  gpus.StopAll();
  nics.Stop();
  dm.Stop();
  store.reset();  // Releases the journal's lock; nothing records any more.
  RestoredState reread;
  absl::StatusOr<std::unique_ptr<StateStore>> reopened =
      StateStore::Open(StoreOptions(root.path()), &reread);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reread.devices.entries, live.entries);
  std::sort(live_pods.begin(), live_pods.end(),
            [](const Pod& a, const Pod& b) { return a.uid < b.uid; });
  EXPECT_EQ(reread.pods, live_pods);
}

}  // namespace
}  // namespace kdp::manager
