// The DRA health streams (v1alpha1 and v1 DRAResourceHealth.NodeWatchResources) served by a real
// DraRunner on a unix socket in a temporary kubelet root, read by real gRPC clients as the
// kubelet reads them; the API server is a FakeKubeClient.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "kdp/dra_driver.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "sdk/src/dra/health_service.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/sdk/call_deadline.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"
#include "tests/unit/sdk/test_names.h"

namespace kdp {
namespace {

using ::kdp::testing::FakeKubeClient;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::kdp::testing::kGpuDriver;
using ::kdp::testing::kNode;
using ::kdp::testing::kTimeout;

class TestDriver final : public DraDriver {
 public:
  TestDriver() : DraDriver(kGpuDriver) {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override { return {}; }
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
    return {};
  }
  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    absl::MutexLock lock(&mu_);
    std::vector<DraDevice> devices;
    for (const std::string& name : names_) devices.push_back({.name = name});
    return devices;
  }
  void SetNames(std::vector<std::string> names) {
    absl::MutexLock lock(&mu_);
    names_ = std::move(names);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_) = {"gpu-0", "gpu-1"};
};

// One device of a received message, as "<pool>/<device>=<health>[:<message>]" with the health
// enum's number, so that both versions compare the same way.
using Report = std::vector<std::string>;

struct Received {
  Report devices;
  std::vector<int64_t> timeouts;
  std::vector<int64_t> last_updated;
};

// A NodeWatchResources stream as the kubelet opens it: the whole stream has a deadline.
class Watch {
 public:
  virtual ~Watch() = default;
  // The next message; nullopt when the stream ended (then Finish() tells why).
  virtual std::optional<Received> Next() = 0;
  virtual grpc::Status Finish() = 0;
  virtual void Cancel() = 0;
};

template <typename Service, typename Request, typename Response>
class WatchOf final : public Watch {
 public:
  explicit WatchOf(const std::string& socket) : stub_(Service::NewStub(DialUnixSocket(socket))) {
    context_.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kTimeout));
    reader_ = stub_->NodeWatchResources(&context_, Request());
  }
  ~WatchOf() override {
    if (finished_) return;
    context_.TryCancel();
    while (Next().has_value()) {
    }
    (void)Finish();
  }

  std::optional<Received> Next() override {
    Response response;
    if (!reader_->Read(&response)) return std::nullopt;
    Received received;
    for (const auto& device : response.devices()) {
      std::string text = absl::StrCat(device.device().pool_name(), "/",
                                      device.device().device_name(), "=", device.health());
      if (!device.message().empty()) absl::StrAppend(&text, ":", device.message());
      received.devices.push_back(std::move(text));
      received.timeouts.push_back(device.health_check_timeout_seconds());
      received.last_updated.push_back(device.last_updated_time());
    }
    return received;
  }
  grpc::Status Finish() override {
    finished_ = true;
    return reader_->Finish();
  }
  void Cancel() override { context_.TryCancel(); }

 private:
  std::unique_ptr<typename Service::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<Response>> reader_;
  bool finished_ = false;
};

std::unique_ptr<Watch> WatchV1alpha1(const std::string& socket) {
  return std::make_unique<
      WatchOf<::v1alpha1::DRAResourceHealth, ::v1alpha1::NodeWatchResourcesRequest,
              ::v1alpha1::NodeWatchResourcesResponse>>(socket);
}
std::unique_ptr<Watch> WatchV1(const std::string& socket) {
  return std::make_unique<WatchOf<::v1::DRAResourceHealth, ::v1::NodeWatchResourcesRequest,
                                  ::v1::NodeWatchResourcesResponse>>(socket);
}

Report DevicesOf(const std::optional<Received>& received) {
  return received.has_value() ? received->devices : Report{"<stream ended>"};
}

class DraHealthServiceTest : public ::testing::Test {
 protected:
  DraHealthServiceTest() : client_(std::make_shared<FakeKubeClient>()) {}

  DraRunnerOptions Options() const {
    return {.kubelet_root = dir_.path(),
            .node_name = kNode,
            .publish_resource_slices = false,
            .shutdown_grace = absl::Seconds(10)};
  }

