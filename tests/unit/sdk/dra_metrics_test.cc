// DraRunner's /metrics and /healthz (sdk/src/dra/metrics.h), with the runner in-process on port 0
// over real unix sockets, a fake API server (FakeKubeClient) and the kubelet's calls made as gRPC
// clients; every value is read back by scraping over HTTP as Prometheus would.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "dra/v1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/dra_driver.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "sdk/src/dra/metrics.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/sdk/call_deadline.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"
#include "tests/unit/sdk/metrics_scrape.h"
#include "tests/unit/sdk/test_names.h"

namespace kdp {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
using ::kdp::testing::FakeKubeClient;
using ::kdp::testing::HttpGet;
using ::kdp::testing::Scrape;
using ::kdp::testing::ScrapeSample;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Optional;

using ::kdp::testing::Deadline;
using ::kdp::testing::kGpuDriver;
using ::kdp::testing::kNode;
using ::kdp::testing::kTimeout;

std::string Series(const std::string& name, const std::string& more_labels = "") {
  return absl::StrCat("kdp_dra_driver_", name, "{driver_name=\"", kGpuDriver, "\"",
                      more_labels.empty() ? "" : ",", more_labels, "}");
}

// Two devices; prepares every allocated device; Discover() fails while fail_devices(true).
class SwitchableDriver final : public DraDriver {
 public:
  SwitchableDriver() : DraDriver(kGpuDriver) {}

  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override {
    std::map<std::string, PrepareResult> results;
    for (const Claim& claim : claims) {
      PrepareResult& result = results[claim.ref.uid];
      for (const AllocatedDevice& device : claim.results) {
        result.devices.push_back({.requests = {device.request},
                                  .pool = device.pool,
                                  .device = device.device,
                                  .cdi_device_ids = {"k8s.gpu.example.com/gpu=" + device.device},
                                  .share_id = {}});
      }
    }
    return results;
  }

  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override {
    std::map<std::string, absl::Status> results;
    for (const ClaimRef& ref : claims) results[ref.uid] = absl::OkStatus();
    return results;
  }

  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    absl::MutexLock lock(&mu_);
    if (fail_) return absl::UnavailableError("GPU driver not loaded");
    return std::vector<DraDevice>{{.name = "gpu-0", .attributes = {}, .capacity = {}},
                                  {.name = "gpu-1", .attributes = {}, .capacity = {}}};
  }

  void fail_devices(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }

 private:
  absl::Mutex mu_;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
};

class DraMetricsTest : public ::testing::Test {
 protected:
  DraMetricsTest() : client_(std::make_shared<FakeKubeClient>()) {
    client_->SetObject("/api/v1/nodes/node-1",
                       json::parse(R"({"metadata": {"name": "node-1", "uid": "node-uid"}})"));
    client_->SetObject("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/claim-1",
                       json::parse(R"({
      "metadata": {"namespace": "default", "name": "claim-1", "uid": "uid-1"},
      "status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}}})"));
  }

  void StartRunner() {
    auto driver = std::make_unique<SwitchableDriver>();
    driver_ = driver.get();
    absl::StatusOr<std::unique_ptr<DraRunner>> runner =
        internal::CreateDraRunnerWithClient({.kubelet_root = dir_.path(),
                                             .node_name = kNode,
                                             .publish_initial_backoff = absl::Milliseconds(5),
                                             .publish_max_backoff = absl::Milliseconds(20),
                                             .shutdown_grace = absl::Seconds(1),
                                             .metrics_address = "127.0.0.1:0"},
                                            std::move(driver), client_);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = *std::move(runner);
    absl::Status started = runner_->Start();
    ASSERT_TRUE(started.ok()) << started;
    ASSERT_GT(runner_->metrics_port(), 0);
  }

  // What the kubelet's plugin watcher sends after GetInfo.
  void NotifyRegistered(bool registered) {
    auto stub = pluginregistration::Registration::NewStub(
        DialUnixSocket(dir_.Path("plugins_registry/gpu.example.com-reg.sock")));
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    if (!registered) status.set_error("no supported version");
    pluginregistration::RegistrationStatusResponse response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    (void)stub->NotifyRegistrationStatus(&context, status, &response);
  }

  grpc::Status Call(bool prepare) {
    auto stub =
        drav1::DRAPlugin::NewStub(DialUnixSocket(dir_.Path("plugins/gpu.example.com/dra.sock")));
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    if (prepare) {
      drav1::NodePrepareResourcesRequest request;
      auto* claim = request.add_claims();
      claim->set_namespace_("default");
      claim->set_name("claim-1");
      claim->set_uid("uid-1");
      drav1::NodePrepareResourcesResponse response;
      return stub->NodePrepareResources(&context, request, &response);
    }
    drav1::NodeUnprepareResourcesRequest request;
    auto* claim = request.add_claims();
    claim->set_namespace_("default");
    claim->set_name("claim-1");
    claim->set_uid("uid-1");
    drav1::NodeUnprepareResourcesResponse response;
    return stub->NodeUnprepareResources(&context, request, &response);
  }

  std::optional<double> Value(const std::string& series) const {
    return ScrapeSample(runner_->metrics_port(), series);
  }
  Scrape Healthz() const { return HttpGet(runner_->metrics_port(), "/healthz"); }

  TempDir dir_;
  std::shared_ptr<FakeKubeClient> client_;
  std::unique_ptr<DraRunner> runner_;
  SwitchableDriver* driver_ = nullptr;  // Owned by runner_.
};

