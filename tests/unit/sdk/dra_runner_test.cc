// DraRunner end to end over real unix sockets in a temporary kubelet root, with a fake API server
// (FakeKubeClient) injected through CreateDraRunnerWithClient.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "kdp/dra_driver.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/sdk/call_deadline.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"
#include "tests/unit/sdk/test_names.h"

namespace kdp {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
using ::kdp::testing::FakeKubeClient;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::kdp::testing::Deadline;
using ::kdp::testing::kGpuDriver;
using ::kdp::testing::kNode;
using ::kdp::testing::kTimeout;

// A driver that prepares every allocated device with one CDI ID and records its calls.
class RecordingDriver final : public DraDriver {
 public:
  RecordingDriver() : DraDriver(kGpuDriver) {}

  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override {
    const int in_flight = ++in_flight_;
    int seen = max_in_flight_.load();
    while (in_flight > seen && !max_in_flight_.compare_exchange_weak(seen, in_flight)) {
    }
    // Widens the window in which a second, unserialized call would overlap; not synchronization.
    if (slow_) absl::SleepFor(absl::Milliseconds(5));
    std::map<std::string, PrepareResult> results;
    {
      absl::MutexLock lock(&mu_);
      prepare_calls_.push_back(claims);
      for (const Claim& claim : claims) {
        if (auto it = prepare_errors_.find(claim.ref.uid); it != prepare_errors_.end()) {
          results[claim.ref.uid] = PrepareResult{.status = it->second, .devices = {}};
          continue;
        }
        if (omit_uid_ == claim.ref.uid) continue;
        PrepareResult& result = results[claim.ref.uid];
        for (const AllocatedDevice& device : claim.results) {
          result.devices.push_back(PreparedDevice{
              .requests = {device.request},
              .pool = device.pool,
              .device = device.device,
              .cdi_device_ids = {"k8s.gpu.example.com/gpu=" + claim.ref.uid + "-" + device.device},
              .share_id = device.share_id});
        }
      }
    }
    --in_flight_;
    return results;
  }

  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override {
    absl::MutexLock lock(&mu_);
    unprepare_calls_.push_back(claims);
    std::map<std::string, absl::Status> results;
    for (const ClaimRef& ref : claims) {
      auto it = unprepare_errors_.find(ref.uid);
      results[ref.uid] = it == unprepare_errors_.end() ? absl::OkStatus() : it->second;
    }
    return results;
  }

  absl::StatusOr<std::vector<DraDevice>> Discover() override {
    absl::MutexLock lock(&mu_);
    return devices_;
  }

  void SetDevices(std::vector<DraDevice> devices) {
    absl::MutexLock lock(&mu_);
    devices_ = std::move(devices);
  }
  void FailPrepare(const std::string& uid, absl::Status status) {
    absl::MutexLock lock(&mu_);
    prepare_errors_[uid] = std::move(status);
  }
  void OmitFromPrepare(const std::string& uid) {
    absl::MutexLock lock(&mu_);
    omit_uid_ = uid;
  }
  void FailUnprepare(const std::string& uid, absl::Status status) {
    absl::MutexLock lock(&mu_);
    unprepare_errors_[uid] = std::move(status);
  }
  void ClearUnprepareErrors() {
    absl::MutexLock lock(&mu_);
    unprepare_errors_.clear();
  }
  std::vector<std::vector<Claim>> prepare_calls() const {
    absl::MutexLock lock(&mu_);
    return prepare_calls_;
  }
  std::vector<std::vector<ClaimRef>> unprepare_calls() const {
    absl::MutexLock lock(&mu_);
    return unprepare_calls_;
  }
  int max_in_flight() const { return max_in_flight_.load(); }
  void set_slow(bool slow) { slow_ = slow; }

