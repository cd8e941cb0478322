// PluginRunner's /metrics and /healthz (sdk/src/deviceplugin/metrics.h), with the runner in-process
// on port 0, a fake kubelet on a real unix socket in a temporary root, and every value read back by
// scraping over HTTP as Prometheus would.
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"
#include "sdk/src/deviceplugin/metrics.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/sdk/call_deadline.h"
#include "tests/unit/sdk/metrics_scrape.h"

namespace kdp {
namespace {

using ::kdp::testing::HttpGet;
using ::kdp::testing::Sample;
using ::kdp::testing::Scrape;
using ::kdp::testing::ScrapeSample;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Optional;

using ::kdp::testing::Deadline;
using ::kdp::testing::kGpuResource;
using ::kdp::testing::kTimeout;

// A series of kdp_device_plugin_<name> for kGpuResource, with more labels after resource_name.
std::string PluginSeries(const std::string& name, const std::string& more_labels = "") {
  return absl::StrCat("kdp_device_plugin_", name, "{resource_name=\"", kGpuResource, "\"",
                      more_labels.empty() ? "" : ",", more_labels, "}");
}

// Three devices (one Unhealthy); Discover() fails while fail_discovery(true).
class SwitchablePlugin final : public DevicePlugin {
 public:
  SwitchablePlugin() : DevicePlugin(kGpuResource) {}

  absl::StatusOr<std::vector<Device>> Discover() override {
    absl::MutexLock lock(&mu_);
    if (fail_) return absl::UnavailableError("driver not loaded");
    return std::vector<Device>{Device{.id = "gpu0"},
                               Device{.id = "gpu1", .health = Health::kUnhealthy},
                               Device{.id = "gpu2"}};
  }

  void fail_discovery(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }

 private:
  absl::Mutex mu_;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
};

// The kubelet's registration service on <root>/device-plugins/kubelet.sock; rejects every
// Register while reject(true).
class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  explicit FakeKubelet(const TempDir& root) : socket_(root.Path("device-plugins/kubelet.sock")) {}
  ~FakeKubelet() override { Stop(); }

  [[nodiscard]] absl::Status Start() {
    if (absl::Status made = MakeDirectories(DirectoryOf(socket_)); !made.ok()) return made;
    if (absl::Status removed = RemoveSocketIfPresent(socket_); !removed.ok()) return removed;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(socket_), grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    return server_ != nullptr ? absl::OkStatus() : absl::InternalError("cannot serve " + socket_);
  }

  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown(Deadline());
    server_.reset();
    (void)RemoveSocketIfPresent(socket_);
  }

  void reject(bool reject) {
    absl::MutexLock lock(&mu_);
    reject_ = reject;
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest*,
                        v1beta1::Empty*) override {
    absl::MutexLock lock(&mu_);
    if (reject_) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "kubelet says no");
    return grpc::Status::OK;
  }

 private:
  const std::string socket_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool reject_ ABSL_GUARDED_BY(mu_) = false;
};

class PluginMetricsTest : public ::testing::Test {
 protected:
  RunnerOptions Options() const {
    return {.kubelet_root = root_.path(),
            .initial_backoff = absl::Milliseconds(10),
            .max_backoff = absl::Milliseconds(50),
            .shutdown_grace = absl::Milliseconds(200),
            .metrics_address = "127.0.0.1:0"};
  }

