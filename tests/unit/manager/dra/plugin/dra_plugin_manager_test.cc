// DraPluginManager and DraPluginClient against fake DRA drivers on real unix sockets: the
// kubelet 1.34 plugin-package scenarios (registration/negotiation table, several instances per
// driver, v1beta1 through the conversion wrapper, call deadline) and the ResourceSlice wipe
// delay (after the last instance left or while no instance is connected; cancelled when an
// instance connects again; once per outage).
#include "manager/src/dra/plugin/dra_plugin_manager.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_server.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "manager/src/dra/plugin/conversion.h"
#include "manager/src/pluginmanager/plugin_manager.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/manager/pluginmanager/fake_registration_plugin.h"

namespace kdp::manager::dra {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kDriver[] = "gpu.example.com";

// A driver serving one version of the node service; answers with `prepare_response` /
// `unprepare_response`, optionally after `delay`, and records the requests it got.
template <typename Pb>
class FakeDriver final : public Pb::DRAPlugin::Service {
 public:
  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const typename Pb::NodePrepareResourcesRequest* request,
                                    typename Pb::NodePrepareResourcesResponse* response) override {
    absl::SleepFor(Delay());
    absl::MutexLock lock(&mu_);
    prepare_requests_.push_back(*request);
    *response = prepare_response_;
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*, const typename Pb::NodeUnprepareResourcesRequest* request,
      typename Pb::NodeUnprepareResourcesResponse* response) override {
    absl::SleepFor(Delay());
    absl::MutexLock lock(&mu_);
    unprepare_requests_.push_back(*request);
    *response = unprepare_response_;
    return grpc::Status::OK;
  }

  bool Serve(const std::string& path) {
    auto server = ServeOnUnixSocket(path, this);
    if (!server.ok()) return false;
    server_ = std::move(server).value();
    return true;
  }
  ~FakeDriver() override {
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now()));
  }

  void set_delay(absl::Duration delay) {
    absl::MutexLock lock(&mu_);
    delay_ = delay;
  }
  absl::Duration Delay() {
    absl::MutexLock lock(&mu_);
    return delay_;
  }

  absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_);
  typename Pb::NodePrepareResourcesResponse prepare_response_ ABSL_GUARDED_BY(mu_);
  typename Pb::NodeUnprepareResourcesResponse unprepare_response_ ABSL_GUARDED_BY(mu_);
  std::vector<typename Pb::NodePrepareResourcesRequest> prepare_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<typename Pb::NodeUnprepareResourcesRequest> unprepare_requests_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_;
};

struct V1 {
  using DRAPlugin = drapb::DRAPlugin;
  using NodePrepareResourcesRequest = drapb::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drapb::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = drapb::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = drapb::NodeUnprepareResourcesResponse;
};
struct V1Beta1 {
  using DRAPlugin = drapbv1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = drapbv1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drapbv1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = drapbv1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = drapbv1beta1::NodeUnprepareResourcesResponse;
};

drapb::NodePrepareResourcesRequest PrepareRequest() {
  drapb::NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_uid("uid-1");
  claim->set_name("claim-1");
  claim = request.add_claims();
  claim->set_namespace_("other");
  claim->set_uid("uid-2");
  claim->set_name("claim-2");
  return request;
}

// ---- Negotiation (the 1.34 registration table) ----

TEST(ChooseDraService, NoServicesProvided) {
  absl::StatusOr<std::string> chosen = ChooseDraService({});
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(chosen.status().message(),
            "empty list of supported gRPC services (aka supported versions)");
}

TEST(ChooseDraService, CurrentService) {
  EXPECT_EQ(ChooseDraService({"v1.DRAPlugin"}).value(), "v1.DRAPlugin");
}

TEST(ChooseDraService, TwoServicesThePluginsOrderDecides) {
  EXPECT_EQ(ChooseDraService({"v1.DRAPlugin", "v1beta1.DRAPlugin"}).value(), "v1.DRAPlugin");
  EXPECT_EQ(ChooseDraService({"v1beta1.DRAPlugin", "v1.DRAPlugin"}).value(), "v1beta1.DRAPlugin");
  EXPECT_EQ(ChooseDraService({"v1alpha1.DRAResourceHealth", "v1.DRAPlugin"}).value(),
            "v1.DRAPlugin");
}

