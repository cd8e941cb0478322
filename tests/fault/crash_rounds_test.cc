// Crash rounds (issue 7, fault injection), with kdp-manager, kdp-gpu-plugin, kdp-dra-driver and
// kdpctl as real processes in a temporary kubelet root:
//   1. kdp-manager SIGKILLed at random (seeded) points while pods asking for GPUs are admitted and
//      deleted through kdpctl: after each restart every acknowledged admission is there with its
//      devices, every acknowledged deletion stays done, no GPU is held twice, the checkpoint
//      parses and catches up with exactly the live allocations;
//   2. the same during DRA prepares and unprepares with kdp-dra-driver: no acknowledged
//      preparation is lost, a deletion cut after it started comes back terminating (never
//      running without its claims) and completes alone, and once the reconcile loop ran the
//      prepared set is the same in the
//      manager, its checkpoint, the driver's checkpoint and CDI specs and the resource API's
//      allocations: exactly the claims of live pods;
//   3. the plugin killed in the middle of Allocate and the driver in the middle of
//      NodePrepareResources, deterministically (a peer process that holds the call, killed then)
//      and at random (the real binaries killed while admitting): the admission fails with a clear
//      error, nothing stays reserved, a retry succeeds once the peer is back.
// KDP_FAULT_ROUNDS, KDP_FAULT_KILLS and KDP_FAULT_SEED size and replay the rounds.
#include <filesystem>
#include <random>

#include "tests/fault/crash_peers.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

// Sized so that the file runs in well under 60 s under ASan on a loaded 2-core machine.
constexpr int kDefaultRounds = 4;
constexpr int kDefaultKills = 2;

// Not tests: the peer processes PeerFixture starts (crash_peers.h).
TEST(CrashPeer, DISABLED_DevicePlugin) { ServeHeldDevicePlugin(); }

TEST(CrashPeer, DISABLED_DraDriver) { ServeHeldDraDriver(); }

class CrashRounds : public PeerFixture {
 protected:
  // Runs a synchronous kdpctl operation and keeps its duration: kill delays scale with it, so
  // that kills land all along an operation on a fast build and a sanitizer build alike.
  template <typename Fn>
  auto Timed(Fn fn) {
    const absl::Time start = absl::Now();
    auto result = fn();
    op_time_ += absl::Now() - start;
    ++ops_;
    return result;
  }
  // Mostly within an operation in flight (from kdpctl's start to its answer), sometimes just
  // after it (a compaction runs 50 ms after a change).
  absl::Duration KillDelay(std::mt19937& rng) {
    const absl::Duration mean = ops_ == 0 ? absl::Milliseconds(40) : op_time_ / ops_;
    const double unit = static_cast<double>(rng() % 1000) / 1000.0;
    if (rng() % 4 == 0) return mean + absl::Milliseconds(100) * unit;
    return mean * 1.2 * unit;
  }

  // The example's device class and two-gpus template (both GPUs on one NUMA node), and one-gpu.
  static std::string DraObjects() {
    return absl::StrCat(ExampleManifests(/*with_pod=*/false), "---\n", ClaimTemplate("one-gpu", 1));
  }

  absl::Duration op_time_;
  int ops_ = 0;
};

// An operation started just before a kill.
struct InFlight {
  std::string pod;
  bool admit = false;
  int gpus = 0;  // admit: GPUs asked for
  BackgroundKdpctl run = {};
};

