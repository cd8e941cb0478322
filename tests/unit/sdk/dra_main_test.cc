// kdp::RunDraDriver (sdk/src/process/dra_main.cc): the flags it owns and the vendor's, --help and
// --version, exit statuses, the options and signal mask the factory sees, and a whole run (API
// server unreachable: publishing retries in the background) stopped by SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/dra_runner.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

using ::testing::HasSubstr;

class OneDevice : public DraDriver {
 public:
  OneDevice() : DraDriver("dev.example.com") {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override { return {}; }
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
    return {};
  }
  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    return std::vector<DraDevice>{{.name = "dev0"}};
  }
};

// Sets or unsets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) old_ = old;
    if (value.has_value()) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Runs RunDraDriver() on argv, restoring this thread's signal mask afterwards.
int RunMain(std::vector<std::string> args, DraMain main) {
  args.insert(args.begin(), "kdp-test-driver");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  sigset_t saved;
  pthread_sigmask(SIG_SETMASK, nullptr, &saved);
  const int status = RunDraDriver(static_cast<int>(args.size()), argv.data(), std::move(main));
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return status;
}

DraMain Failing() {
  return {.name = "kdp-test-driver",
          .description = "a test driver",
          .add_flags =
              [](Flags& flags) {
                static bool ignored = false;
                flags.AddBool("--shiny", &ignored, "a vendor flag");
              },
          .driver = [](const DraRunnerOptions&) { return absl::InternalError("factory says no"); }};
}

TEST(RunDraDriver, HelpListsTheSdkAndVendorFlagsAndExitsZero) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunMain({"--help"}, Failing()), 0);
  const std::string help = ::testing::internal::GetCapturedStdout();
  for (const char* flag : {"--kubelet-root", "--node-name", "--kubeconfig", "--cdi-root",
                           "--instance-suffix", "--health-file", "--metrics-address", "--log-level",
                           "--log-format", "--verbosity", "--version", "--shiny"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
}

TEST(RunDraDriver, VersionPrintsTheProgramAndExitsZero) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunMain({"--version"}, Failing()), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("kdp-test-driver "));
}

TEST(RunDraDriver, BadUsageAndNoNodeNameExitTwo) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain({"--node-name"}, Failing()), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("--node-name"));
  ScopedEnv no_node("NODE_NAME", std::nullopt);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain({}, Failing()), 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("--node-name (or $NODE_NAME) is required"));
}

TEST(RunDraDriver, TheFactorySeesTheResolvedOptionsWithSignalsBlocked) {
  ScopedEnv node("NODE_NAME", "node-from-env");
  DraRunnerOptions seen;
  bool blocked = false;
  bool shiny = false;
  DraMain main{.name = "kdp-test-driver",
               .add_flags = [&](Flags& flags) { flags.AddBool("--shiny", &shiny, "shiny"); },
               .driver =
                   [&](const DraRunnerOptions& options) {
                     seen = options;
                     sigset_t mask;
                     pthread_sigmask(SIG_SETMASK, nullptr, &mask);
                     blocked = sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
                     return absl::InternalError("stop here");
                   }};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain({"--kubelet-root", "/k", "--cdi-root", "/c", "--instance-suffix", "s",
                     "--kubeconfig", "/kc", "--shiny"},
                    main),
            1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("stop here"));
  EXPECT_TRUE(blocked);
  EXPECT_TRUE(shiny);
  EXPECT_EQ(seen.node_name, "node-from-env");
  EXPECT_EQ(seen.kubelet_root, "/k");
  EXPECT_EQ(seen.cdi_root, "/c");
  EXPECT_EQ(seen.instance_suffix, "s");
  EXPECT_EQ(seen.kubeconfig, "/kc");
  EXPECT_FALSE(seen.metrics_required);  // No --metrics-address: a default only warns.
  EXPECT_EQ(DraRunnerOptions{}.cdi_root, "/var/run/cdi");
}

TEST(RunDraDriver, ServesAndStopsCleanlyOnSigterm) {
  kdp::testing::TempDir dir;
  {
    std::ofstream file(dir.Path("kubeconfig"));
    file << "apiVersion: v1\nkind: Config\n"
            "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";
  }
  std::atomic<int> status = -1;
  std::thread run([&] {
    status = RunMain({"--kubelet-root", dir.path(), "--node-name", "node-a", "--kubeconfig",
                      dir.Path("kubeconfig"), "--metrics-address", ""},
                     {.name = "kdp-test-driver", .driver = [](const DraRunnerOptions&) {
                        return std::make_unique<OneDevice>();
                      }});
  });
  const std::string socket = dir.Path("plugins_registry/dev.example.com-reg.sock");
  struct stat info;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (stat(socket.c_str(), &info) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(stat(socket.c_str(), &info), 0) << socket;
  pthread_kill(run.native_handle(), SIGTERM);
  run.join();
  EXPECT_EQ(status, 0);
  EXPECT_NE(stat(socket.c_str(), &info), 0) << "socket left behind";
}

}  // namespace
}  // namespace kdp
