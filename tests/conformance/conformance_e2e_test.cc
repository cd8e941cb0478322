// kdp-conformance as a user runs it: kdp's example device plugin passes every scenario; a plugin
// written without the SDK (tests/conformance/broken_device_plugin.cc) passes every scenario too,
// and with each of its deliberate defects fails exactly the scenario aimed at that defect and
// passes the rest; the JSON and JUnit reports say the same as the exit status; bad usage exits 2
// naming the input.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/conformance/conformance_run.h"
#include "tests/testing/temp_dir.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

// Every device-plugin scenario: a plugin that passes them all is judged on all of them.
const std::vector<std::string>& ConformanceScenarioIds() {
  static const auto* const kIds = new std::vector<std::string>{
      "dp.register",         "dp.options",        "dp.devices",
      "dp.health-full-list", "dp.allocate",       "dp.preferred-allocation",
      "dp.kubelet-restart",  "dp.plugin-restart", "dp.sigterm",
      "dp.unexpected-calls"};
  return *kIds;
}

// kdp-conformance device-plugin, as conformance_run.h runs it.
ConformanceRun RunPluginConformance(std::vector<std::string> plugin,
                                    std::vector<std::string> extra = {}) {
  return ::kdp::testing::RunConformance("device-plugin", plugin, extra);
}

std::vector<std::string> BrokenPluginCommand(const std::string& defect) {
  return {KDP_BROKEN_DEVICE_PLUGIN_BIN,
          "--kubelet-root",
          "{kubelet_root}",
          "--health-file",
          "{kubelet_root}/unhealthy",
          "--defect",
          defect};
}

std::map<std::string, std::string> AllScenariosPass() {
  std::map<std::string, std::string> verdicts;
  for (const std::string& id : ConformanceScenarioIds()) verdicts[id] = "pass";
  return verdicts;
}

TEST(Conformance, TheExampleGpuPluginPassesEveryScenario) {
  TempDir dir;
  const std::string junit = dir.Path("report.xml");
  ConformanceRun run = RunPluginConformance(
      {KDP_GPU_PLUGIN_BIN, "--kubelet-root", "{kubelet_root}", "--topology-xml",
       absl::StrCat(KDP_SOURCE_DIR, "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml"),
       "--health-file", "{kubelet_root}/unhealthy", "--metrics-address", ""},
      {"--junit", junit});
  EXPECT_EQ(run.exit_code, 0) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts, AllScenariosPass()) << run.Messages();
  EXPECT_EQ(
      run.report["summary"],
      nlohmann::json({{"passed", ConformanceScenarioIds().size()}, {"failed", 0}, {"skipped", 0}}));
  // The JUnit report: one testcase per scenario, none failed or skipped.
  std::ifstream in(junit);
  std::stringstream xml;
  xml << in.rdbuf();
  EXPECT_THAT(xml.str(),
              HasSubstr(absl::StrCat("<testsuite name=\"kdp-conformance device-plugin\" "
                                     "tests=\"",
                                     ConformanceScenarioIds().size(), "\" failures=\"0\"")));
  for (const std::string& id : ConformanceScenarioIds()) {
    EXPECT_THAT(xml.str(), HasSubstr(absl::StrCat("classname=\"device-plugin\" name=\"", id)));
  }
  EXPECT_EQ(xml.str().find("<failure"), std::string::npos);
}

TEST(Conformance, APluginWrittenWithoutTheSdkPassesEveryScenario) {
  ConformanceRun run = RunPluginConformance(BrokenPluginCommand("none"));
  EXPECT_EQ(run.exit_code, 0) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts, AllScenariosPass()) << run.Messages();
}

struct ConformanceDefectCase {
  std::string defect;
  std::string scenario;  // the one it must fail
  std::string message;   // a part of that scenario's message
};

class ConformanceDefect : public ::testing::TestWithParam<ConformanceDefectCase> {};