TEST_F(CrashRounds, ManagerSigkilledDuringAdmissionsAndDeletions) {
  const int rounds = EnvCount("KDP_FAULT_ROUNDS", kDefaultRounds);
  std::mt19937 rng(FaultSeed("ManagerSigkilledDuringAdmissionsAndDeletions"));
  const std::vector<std::string> flags = {"--compaction-delay", "50ms"};
  ASSERT_NO_FATAL_FAILURE(StartManager(flags));
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();

  // What kdpctl acknowledged: pods admitted and not deleted since (name → GPUs, UIDs).
  std::map<std::string, std::vector<std::string>> live;
  std::map<std::string, std::string> uids;
  auto used = [&] {
    size_t n = 0;
    for (const auto& [name, gpus] : live) n += gpus.size();
    return static_cast<int>(n);
  };
  auto random_live = [&] {
    return std::next(live.begin(), static_cast<long>(rng() % live.size()))->first;
  };
  int next = 0, kills = 0, acknowledged = 0, acknowledged_in_flight = 0, recorded_unanswered = 0,
      deletes_acknowledged = 0;
  const absl::Time start = absl::Now();
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    for (int op = 2 + static_cast<int>(rng() % 4); op > 0; --op) {
      const int gpus = rng() % 3 == 0 ? 2 : 1;
      if (!live.empty() && (used() + gpus > 6 || rng() % 3 == 0)) {
        const std::string name = random_live();
        KdpctlResult result = Timed([&] { return Kdpctl({"delete", "pod", name}); });
        ASSERT_EQ(result.exit_code, 0) << result.err;
        live.erase(name);
        ++deletes_acknowledged;
        continue;
      }
      const std::string name = absl::StrCat("p", next++);
      KdpctlResult result = Timed([&] { return ApplyYaml(GpuPod(name, gpus)); });
      ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
      live[name] = Gpus(result.json);
      uids[name] = result.json["pod"]["uid"];
      ++acknowledged;
    }
    // One or two operations in flight (an admission, a deletion, or both), then the kill.
    std::vector<InFlight> pending;
    if (live.empty() || rng() % 3 != 0) {
      pending.push_back({.pod = absl::StrCat("p", next++),
                         .admit = true,
                         .gpus = 1 + static_cast<int>(rng() % 2)});
    }
    if (!live.empty() && (pending.empty() || rng() % 2 == 0))
      pending.push_back({.pod = random_live()});
    if (pending.size() == 2 && rng() % 2 == 0) std::swap(pending[0], pending[1]);
    for (InFlight& op : pending) {
      op.run = op.admit ? StartKdpctl({"apply", "-f", Manifest(GpuPod(op.pod, op.gpus))})
                        : StartKdpctl({"delete", "pod", op.pod});
    }
    absl::SleepFor(KillDelay(rng));
    ASSERT_NO_FATAL_FAILURE(KillManager());
    ++kills;
    std::map<std::string, bool> answered;
    for (InFlight& op : pending) {
      KdpctlResult result = Finish(op.run);
      const bool ok = result.exit_code == 0 && (!op.admit || result.json["admitted"] == true);
      answered[op.pod] = ok;
      if (!ok) continue;
      if (op.admit) {
        live[op.pod] = Gpus(result.json);
        uids[op.pod] = result.json["pod"]["uid"];
        ++acknowledged;
        ++acknowledged_in_flight;
      } else {
        live.erase(op.pod);
        ++deletes_acknowledged;
      }
    }
    // While the manager is down, every file on disk is whole.
    KdpctlResult checkpoint = Inspect(PluginsDir() + "/kubelet_internal_checkpoint");
    EXPECT_EQ(checkpoint.exit_code, 0) << checkpoint.out << checkpoint.err;
    EXPECT_EQ(checkpoint.json["checksum_ok"], true) << checkpoint.out;
    nlohmann::json pods_file =
        nlohmann::json::parse(ReadFile(Root() + "/kdp/pods.json"), nullptr, false);
    EXPECT_TRUE(pods_file.is_object() && pods_file["pods"].is_array())
        << ReadFile(Root() + "/kdp/pods.json");

    ASSERT_NO_FATAL_FAILURE(StartManager(flags));
    ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output() << manager_->Output();
    // Unanswered operations: either outcome, but whole (an admission with all its GPUs).
    std::map<std::string, nlohmann::json> listed = ListedPods();
    for (const InFlight& op : pending) {
      if (answered[op.pod]) continue;
      if (op.admit && listed.contains(op.pod)) {
        EXPECT_EQ(Gpus(listed[op.pod]).size(), static_cast<size_t>(op.gpus))
            << listed[op.pod].dump();
        live[op.pod] = Gpus(listed[op.pod]);
        uids[op.pod] = listed[op.pod]["pod"]["uid"];
        ++recorded_unanswered;
      } else if (!op.admit && !listed.contains(op.pod)) {
        live.erase(op.pod);
      }
    }
    ASSERT_EQ(DeviceStateProblem(live), "") << manager_->Output();
    // The checkpoint catches up (a compaction follows the plugin's first ListAndWatch message).
    std::map<std::string, std::vector<std::string>> by_uid;
    for (const auto& [name, gpus] : live) by_uid[uids[name]] = gpus;
    std::string problem;
    EXPECT_TRUE(WaitUntil([&] { return (problem = CheckpointProblem(by_uid)).empty(); }))
        << problem;
  }
  const absl::Duration took = absl::Now() - start;
  std::cout << "ManagerSigkilledDuringAdmissionsAndDeletions:" << std::endl;
  Figure("device crash rounds", rounds, "rounds");
  Figure("device crash kills", kills, "SIGKILLs of kdp-manager");
  Figure("device admissions acknowledged", acknowledged, "pods");
  Figure("device admissions acknowledged by the answer in flight at a kill", acknowledged_in_flight,
         "pods");
  Figure("device admissions recorded but unanswered at a kill", recorded_unanswered, "pods");
  Figure("device deletions acknowledged", deletes_acknowledged, "pods");
  Figure("device crash round time", absl::ToDoubleMilliseconds(took / rounds), "ms per round");
}