  std::unique_ptr<DraRunner> StartRunner(DraRunnerOptions options,
                                         std::unique_ptr<TestDriver> driver = nullptr) {
    if (driver == nullptr) driver = std::make_unique<TestDriver>();
    driver_ = driver.get();
    absl::StatusOr<std::unique_ptr<DraRunner>> runner =
        internal::CreateDraRunnerWithClient(std::move(options), std::move(driver), client_);
    EXPECT_TRUE(runner.ok()) << runner.status();
    if (!runner.ok()) return nullptr;
    absl::Status started = (*runner)->Start();
    EXPECT_TRUE(started.ok()) << started;
    return *std::move(runner);
  }
  std::unique_ptr<DraRunner> StartRunner() { return StartRunner(Options()); }

  std::string DraSocket() const { return dir_.Path("plugins/gpu.example.com/dra.sock"); }

  pluginregistration::PluginInfo GetInfo() const {
    pluginregistration::PluginInfo info;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kTimeout));
    grpc::Status status =
        pluginregistration::Registration::NewStub(
            DialUnixSocket(dir_.Path("plugins_registry/gpu.example.com-reg.sock")))
            ->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  TempDir dir_;
  std::shared_ptr<FakeKubeClient> client_;
  TestDriver* driver_ = nullptr;
};

TEST_F(DraHealthServiceTest, GetInfoAdvertisesTheHealthServicesAfterTheDraPluginOnes) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  EXPECT_THAT(GetInfo().supported_versions(),
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                          "v1alpha1.DRAResourceHealth"));
}

TEST_F(DraHealthServiceTest, BothVersionsSendTheFullListAtOnce) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  const int64_t before = absl::ToUnixSeconds(absl::Now());
  std::unique_ptr<Watch> watches[] = {WatchV1alpha1(DraSocket()), WatchV1(DraSocket())};
  for (auto& watch : watches) {
    std::optional<Received> first = watch->Next();
    ASSERT_TRUE(first.has_value());
    EXPECT_THAT(first->devices, ElementsAre("node-1/gpu-0=1", "node-1/gpu-1=1"));
    EXPECT_THAT(first->timeouts, ElementsAre(30, 30));
    for (int64_t updated : first->last_updated) {
      EXPECT_GE(updated, before);
      EXPECT_LE(updated, absl::ToUnixSeconds(absl::Now()));
    }
  }
}

TEST_F(DraHealthServiceTest, SetHealthReachesEveryOpenStreamPromptly) {
  auto runner = StartRunner();  // Resends every 10 s: anything sooner is the change itself.
  ASSERT_NE(runner, nullptr);
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < 3; ++i) {
    watches.push_back(WatchV1alpha1(DraSocket()));
    watches.push_back(WatchV1(DraSocket()));
  }
  for (auto& watch : watches) ASSERT_THAT(DevicesOf(watch->Next()), ::testing::SizeIs(2));

  const absl::Time set = absl::Now();
  ASSERT_TRUE(runner->driver().SetHealth("gpu-1", Health::kUnhealthy, "fan stopped").ok());
  for (auto& watch : watches) {
    EXPECT_THAT(DevicesOf(watch->Next()),
                ElementsAre("node-1/gpu-0=1", "node-1/gpu-1=2:fan stopped"));
  }
  EXPECT_LT(absl::Now() - set, absl::Seconds(5));

  ASSERT_TRUE(runner->driver().SetHealth("gpu-0", Health::kUnknown).ok());
  for (auto& watch : watches) {
    EXPECT_THAT(DevicesOf(watch->Next()),
                ElementsAre("node-1/gpu-0=0", "node-1/gpu-1=2:fan stopped"));
  }
}