TEST(ChooseDraService, V1Beta1Only) {
  EXPECT_EQ(ChooseDraService({"v1beta1.DRAPlugin"}).value(), "v1beta1.DRAPlugin");
}

TEST(ChooseDraService, LegacyVersionsAreRefused) {
  absl::StatusOr<std::string> chosen = ChooseDraService({"1.0.0"});
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(chosen.status().message(),
            "none of services supported by the plugin ([\"1.0.0\"]) are supported by the kubelet "
            "([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])");
  EXPECT_FALSE(ChooseDraService({"v1alpha3.NodeService", "v1alpha1.DRAResourceHealth"}).ok());
}

TEST(DraPluginManager, ValidatePluginWrapsTheNegotiationError) {
  DraPluginManager manager;
  EXPECT_TRUE(manager.ValidatePlugin(kDriver, "/e/dra.sock", {"v1.DRAPlugin"}).ok());
  absl::Status status = manager.ValidatePlugin(kDriver, "/e/dra.sock", {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "invalid supported gRPC versions of DRA driver plugin gpu.example.com at endpoint "
            "/e/dra.sock: empty list of supported gRPC services (aka supported versions)");
  EXPECT_EQ(manager.RegisterPlugin(kDriver, "/e/dra.sock", {"1.0.0"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(manager.Instances(), IsEmpty());
}

// ---- Registration and calls ----

class DraPluginManagerTest : public ::testing::Test {
 protected:
  std::string Sock(const std::string& name) const { return tmp_.Path(name); }
  TempDir tmp_;
};

TEST_F(DraPluginManagerTest, UnregisteredDriver) {
  DraPluginManager manager;
  auto plugin = manager.Get(kDriver);
  EXPECT_EQ(plugin.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plugin.status().message(), "DRA driver gpu.example.com is not registered");
  EXPECT_EQ(manager.Get("").status().message(), "DRA driver name is empty");
}

TEST_F(DraPluginManagerTest, CallsAV1Driver) {
  FakeDriver<V1> driver;
  {
    absl::MutexLock lock(&driver.mu_);
    auto& result = (*driver.prepare_response_.mutable_claims())["uid-1"];
    auto* device = result.add_devices();
    device->set_pool_name("pool");
    device->set_device_name("gpu-0");
    device->add_cdi_device_ids("example.com/gpu=gpu-0");
    device->set_share_id("share-1");
  }
  ASSERT_TRUE(driver.Serve(Sock("dra.sock")));
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("dra.sock"), {"v1.DRAPlugin"}).ok());
  auto plugin = manager.Get(kDriver);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_EQ((*plugin)->driver_name(), kDriver);
  auto response = (*plugin)->NodePrepareResources(PrepareRequest());
  ASSERT_TRUE(response.ok()) << response.status();
  const auto& device = response->claims().at("uid-1").devices(0);
  EXPECT_EQ(device.device_name(), "gpu-0");
  EXPECT_EQ(device.share_id(), "share-1");
  absl::MutexLock lock(&driver.mu_);
  ASSERT_EQ(driver.prepare_requests_.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(driver.prepare_requests_[0], PrepareRequest()));
}

TEST_F(DraPluginManagerTest, V1Beta1DriverRoundTrip) {
  FakeDriver<V1Beta1> driver;
  {
    absl::MutexLock lock(&driver.mu_);
    auto& ok = (*driver.prepare_response_.mutable_claims())["uid-1"];
    auto* device = ok.add_devices();
    device->add_request_names("req-a");
    device->add_request_names("req-b");
    device->set_pool_name("pool");
    device->set_device_name("gpu-0");
    device->add_cdi_device_ids("example.com/gpu=gpu-0");
    device->add_cdi_device_ids("example.com/gpu=common");
    (*driver.prepare_response_.mutable_claims())["uid-2"].set_error("no such device");
    (*driver.unprepare_response_.mutable_claims())["uid-1"];
    (*driver.unprepare_response_.mutable_claims())["uid-2"].set_error("busy");
  }
  ASSERT_TRUE(driver.Serve(Sock("old.sock")));
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("old.sock"), {"v1beta1.DRAPlugin"}).ok());
  auto plugin = manager.Get(kDriver);
  ASSERT_TRUE(plugin.ok());

  auto prepared = (*plugin)->NodePrepareResources(PrepareRequest());
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  drapb::NodePrepareResourcesResponse expected;
  {
    auto& ok = (*expected.mutable_claims())["uid-1"];
    auto* device = ok.add_devices();
    device->add_request_names("req-a");
    device->add_request_names("req-b");
    device->set_pool_name("pool");
    device->set_device_name("gpu-0");
    device->add_cdi_device_ids("example.com/gpu=gpu-0");
    device->add_cdi_device_ids("example.com/gpu=common");
    (*expected.mutable_claims())["uid-2"].set_error("no such device");
  }
  EXPECT_TRUE(MessageDifferencer::Equals(*prepared, expected)) << prepared->DebugString();
  EXPECT_FALSE(prepared->claims().at("uid-1").devices(0).has_share_id());

  drapb::NodeUnprepareResourcesRequest unprepare;
  *unprepare.mutable_claims() = PrepareRequest().claims();
  auto unprepared = (*plugin)->NodeUnprepareResources(unprepare);
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  EXPECT_EQ(unprepared->claims().size(), 2u);
  EXPECT_EQ(unprepared->claims().at("uid-1").error(), "");
  EXPECT_EQ(unprepared->claims().at("uid-2").error(), "busy");

  absl::MutexLock lock(&driver.mu_);
  ASSERT_EQ(driver.prepare_requests_.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(ToV1(driver.prepare_requests_[0]), PrepareRequest()));
  ASSERT_EQ(driver.unprepare_requests_.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(ToV1(driver.unprepare_requests_[0]), unprepare));
}