TEST_F(DraMetricsTest, HealthzFailsUntilTheKubeletReportsTheDriverRegistered) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  Scrape before = Healthz();
  EXPECT_EQ(before.status, 500);
  EXPECT_THAT(before.body, HasSubstr("[-]registration failed: gpu.example.com: not registered "
                                     "with the kubelet yet"));
  EXPECT_THAT(Value(Series("registered")), Optional(0.0));

  NotifyRegistered(true);
  EXPECT_TRUE(WaitUntil([&] { return Healthz().status == 200; })) << Healthz().body;
  EXPECT_THAT(Value(Series("registered")), Optional(1.0));
  EXPECT_THAT(Value(Series("registrations_total")), Optional(1.0));

  NotifyRegistered(false);
  Scrape rejected = Healthz();
  EXPECT_EQ(rejected.status, 500);
  EXPECT_THAT(rejected.body, HasSubstr("the kubelet reported the registration failed: no "
                                       "supported version"));
  EXPECT_THAT(Value(Series("registration_failures_total")), Optional(1.0));
}

TEST_F(DraMetricsTest, PrepareAndUnprepareAreTimedAndClaimsCounted) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_TRUE(Call(/*prepare=*/true).ok());
  auto count = [](const char* method) {
    return absl::StrCat("kdp_dra_driver_rpc_duration_seconds_count{driver_name=\"", kGpuDriver,
                        "\",method=\"", method, "\",code=\"OK\"}");
  };
  EXPECT_THAT(Value(count("NodePrepareResources")), Optional(1.0));
  EXPECT_THAT(Value(Series("prepared_claims")), Optional(1.0));
  ASSERT_TRUE(Call(/*prepare=*/false).ok());
  EXPECT_THAT(Value(count("NodeUnprepareResources")), Optional(1.0));
  EXPECT_THAT(Value(Series("prepared_claims")), Optional(0.0));

  // The claim is gone from the API server: the call fails as a whole.
  client_->RemoveObject("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/claim-1");
  EXPECT_EQ(Call(/*prepare=*/true).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(
      Value(absl::StrCat("kdp_dra_driver_rpc_duration_seconds_count{driver_name=\"", kGpuDriver,
                         "\",method=\"NodePrepareResources\",code=\"NotFound\"}")),
      Optional(1.0));
}

TEST_F(DraMetricsTest, DevicesByHealthAndDeviceSourceFailures) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  NotifyRegistered(true);
  EXPECT_THAT(Value(Series("devices", "health=\"Healthy\"")), Optional(2.0));
  ASSERT_TRUE(driver_->SetHealth("gpu-1", Health::kUnhealthy, "hot").ok());
  EXPECT_THAT(Value(Series("devices", "health=\"Healthy\"")), Optional(1.0));
  EXPECT_THAT(Value(Series("devices", "health=\"Unhealthy\"")), Optional(1.0));

  driver_->fail_devices(true);
  EXPECT_FALSE(driver_->Publish().ok());
  Scrape failing = Healthz();
  EXPECT_EQ(failing.status, 500);
  EXPECT_THAT(failing.body, HasSubstr("[-]device-source failed: gpu.example.com: device source "
                                      "failing: Discover(): UNAVAILABLE: GPU driver not loaded"));
  // A device source that fails is what a restart may cure (a vendor library to load again).
  EXPECT_EQ(HttpGet(runner_->metrics_port(), "/livez").status, 500);
  EXPECT_THAT(Value(Series("device_discovery_failures_total")), Optional(1.0));
  driver_->fail_devices(false);
  ASSERT_TRUE(driver_->Publish().ok());
  EXPECT_TRUE(WaitUntil([&] { return Healthz().status == 200; })) << Healthz().body;
}

TEST_F(DraMetricsTest, SlicePublicationFailuresFailHealthzUntilAPublicationSucceeds) {
  // The node lookup fails first: every attempt fails until the API server answers again.
  client_->FailNext(1000000, absl::UnavailableError("apiserver down"));
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  NotifyRegistered(true);
  ASSERT_TRUE(
      WaitUntil([&] { return Value(Series("resource_slice_publish_failures_total")) >= 2; }));
  Scrape failing = Healthz();
  EXPECT_EQ(failing.status, 500);
  EXPECT_THAT(failing.body, HasSubstr("[-]resource-slices failed: gpu.example.com: publishing "
                                      "ResourceSlices failing: UNAVAILABLE: apiserver down"));
  EXPECT_EQ(HttpGet(runner_->metrics_port(), "/readyz").body,
            failing.body.substr(0, failing.body.rfind("healthz")) + "readyz check failed\n");
  // Not a liveness failure: restarting the driver does not bring the API server back.
  Scrape live = HttpGet(runner_->metrics_port(), "/livez?verbose");
  EXPECT_EQ(live.status, 200) << live.body;
  EXPECT_EQ(live.body, "[+]ping ok\n[+]registration ok\n[+]device-source ok\nlivez check passed\n");
  client_->FailNext(0, absl::OkStatus());
  EXPECT_TRUE(WaitUntil([&] { return Healthz().status == 200; })) << Healthz().body;
  std::optional<double> attempts = Value(Series("resource_slice_publish_attempts_total"));
  std::optional<double> failures = Value(Series("resource_slice_publish_failures_total"));
  ASSERT_TRUE(attempts.has_value() && failures.has_value());
  EXPECT_EQ(*attempts, *failures + 1);
}

}  // namespace
}  // namespace kdp
