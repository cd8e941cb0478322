// PluginManager against real unix sockets in a temp dir, with fake plugins serving the
// pluginregistration API: the kubelet's pluginwatcher/reconciler scenarios (sockets found at
// start, created later, in sub-directories, removed, re-created; dotfiles and non-sockets
// ignored; unknown types refused) and kdp's retry/backoff and status output.
#include "manager/src/pluginmanager/plugin_manager.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/pluginmanager/fake_registration_plugin.h"

namespace kdp::manager::pluginmanager {
namespace {

using ::kdp::testing::FakeRegistrationPlugin;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records every call; fails the first `validate_failures` validations.
class RecordingHandler final : public PluginHandler {
 public:
  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>&) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("validate ", name, " ", endpoint));
    if (validate_failures_ > 0) {
      --validate_failures_;
      return absl::InvalidArgumentError("not today");
    }
    return absl::OkStatus();
  }
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>&) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("register ", name, " ", endpoint));
    return absl::OkStatus();
  }
  void DeRegisterPlugin(const std::string& name, const std::string& endpoint) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("deregister ", name, " ", endpoint));
  }

  void FailValidations(int n) {
    absl::MutexLock lock(&mu_);
    validate_failures_ = n;
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // Calls other than validations.
  std::vector<std::string> changes() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& c : calls_) {
      if (c.rfind("validate", 0) != 0) out.push_back(c);
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  int validate_failures_ ABSL_GUARDED_BY(mu_) = 0;
};

PluginManagerOptions FastOptions(const std::string& dir) {
  return {.dir = dir,
          .timeouts = {.dial = absl::Seconds(5),
                       .get_info = absl::Milliseconds(200),
                       .notify = absl::Seconds(2)},
          .initial_backoff = absl::Milliseconds(100),
          .max_backoff = absl::Seconds(1)};
}

std::unique_ptr<FakeRegistrationPlugin> TestPlugin(const std::string& name,
                                                   const std::string& type = "TestPlugin",
                                                   const std::string& endpoint = "") {
  return std::make_unique<FakeRegistrationPlugin>(type, name, endpoint,
                                                  std::vector<std::string>{"v1"});
}

class PluginManagerTest : public ::testing::Test {
 protected:
  PluginManagerTest() : registry_(tmp_.Path("plugins_registry")), manager_(FastOptions(registry_)) {
    manager_.AddHandler("TestPlugin", &handler_);
  }
  std::string Sock(const std::string& name) const { return registry_ + "/" + name; }
  bool WaitForChanges(const std::vector<std::string>& expected) {
    return WaitUntil([&] { return handler_.changes() == expected; }, absl::Seconds(10));
  }

  TempDir tmp_;
  const std::string registry_;
  RecordingHandler handler_;
  PluginManager manager_;
};

TEST_F(PluginManagerTest, CreatesTheRegistryDirectoryWith0750) {
  ASSERT_TRUE(manager_.Start().ok());
  struct stat st {};
  ASSERT_EQ(::stat(registry_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

TEST_F(PluginManagerTest, RegistersSocketsFoundAtStartIncludingSubdirectories) {
  ASSERT_EQ(::mkdir(registry_.c_str(), 0750), 0);
  ASSERT_EQ(::mkdir(Sock("sub").c_str(), 0750), 0);
  auto top = TestPlugin("top.example.com");
  auto nested = TestPlugin("nested.example.com");
  ASSERT_TRUE(top->Serve(Sock("top.sock")));
  ASSERT_TRUE(nested->Serve(Sock("sub/nested.sock")));

  ASSERT_TRUE(manager_.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return handler_.changes().size() == 2; }, absl::Seconds(10)));
  EXPECT_THAT(handler_.changes(), ::testing::UnorderedElementsAre(
                                      "register top.example.com " + Sock("top.sock"),
                                      "register nested.example.com " + Sock("sub/nested.sock")));
  EXPECT_TRUE(WaitUntil([&] { return top->statuses().size() == 1; }));
  ASSERT_EQ(top->statuses().size(), 1u);
  EXPECT_TRUE(top->statuses()[0].registered);
  EXPECT_EQ(top->statuses()[0].error, "");
}

TEST_F(PluginManagerTest, RegistersSocketCreatedAfterStartAndListsIt) {
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = std::make_unique<FakeRegistrationPlugin>("TestPlugin", "late.example.com", "",
                                                         std::vector<std::string>{"v1", "v2"});
  ASSERT_TRUE(plugin->Serve(Sock("late.sock")));
  ASSERT_TRUE(WaitForChanges({"register late.example.com " + Sock("late.sock")}));

  // The handler hears of the plugin before the manager lists it (it records the plugin once the
  // handler accepted it): wait for the listing too.
  ASSERT_TRUE(WaitUntil([&] { return manager_.Registered().size() == 1; }, absl::Seconds(10)));
  std::vector<RegisteredPlugin> registered = manager_.Registered();
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].type, "TestPlugin");
  EXPECT_EQ(registered[0].name, "late.example.com");
  // An empty PluginInfo.endpoint means the registration socket itself.
  EXPECT_EQ(registered[0].endpoint, Sock("late.sock"));
  EXPECT_EQ(registered[0].socket_path, Sock("late.sock"));
  EXPECT_THAT(registered[0].versions, ElementsAre("v1", "v2"));
  EXPECT_LE(registered[0].registered_at, absl::Now());
  EXPECT_GT(registered[0].registered_at, absl::Now() - absl::Minutes(1));
}