 private:
  mutable absl::Mutex mu_;
  std::vector<DraDevice> devices_ ABSL_GUARDED_BY(mu_) = {
      DraDevice{.name = "gpu-0", .attributes = {{"index", int64_t{0}}}, .capacity = {}},
      DraDevice{.name = "gpu-1", .attributes = {{"index", int64_t{1}}}, .capacity = {}}};
  std::map<std::string, absl::Status> prepare_errors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> unprepare_errors_ ABSL_GUARDED_BY(mu_);
  std::string omit_uid_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<Claim>> prepare_calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<ClaimRef>> unprepare_calls_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::atomic<bool> slow_{false};
};

std::string ClaimPath(const std::string& ns, const std::string& name) {
  return "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name;
}

// An allocated claim with `devices` for this driver (request "gpu", or "gpu/<sub>" for odd
// indexes) plus one device and one config of another driver.
json ClaimJson(const std::string& name, const std::string& uid,
               const std::vector<std::string>& devices) {
  json results = json::array();
  for (size_t i = 0; i < devices.size(); ++i) {
    results.push_back({{"request", i % 2 == 0 ? "gpu" : "gpu/big"},
                       {"driver", kGpuDriver},
                       {"pool", kNode},
                       {"device", devices[i]}});
  }
  results.push_back(
      {{"request", "nic"}, {"driver", "net.example.com"}, {"pool", kNode}, {"device", "eth0"}});
  json config = json::parse(R"([
    {"source": "FromClaim", "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}},
    {"source": "FromClaim", "opaque": {"driver": "net.example.com", "parameters": {"b": 2}}}])");
  return {{"metadata", {{"namespace", "default"}, {"name", name}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}, {"config", config}}}}}}}};
}

template <typename Request>
void AddClaim(Request* request, const std::string& name, const std::string& uid) {
  auto* claim = request->add_claims();
  claim->set_namespace_("default");
  claim->set_name(name);
  claim->set_uid(uid);
}

class DraRunnerTest : public ::testing::Test {
 protected:
  DraRunnerTest() : client_(std::make_shared<FakeKubeClient>()) {
    client_->SetObject("/api/v1/nodes/node-1",
                       json::parse(R"({"metadata": {"name": "node-1", "uid": "node-uid"}})"));
    client_->SetObject(ClaimPath("default", "claim-1"),
                       ClaimJson("claim-1", "uid-1", {"gpu-0", "gpu-1"}));
    client_->SetObject(ClaimPath("default", "claim-2"), ClaimJson("claim-2", "uid-2", {"gpu-1"}));
  }

  DraRunnerOptions Options() const {
    return {.kubelet_root = dir_.path(),
            .node_name = kNode,
            .publish_initial_backoff = absl::Milliseconds(5),
            .publish_max_backoff = absl::Milliseconds(20),
            .shutdown_grace = absl::Seconds(1)};
  }

