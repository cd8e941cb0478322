// kdp-conformance dra-driver as a user runs it: kdp's example DRA driver passes every scenario; a
// driver written in Python without the SDK (tests/conformance/broken_dra_driver.py: Debian's
// python3-grpcio, python3-protobuf and python3-kubernetes) passes every scenario too, and with each
// of its deliberate defects fails exactly the scenario aimed at that defect, skips only those that
// need what the defect broke, and passes the rest.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/conformance_run.h"
#include "tests/testing/temp_dir.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string>& DraScenarioIds() {
  static const auto* const kIds = new std::vector<std::string>{"dra.register",
                                                               "dra.resource-slices",
                                                               "dra.prepare",
                                                               "dra.prepare-idempotent",
                                                               "dra.prepare-after-reboot",
                                                               "dra.unprepare",
                                                               "dra.unprepare-unknown",
                                                               "dra.driver-restart",
                                                               "dra.kubelet-restart",
                                                               "dra.health",
                                                               "dra.sigterm"};
  return *kIds;
}

std::map<std::string, std::string> AllDraScenariosPass() {
  std::map<std::string, std::string> verdicts;
  for (const std::string& id : DraScenarioIds()) verdicts[id] = "pass";
  return verdicts;
}

ConformanceRun RunDraConformance(const std::vector<std::string>& driver,
                                 const std::vector<std::string>& extra = {}) {
  return ::kdp::testing::RunConformance("dra-driver", driver, extra);
}

// Debian's Python with the gRPC and Kubernetes modules the Python driver imports; empty when
// they are missing (scripts/deps installs them).
std::string PythonWithGrpc() {
  absl::StatusOr<CommandResult> probe = RunCommand(
      {"/usr/bin/python3", "-c", "import grpc, google.protobuf, kubernetes"}, absl::Seconds(30));
  return probe.ok() && probe->exit_code == 0 ? "/usr/bin/python3" : "";
}

std::vector<std::string> PythonDriverCommand(const std::string& python, const std::string& defect) {
  return {python,           absl::StrCat(KDP_SOURCE_DIR, "/tests/conformance/broken_dra_driver.py"),
          "--protos",       KDP_PYTHON_PROTOS_DIR,
          "--kubelet-root", "{kubelet_root}",
          "--cdi-root",     "{cdi_root}",
          "--node-name",    "{node_name}",
          "--kubeconfig",   "{kubeconfig}",
          "--health-file",  "{kubelet_root}/unhealthy",
          "--defect",       defect};
}

TEST(DraConformance, TheExampleDraDriverPassesEveryScenario) {
  TempDir dir;
  const std::string junit = dir.Path("report.xml");
  ConformanceRun run = RunDraConformance(
      {KDP_DRA_DRIVER_BIN, "--kubelet-root", "{kubelet_root}", "--cdi-root", "{cdi_root}",
       "--node-name", "{node_name}", "--kubeconfig", "{kubeconfig}", "--topology-xml",
       absl::StrCat(KDP_SOURCE_DIR, "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml"),
       "--health-file", "{kubelet_root}/unhealthy", "--metrics-address", ""},
      {"--junit", junit});
  EXPECT_EQ(run.exit_code, 0) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts, AllDraScenariosPass()) << run.Messages();
  // What the passes saw: the example driver's eight GPUs, a health change as a full list.
  EXPECT_THAT(run.Message("dra.resource-slices"), HasSubstr("8 devices"));
  EXPECT_THAT(run.Message("dra.health"), HasSubstr("reported Unhealthy"));
  const std::string xml = FileText(junit);
  EXPECT_THAT(xml, HasSubstr(absl::StrCat("<testsuite name=\"kdp-conformance dra-driver\" tests=\"",
                                          DraScenarioIds().size(), "\" failures=\"0\"")));
  for (const std::string& id : DraScenarioIds()) {
    EXPECT_THAT(xml, HasSubstr(absl::StrCat("classname=\"dra-driver\" name=\"", id)));
  }
}

TEST(DraConformance, APythonDriverWrittenWithoutTheSdkPassesEveryScenario) {
  const std::string python = PythonWithGrpc();
  if (python.empty()) GTEST_SKIP() << "no /usr/bin/python3 with python3-grpcio (scripts/deps)";
  ConformanceRun run = RunDraConformance(PythonDriverCommand(python, "none"));
  EXPECT_EQ(run.exit_code, 0) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts, AllDraScenariosPass()) << run.Messages();
}