TEST_F(PluginManagerTest, PassesThePluginsOwnEndpoint) {
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = TestPlugin("ep.example.com", "TestPlugin", "/some/where/service.sock");
  ASSERT_TRUE(plugin->Serve(Sock("ep.sock")));
  ASSERT_TRUE(WaitForChanges({"register ep.example.com /some/where/service.sock"}));
}

TEST_F(PluginManagerTest, RegistersSocketInSubdirectoryCreatedAfterStart) {
  ASSERT_TRUE(manager_.Start().ok());
  ASSERT_EQ(::mkdir(Sock("driver").c_str(), 0750), 0);
  ASSERT_EQ(::mkdir(Sock("driver/deeper").c_str(), 0750), 0);
  auto plugin = TestPlugin("deep.example.com");
  ASSERT_TRUE(plugin->Serve(Sock("driver/deeper/reg.sock")));
  ASSERT_TRUE(WaitForChanges({"register deep.example.com " + Sock("driver/deeper/reg.sock")}));
}

TEST_F(PluginManagerTest, IgnoresDotfilesAndFilesThatAreNotSockets) {
  ASSERT_TRUE(manager_.Start().ok());
  auto hidden = TestPlugin("hidden.example.com");
  ASSERT_TRUE(hidden->Serve(Sock(".hidden.sock")));
  ASSERT_EQ(::mkdir(Sock(".dotdir").c_str(), 0750), 0);
  auto in_dotdir = TestPlugin("dotdir.example.com");
  ASSERT_TRUE(in_dotdir->Serve(Sock(".dotdir/reg.sock")));
  std::ofstream(Sock("not-a-socket.sock")) << "plain file";
  // Events are handled in order: once the sentinel is registered, the others were seen.
  auto sentinel = TestPlugin("sentinel.example.com");
  ASSERT_TRUE(sentinel->Serve(Sock("zz-sentinel")));  // any name: only the file type counts
  ASSERT_TRUE(WaitForChanges({"register sentinel.example.com " + Sock("zz-sentinel")}));
  EXPECT_EQ(hidden->get_info_calls(), 0);
  EXPECT_EQ(in_dotdir->get_info_calls(), 0);
  // The manager records the registration once the handler has returned, just after the change
  // the test waited for.
  EXPECT_TRUE(WaitUntil([&] { return manager_.Registered().size() == 1u; }));
  EXPECT_EQ(manager_.Registered().size(), 1u);
}

TEST_F(PluginManagerTest, RemovedSocketDeregisters) {
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = TestPlugin("gone.example.com");
  ASSERT_TRUE(plugin->Serve(Sock("gone.sock")));
  ASSERT_TRUE(WaitForChanges({"register gone.example.com " + Sock("gone.sock")}));
  plugin->Stop(/*remove_socket=*/true);
  ASSERT_TRUE(WaitForChanges({"register gone.example.com " + Sock("gone.sock"),
                              "deregister gone.example.com " + Sock("gone.sock")}));
  EXPECT_THAT(manager_.Registered(), IsEmpty());
}

TEST_F(PluginManagerTest, RemovedSubdirectoryDeregistersItsSockets) {
  ASSERT_TRUE(manager_.Start().ok());
  ASSERT_EQ(::mkdir(Sock("d").c_str(), 0750), 0);
  auto plugin = TestPlugin("sub.example.com");
  ASSERT_TRUE(plugin->Serve(Sock("d/reg.sock")));
  ASSERT_TRUE(WaitForChanges({"register sub.example.com " + Sock("d/reg.sock")}));
  // Moved out of the tree: the kubelet would not notice; kdp treats it as removed.
  ASSERT_EQ(::rename(Sock("d").c_str(), tmp_.Path("moved-away").c_str()), 0);
  ASSERT_TRUE(WaitForChanges({"register sub.example.com " + Sock("d/reg.sock"),
                              "deregister sub.example.com " + Sock("d/reg.sock")}));
}