TEST_F(DraHealthServiceTest, TheFullListIsResentWellBeforeTheTimeout) {
  DraRunnerOptions options = Options();
  options.health_check_timeout = absl::Seconds(3);  // A resend every second.
  auto runner = StartRunner(options);
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(runner->driver().SetHealth("gpu-0", Health::kUnhealthy, "x").ok());
  auto watch = WatchV1(DraSocket());
  std::optional<Received> previous = watch->Next();
  ASSERT_TRUE(previous.has_value());
  absl::Time previous_at = absl::Now();
  for (int i = 0; i < 2; ++i) {
    std::optional<Received> next = watch->Next();
    ASSERT_TRUE(next.has_value());
    const absl::Duration gap = absl::Now() - previous_at;
    previous_at = absl::Now();
    EXPECT_THAT(next->devices, ElementsAre("node-1/gpu-0=2:x", "node-1/gpu-1=1"));
    EXPECT_THAT(next->timeouts, ElementsAre(3, 3));
    EXPECT_GE(next->last_updated[0], previous->last_updated[0]);
    EXPECT_GT(gap, absl::Milliseconds(300)) << "a resend (every 1 s), not a burst";
    EXPECT_LT(gap, absl::Seconds(3)) << "before the kubelet's timeout";
    previous = next;
  }
}

TEST_F(DraHealthServiceTest, PublishChangesTheReportedList) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(runner->driver().SetHealth("gpu-0", Health::kUnhealthy, "a").ok());
  auto watch = WatchV1alpha1(DraSocket());
  EXPECT_THAT(DevicesOf(watch->Next()), ElementsAre("node-1/gpu-0=2:a", "node-1/gpu-1=1"));
  driver_->SetNames({"gpu-0", "gpu-2"});
  ASSERT_TRUE(runner->driver().Publish().ok());
  EXPECT_THAT(DevicesOf(watch->Next()), ElementsAre("node-1/gpu-0=2:a", "node-1/gpu-2=1"));
  std::vector<std::string> published;
  for (const DraDevice& device : runner->driver().Devices()) published.push_back(device.name);
  EXPECT_THAT(published, ElementsAre("gpu-0", "gpu-2"));  // What Publish() handed over.
  // gpu-1 left the list; its health is kept for when it comes back (kdp/health.h).
  ASSERT_TRUE(runner->driver().SetHealth("gpu-1", Health::kUnknown, "gone").ok());
  driver_->SetNames({"gpu-0", "gpu-1", "gpu-2"});
  ASSERT_TRUE(runner->driver().Publish().ok());
  EXPECT_THAT(DevicesOf(watch->Next()),
              ElementsAre("node-1/gpu-0=2:a", "node-1/gpu-1=0:gone", "node-1/gpu-2=1"));
}

TEST_F(DraHealthServiceTest, HealthSetBeforeStartIsReportedFromTheFirstMessage) {
  auto driver = std::make_unique<TestDriver>();
  // No list read yet: remembered until one lists the device (kdp/health.h).
  ASSERT_TRUE(driver->SetHealth("gpu-1", Health::kUnhealthy, "early").ok());
  EXPECT_TRUE(driver->Devices().empty());
  auto runner = StartRunner(Options(), std::move(driver));
  ASSERT_NE(runner, nullptr);
  EXPECT_THAT(DevicesOf(WatchV1(DraSocket())->Next()),
              ElementsAre("node-1/gpu-0=1", "node-1/gpu-1=2:early"));
}

TEST_F(DraHealthServiceTest, SetHealthRejectsWhatTheKubeletCouldNotRead) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  // Not listed: remembered, not reported.
  EXPECT_TRUE(runner->driver().SetHealth("gpu-7", Health::kUnhealthy).ok());
  absl::Status bad = runner->driver().SetHealth("gpu-0", static_cast<Health>(-1));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("\"gpu-0\""));
  EXPECT_EQ(runner->driver().SetHealth("gpu-0", Health::kUnhealthy, "bad \xc3 byte").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(DevicesOf(WatchV1(DraSocket())->Next()),
              ElementsAre("node-1/gpu-0=1", "node-1/gpu-1=1"));
}