  void StartRunner(RunnerOptions options) {
    auto plugin = std::make_unique<SwitchablePlugin>();
    plugin_ = plugin.get();
    std::vector<std::unique_ptr<DevicePlugin>> plugins;
    plugins.push_back(std::move(plugin));
    absl::StatusOr<std::unique_ptr<PluginRunner>> runner =
        PluginRunner::Create(std::move(options), std::move(plugins));
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = *std::move(runner);
    absl::Status started = runner_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  void StartRunner() { StartRunner(Options()); }

  void StartKubelet() {
    kubelet_ = std::make_unique<FakeKubelet>(root_);
    ASSERT_TRUE(kubelet_->Start().ok());
  }

  int Port() const { return runner_->metrics_port(); }
  std::optional<double> Value(const std::string& series) const {
    return ScrapeSample(Port(), series);
  }
  bool WaitForValue(const std::string& series, double want) const {
    return WaitUntil([&] { return Value(series) == want; });
  }
  Scrape Healthz() const { return HttpGet(Port(), "/healthz"); }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> Plugin() const {
    return v1beta1::DevicePlugin::NewStub(
        DialUnixSocket(root_.Path("device-plugins/example.com_gpu.sock")));
  }

  TempDir root_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<PluginRunner> runner_;
  SwitchablePlugin* plugin_ = nullptr;  // Owned by runner_.
};

TEST_F(PluginMetricsTest, HealthzFailsUntilRegisteredAndCountsRegistrations) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_GT(Port(), 0);
  Scrape before = Healthz();
  EXPECT_EQ(before.status, 500);
  // "not registered with the kubelet yet", or the failed first attempt's error.
  EXPECT_THAT(before.body, HasSubstr("[-]device-plugins failed: example.com/gpu: "));
  EXPECT_THAT(before.body, ::testing::AnyOf(HasSubstr("not registered with the kubelet yet"),
                                            HasSubstr("registration failed")));
  EXPECT_THAT(Value(PluginSeries("registered")), Optional(0.0));
  EXPECT_THAT(Value(PluginSeries("registrations_total")), Optional(0.0));
  // The plugin's check is a liveness check too: a plugin that never registers is restarted.
  EXPECT_EQ(HttpGet(Port(), "/livez").status, 500);
  EXPECT_EQ(HttpGet(Port(), "/readyz").status, 500);

  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  ASSERT_TRUE(runner_->WaitForRegistrations(1, kTimeout));
  EXPECT_TRUE(WaitUntil([&] { return Healthz().status == 200; })) << Healthz().body;
  EXPECT_THAT(Value(PluginSeries("registered")), Optional(1.0));
  EXPECT_THAT(Value(PluginSeries("registrations_total")), Optional(1.0));
  EXPECT_THAT(Value(PluginSeries("reregistrations_total")), Optional(0.0));
  EXPECT_EQ(HttpGet(Port(), "/livez?verbose").body,
            "[+]ping ok\n[+]device-plugins ok\nlivez check passed\n");

  // A restarted kubelet: kubelet.sock re-created. The runner registers again.
  kubelet_.reset();
  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  ASSERT_TRUE(runner_->WaitForRegistrations(2, kTimeout));
  EXPECT_TRUE(WaitForValue(PluginSeries("reregistrations_total"), 1));
  EXPECT_THAT(Value(PluginSeries("registrations_total")), Optional(2.0));
  EXPECT_EQ(Healthz().status, 200);
}

TEST_F(PluginMetricsTest, RejectedReRegistrationFailsHealthzUntilItSucceeds) {
  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_TRUE(runner_->WaitForRegistrations(1, kTimeout));
  kubelet_.reset();
  kubelet_ = std::make_unique<FakeKubelet>(root_);
  kubelet_->reject(true);
  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return Value(PluginSeries("registration_failures_total")) >= 2; }));
  Scrape failing = Healthz();
  EXPECT_EQ(failing.status, 500);
  EXPECT_THAT(failing.body, HasSubstr("example.com/gpu: registration failed: INVALID_ARGUMENT: "
                                      "kubelet says no"));
  EXPECT_THAT(Value(PluginSeries("registered")), Optional(0.0));
  kubelet_->reject(false);
  ASSERT_TRUE(runner_->WaitForRegistrations(2, kTimeout));
  EXPECT_TRUE(WaitUntil([&] { return Healthz().status == 200; })) << Healthz().body;
}