TEST(Conversion, ShareIdIsDroppedOnTheWayDown) {
  drapb::NodePrepareResourcesResponse v1;
  auto* device = (*v1.mutable_claims())["u"].add_devices();
  device->set_pool_name("p");
  device->set_device_name("d");
  device->set_share_id("s");
  drapb::NodePrepareResourcesResponse back = ToV1(ToV1Beta1(v1));
  EXPECT_EQ(back.claims().at("u").devices(0).device_name(), "d");
  EXPECT_FALSE(back.claims().at("u").devices(0).has_share_id());
}

TEST_F(DraPluginManagerTest, DeadlineExceededReadsLikeGrpcGo) {
  FakeDriver<V1> driver;
  driver.set_delay(absl::Milliseconds(200));
  ASSERT_TRUE(driver.Serve(Sock("slow.sock")));
  DraPluginManager manager({.call_timeout = absl::Milliseconds(50)});
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("slow.sock"), {"v1.DRAPlugin"}).ok());
  auto plugin = manager.Get(kDriver);
  ASSERT_TRUE(plugin.ok());
  auto response = (*plugin)->NodePrepareResources(PrepareRequest());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(response.status().message(),
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded");
  auto unprepared = (*plugin)->NodeUnprepareResources({});
  EXPECT_EQ(unprepared.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(DraPluginManagerTest, V1CallToAV1Beta1OnlyDriverFails) {
  FakeDriver<V1Beta1> driver;
  ASSERT_TRUE(driver.Serve(Sock("beta.sock")));
  DraPluginManager manager({.call_timeout = absl::Seconds(5)});
  // The plugin claims v1 but only serves v1beta1 (a mismatch that should not happen).
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("beta.sock"), {"v1.DRAPlugin"}).ok());
  auto response = manager.Get(kDriver).value()->NodePrepareResources(PrepareRequest());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(response.status().message()),
              ::testing::StartsWith("rpc error: code = Unimplemented desc = "));
}

TEST_F(DraPluginManagerTest, SameEndpointTwiceIsRefused) {
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  absl::Status again = manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"});
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(), "endpoint " + Sock("a.sock") +
                                 " already registered for DRA driver plugin gpu.example.com");
  // Another driver may use its own endpoint of the same name elsewhere; the same driver another.
  EXPECT_TRUE(manager.RegisterPlugin(kDriver, Sock("b.sock"), {"v1.DRAPlugin"}).ok());
  EXPECT_EQ(manager.Instances().size(), 2u);
}