TEST_F(DraHealthServiceTest, StreamsEndPromptlyAtStop) {
  auto runner = StartRunner();  // shutdown_grace 10 s: ending before it is the SDK's doing.
  ASSERT_NE(runner, nullptr);
  auto alpha = WatchV1alpha1(DraSocket());
  auto v1 = WatchV1(DraSocket());
  ASSERT_TRUE(alpha->Next().has_value());
  ASSERT_TRUE(v1->Next().has_value());
  const absl::Time stop = absl::Now();
  std::thread stopper([&runner] { runner->Stop(); });
  for (Watch* watch : {alpha.get(), v1.get()}) {
    EXPECT_FALSE(watch->Next().has_value());
    grpc::Status status = watch->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(), HasSubstr("is stopping"));
  }
  stopper.join();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(5));
  EXPECT_FALSE(IsSocket(DraSocket()));
}

TEST_F(DraHealthServiceTest, ACancelledStreamEndsOnTheServer) {
  auto table = std::make_shared<internal::DeviceHealthTable>(kGpuDriver);
  internal::DraHealthStreams streams(
      table, internal::MakeDraHealthOptions(kGpuDriver, kNode, absl::Seconds(30)));
  internal::DraHealthServiceV1 service(&streams);
  absl::StatusOr<std::unique_ptr<grpc::Server>> server =
      ServeOnUnixSocket(dir_.Path("health.sock"), &service);
  ASSERT_TRUE(server.ok()) << server.status();
  {
    auto watch = WatchV1(dir_.Path("health.sock"));
    EXPECT_THAT(DevicesOf(watch->Next()), ::testing::IsEmpty());  // The empty list is complete.
    EXPECT_EQ(streams.open_streams(), 1);
    watch->Cancel();
    EXPECT_FALSE(watch->Next().has_value());
    EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(WaitUntil([&streams] { return streams.open_streams() == 0; }));
  streams.EndStreams();
  // A stream opened after EndStreams ends at once.
  auto late = WatchV1(dir_.Path("health.sock"));
  EXPECT_FALSE(late->Next().has_value());
  EXPECT_EQ(late->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  (*server)->Shutdown(std::chrono::system_clock::now());
  (*server)->Wait();
}

TEST_F(DraHealthServiceTest, DisabledHealthIsNeitherServedNorAdvertised) {
  DraRunnerOptions options = Options();
  options.serve_device_health = false;
  options.health_check_timeout = absl::ZeroDuration();  // Not validated when not served.
  auto runner = StartRunner(options);
  ASSERT_NE(runner, nullptr);
  EXPECT_THAT(GetInfo().supported_versions(), ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));
  std::unique_ptr<Watch> watches[] = {WatchV1alpha1(DraSocket()), WatchV1(DraSocket())};
  for (auto& watch : watches) {
    EXPECT_FALSE(watch->Next().has_value());
    EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  // The driver may still set health; nothing is sent.
  EXPECT_TRUE(runner->driver().SetHealth("gpu-0", Health::kUnhealthy).ok());
}

TEST_F(DraHealthServiceTest, HealthCheckTimeoutIsAtLeastOneSecond) {
  DraRunnerOptions options = Options();
  options.health_check_timeout = absl::Milliseconds(500);
  absl::Status status =
      internal::CreateDraRunnerWithClient(options, std::make_unique<TestDriver>(), client_)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("health_check_timeout 500ms must be at least 1s"));
}

TEST_F(DraHealthServiceTest, MakeDraHealthOptionsUsesWholeSecondsAndResendsWithinTheDefault) {
  internal::DraHealthOptions options =
      internal::MakeDraHealthOptions(kGpuDriver, kNode, absl::Seconds(30));
  EXPECT_EQ(options.pool, kNode);
  EXPECT_EQ(options.timeout_seconds, 30);
  EXPECT_EQ(options.resend_interval, absl::Seconds(10));
  options = internal::MakeDraHealthOptions(kGpuDriver, kNode, absl::Seconds(90));
  EXPECT_EQ(options.timeout_seconds, 90);
  EXPECT_EQ(options.resend_interval, absl::Seconds(10));  // A 1.34 kubelet still uses 30 s.
  options = internal::MakeDraHealthOptions(kGpuDriver, kNode, absl::Milliseconds(1500));
  EXPECT_EQ(options.timeout_seconds, 1);
  EXPECT_EQ(options.resend_interval, absl::Seconds(1) / 3);
}

}  // namespace
}  // namespace kdp