  // Creates and starts a runner; driver_ points at its driver.
  std::unique_ptr<DraRunner> StartRunner(DraRunnerOptions options) {
    auto driver = std::make_unique<RecordingDriver>();
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
  std::string RegistrationSocket() const {
    return dir_.Path("plugins_registry/gpu.example.com-reg.sock");
  }

  std::unique_ptr<drav1::DRAPlugin::Stub> V1() const {
    return drav1::DRAPlugin::NewStub(DialUnixSocket(DraSocket()));
  }
  std::unique_ptr<drav1beta1::DRAPlugin::Stub> V1beta1() const {
    return drav1beta1::DRAPlugin::NewStub(DialUnixSocket(DraSocket()));
  }
  std::unique_ptr<pluginregistration::Registration::Stub> Registration() const {
    return pluginregistration::Registration::NewStub(DialUnixSocket(RegistrationSocket()));
  }

  grpc::Status PrepareV1(const std::vector<std::pair<std::string, std::string>>& claims,
                         drav1::NodePrepareResourcesResponse* response) const {
    drav1::NodePrepareResourcesRequest request;
    for (const auto& claim : claims) AddClaim(&request, claim.first, claim.second);
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    return V1()->NodePrepareResources(&context, request, response);
  }
  grpc::Status UnprepareV1(const std::vector<std::pair<std::string, std::string>>& claims,
                           drav1::NodeUnprepareResourcesResponse* response) const {
    drav1::NodeUnprepareResourcesRequest request;
    for (const auto& claim : claims) AddClaim(&request, claim.first, claim.second);
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    return V1()->NodeUnprepareResources(&context, request, response);
  }

  TempDir dir_;
  std::shared_ptr<FakeKubeClient> client_;
  RecordingDriver* driver_ = nullptr;
};

TEST_F(DraRunnerTest, GetInfoAdvertisesV1ThenV1beta1ThenHealthAndTheAbsoluteEndpoint) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  EXPECT_TRUE(IsSocket(DraSocket()));
  EXPECT_TRUE(IsSocket(RegistrationSocket()));
  pluginregistration::InfoRequest request;
  pluginregistration::PluginInfo info;
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  ASSERT_TRUE(Registration()->GetInfo(&context, request, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), kGpuDriver);
  EXPECT_EQ(info.endpoint(), DraSocket());
  // The kubelet picks the first DRAPlugin entry it supports and only looks for the health names.
  EXPECT_THAT(info.supported_versions(),
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                          "v1alpha1.DRAResourceHealth"));
  struct stat st {};
  ASSERT_EQ(::stat(dir_.Path("plugins/gpu.example.com").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

TEST_F(DraRunnerTest, NotifyRegistrationStatusIsRecorded) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  EXPECT_FALSE(runner->registered());
  pluginregistration::RegistrationStatus status;
  pluginregistration::RegistrationStatusResponse response;
  status.set_plugin_registered(true);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(Registration()->NotifyRegistrationStatus(&context, status, &response).ok());
  }
  EXPECT_TRUE(runner->WaitForRegistration(kTimeout));
  EXPECT_TRUE(runner->registered());

  status.set_plugin_registered(false);
  status.set_error("none of services supported by the plugin are supported by the kubelet");
  grpc::ClientContext context;
  grpc::Status rejected = Registration()->NotifyRegistrationStatus(&context, status, &response);
  EXPECT_EQ(rejected.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(rejected.error_message(),
            "failed registration process: none of services supported by the plugin are "
            "supported by the kubelet");
  EXPECT_FALSE(runner->registered());
}

TEST_F(DraRunnerTest, RegistrationIsNeverServedWithoutTheDraSocket) {
  // A regular file where the DRA socket goes: serving it fails, so registration must not start.
  ASSERT_TRUE(MakeDirectories(dir_.Path("plugins/gpu.example.com")).ok());
  ASSERT_TRUE(WriteFileDurably(DraSocket(), "not a socket").ok());
  auto driver = std::make_unique<RecordingDriver>();
  absl::StatusOr<std::unique_ptr<DraRunner>> runner =
      internal::CreateDraRunnerWithClient(Options(), std::move(driver), client_);
  ASSERT_TRUE(runner.ok());
  absl::Status started = (*runner)->Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(IsSocket(RegistrationSocket()));
  EXPECT_FALSE(::access(RegistrationSocket().c_str(), F_OK) == 0);
}

// A socket file left by a crashed instance: bound, never unlinked.
void LeaveStaleSocket(const std::string& path) {
  ASSERT_TRUE(MakeDirectories(DirectoryOf(path)).ok());
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  ASSERT_TRUE(IsSocket(path));
}

TEST_F(DraRunnerTest, StaleSocketsAreReplaced) {
  LeaveStaleSocket(DraSocket());
  LeaveStaleSocket(RegistrationSocket());
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  EXPECT_TRUE(PrepareV1({}, &response).ok());
  pluginregistration::PluginInfo info;
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  EXPECT_TRUE(Registration()->GetInfo(&context, pluginregistration::InfoRequest(), &info).ok());
}

TEST_F(DraRunnerTest, PrepareV1PassesOnlyThisDriversDataAndAnswersByUid) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status = PrepareV1({{"claim-1", "uid-1"}, {"claim-2", "uid-2"}}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<std::vector<Claim>> calls = driver_->prepare_calls();
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0].size(), 2u);
  const Claim& claim = calls[0][0];
  EXPECT_EQ(claim.ref, (ClaimRef{.namespace_ = "default", .name = "claim-1", .uid = "uid-1"}));
  ASSERT_EQ(claim.results.size(), 2u);
  EXPECT_EQ(claim.results[0].device, "gpu-0");
  EXPECT_EQ(claim.results[1].request, "gpu/big");
  ASSERT_EQ(claim.configs.size(), 1u);
  EXPECT_EQ(json::parse(claim.configs[0].parameters_json), json({{"a", 1}}));

  ASSERT_EQ(response.claims_size(), 2);
  const drav1::NodePrepareResourceResponse& one = response.claims().at("uid-1");
  EXPECT_EQ(one.error(), "");
  ASSERT_EQ(one.devices_size(), 2);
  EXPECT_EQ(one.devices(0).pool_name(), kNode);
  EXPECT_EQ(one.devices(0).device_name(), "gpu-0");
  EXPECT_THAT(one.devices(0).cdi_device_ids(), ElementsAre("k8s.gpu.example.com/gpu=uid-1-gpu-0"));
  // Subrequest suffixes are stripped, as the Go helper does.
  EXPECT_THAT(one.devices(1).request_names(), ElementsAre("gpu"));
  EXPECT_EQ(response.claims().at("uid-2").devices_size(), 1);
}