TEST_F(PluginMetricsTest, DevicesByHealthFollowSetHealthAndRefreshFailuresFlipHealthz) {
  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_TRUE(runner_->WaitForRegistrations(1, kTimeout));
  ASSERT_TRUE(WaitUntil([&] { return Healthz().status == 200; }));
  const std::string healthy = PluginSeries("devices", "health=\"Healthy\"");
  const std::string unhealthy = PluginSeries("devices", "health=\"Unhealthy\"");
  EXPECT_THAT(Value(healthy), Optional(2.0));
  EXPECT_THAT(Value(unhealthy), Optional(1.0));

  EXPECT_TRUE(plugin_->SetHealth("gpu0", Health::kUnhealthy).ok());
  EXPECT_THAT(Value(healthy), Optional(1.0));
  EXPECT_THAT(Value(unhealthy), Optional(2.0));

  plugin_->fail_discovery(true);
  EXPECT_EQ(plugin_->Publish().code(), absl::StatusCode::kUnavailable);
  Scrape failing = Healthz();
  EXPECT_EQ(failing.status, 500);
  EXPECT_THAT(failing.body, HasSubstr("example.com/gpu: device source failing: Discover(): "
                                      "UNAVAILABLE: driver not loaded"));
  EXPECT_THAT(Value(PluginSeries("discovery_failures_total")), Optional(1.0));
  EXPECT_THAT(Value(unhealthy), Optional(2.0));  // The last inventory stays.

  plugin_->fail_discovery(false);
  ASSERT_TRUE(plugin_->Publish().ok());
  EXPECT_EQ(Healthz().status, 200);
  EXPECT_THAT(Value(PluginSeries("discovery_failures_total")), Optional(1.0));
}

TEST_F(PluginMetricsTest, RpcsAreCountedByMethodAndCode) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  auto stub = Plugin();
  for (const char* id : {"gpu0", "gpu9"}) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(id);
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    (void)stub->Allocate(&context, request, &response);
  }
  {
    v1beta1::PreferredAllocationRequest request;
    v1beta1::PreferredAllocationResponse response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    EXPECT_EQ(stub->GetPreferredAllocation(&context, request, &response).error_code(),
              grpc::StatusCode::UNIMPLEMENTED);
  }
  const std::string duration = "kdp_device_plugin_rpc_duration_seconds_count";
  auto rpc = [&](const char* method, const char* code) {
    return absl::StrCat(duration, "{resource_name=\"", kGpuResource, "\",method=\"", method,
                        "\",code=\"", code, "\"}");
  };
  Scrape scrape = HttpGet(Port(), "/metrics");
  ASSERT_EQ(scrape.status, 200);
  EXPECT_THAT(Sample(scrape.body, rpc("Allocate", "OK")), Optional(1.0));
  EXPECT_THAT(Sample(scrape.body, rpc("Allocate", "InvalidArgument")), Optional(1.0));
  EXPECT_THAT(Sample(scrape.body, rpc("GetPreferredAllocation", "Unimplemented")), Optional(1.0));
  EXPECT_THAT(scrape.body, HasSubstr("# TYPE kdp_device_plugin_rpc_duration_seconds histogram"));

  // ListAndWatch: the stream is open and its first list sent.
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_TRUE(WaitForValue(PluginSeries("list_and_watch_sends_total"), 1));
  EXPECT_THAT(Value(PluginSeries("list_and_watch_streams")), Optional(1.0));
  EXPECT_TRUE(plugin_->SetHealth("gpu2", Health::kUnhealthy).ok());
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_TRUE(WaitForValue(PluginSeries("list_and_watch_sends_total"), 2));
  context.TryCancel();
  EXPECT_TRUE(WaitForValue(PluginSeries("list_and_watch_streams"), 0));
}

TEST_F(PluginMetricsTest, NoAddressServesNothingAndABadOneIsRejected) {
  RunnerOptions options = Options();
  options.metrics_address = "";
  ASSERT_NO_FATAL_FAILURE(StartRunner(options));
  EXPECT_EQ(runner_->metrics_port(), 0);

  options.metrics_address = "127.0.0.1";
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<SwitchablePlugin>());
  EXPECT_EQ(PluginRunner::Create(options, std::move(plugins)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(PluginMetricsTest, ATakenPortFailsStartOnlyWhenRequired) {
  // Hold a loopback port.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string taken = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));

  RunnerOptions options = Options();
  options.metrics_address = taken;
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<SwitchablePlugin>());
  auto runner = PluginRunner::Create(options, std::move(plugins));
  ASSERT_TRUE(runner.ok());
  absl::Status started = (*runner)->Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(started.message(), HasSubstr(taken));
  (*runner)->Stop();
  runner->reset();

  options.metrics_required = false;
  ASSERT_NO_FATAL_FAILURE(StartRunner(options));
  EXPECT_EQ(runner_->metrics_port(), 0);
  ::close(fd);
}

}  // namespace
}  // namespace kdp
