// DraPluginManager with drivers that advertise the dra-health service: registration accepts the
// health entries in supported_versions, starts one stream per advertising instance (v1 preferred
// over v1alpha1) feeding the handler, none for an instance that advertises nothing or when no
// handler is set, and stops it at deregistration (the driver's health is cleared) and at Stop()
// (it is not).
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
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

constexpr char kHealthDriver[] = "gpu.example.com";

class DraPluginManagerHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::v1::NodeWatchResourcesResponse v1;
    FakeHealthService<HealthV1>::AddDevice(&v1, "pool", "from-v1", 2, 0, "ECC");
    v1_.Send(v1);
    ::v1alpha1::NodeWatchResourcesResponse v1alpha1;
    FakeHealthService<HealthV1alpha1>::AddDevice(&v1alpha1, "pool", "from-v1alpha1", 1);
    v1alpha1_.Send(v1alpha1);
    server_ = ServeHealth(Sock(), {&v1_, &v1alpha1_});
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(absl::ToChronoTime(absl::Now())); }

  std::string Sock() const { return tmp_.Path("dra.sock"); }

  TempDir tmp_;
  FakeHealthService<HealthV1> v1_;
  FakeHealthService<HealthV1alpha1> v1alpha1_;
  std::unique_ptr<grpc::Server> server_;
  RecordingHandler handler_;
};

TEST_F(DraPluginManagerHealthTest, V1IsStreamedWhenBothAreAdvertised) {
  DraPluginManager manager;
  manager.SetHealthStreamHandler(&handler_);
  ASSERT_TRUE(
      manager
          .RegisterPlugin(kHealthDriver, Sock(),
                          {"v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"})
          .ok());
  ASSERT_EQ(manager.Instances().size(), 1u);
  EXPECT_EQ(manager.Instances()[0].service, "v1.DRAPlugin");
  EXPECT_EQ(manager.Instances()[0].health_service, "v1.DRAResourceHealth");
  ASSERT_TRUE(WaitUntil([&] { return !handler_.updates().empty(); }));
  EXPECT_EQ(handler_.updates()[0].driver, kHealthDriver);
  EXPECT_EQ(handler_.updates()[0].devices.at(0).device_name, "from-v1");
  EXPECT_EQ(v1alpha1_.calls(), 0);

  // Deregistration cancels the stream; the handler hears of its end (clearDriver).
  manager.DeRegisterPlugin(kHealthDriver, Sock());
  EXPECT_THAT(handler_.ends(), ElementsAre(kHealthDriver));
  EXPECT_TRUE(WaitUntil([&] { return v1_.open_calls() == 0; }));
}

TEST_F(DraPluginManagerHealthTest, V1alpha1AloneIsStreamed) {
  DraPluginManager manager;
  manager.SetHealthStreamHandler(&handler_);
  ASSERT_TRUE(manager
                  .RegisterPlugin(kHealthDriver, Sock(),
                                  {"v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"})
                  .ok());
  EXPECT_EQ(manager.Instances()[0].service, "v1beta1.DRAPlugin");
  EXPECT_EQ(manager.Instances()[0].health_service, "v1alpha1.DRAResourceHealth");
  ASSERT_TRUE(WaitUntil([&] { return !handler_.updates().empty(); }));
  EXPECT_EQ(handler_.updates()[0].devices.at(0).device_name, "from-v1alpha1");
  EXPECT_EQ(v1_.calls(), 0);
}

TEST_F(DraPluginManagerHealthTest, NoStreamWithoutAdvertisementOrHandler) {
  DraPluginManager without_handler;
  ASSERT_TRUE(without_handler
                  .RegisterPlugin(kHealthDriver, Sock(), {"v1.DRAResourceHealth", "v1.DRAPlugin"})
                  .ok());
  EXPECT_EQ(without_handler.Instances()[0].health_service, "");

  DraPluginManager manager;
  manager.SetHealthStreamHandler(&handler_);
  ASSERT_TRUE(manager.RegisterPlugin(kHealthDriver, Sock(), {"v1.DRAPlugin"}).ok());
  EXPECT_EQ(manager.Instances()[0].health_service, "");
  // A health service alone is no DRA service.
  EXPECT_EQ(manager.RegisterPlugin("nic.example.com", Sock(), {"v1.DRAResourceHealth"}).code(),
            absl::StatusCode::kInvalidArgument);
  without_handler.Stop();
  manager.Stop();
  EXPECT_EQ(v1_.calls(), 0);
  EXPECT_EQ(v1alpha1_.calls(), 0);
}

TEST_F(DraPluginManagerHealthTest, EachInstanceHasItsOwnStream) {
  FakeHealthService<HealthV1> second;
  auto other = ServeHealth(tmp_.Path("second.sock"), {&second});
  ASSERT_NE(other, nullptr);
  DraPluginManager manager;
  manager.SetHealthStreamHandler(&handler_);
  ASSERT_TRUE(
      manager.RegisterPlugin(kHealthDriver, Sock(), {"v1.DRAPlugin", "v1.DRAResourceHealth"}).ok());
  ASSERT_TRUE(manager
                  .RegisterPlugin(kHealthDriver, tmp_.Path("second.sock"),
                                  {"v1.DRAPlugin", "v1.DRAResourceHealth"})
                  .ok());
  ASSERT_TRUE(WaitUntil([&] { return v1_.open_calls() == 1 && second.open_calls() == 1; }));
  manager.DeRegisterPlugin(kHealthDriver, tmp_.Path("second.sock"));
  EXPECT_TRUE(WaitUntil([&] { return second.open_calls() == 0; }));
  EXPECT_EQ(v1_.open_calls(), 1);  // the other instance's stream is untouched
  manager.Stop();
  other->Shutdown(absl::ToChronoTime(absl::Now()));
}

TEST_F(DraPluginManagerHealthTest, StopEndsStreamsWithoutClearingHealth) {
  DraPluginManager manager;
  manager.SetHealthStreamHandler(&handler_);
  ASSERT_TRUE(
      manager.RegisterPlugin(kHealthDriver, Sock(), {"v1.DRAPlugin", "v1.DRAResourceHealth"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return v1_.open_calls() == 1; }));
  manager.Stop();
  EXPECT_TRUE(WaitUntil([&] { return v1_.open_calls() == 0; }));
  EXPECT_THAT(handler_.ends(), IsEmpty());
  // Registered after Stop: no stream.
  ASSERT_TRUE(manager
                  .RegisterPlugin(kHealthDriver, tmp_.Path("late.sock"),
                                  {"v1.DRAPlugin", "v1.DRAResourceHealth"})
                  .ok());
  EXPECT_EQ(manager.Instances()[1].health_service, "");
}

}  // namespace
}  // namespace kdp::manager::dra