TEST_F(DraRunnerTest, PrepareAndUnprepareV1beta1UseTheSamePath) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1beta1::NodePrepareResourcesRequest request;
  AddClaim(&request, "claim-2", "uid-2");
  drav1beta1::NodePrepareResourcesResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    grpc::Status status = V1beta1()->NodePrepareResources(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  ASSERT_EQ(response.claims().at("uid-2").devices_size(), 1);
  EXPECT_EQ(response.claims().at("uid-2").devices(0).device_name(), "gpu-1");

  drav1beta1::NodeUnprepareResourcesRequest unprepare;
  AddClaim(&unprepare, "claim-2", "uid-2");
  drav1beta1::NodeUnprepareResourcesResponse unprepared;
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  ASSERT_TRUE(V1beta1()->NodeUnprepareResources(&context, unprepare, &unprepared).ok());
  EXPECT_EQ(unprepared.claims().at("uid-2").error(), "");
  ASSERT_EQ(driver_->unprepare_calls().size(), 1u);
  EXPECT_EQ(driver_->unprepare_calls()[0][0].uid, "uid-2");
}

TEST_F(DraRunnerTest, ShareIdIsSentOnV1Only) {
  json claim = ClaimJson("claim-3", "uid-3", {"gpu-0"});
  claim["status"]["allocation"]["devices"]["results"][0]["shareID"] = "share-1";
  client_->SetObject(ClaimPath("default", "claim-3"), claim);
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  ASSERT_TRUE(PrepareV1({{"claim-3", "uid-3"}}, &response).ok());
  ASSERT_EQ(response.claims().at("uid-3").devices_size(), 1);
  EXPECT_TRUE(response.claims().at("uid-3").devices(0).has_share_id());
  EXPECT_EQ(response.claims().at("uid-3").devices(0).share_id(), "share-1");
}

TEST_F(DraRunnerTest, ReplacedClaimFailsTheWholeCall) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status = PrepareV1({{"claim-2", "uid-2"}, {"claim-1", "uid-old"}}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "claim default/claim-1 got replaced");
  EXPECT_TRUE(driver_->prepare_calls().empty());
}

TEST_F(DraRunnerTest, UnallocatedClaimFailsTheWholeCall) {
  json claim = ClaimJson("claim-1", "uid-1", {"gpu-0"});
  claim["status"].erase("allocation");
  client_->SetObject(ClaimPath("default", "claim-1"), claim);
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status = PrepareV1({{"claim-1", "uid-1"}}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "claim default/claim-1 not allocated");
  EXPECT_TRUE(driver_->prepare_calls().empty());
}

TEST_F(DraRunnerTest, MissingClaimIsNotFound) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse response;
  grpc::Status status = PrepareV1({{"gone", "uid-9"}}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("retrieve claim default/gone: "));
}

TEST_F(DraRunnerTest, VendorErrorsFailOnlyTheirClaim) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  driver_->FailPrepare("uid-1", absl::ResourceExhaustedError("gpu-0 is in use by another claim"));
  driver_->OmitFromPrepare("uid-2");
  client_->SetObject(ClaimPath("default", "claim-3"), ClaimJson("claim-3", "uid-3", {"gpu-0"}));
  drav1::NodePrepareResourcesResponse response;
  ASSERT_TRUE(
      PrepareV1({{"claim-1", "uid-1"}, {"claim-2", "uid-2"}, {"claim-3", "uid-3"}}, &response)
          .ok());
  EXPECT_EQ(response.claims().at("uid-1").error(), "gpu-0 is in use by another claim");
  EXPECT_EQ(response.claims().at("uid-1").devices_size(), 0);
  EXPECT_EQ(response.claims().at("uid-2").error(),
            "driver gpu.example.com returned no result for claim default/claim-2");
  EXPECT_EQ(response.claims().at("uid-3").error(), "");
  EXPECT_EQ(response.claims().at("uid-3").devices_size(), 1);
}