TEST_F(CrashRounds, ManagerSigkilledDuringDraPreparesAndUnprepares) {
  const int rounds = EnvCount("KDP_FAULT_ROUNDS", kDefaultRounds);
  std::mt19937 rng(FaultSeed("ManagerSigkilledDuringDraPreparesAndUnprepares"));
  const std::vector<std::string> flags = {"--compaction-delay", "50ms", "--dra-reconcile-period",
                                          "200ms"};
  ASSERT_NO_FATAL_FAILURE(StartAll(flags));
  KdpctlResult objects = ApplyYaml(DraObjects());
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;

  std::map<std::string, DraPod> live;  // acknowledged and not deleted since
  auto used = [&] {
    size_t n = 0;
    for (const auto& [name, pod] : live) n += pod.devices.size();
    return static_cast<int>(n);
  };
  auto random_live = [&] {
    return std::next(live.begin(), static_cast<long>(rng() % live.size()))->first;
  };
  // Two GPUs only while a NUMA node surely has two free (at most 4 of the 8 in use).
  auto pick_gpus = [&] { return used() <= 4 && rng() % 2 == 0 ? 2 : 1; };
  auto pod_yaml = [](const std::string& name, int gpus) {
    return ClaimPod(name, gpus == 2 ? "two-gpus" : "one-gpu");
  };
  int next = 0, kills = 0, acknowledged = 0, acknowledged_in_flight = 0, recorded_unanswered = 0,
      deletes_acknowledged = 0, deletes_redone = 0, deletes_finished_by_reconcile = 0,
      driver_restarts = 0;
  const absl::Time start = absl::Now();
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    for (int op = 2 + static_cast<int>(rng() % 3); op > 0; --op) {
      if (!live.empty() && (used() >= 6 || rng() % 3 == 0)) {
        const std::string name = random_live();
        KdpctlResult result = Timed([&] { return Kdpctl({"delete", "pod", name}); });
        ASSERT_EQ(result.exit_code, 0) << result.err << DriverLogs();
        live.erase(name);
        ++deletes_acknowledged;
        continue;
      }
      const std::string name = absl::StrCat("d", next++);
      const int gpus = pick_gpus();
      KdpctlResult result = Timed([&] { return ApplyYaml(pod_yaml(name, gpus)); });
      ASSERT_EQ(result.exit_code, 0) << result.out << result.err << DriverLogs();
      live[name] = DraPodOf(result.json);
      ASSERT_EQ(live[name].devices.size(), static_cast<size_t>(gpus)) << result.out;
      ++acknowledged;
    }
    std::vector<InFlight> pending;
    if (live.empty() || (used() <= 6 && rng() % 3 != 0)) {
      pending.push_back({.pod = absl::StrCat("d", next++), .admit = true, .gpus = pick_gpus()});
    }
    if (!live.empty() && (pending.empty() || rng() % 2 == 0)) {
      pending.push_back({.pod = random_live()});
    }
    if (pending.size() == 2 && rng() % 2 == 0) std::swap(pending[0], pending[1]);
    for (InFlight& op : pending) {
      op.run = op.admit ? StartKdpctl({"apply", "-f", Manifest(pod_yaml(op.pod, op.gpus))})
                        : StartKdpctl({"delete", "pod", op.pod});
    }
    absl::SleepFor(KillDelay(rng));
    const std::string server = ApiCredentials().first;
    ASSERT_NO_FATAL_FAILURE(KillManager());
    ++kills;
    const std::string killed_log = manager_->Output();
    std::map<std::string, bool> answered;
    for (InFlight& op : pending) {
      KdpctlResult result = Finish(op.run);
      const bool ok = result.exit_code == 0 && (!op.admit || result.json["admitted"] == true);
      answered[op.pod] = ok;
      if (!ok) continue;
      if (op.admit) {
        live[op.pod] = DraPodOf(result.json);
        ++acknowledged;
        ++acknowledged_in_flight;
      } else {
        live.erase(op.pod);
        ++deletes_acknowledged;
      }
    }
    // While the manager is down, its DRA checkpoint and resource store are whole.
    KdpctlResult state = Inspect(DraCheckpointPath());
    EXPECT_EQ(state.exit_code, 0) << state.out << state.err;
    EXPECT_EQ(state.json["checksum_ok"], true) << state.out;
    EXPECT_FALSE(nlohmann::json::parse(ReadFile(Root() + "/kdp/resources.json"), nullptr, false)
                     .is_discarded());

    ASSERT_NO_FATAL_FAILURE(StartDraManager(flags));
    if (ApiCredentials().first != server) {
      // The previous port was taken meanwhile (by another test): the driver, which read the
      // kubeconfig once, must be restarted, as docs/manager.md says.
      ASSERT_NO_FATAL_FAILURE(StopDriver(SIGTERM));
      ASSERT_NO_FATAL_FAILURE(StartDriver());
      ++driver_restarts;
    }
    ASSERT_TRUE(WaitForDriver()) << DriverLogs();
    // The start-up reconcile must not have unprepared any claim of a live pod.
    const std::set<std::string> specs = DriverSpecClaims();
    std::set<std::string> deleting;
    for (const InFlight& op : pending) {
      if (!op.admit) deleting.insert(op.pod);
    }
    for (const auto& [name, pod] : live) {
      if (deleting.contains(name)) continue;
      EXPECT_TRUE(specs.contains(pod.claim_uid))
          << name << "'s claim was unprepared\n--- killed manager ---\n"
          << killed_log << DriverLogs();
    }
    std::map<std::string, nlohmann::json> listed = ListedPods();
    for (const InFlight& op : pending) {
      if (answered[op.pod]) continue;
      if (!listed.contains(op.pod)) {
        if (!op.admit) live.erase(op.pod);
        continue;
      }
      const DraPod pod = DraPodOf(listed[op.pod]);
      if (op.admit) {  // recorded before the kill: whole, with its preparation
        EXPECT_EQ(pod.devices.size(), static_cast<size_t>(op.gpus)) << listed[op.pod].dump();
        EXPECT_EQ(pod.cdi_ids.size(), static_cast<size_t>(op.gpus)) << listed[op.pod].dump();
        live[op.pod] = pod;
        ++recorded_unanswered;
      } else if (listed[op.pod].value("terminating", false)) {
        // Cut after the pod was recorded terminating (maybe after NodeUnprepareResources): it
        // never comes back as running, and the reconcile loop completes the deletion alone.
        EXPECT_TRUE(WaitUntil([&] { return !ListedPods().contains(op.pod); }))
            << op.pod << " stays terminating\n"
            << manager_->Output() << DriverLogs();
        live.erase(op.pod);
        ++deletes_finished_by_reconcile;
      } else {
        // Cut before the deletion started: a running pod, whose claim is still prepared. As
        // any client would, the test deletes it again.
        EXPECT_TRUE(specs.contains(pod.claim_uid))
            << op.pod << " is listed running, but its claim was unprepared\n"
            << listed[op.pod].dump() << "\n--- killed manager ---\n"
            << killed_log << DriverLogs();
        KdpctlResult again = Kdpctl({"delete", "pod", op.pod});
        EXPECT_EQ(again.exit_code, 0) << again.err << listed[op.pod].dump();
        live.erase(op.pod);
        ++deletes_redone;
      }
    }
    std::string problem;
    EXPECT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); }))
        << problem << "\n--- killed manager ---\n"
        << killed_log << DriverLogs();
    if (!problem.empty()) break;
  }
  const absl::Duration took = absl::Now() - start;
  std::cout << "ManagerSigkilledDuringDraPreparesAndUnprepares:" << std::endl;
  Figure("DRA crash rounds", rounds, "rounds");
  Figure("DRA crash kills", kills, "SIGKILLs of kdp-manager");
  Figure("DRA admissions acknowledged", acknowledged, "pods");
  Figure("DRA admissions acknowledged by the answer in flight at a kill", acknowledged_in_flight,
         "pods");
  Figure("DRA admissions recorded but unanswered at a kill", recorded_unanswered, "pods");
  Figure("DRA deletions acknowledged", deletes_acknowledged, "pods");
  Figure("DRA deletions unanswered at a kill and done again", deletes_redone, "pods");
  Figure("DRA deletions unanswered at a kill, terminating, completed by the reconcile loop",
         deletes_finished_by_reconcile, "pods");
  Figure("DRA driver restarts for a new resource API port", driver_restarts, "restarts");
  Figure("DRA crash round time", absl::ToDoubleMilliseconds(took / rounds), "ms per round");
}