TEST_F(PluginManagerTest, RecreatedSocketReregisters) {
  ASSERT_TRUE(manager_.Start().ok());
  auto first = TestPlugin("again.example.com");
  ASSERT_TRUE(first->Serve(Sock("again.sock")));
  ASSERT_TRUE(WaitForChanges({"register again.example.com " + Sock("again.sock")}));
  first->Stop();
  // A new process binds the same path (removing the old socket first).
  auto second = TestPlugin("again.example.com");
  ASSERT_TRUE(second->Serve(Sock("again.sock")));
  ASSERT_TRUE(WaitForChanges({"register again.example.com " + Sock("again.sock"),
                              "deregister again.example.com " + Sock("again.sock"),
                              "register again.example.com " + Sock("again.sock")}));
  EXPECT_TRUE(WaitUntil([&] { return second->statuses().size() == 1; }));
  EXPECT_TRUE(second->statuses()[0].registered);
  EXPECT_EQ(manager_.Registered().size(), 1u);
}

TEST_F(PluginManagerTest, UnknownTypeIsRefusedWithAClearMessage) {
  ASSERT_TRUE(manager_.Start().ok());
  for (const std::string type : {"CSIPlugin", "FancyPlugin"}) {
    auto plugin = TestPlugin("x.example.com", type);
    const std::string sock = Sock(type + ".sock");
    ASSERT_TRUE(plugin->Serve(sock));
    ASSERT_TRUE(WaitUntil([&] { return !plugin->statuses().empty(); }, absl::Seconds(10)));
    const auto status = plugin->statuses()[0];
    EXPECT_FALSE(status.registered);
    EXPECT_EQ(status.error,
              absl::StrCat("RegisterPlugin error -- no handler registered for plugin type: ", type,
                           " at socket ", sock, ": kdp-manager does not support plugin type \"",
                           type, "\" (supported: TestPlugin)"));
  }
  EXPECT_THAT(handler_.calls(), IsEmpty());
  EXPECT_THAT(manager_.Registered(), IsEmpty());
}

TEST_F(PluginManagerTest, ValidationFailureIsSentToThePluginAndRetried) {
  handler_.FailValidations(1);
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = TestPlugin("picky.example.com");
  ASSERT_TRUE(plugin->Serve(Sock("picky.sock")));
  ASSERT_TRUE(WaitForChanges({"register picky.example.com " + Sock("picky.sock")}));
  ASSERT_TRUE(WaitUntil([&] { return plugin->statuses().size() == 2; }));
  const auto statuses = plugin->statuses();
  EXPECT_FALSE(statuses[0].registered);
  EXPECT_EQ(statuses[0].error,
            "RegisterPlugin error -- plugin validation failed with err: not today");
  EXPECT_TRUE(statuses[1].registered);
  EXPECT_EQ(statuses[1].error, "");
}

TEST_F(PluginManagerTest, GetInfoTimeoutIsRetriedWithExponentialBackoff) {
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = TestPlugin("slow.example.com");
  plugin->HangGetInfo(2, absl::Milliseconds(400));  // > the 200 ms GetInfo deadline
  ASSERT_TRUE(plugin->Serve(Sock("slow.sock")));
  ASSERT_TRUE(WaitForChanges({"register slow.example.com " + Sock("slow.sock")}));
  const std::vector<absl::Time> calls = plugin->get_info_times();
  ASSERT_EQ(calls.size(), 3u);
  // deadline (200 ms) + 100 ms backoff, then deadline + 200 ms (doubled).
  EXPECT_GE(calls[1] - calls[0], absl::Milliseconds(290));
  EXPECT_GE(calls[2] - calls[1], absl::Milliseconds(390));
  ASSERT_EQ(plugin->statuses().size(), 1u);  // a failed GetInfo is not reported to the plugin
  EXPECT_TRUE(plugin->statuses()[0].registered);
}

TEST_F(PluginManagerTest, StopIsIdempotentAndWorksWithoutStart) {
  PluginManager unstarted(FastOptions(tmp_.Path("never")));
  unstarted.Stop();
  unstarted.Stop();
  ASSERT_TRUE(manager_.Start().ok());
  EXPECT_EQ(manager_.Start().code(), absl::StatusCode::kFailedPrecondition);
  manager_.Stop();
  manager_.Stop();
}

TEST_F(PluginManagerTest, StopDoesNotDeregister) {
  ASSERT_TRUE(manager_.Start().ok());
  auto plugin = TestPlugin("stays.example.com");
  ASSERT_TRUE(plugin->Serve(Sock("stays.sock")));
  ASSERT_TRUE(WaitForChanges({"register stays.example.com " + Sock("stays.sock")}));
  manager_.Stop();
  EXPECT_EQ(handler_.changes().size(), 1u);
}

}  // namespace
}  // namespace kdp::manager::pluginmanager