TEST_F(DraPluginManagerTest, NewestInstanceIsPreferredAndDeregistrationDropsOnlyOne) {
  FakeDriver<V1> a;
  FakeDriver<V1> b;
  ASSERT_TRUE(a.Serve(Sock("a.sock")));
  ASSERT_TRUE(b.Serve(Sock("b.sock")));
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(
      manager.RegisterPlugin(kDriver, Sock("b.sock"), {"v1beta1.DRAPlugin", "v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] {
    auto instances = manager.Instances();
    return instances.size() == 2 && instances[0].connected && instances[1].connected;
  }));
  const auto instances = manager.Instances();
  EXPECT_EQ(instances[0].endpoint, Sock("a.sock"));
  EXPECT_EQ(instances[0].service, "v1.DRAPlugin");
  EXPECT_EQ(instances[1].endpoint, Sock("b.sock"));
  EXPECT_EQ(instances[1].service, "v1beta1.DRAPlugin");
  EXPECT_EQ(instances[1].driver, kDriver);
  EXPECT_LE(instances[0].registered_at, instances[1].registered_at);

  EXPECT_EQ(static_cast<DraPluginClient*>(manager.Get(kDriver).value().get())->endpoint(),
            Sock("b.sock"));
  manager.DeRegisterPlugin(kDriver, Sock("b.sock"));
  EXPECT_EQ(static_cast<DraPluginClient*>(manager.Get(kDriver).value().get())->endpoint(),
            Sock("a.sock"));
  manager.DeRegisterPlugin(kDriver, Sock("unknown.sock"));  // no-op
  EXPECT_EQ(manager.Instances().size(), 1u);
  manager.DeRegisterPlugin(kDriver, Sock("a.sock"));
  EXPECT_EQ(manager.Get(kDriver).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DraPluginManagerTest, ConnectedInstanceIsPreferredOverANewerDisconnectedOne) {
  FakeDriver<V1> a;
  ASSERT_TRUE(a.Serve(Sock("a.sock")));
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  // Nothing listens on the newer instance's endpoint.
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("nobody.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return manager.Instances()[0].connected; }));
  EXPECT_FALSE(manager.Instances()[1].connected);
  EXPECT_EQ(static_cast<DraPluginClient*>(manager.Get(kDriver).value().get())->endpoint(),
            Sock("a.sock"));
}

TEST_F(DraPluginManagerTest, NoInstanceConnectedFallsBackToTheNewest) {
  DraPluginManager manager;
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("x.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("y.sock"), {"v1.DRAPlugin"}).ok());
  EXPECT_EQ(static_cast<DraPluginClient*>(manager.Get(kDriver).value().get())->endpoint(),
            Sock("y.sock"));
  auto response = manager.Get(kDriver).value()->NodePrepareResources(PrepareRequest());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
}

// ---- Through the plugin manager (plugins_registry) ----

TEST_F(DraPluginManagerTest, DriverRegistersThroughThePluginsRegistry) {
  FakeDriver<V1> driver;
  ASSERT_TRUE(driver.Serve(Sock("dra.sock")));
  DraPluginManager dra;
  pluginmanager::PluginManager plugins({.dir = Sock("plugins_registry")});
  plugins.AddHandler(pluginmanager::kDRAPlugin, &dra);
  ASSERT_TRUE(plugins.Start().ok());
  // Two instances (rolling update): each its own registration socket and endpoint.
  kdp::testing::FakeRegistrationPlugin old_reg("DRAPlugin", kDriver, Sock("dra.sock"),
                                               {"v1.DRAPlugin", "v1beta1.DRAPlugin"});
  ASSERT_TRUE(old_reg.Serve(Sock("plugins_registry/gpu.example.com-old-reg.sock")));
  ASSERT_TRUE(WaitUntil([&] { return dra.Instances().size() == 1; }));
  kdp::testing::FakeRegistrationPlugin bad("DRAPlugin", kDriver, "", {"1.0.0"});
  ASSERT_TRUE(bad.Serve(Sock("plugins_registry/gpu.example.com-bad-reg.sock")));
  ASSERT_TRUE(WaitUntil([&] { return !bad.statuses().empty(); }));
  EXPECT_EQ(bad.statuses()[0].error,
            "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC "
            "versions of DRA driver plugin gpu.example.com at endpoint " +
                Sock("plugins_registry/gpu.example.com-bad-reg.sock") +
                ": none of services supported by the plugin ([\"1.0.0\"]) are supported by the "
                "kubelet ([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])");
  EXPECT_EQ(dra.Instances().size(), 1u);
  auto plugin = dra.Get(kDriver);
  ASSERT_TRUE(plugin.ok());
  EXPECT_TRUE((*plugin)->NodePrepareResources(PrepareRequest()).ok());
  old_reg.Stop(/*remove_socket=*/true);
  ASSERT_TRUE(WaitUntil([&] { return dra.Instances().empty(); }));
  plugins.Stop();
}

// ---- ResourceSlice wiping ----

class Wipes {
 public:
  void Record(const std::string& driver) {
    absl::MutexLock lock(&mu_);
    drivers_.push_back(driver);
    at_.push_back(absl::Now());
  }
  std::vector<std::string> drivers() const {
    absl::MutexLock lock(&mu_);
    return drivers_;
  }
  std::vector<absl::Time> at() const {
    absl::MutexLock lock(&mu_);
    return at_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> drivers_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> at_ ABSL_GUARDED_BY(mu_);
};

DraPluginManagerOptions WipeOptions(Wipes* wipes, absl::Duration delay) {
  return {.wiping_delay = delay,
          .wipe_resource_slices = [wipes](const std::string& d) { wipes->Record(d); },
          .connection_check_interval = absl::Milliseconds(10)};
}

// The manager's last connection check saw every instance of `driver` connected, and no wipe is
// pending.
bool SettledConnected(const DraPluginManager& manager, const std::string& driver) {
  if (manager.PendingWipes().contains(driver)) return false;
  for (const DraPluginInstance& instance : manager.Instances()) {
    if (instance.driver == driver && !instance.last_check_connected) return false;
  }
  return true;
}

TEST_F(DraPluginManagerTest, LastDeregistrationWipesAfterTheDelay) {
  Wipes wipes;
  FakeDriver<V1> a;
  FakeDriver<V1> b;
  ASSERT_TRUE(a.Serve(Sock("a.sock")));
  ASSERT_TRUE(b.Serve(Sock("b.sock")));
  DraPluginManager manager(WipeOptions(&wipes, absl::Seconds(1)));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("b.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }));
  manager.DeRegisterPlugin(kDriver, Sock("a.sock"));  // a connected instance is left: no wipe
  EXPECT_FALSE(manager.PendingWipes().contains(kDriver));
  const absl::Time last = absl::Now();
  manager.DeRegisterPlugin(kDriver, Sock("b.sock"));
  ASSERT_TRUE(manager.PendingWipes().contains(kDriver));
  EXPECT_GE(manager.PendingWipes().at(kDriver), last + absl::Seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return !wipes.drivers().empty(); }));
  EXPECT_THAT(wipes.drivers(), ElementsAre(kDriver));
  EXPECT_GE(wipes.at()[0] - last, absl::Seconds(1));
  EXPECT_THAT(manager.PendingWipes(), IsEmpty());
}

TEST_F(DraPluginManagerTest, ConnectedReregistrationCancelsThePendingWipe) {
  Wipes wipes;
  FakeDriver<V1> a;
  FakeDriver<V1> a2;
  ASSERT_TRUE(a.Serve(Sock("a.sock")));
  ASSERT_TRUE(a2.Serve(Sock("a2.sock")));
  DraPluginManager manager(WipeOptions(&wipes, absl::Seconds(2)));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }));
  manager.DeRegisterPlugin(kDriver, Sock("a.sock"));
  ASSERT_TRUE(manager.PendingWipes().contains(kDriver));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a2.sock"), {"v1.DRAPlugin"}).ok());
  // Noticed within a few connection checks, well before the deadline.
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }, absl::Seconds(1)));
  // Another driver, never connected, is wiped on its own (later) schedule: once it is, the first
  // driver's deadline has passed too, so its wipe would have happened by now.
  ASSERT_TRUE(manager.RegisterPlugin("other.example.com", Sock("o.sock"), {"v1.DRAPlugin"}).ok());
  manager.DeRegisterPlugin("other.example.com", Sock("o.sock"));
  ASSERT_TRUE(WaitUntil([&] { return !wipes.drivers().empty(); }));
  EXPECT_THAT(wipes.drivers(), ElementsAre("other.example.com"));
}