// ---- Peers killed in the middle of a call ----

// The plugin dies while Allocate is in flight (a stub plugin process holding the call): the
// admission fails at once with the kubelet's error, no device stays reserved, the rest of the
// node keeps admitting, and once the plugin is back every device is allocatable and a retry
// succeeds.
TEST_F(CrashRounds, PluginSigkilledInTheMiddleOfAllocate) {
  ASSERT_NO_FATAL_FAILURE(StartManager());
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  std::unique_ptr<Subprocess> stub = StartPeer("DevicePlugin", /*hold=*/true);
  ASSERT_NE(stub, nullptr);
  ASSERT_TRUE(WaitForAllocatable(kStubResource, 4, 4)) << stub->Output() << manager_->Output();

  const absl::Time start = absl::Now();
  BackgroundKdpctl apply = StartKdpctl({"apply", "-f", Manifest(GpuPod("held", 2, kStubResource))});
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(PeerDir() + "/allocate-held"); }))
      << stub->Output();
  ASSERT_NO_FATAL_FAILURE(Kill(stub));
  KdpctlResult result = Finish(apply);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15)) << "not the 30 s call deadline";
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_EQ(result.json["admitted"], false) << result.out;
  EXPECT_EQ(result.json["reason"], "UnexpectedAdmissionError") << result.out;
  EXPECT_THAT(result.json.value("message", ""), HasSubstr("Allocate failed")) << result.out;
  std::cout << "PluginSigkilledInTheMiddleOfAllocate: " << result.json.value("message", "")
            << std::endl;
  EXPECT_TRUE(ListedPods().empty());
  EXPECT_EQ(Resource(kStubResource)["allocated"], 0) << Resource(kStubResource).dump();
  // The rest of the node works meanwhile.
  KdpctlResult gpu = ApplyYaml(GpuPod("gpu-pod", 1));
  EXPECT_EQ(gpu.exit_code, 0) << gpu.out << gpu.err;

  stub = StartPeer("DevicePlugin", /*hold=*/false);
  ASSERT_NE(stub, nullptr);
  ASSERT_TRUE(WaitForAllocatable(kStubResource, 4, 4)) << stub->Output() << manager_->Output();
  EXPECT_EQ(Resource(kStubResource)["allocated"], 0);
  KdpctlResult retry = ApplyYaml(GpuPod("held", 4, kStubResource));  // every device
  ASSERT_EQ(retry.exit_code, 0) << retry.out << retry.err;
  EXPECT_EQ(retry.json["containers"][0]["envs"]["STUB_DEVICES"], "dev0,dev1,dev2,dev3");
}