// A spec every claim names, written at the driver's start and kept (the dra-example-driver's
// "common" device): it is not a spec the claim's unprepare must remove, and the reboot's emptied
// directory gets it back from the restarted driver.
TEST(DraConformance, ASpecSharedByEveryClaimMayStay) {
  const std::string python = PythonWithGrpc();
  if (python.empty()) GTEST_SKIP() << "no /usr/bin/python3 with python3-grpcio (scripts/deps)";
  std::vector<std::string> command = PythonDriverCommand(python, "none");
  command.push_back("--shared-spec");
  ConformanceRun run = RunDraConformance(command, {"--run", "^dra\\.(prepare|unprepare)"});
  EXPECT_EQ(run.exit_code, 0) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts, (std::map<std::string, std::string>{{"dra.prepare", "pass"},
                                                              {"dra.prepare-idempotent", "pass"},
                                                              {"dra.prepare-after-reboot", "pass"},
                                                              {"dra.unprepare", "pass"},
                                                              {"dra.unprepare-unknown", "pass"}}))
      << run.Messages();
  EXPECT_THAT(run.Message("dra.prepare"), HasSubstr("broken-dra.kdp.test/dev=common"));
}

struct DraDefectCase {
  std::string defect;
  std::string scenario;  // the one it must fail
  std::string message;   // a part of that scenario's message
  // Scenarios that need what the defect broke, skipped naming the scenario that judges it.
  std::set<std::string> skipped = {};
};

class DraDefect : public ::testing::TestWithParam<DraDefectCase> {};

TEST_P(DraDefect, FailsExactlyTheScenarioAimedAtIt) {
  const DraDefectCase& c = GetParam();
  const std::string python = PythonWithGrpc();
  if (python.empty()) GTEST_SKIP() << "no /usr/bin/python3 with python3-grpcio (scripts/deps)";
  ConformanceRun run = RunDraConformance(PythonDriverCommand(python, c.defect));
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  std::map<std::string, std::string> expected = AllDraScenariosPass();
  expected[c.scenario] = "fail";
  for (const std::string& id : c.skipped) expected[id] = "skip";
  EXPECT_EQ(run.verdicts, expected) << run.Messages();
  EXPECT_THAT(run.Message(c.scenario), HasSubstr(c.message));
  for (const std::string& id : c.skipped) {
    EXPECT_THAT(run.Message(id), HasSubstr("judges")) << id;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryDefect, DraDefect,
    ::testing::Values(
        DraDefectCase{"no-owner", "dra.resource-slices", "has no ownerReference to Node"},
        DraDefectCase{"bad-pool",
                      "dra.resource-slices",
                      "resourceSliceCount 2 but 1 slice",
                      {"dra.prepare", "dra.prepare-idempotent", "dra.prepare-after-reboot",
                       "dra.unprepare", "dra.driver-restart"}},
        DraDefectCase{
            "bad-cdi", "dra.prepare", "is defined by no valid spec", {"dra.prepare-after-reboot"}},
        DraDefectCase{"not-idempotent",
                      "dra.prepare-idempotent",
                      "is already prepared",
                      {"dra.prepare-after-reboot"}},
        DraDefectCase{"leftover-cdi", "dra.unprepare", "left in", {"dra.driver-restart"}},
        DraDefectCase{"unknown-unprepare", "dra.unprepare-unknown", "unknown claim"},
        DraDefectCase{"crash-on-unknown", "dra.unprepare-unknown", "the driver exited"},
        DraDefectCase{"forget-on-restart", "dra.driver-restart", "is still in"},
        DraDefectCase{"no-republish", "dra.kubelet-restart",
                      "no ResourceSlice of the driver came back"},
        DraDefectCase{"stale-after-reboot", "dra.prepare-after-reboot", "defined by no spec"},
        DraDefectCase{"health-diff", "dra.health", "leaves out"},
        DraDefectCase{"socket-left", "dra.sigterm", "reg.sock behind"}),
    [](const ::testing::TestParamInfo<DraDefectCase>& info) {
      std::string name = info.param.defect;
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

// A driver that never registers fails dra.register naming what the manager saw; the others are
// skipped as they need a registered driver.
TEST(DraConformance, ADriverThatNeverRegistersFailsRegistration) {
  ConformanceRun run = RunDraConformance(
      {"/bin/sleep", "60"}, {"--run", "^dra\\.(register|prepare)$", "--register-timeout", "1s"});
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts,
            (std::map<std::string, std::string>{{"dra.register", "fail"}, {"dra.prepare", "skip"}}))
      << run.Messages();
  EXPECT_THAT(run.Message("dra.register"),
              HasSubstr("no DRAPlugin registration through plugins_registry"));
}

TEST(DraConformance, ListNamesEveryScenarioWithItsKubeletReference) {
  absl::StatusOr<CommandResult> list = RunCommand({KDP_CONFORMANCE_BIN, "dra-driver", "--list"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->exit_code, 0) << list->err;
  for (const std::string& id : DraScenarioIds()) EXPECT_THAT(list->out, HasSubstr(id + "  "));
  EXPECT_THAT(list->out, HasSubstr("upstream: pkg/kubelet/cm/dra/manager.go"));
  absl::StatusOr<CommandResult> none = RunCommand({KDP_CONFORMANCE_BIN, "dra-driver"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->exit_code, 2);
  EXPECT_THAT(none->err, HasSubstr("kdp-conformance dra-driver: no command"));
}

}  // namespace
}  // namespace kdp::testing
