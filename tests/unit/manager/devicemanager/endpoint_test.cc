// Endpoint against a real plugin server on a unix socket: stopping, a stream that ends, and calls
// cancelled by Stop().
#include "manager/src/devicemanager/endpoint.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager {
namespace {

// A plugin whose stream ends when told to and whose Allocate hangs until cancelled.
class ControlledPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    v1beta1::ListAndWatchResponse response;
    response.add_devices()->set_id("d0");
    writer->Write(response);
    while (!end_stream_.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest*,
                        v1beta1::AllocateResponse*) override {
    allocate_started_.Notify();
    while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
    return grpc::Status::CANCELLED;
  }

  absl::Notification end_stream_;
  absl::Notification allocate_started_;
};

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = root_.Path("plugin.sock");
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(socket_), grpc::InsecureServerCredentials());
    builder.RegisterService(&plugin_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (!plugin_.end_stream_.HasBeenNotified()) plugin_.end_stream_.Notify();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  std::unique_ptr<Endpoint> Connect() {
    absl::StatusOr<std::unique_ptr<Endpoint>> endpoint =
        Endpoint::Connect("example.com/dev", socket_, EndpointOptions{});
    EXPECT_TRUE(endpoint.ok()) << endpoint.status();
    return endpoint.ok() ? std::move(*endpoint) : nullptr;
  }

  testing::TempDir root_;
  std::string socket_;
  ControlledPlugin plugin_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(EndpointTest, RunAfterStopStartsNothingAndDestroysCleanly) {
  std::unique_ptr<Endpoint> endpoint = Connect();
  ASSERT_NE(endpoint, nullptr);
  endpoint->Stop();
  bool called = false;
  endpoint->Run([&](const v1beta1::ListAndWatchResponse&) { called = true; },
                [&](const absl::Status&) { called = true; });
  endpoint.reset();  // Before the fix: std::terminate on a joinable thread.
  EXPECT_FALSE(called);
}

TEST_F(EndpointTest, AnEndedStreamStopsTheEndpointWithTheKubeletsText) {
  std::unique_ptr<Endpoint> endpoint = Connect();
  ASSERT_NE(endpoint, nullptr);
  absl::Notification snapshot, ended;
  endpoint->Run(
      [&](const v1beta1::ListAndWatchResponse&) {
        if (!snapshot.HasBeenNotified()) snapshot.Notify();
      },
      [&](const absl::Status&) { ended.Notify(); });
  ASSERT_TRUE(snapshot.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(endpoint->stopped());
  plugin_.end_stream_.Notify();
  ASSERT_TRUE(ended.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(endpoint->stopped());
  absl::StatusOr<v1beta1::AllocateResponse> response = endpoint->Allocate({"d0"});
  EXPECT_EQ(response.status().message(), "endpoint " + socket_ + " has been stopped");
}

TEST_F(EndpointTest, StopCancelsACallInFlight) {
  std::unique_ptr<Endpoint> endpoint = Connect();
  ASSERT_NE(endpoint, nullptr);
  absl::StatusOr<v1beta1::AllocateResponse> response;
  std::thread caller([&] { response = endpoint->Allocate({"d0"}); });
  ASSERT_TRUE(plugin_.allocate_started_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::Time before = absl::Now();
  endpoint->Stop();
  caller.join();
  // The call's own deadline is 30 s: ending within a few seconds means Stop() cancelled it.
  EXPECT_LT(absl::Now() - before, absl::Seconds(5));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace kdp::manager
