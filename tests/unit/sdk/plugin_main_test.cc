// kdp::RunPlugins (sdk/src/process/plugin_main.cc): the flags it owns and the vendor's, --help and
// --version, exit statuses, the signal mask the factory runs under, the health file, and a whole
// run stopped by SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/plugin_runner.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

using ::testing::HasSubstr;

class TwoDevices : public DevicePlugin {
 public:
  TwoDevices() : DevicePlugin("example.com/dev") {}
  absl::StatusOr<std::vector<Device>> Discover() override {
    return std::vector<Device>{{.id = "dev0"}, {.id = "dev1"}};
  }
};

// Runs RunPlugins() on argv, restoring this thread's signal mask afterwards (RunPlugins blocks
// SIGTERM and SIGINT in the thread that calls it, as a main() wants).
int RunPluginsMain(std::vector<std::string> args, PluginMain main) {
  args.insert(args.begin(), "kdp-test-plugin");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  sigset_t saved;
  pthread_sigmask(SIG_SETMASK, nullptr, &saved);
  const int status = RunPlugins(static_cast<int>(args.size()), argv.data(), std::move(main));
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return status;
}

PluginMain FailingPluginMain(std::string* seen = nullptr) {
  return {.name = "kdp-test-plugin",
          .description = "a test plugin",
          .add_flags =
              [seen](Flags& flags) {
                static std::string ignored;
                flags.AddString("--color", seen != nullptr ? seen : &ignored, "a vendor flag");
              },
          .plugin = [] { return absl::InternalError("factory says no"); }};
}

TEST(RunPlugins, HelpListsTheSdkAndVendorFlagsAndExitsZero) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunPluginsMain({"--help"}, FailingPluginMain()), 0);
  const std::string help = ::testing::internal::GetCapturedStdout();
  for (const char* flag :
       {"--kubelet-root", "--socket-suffix", "--health-file", "--metrics-address", "--log-level",
        "--log-format", "--verbosity", "--version", "--color"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
  EXPECT_THAT(help, HasSubstr("a test plugin"));
}

TEST(RunPlugins, VersionPrintsTheProgramAndExitsZero) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunPluginsMain({"--version"}, FailingPluginMain()), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("kdp-test-plugin "));
}

TEST(RunPlugins, BadUsageExitsTwoNamingTheFlag) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--no-such-flag"}, FailingPluginMain()), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--no-such-flag"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--log-level", "loud"}, FailingPluginMain()), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--log-level"));
}

TEST(RunPlugins, VendorFlagsOfEveryKindAreParsedBeforeTheFactoryRuns) {
  std::string text;
  int count = 0;
  bool on = false;
  absl::Duration period = absl::Seconds(1);
  std::string choice = "a";
  uint16_t id = 0;
  std::string seen;
  PluginMain main{.name = "kdp-test-plugin",
                  .add_flags =
                      [&](Flags& flags) {
                        flags.AddString("--text", &text, "text");
                        flags.AddInt("--count", &count, "count", 1, 5);
                        flags.AddBool("--on", &on, "a switch");
                        flags.AddDuration("--period", &period, "a period");
                        flags.AddChoice("--choice", &choice, {"a", "b"}, "a choice");
                        flags.AddValue(
                            "--id", &id,
                            [](std::string_view v) -> absl::StatusOr<uint16_t> {
                              if (v == "7") return 7;
                              return absl::InvalidArgumentError("want 7");
                            },
                            "an ID");
                      },
                  .plugin = [&]() -> absl::StatusOr<std::unique_ptr<DevicePlugin>> {
                    seen = absl::StrCat(text, " ", count, " ", on ? 1 : 0, " ",
                                        absl::FormatDuration(period), " ", choice, " ",
                                        static_cast<int>(id));
                    return absl::InternalError("done");
                  }};
  EXPECT_EQ(RunPluginsMain({"--text", "hi", "--count", "3", "--on", "--period", "1m30s", "--choice",
                            "b", "--id", "7"},
                           main),
            1);
  EXPECT_EQ(seen, "hi 3 1 1m30s b 7");

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--id", "8"}, main), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--id: want 7"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--count", "9"}, main), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--count"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--period", "soon"}, main), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--period"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--choice", "c"}, main), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--choice"));
}

TEST(RunPlugins, TheFactoryRunsWithSigtermAndSigintBlocked) {
  bool blocked = false;
  PluginMain main{.name = "kdp-test-plugin", .plugin = [&] {
                    sigset_t mask;
                    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
                    blocked = sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
                    return absl::InternalError("stop here");
                  }};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({}, main), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("stop here"));
  EXPECT_TRUE(blocked);
}

TEST(RunPlugins, AnUnreadableHealthFileOrNoFactoryExitsOne) {
  kdp::testing::TempDir dir;
  PluginMain main{.name = "kdp-test-plugin",
                  .plugin = [] { return std::make_unique<TwoDevices>(); }};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({"--kubelet-root", dir.path(), "--health-file", dir.path()}, main), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("cannot read health file"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunPluginsMain({}, {.name = "kdp-test-plugin"}), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("exactly one"));
}

TEST(RunPlugins, ServesAppliesTheHealthFileAndStopsCleanlyOnSigterm) {
  kdp::testing::TempDir dir;
  const std::string root = dir.path();
  {
    std::ofstream file(dir.Path("unhealthy"));
    file << "dev1\n";
  }
  std::atomic<DevicePlugin*> plugin = nullptr;
  std::atomic<int> status = -1;
  std::thread run([&] {
    status = RunPluginsMain({"--kubelet-root", root, "--metrics-address", "", "--health-file",
                             dir.Path("unhealthy"), "--socket-suffix", "a"},
                            {.name = "kdp-test-plugin", .plugin = [&] {
                               auto made = std::make_unique<TwoDevices>();
                               plugin = made.get();
                               return made;
                             }});
  });
  const std::string socket = root + "/device-plugins/example.com_dev-a.sock";
  struct stat info;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (stat(socket.c_str(), &info) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(stat(socket.c_str(), &info), 0) << socket;
  std::vector<Device> devices = plugin.load()->Devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].health, Health::kHealthy);
  EXPECT_EQ(devices[1].health, Health::kUnhealthy);
  pthread_kill(run.native_handle(), SIGTERM);
  run.join();
  EXPECT_EQ(status, 0);
  EXPECT_NE(stat(socket.c_str(), &info), 0) << "socket left behind";
}

}  // namespace
}  // namespace kdp
