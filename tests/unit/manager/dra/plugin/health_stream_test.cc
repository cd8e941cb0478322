// HealthStream against a fake driver's DRAResourceHealth on a real unix socket: both versions
// translated to one struct, every call end reported and retried after the retry period, an
// UNIMPLEMENTED answer not retried (TestUnimplementedHealthStreamIsNotRetried), a missing driver
// retried until it appears, and Stop() cancelling an open watch at once.
#include "manager/src/dra/plugin/health_stream.h"

#include <memory>
#include <string>

#include "common/grpc_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/dra/plugin/fake_health_service.h"

namespace kdp::manager::dra {
namespace {

using ::kdp::testing::FakeHealthService;
using ::kdp::testing::HealthV1;
using ::kdp::testing::HealthV1alpha1;
using ::kdp::testing::RecordingHandler;
using ::kdp::testing::ServeHealth;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kStreamDriver[] = "gpu.example.com";

TEST(ChooseHealthService, PrefersV1AndIgnoresTheRest) {
  EXPECT_EQ(
      ChooseHealthService({"v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"}),
      kDraHealthV1Service);
  EXPECT_EQ(ChooseHealthService({"v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}),
            kDraHealthV1alpha1Service);
  EXPECT_EQ(ChooseHealthService({"v1.DRAPlugin", "v1beta1.DRAPlugin"}), "");
  EXPECT_EQ(ChooseHealthService({}), "");
}

class HealthStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<HealthStream> StartStream(const std::string& service,
                                            absl::Duration retry = absl::Milliseconds(10)) {
    return HealthStream::Start({.driver_name = kStreamDriver,
                                .endpoint = Sock(),
                                .service = service,
                                .channel = DialUnixSocket(Sock()),
                                .handler = &handler_,
                                .retry_period = retry});
  }
  std::string Sock() const { return tmp_.Path("dra.sock"); }
  static void Shutdown(grpc::Server* server) { server->Shutdown(absl::ToChronoTime(absl::Now())); }

  TempDir tmp_;
  RecordingHandler handler_;
};

TEST_F(HealthStreamTest, V1MessagesReachTheHandlerTranslated) {
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  ::v1::NodeWatchResourcesResponse first;
  FakeHealthService<HealthV1>::AddDevice(&first, "pool", "gpu-0", 1, 0, "", 1750000000);
  FakeHealthService<HealthV1>::AddDevice(&first, "pool", "gpu-1", 2, 60, "ECC errors");
  health.Send(first);
  ::v1::NodeWatchResourcesResponse second;
  FakeHealthService<HealthV1>::AddDevice(&second, "pool", "gpu-0", 0);
  health.Send(second);

  auto stream = StartStream(kDraHealthV1Service);
  ASSERT_TRUE(WaitUntil([&] { return handler_.updates().size() == 2; }));
  auto updates = handler_.updates();
  EXPECT_EQ(updates[0].driver, kStreamDriver);
  EXPECT_THAT(updates[0].devices,
              ElementsAre(WatchedDeviceHealth{.pool_name = "pool",
                                              .device_name = "gpu-0",
                                              .health = WireHealthStatus::kHealthy,
                                              .last_updated_time = 1750000000,
                                              .health_check_timeout_seconds = 0,
                                              .message = ""},
                          WatchedDeviceHealth{.pool_name = "pool",
                                              .device_name = "gpu-1",
                                              .health = WireHealthStatus::kUnhealthy,
                                              .last_updated_time = 0,
                                              .health_check_timeout_seconds = 60,
                                              .message = "ECC errors"}));
  ASSERT_EQ(updates[1].devices.size(), 1u);
  EXPECT_EQ(updates[1].devices[0].health, WireHealthStatus::kUnknown);
  EXPECT_EQ(stream->attempts(), 1);
  EXPECT_THAT(handler_.ends(), IsEmpty());
  stream->Stop(/*report_end=*/false);
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, V1alpha1IsServedTheSameWay) {
  FakeHealthService<HealthV1alpha1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  ::v1alpha1::NodeWatchResourcesResponse response;
  FakeHealthService<HealthV1alpha1>::AddDevice(&response, "pool", "gpu-3", 2, 0, "hot");
  health.Send(response);
  auto stream = StartStream(kDraHealthV1alpha1Service);
  ASSERT_TRUE(WaitUntil([&] { return handler_.updates().size() == 1; }));
  const WatchedDeviceHealth device = handler_.updates()[0].devices.at(0);  // a copy
  EXPECT_EQ(device.device_name, "gpu-3");
  EXPECT_EQ(device.health, WireHealthStatus::kUnhealthy);
  EXPECT_EQ(device.message, "hot");
  stream->Stop(/*report_end=*/false);
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, EveryCallEndIsReportedAndRetried) {
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  auto stream = StartStream(kDraHealthV1Service);
  ASSERT_TRUE(WaitUntil([&] { return health.open_calls() == 1; }));
  health.EndCalls(grpc::Status(grpc::StatusCode::INTERNAL, "driver restarting"));
  ASSERT_TRUE(WaitUntil([&] { return health.calls() == 2 && health.open_calls() == 1; }));
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));
  health.EndCalls(grpc::Status::OK);  // a clean end of the stream is retried as well
  ASSERT_TRUE(WaitUntil([&] { return health.calls() == 3 && health.open_calls() == 1; }));
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver, kStreamDriver));
  EXPECT_EQ(stream->attempts(), 3);
  EXPECT_FALSE(stream->gave_up());
  stream->Stop(/*report_end=*/false);
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, UnimplementedIsNotRetried) {
  // The driver advertised v1alpha1 but serves only v1: the v1alpha1 call is UNIMPLEMENTED.
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  auto stream = StartStream(kDraHealthV1alpha1Service, absl::Milliseconds(1));
  ASSERT_TRUE(WaitUntil([&] { return stream->gave_up(); }));
  EXPECT_EQ(stream->attempts(), 1);
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));
  stream->Stop();
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));  // nothing was open any more
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, MissingDriverIsRetriedUntilItServes) {
  auto stream = StartStream(kDraHealthV1Service);
  ASSERT_TRUE(WaitUntil([&] { return stream->attempts() >= 3; }));
  EXPECT_FALSE(stream->gave_up());
  FakeHealthService<HealthV1> health;
  ::v1::NodeWatchResourcesResponse response;
  FakeHealthService<HealthV1>::AddDevice(&response, "pool", "gpu-0", 1);
  health.Send(response);
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  // gRPC's reconnect backoff (1 s, growing) decides when; the stream keeps asking meanwhile.
  ASSERT_TRUE(WaitUntil([&] { return !handler_.updates().empty(); }));
  EXPECT_EQ(handler_.updates()[0].devices.at(0).device_name, "gpu-0");
  stream->Stop(/*report_end=*/false);
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, StopCancelsAnOpenWatchAtOnce) {
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  auto stream = StartStream(kDraHealthV1Service, absl::Hours(1));
  ASSERT_TRUE(WaitUntil([&] { return health.open_calls() == 1; }));
  const absl::Time start = absl::Now();
  stream->Stop(/*report_end=*/true);  // a deregistration
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));
  stream->Stop();  // idempotent
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, StopDuringTheRetryWaitReturnsAtOnceAndReportsNothingMore) {
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  auto stream = StartStream(kDraHealthV1Service, absl::Hours(1));
  ASSERT_TRUE(WaitUntil([&] { return health.open_calls() == 1; }));
  health.EndCalls(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bye"));
  ASSERT_TRUE(WaitUntil([&] { return handler_.ends().size() == 1; }));
  const absl::Time start = absl::Now();
  stream->Stop(/*report_end=*/true);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(stream->attempts(), 1);
  EXPECT_THAT(handler_.ends(), ElementsAre(kStreamDriver));
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, ShutdownStopDoesNotReportTheEnd) {
  FakeHealthService<HealthV1> health;
  auto server = ServeHealth(Sock(), {&health});
  ASSERT_NE(server, nullptr);
  auto stream = StartStream(kDraHealthV1Service, absl::Hours(1));
  ASSERT_TRUE(WaitUntil([&] { return health.open_calls() == 1; }));
  stream.reset();  // the destructor stops without reporting
  EXPECT_THAT(handler_.ends(), IsEmpty());
  Shutdown(server.get());
}

TEST_F(HealthStreamTest, UnknownServiceMakesNoCall) {
  auto stream = StartStream("v2.DRAResourceHealth");
  ASSERT_TRUE(WaitUntil([&] { return stream->gave_up(); }));
  EXPECT_EQ(stream->attempts(), 0);
  EXPECT_THAT(handler_.ends(), IsEmpty());
}

}  // namespace
}  // namespace kdp::manager::dra