// kdp-gpu-plugin SIGKILLed at random points while pods are admitted: each admission is
// acknowledged (and then kept) or fails with the kubelet's error holding nothing; with the plugin
// back, the devices are allocatable again and the failed admission succeeds.
TEST_F(CrashRounds, GpuPluginSigkilledWhileAdmitting) {
  const int kills = EnvCount("KDP_FAULT_KILLS", kDefaultKills);
  std::mt19937 rng(FaultSeed("GpuPluginSigkilledWhileAdmitting"));
  ASSERT_NO_FATAL_FAILURE(StartManager());
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  std::map<std::string, std::vector<std::string>> live;
  int acknowledged = 0, failed = 0;
  for (int kill = 0; kill < kills; ++kill) {
    SCOPED_TRACE(absl::StrCat("kill ", kill));
    const std::string name = absl::StrCat("k", kill);
    Timed([&] { return ApplyYaml(GpuPod(name + "-before", 1)); });  // paces the kill delays
    ASSERT_EQ(Kdpctl({"delete", "pod", name + "-before"}).exit_code, 0);
    BackgroundKdpctl apply = StartKdpctl({"apply", "-f", Manifest(GpuPod(name, 2))});
    absl::SleepFor(KillDelay(rng));
    ASSERT_NO_FATAL_FAILURE(Kill(plugin_));
    KdpctlResult result = Finish(apply);
    if (result.exit_code == 0 && result.json["admitted"] == true) {
      live[name] = Gpus(result.json);
      ++acknowledged;
    } else {
      ++failed;
      EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
      EXPECT_EQ(result.json["reason"], "UnexpectedAdmissionError") << result.out;
      EXPECT_FALSE(result.json.value("message", "").empty()) << result.out;
    }
    EXPECT_EQ(DeviceStateProblem(live), "");
    ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
    ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output() << manager_->Output();
    if (!live.contains(name)) {
      KdpctlResult retry = ApplyYaml(GpuPod(name, 2));
      ASSERT_EQ(retry.exit_code, 0) << retry.out << retry.err;
      live[name] = Gpus(retry.json);
    }
    EXPECT_EQ(DeviceStateProblem(live), "");
    while (live.size() > 2) {
      ASSERT_EQ(Kdpctl({"delete", "pod", live.begin()->first}).exit_code, 0);
      live.erase(live.begin());
    }
  }
  Figure("GPU plugin kills while admitting", kills, "SIGKILLs of kdp-gpu-plugin");
  Figure("admissions acknowledged across a plugin kill", acknowledged, "pods");
  Figure("admissions failed by a plugin kill, then retried", failed, "pods");
}