TEST_F(DraRunnerTest, UnprepareOfAnUnknownClaimSucceedsWithoutTheVendor) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodeUnprepareResourcesResponse response;
  ASSERT_TRUE(UnprepareV1({{"claim-7", "uid-7"}}, &response).ok());
  ASSERT_EQ(response.claims_size(), 1);
  EXPECT_EQ(response.claims().at("uid-7").error(), "");
  EXPECT_TRUE(driver_->unprepare_calls().empty());
}

TEST_F(DraRunnerTest, FailedUnprepareKeepsTheClaimForTheNextTry) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse prepared;
  ASSERT_TRUE(PrepareV1({{"claim-1", "uid-1"}}, &prepared).ok());
  driver_->FailUnprepare("uid-1", absl::UnavailableError("device busy"));
  drav1::NodeUnprepareResourcesResponse response;
  ASSERT_TRUE(UnprepareV1({{"claim-1", "uid-1"}}, &response).ok());
  EXPECT_EQ(response.claims().at("uid-1").error(), "device busy");
  driver_->ClearUnprepareErrors();
  ASSERT_TRUE(UnprepareV1({{"claim-1", "uid-1"}}, &response).ok());
  EXPECT_EQ(response.claims().at("uid-1").error(), "");
  // Gone now: a third unprepare does not reach the vendor.
  ASSERT_TRUE(UnprepareV1({{"claim-1", "uid-1"}}, &response).ok());
  EXPECT_EQ(driver_->unprepare_calls().size(), 2u);
}

TEST_F(DraRunnerTest, RepeatedPrepareCallsTheVendorAgain) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  drav1::NodePrepareResourcesResponse first, second;
  ASSERT_TRUE(PrepareV1({{"claim-1", "uid-1"}}, &first).ok());
  ASSERT_TRUE(PrepareV1({{"claim-1", "uid-1"}}, &second).ok());
  EXPECT_EQ(driver_->prepare_calls().size(), 2u);
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
}

TEST_F(DraRunnerTest, CheckpointSurvivesARestart) {
  {
    auto runner = StartRunner();
    ASSERT_NE(runner, nullptr);
    drav1::NodePrepareResourcesResponse response;
    ASSERT_TRUE(PrepareV1({{"claim-1", "uid-1"}}, &response).ok());
    runner->Stop();
  }
  ASSERT_TRUE(::access(dir_.Path("plugins/gpu.example.com/prepared-claims.json").c_str(), F_OK) ==
              0);
  auto restarted = StartRunner();
  ASSERT_NE(restarted, nullptr);
  drav1::NodeUnprepareResourcesResponse response;
  ASSERT_TRUE(UnprepareV1({{"claim-1", "uid-1"}, {"claim-2", "uid-2"}}, &response).ok());
  EXPECT_EQ(response.claims().at("uid-1").error(), "");
  EXPECT_EQ(response.claims().at("uid-2").error(), "");
  // The new driver instance is asked about the claim the old one prepared, and only that one.
  ASSERT_EQ(driver_->unprepare_calls().size(), 1u);
  EXPECT_THAT(driver_->unprepare_calls()[0],
              ElementsAre(ClaimRef{.namespace_ = "default", .name = "claim-1", .uid = "uid-1"}));
}

TEST_F(DraRunnerTest, FailedPrepareIsStillUnpreparedByTheVendor) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  driver_->FailPrepare("uid-1", absl::InternalError("half done"));
  drav1::NodePrepareResourcesResponse prepared;
  ASSERT_TRUE(PrepareV1({{"claim-1", "uid-1"}}, &prepared).ok());
  EXPECT_EQ(prepared.claims().at("uid-1").error(), "half done");
  drav1::NodeUnprepareResourcesResponse response;
  ASSERT_TRUE(UnprepareV1({{"claim-1", "uid-1"}}, &response).ok());
  EXPECT_EQ(driver_->unprepare_calls().size(), 1u);
}

