// A full disk under kdp-manager (issue 7, fault injection): the kubelet root is a small tmpfs
// (so the test needs root; it is skipped, saying why, otherwise), filled by a filler file until
// the next journal or checkpoint write fails with ENOSPC. Then an admission fails cleanly, with
// an error naming the write; nothing stays reserved; the state files on disk stay the last good
// ones (they parse and equal what they were); the manager keeps serving; and once space is back
// a new admission succeeds and everything acknowledged is there, also across a SIGKILL and
// restart. The same for a pod with a DRA claim, whose preparation must not start before its
// claim's allocation can be written.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tests/fault/crash_fixture.h"
#include "tests/testing/loopback_http.h"

namespace kdp::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

class DiskFull : public FaultFixture {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "mounting a tmpfs as the kubelet root needs root; running as uid "
                   << ::geteuid();
    }
    if (::mount("kdp-disk-full", Root().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                "size=16m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs on " << Root() << ": " << std::strerror(errno);
    }
    mounted_ = true;
  }
  // Always, whatever failed: the processes first (they hold files on the tmpfs), then the lazy
  // unmount, so that the temporary directory can be removed.
  void TearDown() override {
    manager_.reset();
    plugin_.reset();
    driver_.reset();
    if (mounted_ && ::umount2(Root().c_str(), MNT_DETACH) != 0) {
      ADD_FAILURE() << "umount -l " << Root() << ": " << std::strerror(errno);
    }
  }

  std::string Filler() const { return Root() + "/filler"; }
  // Writes the filler until the tmpfs has no page left; returns the bytes written.
  int64_t FillDisk() {
    const int fd = ::open(Filler().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    if (fd < 0) return 0;
    std::string chunk(64 << 10, '\0');
    int64_t total = 0;
    for (;;) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n > 0) {
        total += n;
        continue;
      }
      EXPECT_EQ(errno, ENOSPC) << std::strerror(errno);
      break;
    }
    ::close(fd);
    return total;
  }
  void FreeDisk() { ASSERT_EQ(::unlink(Filler().c_str()), 0) << std::strerror(errno); }

  // The state files, by path, as they are now.
  std::map<std::string, std::string> StateFiles(const std::vector<std::string>& names) const {
    std::map<std::string, std::string> out;
    for (const std::string& name : names) out[name] = ReadFile(Root() + "/" + name);
    return out;
  }

  // Admits small pods without devices (each appends a short record to the journal) until one
  // fails: the journal's last page, the only space left, is then full. Returns the pods admitted
  // (acknowledged, so they must stay) and the failing answer.
  std::vector<std::string> ExhaustJournal(KdpctlResult* failed) {
    std::vector<std::string> admitted;
    for (int i = 0; i < 200; ++i) {
      const std::string name = absl::StrCat("pad", i);
      *failed = ApplyYaml(absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", name,
                                       "\nspec:\n  containers:\n  - name: c\n"));
      if (failed->exit_code != 0) return admitted;
      admitted.push_back(name);
    }
    ADD_FAILURE() << "the journal never filled up";
    return admitted;
  }

  bool mounted_ = false;
};