// The driver dies while NodePrepareResources is in flight (a DRA driver process holding the
// call): the pod is rejected at once with FailedPrepareDynamicResources, the claim is released;
// once the driver is back the reconcile loop asks it to unprepare the claim exactly once, and a
// retry prepares it again.
TEST_F(CrashRounds, DriverSigkilledInTheMiddleOfNodePrepareResources) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager({"--dra-reconcile-period", "200ms"}));
  ASSERT_NO_FATAL_FAILURE(StartHoldDriver(/*hold=*/true));
  const std::string claim_uid = GetClaim("hold-claim").json["metadata"]["uid"];

  const absl::Time start = absl::Now();
  BackgroundKdpctl apply =
      StartKdpctl({"apply", "-f", Manifest(ClaimPod("held", "hold-claim", false))});
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(PeerDir() + "/prepare-held"); }))
      << DriverLogs();
  ASSERT_NO_FATAL_FAILURE(Kill(driver_));
  KdpctlResult result = Finish(apply);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15)) << "not the 45 s call deadline";
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  nlohmann::json pod = PodOf(result.json);
  EXPECT_EQ(pod["admitted"], false) << result.out;
  EXPECT_EQ(pod["reason"], "FailedPrepareDynamicResources") << result.out;
  EXPECT_THAT(pod.value("message", ""), HasSubstr("NodePrepareResources")) << result.out;
  std::cout << "DriverSigkilledInTheMiddleOfNodePrepareResources: " << pod.value("message", "")
            << std::endl;
  EXPECT_TRUE(ListedPods().empty());
  EXPECT_EQ(HoldClaimHeld(), "");

  ASSERT_NO_FATAL_FAILURE(StartHoldDriver(/*hold=*/false));
  // The claim may have been prepared before the driver died: unprepared once it is back.
  ASSERT_TRUE(WaitUntil([&] { return PeerCallCount("unprepare", claim_uid) == 1; }))
      << ReadFile(PeerDir() + "/calls") << DriverLogs();
  ASSERT_TRUE(WaitUntil([&] { return PreparedClaims().empty(); })) << PreparedClaims();
  nlohmann::json retry = ApplyPod(ClaimPod("held", "hold-claim", false));
  ASSERT_EQ(retry["admitted"], true) << retry << DriverLogs();
  EXPECT_EQ(ContainerCdiDevices(retry, "main"), std::vector<std::string>{kHoldCdiId});
  EXPECT_EQ(PeerCallCount("prepare", claim_uid), 2);  // the held call, and the retry's
  EXPECT_EQ(PeerCallCount("unprepare", claim_uid), 1) << "unprepared while its pod runs";
  ASSERT_EQ(DeletePod("held").exit_code, 0);
  EXPECT_EQ(PeerCallCount("unprepare", claim_uid), 2);
  EXPECT_EQ(HoldClaimHeld(), "");
}

