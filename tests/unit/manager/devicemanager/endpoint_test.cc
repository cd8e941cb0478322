// Endpoint against a real plugin server on a unix socket: the upstream endpoint_test.go scenarios
// (TestNewEndpoint, TestRun, TestAllocate, TestGetPreferredAllocation) against a StubPlugin, and
// kdp's own: stopping, a stream that ends, and calls cancelled by Stop().
#include "manager/src/devicemanager/endpoint.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/unix_socket.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/stub_plugin.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kdp::testing::MakeDevice;
using ::kdp::testing::StubPlugin;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;

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

// TestNewEndpoint: an endpoint connects to a serving plugin and keeps the options it answered
// (not the ones of its RegisterRequest). Beyond upstream: the kubelet's texts when nobody serves
// the socket, and when the server there is no device plugin.
TEST_F(EndpointTest, TestNewEndpoint) {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  options.set_get_preferred_allocation_available(true);
  StubPlugin plugin(root_.Path("stub.sock"), options);
  ASSERT_TRUE(plugin.Start().ok());
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint =
      Endpoint::Connect("example.com/dev", root_.Path("stub.sock"), EndpointOptions{});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_EQ((*endpoint)->resource_name(), "example.com/dev");
  EXPECT_EQ((*endpoint)->socket_path(), root_.Path("stub.sock"));
  EXPECT_TRUE((*endpoint)->options().pre_start_required());
  EXPECT_TRUE((*endpoint)->options().get_preferred_allocation_available());
  EXPECT_FALSE((*endpoint)->stopped());

  absl::StatusOr<std::unique_ptr<Endpoint>> nobody =
      Endpoint::Connect("example.com/dev", root_.Path("nobody.sock"),
                        EndpointOptions{.dial_timeout = absl::Milliseconds(200)});
  EXPECT_EQ(nobody.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(nobody.status().message(), "failed to dial device plugin: "))
      << nobody.status();

  v1beta1::Registration::Service not_a_plugin;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(root_.Path("other.sock")), grpc::InsecureServerCredentials());
  builder.RegisterService(&not_a_plugin);
  std::unique_ptr<grpc::Server> other = builder.BuildAndStart();
  ASSERT_NE(other, nullptr);
  absl::StatusOr<std::unique_ptr<Endpoint>> wrong =
      Endpoint::Connect("example.com/dev", root_.Path("other.sock"), EndpointOptions{});
  EXPECT_TRUE(absl::StartsWith(wrong.status().message(), "failed to get device plugin options: "))
      << wrong.status();
  other->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

// TestRun: ListAndWatch delivers the initial three-device list, then the updated list (a health
// flip, a device replaced) as exactly two callbacks in order; Stop() reports no stream end.
TEST_F(EndpointTest, TestRun) {
  StubPlugin plugin(root_.Path("stub.sock"));
  plugin.SetDevices(
      {MakeDevice("ADeviceId"), MakeDevice("AnotherDeviceId"), MakeDevice("AThirdDeviceId")});
  ASSERT_TRUE(plugin.Start().ok());
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint =
      Endpoint::Connect("example.com/dev", root_.Path("stub.sock"), EndpointOptions{});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  absl::Mutex mu;
  std::vector<std::vector<std::pair<std::string, std::string>>> snapshots;
  bool ended = false;
  (*endpoint)->Run(
      [&](const v1beta1::ListAndWatchResponse& response) {
        std::vector<std::pair<std::string, std::string>> devices;
        for (const v1beta1::Device& d : response.devices())
          devices.emplace_back(d.id(), d.health());
        absl::MutexLock lock(&mu);
        snapshots.push_back(std::move(devices));
      },
      [&](const absl::Status&) {
        absl::MutexLock lock(&mu);
        ended = true;
      });
  auto count = [&] {
    absl::MutexLock lock(&mu);
    return snapshots.size();
  };
  ASSERT_TRUE(WaitUntil([&] { return count() == 1; }));
  plugin.SetDevices({MakeDevice("ADeviceId", "Unhealthy"), MakeDevice("AnotherDeviceId"),
                     MakeDevice("AFourthDeviceId")});
  ASSERT_TRUE(WaitUntil([&] { return count() == 2; }));
  (*endpoint)->Stop();
  absl::MutexLock lock(&mu);
  using P = std::pair<std::string, std::string>;
  EXPECT_THAT(snapshots,
              ElementsAre(ElementsAre(P("ADeviceId", "Healthy"), P("AnotherDeviceId", "Healthy"),
                                      P("AThirdDeviceId", "Healthy")),
                          ElementsAre(P("ADeviceId", "Unhealthy"), P("AnotherDeviceId", "Healthy"),
                                      P("AFourthDeviceId", "Healthy"))));
  EXPECT_FALSE(ended);
}