TEST_F(DiskFull, AdmissionFailsCleanlyAndTheManagerRecoversWhenSpaceReturns) {
  const std::vector<std::string> flags = {"--compaction-delay", "200ms", "--metrics-address",
                                          "127.0.0.1:0"};
  ASSERT_NO_FATAL_FAILURE(StartManager(flags));
  // The manager's /healthz: its "state" check fails while the last state write failed.
  int metrics_port = 0;
  ASSERT_TRUE(
      WaitUntil([&] { return (metrics_port = LoggedMetricsPort(manager_->Output())) != 0; }));
  const auto healthz = [&] {
    return SendHttpRequest({.port = metrics_port, .path = "/healthz", .timeout = absl::Seconds(5)});
  };
  EXPECT_EQ(healthz().status, 200);
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  KdpctlResult before = ApplyYaml(GpuPod("before", 2));
  ASSERT_EQ(before.exit_code, 0) << before.out << before.err;
  std::map<std::string, std::vector<std::string>> live = {{"before", Gpus(before.json)}};
  std::string problem;
  ASSERT_TRUE(WaitUntil([&] {
    return (problem = CheckpointProblem({{before.json["pod"]["uid"], live["before"]}})).empty();
  })) << problem;
  const std::vector<std::string> names = {"device-plugins/kubelet_internal_checkpoint",
                                          "kdp/pods.json"};
  ASSERT_TRUE(WaitUntil(
      [&] { return absl::StrContains(ReadFile(Root() + "/kdp/pods.json"), "\"before\""); }));
  const std::map<std::string, std::string> good = StateFiles(names);

  const int64_t filled = FillDisk();
  KdpctlResult pad_failed;
  const std::vector<std::string> pads = ExhaustJournal(&pad_failed);
  for (const std::string& pad : pads) live[pad] = {};
  // A pod with devices: its records are larger than a pad's, so they cannot fit either.
  KdpctlResult full = ApplyYaml(GpuPod("needs-a-gpu-while-the-disk-is-full", 1));
  std::cout << "kdpctl apply on a full disk: exit " << full.exit_code << ": " << full.out
            << full.err << std::endl;
  EXPECT_EQ(full.exit_code, 1) << full.out << full.err;
  const std::string said = full.out + full.err;
  EXPECT_THAT(said, HasSubstr(Root() + "/kdp/journal")) << "names the write";
  EXPECT_THAT(said, AnyOf(HasSubstr("No space left on device"), HasSubstr("no space")));
  EXPECT_THAT(pad_failed.out + pad_failed.err, HasSubstr(Root() + "/kdp/journal"));

  // Nothing of it stays: no pod, no device; the manager still serves; the files are the last
  // good ones (a compaction cannot write them).
  EXPECT_EQ(DeviceStateProblem(live), "");
  EXPECT_EQ(Kdpctl({"status"}).exit_code, 0);
  const HttpAnswer unhealthy = healthz();
  EXPECT_EQ(unhealthy.status, 500) << unhealthy.body;
  EXPECT_THAT(unhealthy.body, HasSubstr("[-]state failed")) << unhealthy.body;
  // Not a liveness failure: restarting the manager does not free the disk.
  const HttpAnswer liveness =
      SendHttpRequest({.port = metrics_port, .path = "/livez", .timeout = absl::Seconds(5)});
  EXPECT_EQ(liveness.status, 200) << liveness.body;
  if (!pads.empty()) {  // the pads changed the state: a compaction tried to write it, and failed
    EXPECT_TRUE(WaitUntil(
        [&] { return absl::StrContains(manager_->Output(), "Failed to write checkpoint file"); }));
  }
  EXPECT_EQ(StateFiles(names), good);
  EXPECT_EQ(CheckpointProblem({{before.json["pod"]["uid"], live["before"]}}), "");

  ASSERT_NO_FATAL_FAILURE(FreeDisk());
  KdpctlResult after = ApplyYaml(GpuPod("after", 2));
  ASSERT_EQ(after.exit_code, 0) << after.out << after.err;
  live["after"] = Gpus(after.json);
  EXPECT_EQ(DeviceStateProblem(live), "");
  const HttpAnswer recovered = healthz();
  EXPECT_EQ(recovered.status, 200) << recovered.body;
  ASSERT_NO_FATAL_FAILURE(KillManager());
  ASSERT_NO_FATAL_FAILURE(StartManager(flags));
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  EXPECT_EQ(DeviceStateProblem(live), "") << manager_->Output();
  Figure("disk full: filler", static_cast<double>(filled) / (1 << 20), "MiB");
  Figure("disk full: admissions acknowledged in the journal's last page", pads.size(), "pods");
}