// Regression (found by the DRA crash rounds): kdp-manager killed after a pod's claim was
// reserved and while its driver prepares it, before the pod is recorded. The pod never was, yet
// the claim stayed allocated and reserved for it in kdp/resources.json after the restart, its
// device unusable for good. Now the restart releases what pods that are not in the pod store
// hold (and the reconcile loop unprepares the claim).
TEST_F(CrashRounds, ManagerSigkilledInTheMiddleOfNodePrepareResourcesReleasesTheClaim) {
  const std::vector<std::string> flags = {"--dra-reconcile-period", "200ms"};
  ASSERT_NO_FATAL_FAILURE(StartDraManager(flags));
  ASSERT_NO_FATAL_FAILURE(StartHoldDriver(/*hold=*/true));
  const std::string claim_uid = GetClaim("hold-claim").json["metadata"]["uid"];
  BackgroundKdpctl apply =
      StartKdpctl({"apply", "-f", Manifest(ClaimPod("held", "hold-claim", false))});
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(PeerDir() + "/prepare-held"); }))
      << DriverLogs();
  // The reservation is on disk before the driver is asked (what this manager would restore): in
  // the snapshot, or in a journal record after it.
  EXPECT_THAT(
      ReadFile(Root() + "/kdp/resources.json") + ReadFile(Root() + "/kdp/resources.journal"),
      HasSubstr("\"reservedFor\""));
  ASSERT_NO_FATAL_FAILURE(KillManager());
  EXPECT_NE(Finish(apply).exit_code, 0);

  ASSERT_NO_FATAL_FAILURE(StartDraManager(flags));
  EXPECT_TRUE(ListedPods().empty());
  EXPECT_EQ(HoldClaimHeld(), "") << "held for a pod that never was";
  ASSERT_NO_FATAL_FAILURE(Kill(driver_));
  ASSERT_NO_FATAL_FAILURE(StartHoldDriver(/*hold=*/false));
  ASSERT_TRUE(WaitUntil([&] { return PeerCallCount("unprepare", claim_uid) == 1; }))
      << ReadFile(PeerDir() + "/calls") << DriverLogs();
  ASSERT_TRUE(WaitUntil([&] { return PreparedClaims().empty(); })) << PreparedClaims();
  nlohmann::json retry = ApplyPod(ClaimPod("held", "hold-claim", false));
  EXPECT_EQ(retry["admitted"], true) << retry << DriverLogs();
}