TEST_F(DraRunnerTest, CorruptCheckpointFailsStart) {
  ASSERT_TRUE(MakeDirectories(dir_.Path("plugins/gpu.example.com")).ok());
  ASSERT_TRUE(
      WriteFileDurably(dir_.Path("plugins/gpu.example.com/prepared-claims.json"), "{garbage").ok());
  absl::StatusOr<std::unique_ptr<DraRunner>> runner =
      internal::CreateDraRunnerWithClient(Options(), std::make_unique<RecordingDriver>(), client_);
  ASSERT_TRUE(runner.ok());
  absl::Status started = (*runner)->Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(started.message(), HasSubstr("prepared-claims.json is corrupted"));
  EXPECT_FALSE(IsSocket(DraSocket()));
  EXPECT_FALSE(IsSocket(RegistrationSocket()));
}

TEST_F(DraRunnerTest, ConcurrentPreparesAreSerialized) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  driver_->set_slow(true);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([this, i, &failures] {
      for (int j = 0; j < 5; ++j) {
        drav1::NodePrepareResourcesResponse response;
        const bool one = (i + j) % 2 == 0;
        grpc::Status status =
            PrepareV1({{one ? "claim-1" : "claim-2", one ? "uid-1" : "uid-2"}}, &response);
        if (!status.ok()) ++failures;
        drav1::NodeUnprepareResourcesResponse unprepared;
        if (!UnprepareV1({{"claim-1", "uid-1"}}, &unprepared).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(driver_->prepare_calls().size(), 20u);
  EXPECT_EQ(driver_->max_in_flight(), 1);
}

TEST_F(DraRunnerTest, PublishesTheNodesSliceAndRepublishesOnChange) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(WaitUntil([this] { return client_->slices().size() == 1; }));
  json slice = client_->slices().begin()->second;
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0],
            json::parse(R"({"apiVersion": "v1", "kind": "Node", "name": "node-1",
                            "uid": "node-uid", "controller": true})"));
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(slice["spec"]["devices"].size(), 2u);

  driver_->SetDevices({DraDevice{.name = "gpu-0", .attributes = {}, .capacity = {}}});
  ASSERT_TRUE(runner->driver().Publish().ok());
  ASSERT_TRUE(WaitUntil([this] {
    auto slices = client_->slices();
    return slices.size() == 1 && slices.begin()->second["spec"]["pool"]["generation"] == 2;
  }));
  EXPECT_EQ(client_->slices().begin()->second["spec"]["devices"].size(), 1u);

  driver_->SetDevices({DraDevice{.name = "Bad_Name", .attributes = {}, .capacity = {}}});
  EXPECT_EQ(runner->driver().Publish().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DraRunnerTest, InvalidDevicesFailStart) {
  auto driver = std::make_unique<RecordingDriver>();
  driver->SetDevices({DraDevice{.name = "gpu-0"}, DraDevice{.name = "gpu-0"}});
  absl::StatusOr<std::unique_ptr<DraRunner>> runner =
      internal::CreateDraRunnerWithClient(Options(), std::move(driver), client_);
  ASSERT_TRUE(runner.ok());
  EXPECT_EQ((*runner)->Start().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsSocket(DraSocket()));
}

TEST_F(DraRunnerTest, StopRemovesBothSocketsAndIsIdempotent) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  runner->Stop();
  EXPECT_FALSE(IsSocket(DraSocket()));
  EXPECT_FALSE(IsSocket(RegistrationSocket()));
  runner->Stop();
  EXPECT_EQ(runner->Start().code(), absl::StatusCode::kFailedPrecondition);
  // Publishing after Stop validates but sends nothing.
  client_->ClearRequests();
  EXPECT_TRUE(runner->driver().Publish().ok());
  EXPECT_TRUE(client_->requests().empty());
}

TEST_F(DraRunnerTest, StopWithoutStartAndConcurrentStops) {
  absl::StatusOr<std::unique_ptr<DraRunner>> idle =
      internal::CreateDraRunnerWithClient(Options(), std::make_unique<RecordingDriver>(), client_);
  ASSERT_TRUE(idle.ok());
  (*idle)->Stop();
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  std::thread a([&runner] { runner->Stop(); });
  std::thread b([&runner] { runner->Stop(); });
  a.join();
  b.join();
  EXPECT_FALSE(IsSocket(DraSocket()));
}