TEST_F(DiskFull, DraPrepareFailsCleanlyAndRecoversWhenSpaceReturns) {
  const std::vector<std::string> flags = {"--compaction-delay", "200ms", "--dra-reconcile-period",
                                          "200ms"};
  ASSERT_NO_FATAL_FAILURE(StartAll(flags));
  KdpctlResult objects = ApplyYaml(
      absl::StrCat(ExampleManifests(/*with_pod=*/false), "---\n", ClaimTemplate("one-gpu", 1)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  KdpctlResult before = ApplyYaml(ClaimPod("before", "one-gpu"));
  ASSERT_EQ(before.exit_code, 0) << before.out << before.err << DriverLogs();
  std::map<std::string, DraPod> live = {{"before", DraPodOf(before.json)}};
  std::string problem;
  ASSERT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); })) << problem;
  const std::vector<std::string> names = {"dra_manager_state", "kdp/resources.json"};
  const std::map<std::string, std::string> good = StateFiles(names);

  FillDisk();
  KdpctlResult full = ApplyYaml(ClaimPod("claims-a-gpu-while-the-disk-is-full", "one-gpu"));
  std::cout << "kdpctl apply of a DRA pod on a full disk: exit " << full.exit_code << ": "
            << full.out << full.err << std::endl;
  EXPECT_EQ(full.exit_code, 1) << full.out << full.err;
  // Names the first write that found no space: the resource store's journal, or, when its record
  // fit in the journal's last block, the state journal or the driver's checkpoint.
  const std::string said = full.out + full.err;
  EXPECT_THAT(said, HasSubstr(Root() + "/")) << "names the write";
  EXPECT_THAT(said, AnyOf(HasSubstr("No space left on device"), HasSubstr("no space")));
  // Rejected with nothing prepared, reserved or generated for it.
  EXPECT_EQ(DraStateProblem(live), "");
  EXPECT_EQ(Kdpctl({"status"}).exit_code, 0);
  EXPECT_EQ(StateFiles(names), good);

  // A deletion on the full disk: refused before it starts (the terminating record cannot be
  // written: the pod stays running, its claim prepared), or started and then waiting for the
  // driver (terminating), or done, with a warning when only resources.json could not be written.
  // Never a pod listed running whose claim is gone.
  KdpctlResult deleting = Kdpctl({"delete", "pod", "before"});
  std::cout << "kdpctl delete of a DRA pod on a full disk: exit " << deleting.exit_code << ": "
            << deleting.out << deleting.err << std::endl;
  std::map<std::string, nlohmann::json> listed = ListedPods();
  if (deleting.exit_code == 0) {
    EXPECT_EQ(deleting.json["deleted"], true) << deleting.out;
    if (!deleting.err.empty()) {
      EXPECT_THAT(deleting.err, HasSubstr("kdpctl: warning: the pod is deleted, but"));
      EXPECT_THAT(deleting.err, HasSubstr(Root() + "/kdp/resources."));
    }
    EXPECT_FALSE(listed.contains("before"));
    live.erase("before");
  } else {
    EXPECT_THAT(deleting.err, HasSubstr(Root())) << "names the write that failed";
    ASSERT_TRUE(listed.contains("before")) << "a deletion that failed keeps the pod";
    if (!listed["before"].value("terminating", false)) {
      EXPECT_EQ(DraStateProblem(live), "") << "a running pod keeps its claim prepared";
    }
  }

  ASSERT_NO_FATAL_FAILURE(FreeDisk());
  if (deleting.exit_code != 0 && listed["before"].value("terminating", false)) {
    // Space is back: the reconcile loop completes the deletion.
    EXPECT_TRUE(WaitUntil([&] { return !ListedPods().contains("before"); })) << DriverLogs();
    live.erase("before");
  }
  KdpctlResult after = ApplyYaml(ClaimPod("after", "one-gpu"));
  ASSERT_EQ(after.exit_code, 0) << after.out << after.err << DriverLogs();
  live["after"] = DraPodOf(after.json);
  EXPECT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); })) << problem;
  ASSERT_NO_FATAL_FAILURE(KillManager());
  ASSERT_NO_FATAL_FAILURE(StartDraManager(flags));
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  EXPECT_TRUE(WaitUntil([&] { return (problem = DraStateProblem(live)).empty(); }))
      << problem << DriverLogs();
}

}  // namespace
}  // namespace kdp::testing