// kdp-dra-driver SIGKILLed at random points while pods with claims are admitted: each admission
// is acknowledged (and then kept) or rejected holding nothing; once the driver is back and the
// reconcile loop ran, its prepared set is exactly the live pods' claims and a retry succeeds.
TEST_F(CrashRounds, DraDriverSigkilledWhilePreparing) {
  const int kills = EnvCount("KDP_FAULT_KILLS", kDefaultKills);
  std::mt19937 rng(FaultSeed("DraDriverSigkilledWhilePreparing"));
  ASSERT_NO_FATAL_FAILURE(StartAll({"--dra-reconcile-period", "200ms"}));
  ASSERT_EQ(ApplyYaml(DraObjects()).exit_code, 0);
  std::map<std::string, DraPod> live;
  int acknowledged = 0, failed = 0;
  for (int kill = 0; kill < kills; ++kill) {
    SCOPED_TRACE(absl::StrCat("kill ", kill));
    const std::string name = absl::StrCat("k", kill);
    Timed([&] { return ApplyYaml(ClaimPod(name + "-before", "one-gpu")); });
    ASSERT_EQ(Kdpctl({"delete", "pod", name + "-before"}).exit_code, 0);
    BackgroundKdpctl apply = StartKdpctl({"apply", "-f", Manifest(ClaimPod(name, "one-gpu"))});
    absl::SleepFor(KillDelay(rng));
    ASSERT_NO_FATAL_FAILURE(Kill(driver_));
    KdpctlResult result = Finish(apply);
    nlohmann::json pod = PodOf(result.json);
    if (result.exit_code == 0 && pod["admitted"] == true) {
      live[name] = DraPodOf(pod);
      ++acknowledged;
    } else {
      ++failed;
      EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
      EXPECT_EQ(pod["reason"], "FailedPrepareDynamicResources") << result.out;
    }
    ASSERT_NO_FATAL_FAILURE(StartDriver());
    ASSERT_TRUE(WaitForDriver()) << DriverLogs();
    std::string problem;
    EXPECT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); }))
        << problem << DriverLogs();
    if (!live.contains(name)) {
      nlohmann::json retry = ApplyPod(ClaimPod(name, "one-gpu"));
      ASSERT_EQ(retry["admitted"], true) << retry << DriverLogs();
      live[name] = DraPodOf(retry);
    }
    while (live.size() > 3) {
      ASSERT_EQ(DeletePod(live.begin()->first).exit_code, 0);
      live.erase(live.begin());
    }
    // dra_manager_state follows the journal within the compaction delay.
    EXPECT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); })) << problem;
  }
  Figure("DRA driver kills while preparing", kills, "SIGKILLs of kdp-dra-driver");
  Figure("DRA admissions acknowledged across a driver kill", acknowledged, "pods");
  Figure("DRA admissions failed by a driver kill, then retried", failed, "pods");
}

}  // namespace
}  // namespace kdp::testing