TEST_P(ConformanceDefect, FailsExactlyTheScenarioAimedAtIt) {
  const ConformanceDefectCase& c = GetParam();
  TempDir dir;
  const std::string junit = dir.Path("report.xml");
  ConformanceRun run = RunPluginConformance(BrokenPluginCommand(c.defect), {"--junit", junit});
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  std::map<std::string, std::string> expected = AllScenariosPass();
  expected[c.scenario] = "fail";
  EXPECT_EQ(run.verdicts, expected) << run.Messages();
  for (const nlohmann::json& scenario : run.report["scenarios"]) {
    if (scenario["id"] == c.scenario) {
      EXPECT_THAT(scenario["message"].get<std::string>(), HasSubstr(c.message));
    }
  }
  std::ifstream in(junit);
  std::stringstream xml;
  xml << in.rdbuf();
  EXPECT_THAT(xml.str(), HasSubstr("failures=\"1\""));
  EXPECT_THAT(xml.str(), HasSubstr(absl::StrCat("name=\"", c.scenario, "\" time=")));
}

INSTANTIATE_TEST_SUITE_P(
    EveryDefect, ConformanceDefect,
    ::testing::Values(
        ConformanceDefectCase{"no-reregister", "dp.kubelet-restart", "no accepted registration"},
        ConformanceDefectCase{"diff-listandwatch", "dp.health-full-list",
                              "without stub-1, stub-2, stub-3"},
        ConformanceDefectCase{"bad-allocate", "dp.allocate", "paths must be absolute"},
        ConformanceDefectCase{"crash-on-unexpected", "dp.unexpected-calls",
                              "after Allocate with two container requests"},
        ConformanceDefectCase{"socket-left", "dp.sigterm", "leaving its socket behind"},
        ConformanceDefectCase{"wrong-preferred", "dp.preferred-allocation",
                              "with must_include [stub-0]: without stub-0"},
        ConformanceDefectCase{"duplicate-ids", "dp.devices", "device stub-0 listed twice"},
        ConformanceDefectCase{"stale-socket", "dp.plugin-restart",
                              "the program exited with status 1"}),
    [](const ::testing::TestParamInfo<ConformanceDefectCase>& info) {
      std::string name = info.param.defect;
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

// A plugin started through a wrapper that does not exec it (sh -c "plugin ...") is killed with
// its wrapper: its crash restarts the whole group, and nothing of it outlives the run.
TEST(Conformance, AWrappedPluginIsKilledWithItsWrapper) {
  const std::string resource = absl::StrCat("example.com/wrapped", getpid());
  const std::string command =
      absl::StrCat(KDP_BROKEN_DEVICE_PLUGIN_BIN, " --kubelet-root {kubelet_root} --resource ",
                   resource, "; true");  // "; true": sh cannot exec the plugin in its place
  ConformanceRun run = RunPluginConformance({"/bin/sh", "-c", command},
                                            {"--run", "^dp\\.(register|plugin-restart|sigterm)$"});
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts,
            (std::map<std::string, std::string>{
                {"dp.register", "pass"}, {"dp.plugin-restart", "pass"}, {"dp.sigterm", "fail"}}))
      << run.Messages();
  // SIGTERM reached only the shell, as it reaches a container's first process: the plugin under
  // it never heard of it.
  EXPECT_THAT(run.Messages(), HasSubstr("dp.sigterm: fail"));
  // No instance of the plugin is left.
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = ::kdp::ReadFile(entry.path().string() + "/cmdline").value_or("");
    EXPECT_EQ(cmdline.find(resource), std::string::npos) << entry.path() << ": " << cmdline;
  }
}

// An RPC advertised but not served fails dp.options, naming it. The kubelet calls what a plugin
// advertises, so the pod's admission fails too, and the preferred-allocation check is skipped.
TEST(Conformance, AnAdvertisedRpcThatIsNotServedFailsTheOptions) {
  ConformanceRun run = RunPluginConformance(BrokenPluginCommand("unserved-preferred"));
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  std::map<std::string, std::string> expected = AllScenariosPass();
  expected["dp.options"] = "fail";
  expected["dp.allocate"] = "fail";
  expected["dp.preferred-allocation"] = "skip";
  EXPECT_EQ(run.verdicts, expected) << run.Messages();
  EXPECT_THAT(run.Messages(),
              HasSubstr("dp.options: fail: expected every RPC GetDevicePluginOptions advertises to "
                        "be served; got GetPreferredAllocation advertised but answered "
                        "UNIMPLEMENTED"));
}