TEST_F(DraRunnerTest, StartTwiceFails) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  EXPECT_EQ(runner->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DraRunnerTest, InstanceSuffixGivesPerInstanceSockets) {
  DraRunnerOptions options = Options();
  options.instance_suffix = "pod-uid-1";
  auto runner = StartRunner(options);
  ASSERT_NE(runner, nullptr);
  const std::string dra = dir_.Path("plugins/gpu.example.com/dra-pod-uid-1.sock");
  const std::string reg = dir_.Path("plugins_registry/gpu.example.com-pod-uid-1-reg.sock");
  EXPECT_TRUE(IsSocket(dra));
  EXPECT_TRUE(IsSocket(reg));
  pluginregistration::PluginInfo info;
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  ASSERT_TRUE(pluginregistration::Registration::NewStub(DialUnixSocket(reg))
                  ->GetInfo(&context, pluginregistration::InfoRequest(), &info)
                  .ok());
  EXPECT_EQ(info.endpoint(), dra);
  // Prepare works with the file lock.
  drav1::NodePrepareResourcesRequest request;
  AddClaim(&request, "claim-1", "uid-1");
  drav1::NodePrepareResourcesResponse response;
  grpc::ClientContext prepare_context;
  prepare_context.set_deadline(Deadline());
  ASSERT_TRUE(drav1::DRAPlugin::NewStub(DialUnixSocket(dra))
                  ->NodePrepareResources(&prepare_context, request, &response)
                  .ok());
  EXPECT_EQ(response.claims().at("uid-1").error(), "");
  EXPECT_TRUE(::access(dir_.Path("plugins/gpu.example.com/serialize.lock").c_str(), F_OK) == 0);
  runner->Stop();
  EXPECT_FALSE(IsSocket(dra));
  EXPECT_FALSE(IsSocket(reg));
}

TEST_F(DraRunnerTest, CreateValidatesOptions) {
  auto create = [this](DraRunnerOptions options, std::string driver = kGpuDriver) {
    class Named final : public DraDriver {
     public:
      explicit Named(std::string name) : DraDriver(std::move(name)) {}
      std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>&) override {
        return {};
      }
      std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>&) override {
        return {};
      }
      absl::StatusOr<std::vector<DraDevice>> Discover() override {
        return std::vector<DraDevice>{};
      }
    };
    return internal::CreateDraRunnerWithClient(std::move(options), std::make_unique<Named>(driver),
                                               client_)
        .status();
  };
  EXPECT_TRUE(create(Options()).ok());
  EXPECT_THAT(create(Options(), "Not_A_Domain").message(), HasSubstr("DNS subdomain"));
  DraRunnerOptions options = Options();
  options.node_name = "";
  ::unsetenv("NODE_NAME");
  EXPECT_THAT(create(options).message(), HasSubstr("node name"));
  options = Options();
  options.instance_suffix = "a/b";
  EXPECT_THAT(create(options).message(), HasSubstr("instance suffix"));
  options = Options();
  options.instance_suffix = "x";
  options.registration_socket_name = "r.sock";
  EXPECT_THAT(create(options).message(), HasSubstr("mutually exclusive"));
  options = Options();
  options.registration_socket_name = ".hidden.sock";
  EXPECT_THAT(create(options).message(), HasSubstr("not starting with '.'"));
  options = Options();
  options.kubelet_root = "/tmp/" + std::string(100, 'x');
  EXPECT_THAT(create(options).message(), HasSubstr("unix socket limit"));
  EXPECT_EQ(internal::CreateDraRunnerWithClient(Options(), nullptr, client_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DraRunnerTest, ResolvedDefaults) {
  DraRunnerOptions options;
  options.node_name = "node-1";
  absl::StatusOr<DraRunnerOptions> resolved =
      internal::ResolveDraRunnerOptions(options, "gpu.example.com");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->registration_socket_name, "gpu.example.com-reg.sock");
  EXPECT_EQ(resolved->checkpoint_path,
            "/var/lib/kubelet/plugins/gpu.example.com/prepared-claims.json");
  ::setenv("NODE_NAME", "env-node", 1);
  options.node_name = "";
  resolved = internal::ResolveDraRunnerOptions(options, "gpu.example.com");
  ::unsetenv("NODE_NAME");
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->node_name, "env-node");
}

}  // namespace
}  // namespace kdp