// TestAllocate: the Allocate RPC's result is the plugin's answer, for the requested IDs. Beyond
// upstream: a plugin error comes back with its code and message.
TEST_F(EndpointTest, TestAllocate) {
  StubPlugin plugin(root_.Path("stub.sock"));
  ASSERT_TRUE(plugin.Start().ok());
  v1beta1::AllocateResponse want;
  v1beta1::ContainerAllocateResponse* container = want.add_container_responses();
  v1beta1::DeviceSpec* spec = container->add_devices();
  spec->set_container_path("/dev/aaa");
  spec->set_host_path("/dev/aaa");
  spec->set_permissions("mrw");
  v1beta1::Mount* mount = container->add_mounts();
  mount->set_container_path("/container_dir1/file1");
  mount->set_host_path("host_dir1/file1");
  mount->set_read_only(true);
  (*container->mutable_envs())["key1"] = "val1";
  (*container->mutable_annotations())["vendor.com/a"] = "b";
  container->add_cdi_devices()->set_name("vendor.com/dev=1");
  std::atomic<bool> fail{false};
  plugin.SetAllocateHandler(
      [&](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse* response) {
        if (fail) return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "device busy");
        *response = want;
        return grpc::Status::OK;
      });
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint =
      Endpoint::Connect("example.com/dev", root_.Path("stub.sock"), EndpointOptions{});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();

  absl::StatusOr<v1beta1::AllocateResponse> got = (*endpoint)->Allocate({"device1", "device2"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*got, want)) << got->ShortDebugString();
  ASSERT_EQ(plugin.allocate_requests().size(), 1u);
  ASSERT_EQ(plugin.allocate_requests()[0].container_requests_size(), 1);
  EXPECT_THAT(plugin.allocate_requests()[0].container_requests(0).devices_ids(),
              ElementsAre("device1", "device2"));

  fail = true;
  got = (*endpoint)->Allocate({"device1"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(got.status().message(), "device busy");
}

// TestGetPreferredAllocation: the RPC's result is the plugin's answer, and the request carries
// exactly the available IDs, the must-include IDs and the size given.
TEST_F(EndpointTest, TestGetPreferredAllocation) {
  StubPlugin plugin(root_.Path("stub.sock"));
  ASSERT_TRUE(plugin.Start().ok());
  v1beta1::PreferredAllocationResponse want;
  want.add_container_responses()->add_deviceids("device0");
  want.mutable_container_responses(0)->add_deviceids("device2");
  plugin.SetPreferredAllocationHandler(
      [&](const v1beta1::PreferredAllocationRequest&, v1beta1::PreferredAllocationResponse* out) {
        *out = want;
        return grpc::Status::OK;
      });
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint =
      Endpoint::Connect("example.com/dev", root_.Path("stub.sock"), EndpointOptions{});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  absl::StatusOr<v1beta1::PreferredAllocationResponse> got =
      (*endpoint)->GetPreferredAllocation({"device0", "device1", "device2"}, {"device0"}, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*got, want)) << got->ShortDebugString();
  std::vector<v1beta1::PreferredAllocationRequest> requests = plugin.preferred_requests();
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_EQ(requests[0].container_requests_size(), 1);
  const v1beta1::ContainerPreferredAllocationRequest& request = requests[0].container_requests(0);
  EXPECT_THAT(request.available_deviceids(), ElementsAre("device0", "device1", "device2"));
  EXPECT_THAT(request.must_include_deviceids(), ElementsAre("device0"));
  EXPECT_EQ(request.allocation_size(), 2);
}

}  // namespace
}  // namespace kdp::manager