// Ctrl-C: the program under test (here a shell and the sleep it started, in their own process
// group, which a terminal's SIGINT does not reach) is killed and the temporary root removed.
TEST(Conformance, InterruptedItKillsTheProgramAndRemovesItsRoot) {
  TempDir tmp;
  // A sleep of a duration no other process has: 120.<pid> seconds.
  const std::string marker = absl::StrCat("120.", getpid());
  absl::StatusOr<std::unique_ptr<Subprocess>> run =
      Subprocess::Start({KDP_CONFORMANCE_BIN, "device-plugin", "--run", "^dp\\.register$", "--",
                         "/bin/sh", "-c", absl::StrCat("/bin/sleep ", marker, "; true")},
                        {.env = {{"TMPDIR", tmp.path()}}});
  ASSERT_TRUE(run.ok()) << run.status();
  // The scenario has started once its root exists and the sleep runs: a process whose last
  // argument is the marker (kdp-conformance's and the shell's arguments only contain it).
  const std::string argument = absl::StrCat(std::string(1, '\0'), marker, std::string(1, '\0'));
  auto sleeping = [&] {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      if (::kdp::ReadFile(entry.path().string() + "/cmdline").value_or("").find(argument) !=
          std::string::npos) {
        return true;
      }
    }
    return false;
  };
  for (int i = 0; i < 200 && !sleeping(); ++i) absl::SleepFor(absl::Milliseconds(50));
  ASSERT_TRUE(sleeping());
  ASSERT_FALSE(std::filesystem::is_empty(tmp.path()));
  ASSERT_TRUE((*run)->Signal(SIGINT).ok());
  absl::StatusOr<int> code = (*run)->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGINT);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "a temporary root is left";
  for (int i = 0; i < 100 && sleeping(); ++i) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(sleeping()) << "the program under test outlived kdp-conformance";
}

TEST(Conformance, BadUsageExitsTwoNamingTheInput) {
  absl::StatusOr<CommandResult> none = RunCommand({KDP_CONFORMANCE_BIN, "device-plugin"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->exit_code, 2);
  EXPECT_THAT(none->err, HasSubstr("no command"));
  absl::StatusOr<CommandResult> regex =
      RunCommand({KDP_CONFORMANCE_BIN, "device-plugin", "--run", "dp.(", "--", "/bin/true"});
  ASSERT_TRUE(regex.ok()) << regex.status();
  EXPECT_EQ(regex->exit_code, 2);
  EXPECT_THAT(regex->err, HasSubstr("--run \"dp.(\": not a regular expression"));
  absl::StatusOr<CommandResult> nothing =
      RunCommand({KDP_CONFORMANCE_BIN, "device-plugin", "--run", "^dra\\.", "--", "/bin/true"});
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(nothing->exit_code, 2);
  EXPECT_THAT(nothing->err, HasSubstr("matches no scenario"));
}

TEST(Conformance, ListNamesEveryScenarioWithItsKubeletReference) {
  absl::StatusOr<CommandResult> list = RunCommand({KDP_CONFORMANCE_BIN, "device-plugin", "--list"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->exit_code, 0) << list->err;
  for (const std::string& id : ConformanceScenarioIds())
    EXPECT_THAT(list->out, HasSubstr(id + "  "));
  EXPECT_THAT(list->out, HasSubstr("upstream: pkg/kubelet/cm/devicemanager"));
}

TEST(Conformance, RunSelectsScenariosAndAProgramThatNeverRegistersFailsRegistration) {
  // /bin/sleep never registers: dp.register fails naming what it saw; the rest are skipped.
  ConformanceRun run = RunPluginConformance(
      {"/bin/sleep", "60"}, {"--run", "^dp\\.(register|devices)$", "--register-timeout", "1s"});
  EXPECT_EQ(run.exit_code, 1) << run.Messages() << run.err;
  EXPECT_EQ(run.verdicts,
            (std::map<std::string, std::string>{{"dp.register", "fail"}, {"dp.devices", "skip"}}))
      << run.Messages();
  EXPECT_THAT(run.Messages(), HasSubstr("no Register call"));
}

}  // namespace
}  // namespace kdp::testing