TEST_F(DraPluginManagerTest, RegisteredButNeverConnectedDriverIsWipedOnce) {
  Wipes wipes;
  DraPluginManager manager(WipeOptions(&wipes, absl::Milliseconds(200)));
  // Nothing listens there: registration alone does not make the driver usable (1.34's sync).
  const absl::Time registered = absl::Now();
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("nobody.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return !wipes.drivers().empty(); }));
  EXPECT_THAT(wipes.drivers(), ElementsAre(kDriver));
  EXPECT_GE(wipes.at()[0] - registered, absl::Milliseconds(200));
  EXPECT_EQ(manager.Instances().size(), 1u);  // still registered
  // Still disconnected, but wiped already: a later driver's wipe comes, the first one's does not
  // come again.
  ASSERT_TRUE(manager.RegisterPlugin("other.example.com", Sock("o.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return wipes.drivers().size() == 2; }));
  EXPECT_THAT(wipes.drivers(), ElementsAre(kDriver, "other.example.com"));
}

TEST_F(DraPluginManagerTest, DriverThatGoesAwayWhileRegisteredIsWiped) {
  Wipes wipes;
  auto driver = std::make_unique<FakeDriver<V1>>();
  ASSERT_TRUE(driver->Serve(Sock("dra.sock")));
  DraPluginManager manager(WipeOptions(&wipes, absl::Seconds(1)));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("dra.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }));
  const absl::Time lost = absl::Now();
  driver.reset();  // the server shuts down; its registration stays
  ASSERT_TRUE(WaitUntil([&] { return !wipes.drivers().empty(); }));
  EXPECT_THAT(wipes.drivers(), ElementsAre(kDriver));
  EXPECT_GE(wipes.at()[0] - lost, absl::Seconds(1));
  ASSERT_EQ(manager.Instances().size(), 1u);
  EXPECT_FALSE(manager.Instances()[0].connected);
  EXPECT_FALSE(manager.Instances()[0].last_check_connected);
}

TEST_F(DraPluginManagerTest, ReconnectingInTimeCancelsTheWipe) {
  Wipes wipes;
  auto driver = std::make_unique<FakeDriver<V1>>();
  ASSERT_TRUE(driver->Serve(Sock("dra.sock")));
  // Long enough for gRPC's reconnect backoff (about 1 s after the first failed attempt).
  DraPluginManager manager(WipeOptions(&wipes, absl::Seconds(3)));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("dra.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }));
  driver.reset();
  ASSERT_TRUE(WaitUntil([&] { return manager.PendingWipes().contains(kDriver); }));
  // The driver restarts on the same socket (a container restart).
  driver = std::make_unique<FakeDriver<V1>>();
  ASSERT_TRUE(driver->Serve(Sock("dra.sock")));
  ASSERT_TRUE(WaitUntil([&] { return SettledConnected(manager, kDriver); }));
  // A sentinel driver scheduled after the first one's deadline was set.
  ASSERT_TRUE(manager.RegisterPlugin("other.example.com", Sock("o.sock"), {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return !wipes.drivers().empty(); }));
  EXPECT_THAT(wipes.drivers(), ElementsAre("other.example.com"));
}

TEST_F(DraPluginManagerTest, StopCancelsPendingWipes) {
  Wipes wipes;
  DraPluginManager manager(WipeOptions(&wipes, absl::Seconds(10)));
  ASSERT_TRUE(manager.RegisterPlugin(kDriver, Sock("a.sock"), {"v1.DRAPlugin"}).ok());
  manager.DeRegisterPlugin(kDriver, Sock("a.sock"));
  ASSERT_TRUE(manager.PendingWipes().contains(kDriver));
  manager.Stop();
  manager.Stop();
  // The timer thread has ended: nothing pending can run any more.
  EXPECT_THAT(manager.PendingWipes(), IsEmpty());
  EXPECT_THAT(wipes.drivers(), IsEmpty());
}

}  // namespace
}  // namespace kdp::manager::dra
