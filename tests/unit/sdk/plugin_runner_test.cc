#include "kdp/plugin_runner.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/device_plugin.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/unit/sdk/call_deadline.h"

namespace kdp {
namespace {

using ::kdp::testing::Deadline;
using ::kdp::testing::kGpuResource;
using ::kdp::testing::kTimeout;
using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSocketName[] = "example.com_gpu.sock";

// A plugin with a fixed inventory; Allocate() fails with `allocate_error` when it is not OK.
class TestPlugin : public DevicePlugin {
 public:
  explicit TestPlugin(std::string resource_name = kGpuResource, std::vector<Device> devices = {},
                      absl::Status allocate_error = absl::OkStatus())
      : DevicePlugin(std::move(resource_name)),
        devices_(std::move(devices)),
        allocate_error_(std::move(allocate_error)) {}

  absl::StatusOr<std::vector<Device>> Discover() override { return devices_; }

  absl::StatusOr<ContainerAllocation> Allocate(const AllocateRequest& request) override {
    if (!allocate_error_.ok()) return allocate_error_;
    return DefaultAllocate(request);
  }

 private:
  const std::vector<Device> devices_;
  const absl::Status allocate_error_;
};

class PreferringPlugin final : public TestPlugin, public PreferredAllocator {
 public:
  using TestPlugin::TestPlugin;

  absl::StatusOr<std::vector<std::string>> PreferredAllocation(
      const PreferredRequest& request) override {
    std::vector<std::string> ids = request.must_include;
    for (const std::string& id : request.available) {
      if (static_cast<int>(ids.size()) >= request.size) break;
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
  }
};

class PreStartingPlugin final : public TestPlugin, public ContainerPreStarter {
 public:
  using TestPlugin::TestPlugin;

  absl::Status PreStartContainer(const std::vector<std::string>& device_ids) override {
    absl::MutexLock lock(&mu_);
    prestarted_.insert(prestarted_.end(), device_ids.begin(), device_ids.end());
    return absl::OkStatus();
  }

  std::vector<std::string> prestarted() const {
    absl::MutexLock lock(&mu_);
    return prestarted_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> prestarted_ ABSL_GUARDED_BY(mu_);
};

class FailingDiscoveryPlugin final : public DevicePlugin {
 public:
  FailingDiscoveryPlugin() : DevicePlugin(kGpuResource) {}
  absl::StatusOr<std::vector<Device>> Discover() override {
    return absl::UnavailableError("no driver");
  }
};

Device Dev(const std::string& id, Health health = Health::kHealthy, std::vector<int> numa = {}) {
  Device device;
  device.id = id;
  device.health = health;
  device.numa_nodes = std::move(numa);
  return device;
}

std::vector<Device> Inventory() {
  return {Dev("gpu0", Health::kHealthy, {0}), Dev("gpu1", Health::kUnhealthy, {0, 1}), Dev("gpu2")};
}

// One Register call as the fake kubelet saw it, with the outcome of dialling the plugin's
// endpoint from inside the handler (before answering).
struct RecordedRegistration {
  v1beta1::RegisterRequest request;
  grpc::StatusCode dial_code = grpc::StatusCode::UNKNOWN;
  v1beta1::DevicePluginOptions served_options;
};

// The kubelet's side of registration: v1beta1.Registration on <root>/device-plugins/kubelet.sock.
class RecordingKubelet final : public v1beta1::Registration::Service {
 public:
  explicit RecordingKubelet(const TempDir& root)
      : plugins_dir_(root.Path("device-plugins")), socket_path_(plugins_dir_ + "/kubelet.sock") {}
  ~RecordingKubelet() override { Stop(); }

  [[nodiscard]] absl::Status Start() {
    if (absl::Status made = MakeDirectories(plugins_dir_); !made.ok()) return made;
    if (absl::Status removed = RemoveSocketIfPresent(socket_path_); !removed.ok()) return removed;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(socket_path_), grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return absl::InternalError("cannot serve " + socket_path_);
    return absl::OkStatus();
  }

  // Stops serving and removes kubelet.sock, as a dying kubelet leaves the directory.
  void Stop() {
    if (server_ != nullptr) {
      server_->Shutdown(Deadline(absl::Seconds(1)));
      server_.reset();
    }
    (void)RemoveSocketIfPresent(socket_path_);
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    RecordedRegistration recorded;
    recorded.request = *request;
    auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        UnixTarget(plugins_dir_ + "/" + request->endpoint()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(Deadline(absl::Seconds(5)));
    recorded.dial_code =
        stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &recorded.served_options)
            .error_code();
    absl::MutexLock lock(&mu_);
    registrations_.push_back(std::move(recorded));
    return grpc::Status::OK;
  }

  std::vector<RecordedRegistration> registrations() const {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }

  int count() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(registrations_.size());
  }

 private:
  const std::string plugins_dir_;
  const std::string socket_path_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<RecordedRegistration> registrations_ ABSL_GUARDED_BY(mu_);
};

RunnerOptions FastOptions(const TempDir& root) {
  RunnerOptions options;
  options.kubelet_root = root.path();
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  options.shutdown_grace = absl::Milliseconds(200);
  return options;
}

std::vector<std::unique_ptr<DevicePlugin>> One(std::unique_ptr<DevicePlugin> plugin) {
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::move(plugin));
  return plugins;
}

// "id/health/numa,numa" per device: the wire fields ListAndWatch carries.
std::vector<std::string> Summary(const v1beta1::ListAndWatchResponse& response) {
  std::vector<std::string> out;
  for (const v1beta1::Device& device : response.devices()) {
    std::string line = device.id() + "/" + device.health() + "/";
    if (device.has_topology()) {
      for (int i = 0; i < device.topology().nodes_size(); ++i) {
        if (i > 0) line += ",";
        line += std::to_string(device.topology().nodes(i).id());
      }
    } else {
      line += "-";
    }
    out.push_back(line);
  }
  return out;
}

// An open ListAndWatch stream.
struct Stream {
  explicit Stream(v1beta1::DevicePlugin::Stub& stub) {
    context.set_deadline(Deadline());
    reader = stub.ListAndWatch(&context, v1beta1::Empty());
  }
  bool Read(v1beta1::ListAndWatchResponse* response) { return reader->Read(response); }

  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader;
};

// A client context whose call fails rather than hangs.
struct CallContext : grpc::ClientContext {
  CallContext() { set_deadline(Deadline()); }
};

// Each test gets a kubelet root of its own; the helpers start the pieces a scenario needs and
// fail the test (use them under ASSERT_NO_FATAL_FAILURE) when one does not start.
class PluginRunnerTest : public ::testing::Test {
 protected:
  // Starts a RecordingKubelet on root_, replacing (and first stopping) any earlier one.
  void StartKubelet() {
    kubelet_.reset();
    kubelet_ = std::make_unique<RecordingKubelet>(root_);
    ASSERT_TRUE(kubelet_->Start().ok());
  }

  // Creates runner_ serving `plugin` alone, and starts it.
  void StartRunner(std::unique_ptr<DevicePlugin> plugin = InventoryPlugin(),
                   std::optional<RunnerOptions> options = std::nullopt) {
    ASSERT_NO_FATAL_FAILURE(CreateRunner(std::move(plugin), std::move(options)));
    ASSERT_TRUE(runner_->Start().ok());
  }

  // Creates runner_ serving `plugin` alone, with FastOptions(root_) unless `options` is given.
  void CreateRunner(std::unique_ptr<DevicePlugin> plugin,
                    std::optional<RunnerOptions> options = std::nullopt) {
    absl::StatusOr<std::unique_ptr<PluginRunner>> runner = PluginRunner::Create(
        options.has_value() ? *std::move(options) : FastOptions(root_), One(std::move(plugin)));
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(runner).value();
  }

  // Starts runner_ for a TestPlugin with Inventory(), kept in inventory_plugin_ to drive health.
  void StartInventoryRunner() {
    auto plugin = std::make_unique<TestPlugin>(kGpuResource, Inventory());
    inventory_plugin_ = plugin.get();
    ASSERT_NO_FATAL_FAILURE(StartRunner(std::move(plugin)));
  }

  // Starts a kubelet and a runner for `plugin`, and waits for the first registration.
  void StartRegistered(std::unique_ptr<DevicePlugin> plugin = InventoryPlugin()) {
    ASSERT_NO_FATAL_FAILURE(StartKubelet());
    ASSERT_NO_FATAL_FAILURE(StartRunner(std::move(plugin)));
    ASSERT_TRUE(runner_->WaitForRegistrations(1, kTimeout));
  }

  // The one Register call the kubelet has seen.
  void OnlyRegistration(RecordedRegistration* got) {
    std::vector<RecordedRegistration> registrations = kubelet_->registrations();
    ASSERT_EQ(registrations.size(), 1u);
    *got = registrations[0];
  }

  static std::unique_ptr<DevicePlugin> InventoryPlugin() {
    return std::make_unique<TestPlugin>(kGpuResource, Inventory());
  }

  absl::StatusOr<std::unique_ptr<PluginRunner>> Create(
      std::vector<std::unique_ptr<DevicePlugin>> plugins) {
    return PluginRunner::Create(FastOptions(root_), std::move(plugins));
  }

  std::string PluginSocket() const { return root_.Path("device-plugins/") + kSocketName; }

  // A client of the runner's plugin socket, dialled on first use.
  v1beta1::DevicePlugin::Stub& Plugin() {
    if (stub_ == nullptr) {
      stub_ = v1beta1::DevicePlugin::NewStub(
          grpc::CreateChannel(UnixTarget(PluginSocket()), grpc::InsecureChannelCredentials()));
    }
    return *stub_;
  }

  // The members stop in reverse: client, runner, kubelet, then the directory goes.
  TempDir root_;
  std::unique_ptr<RecordingKubelet> kubelet_;
  std::unique_ptr<PluginRunner> runner_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  TestPlugin* inventory_plugin_ = nullptr;  // Owned by runner_; set by StartInventoryRunner().
};

// ---------------------------------------------------------------------------------------------
// Create

TEST_F(PluginRunnerTest, CreateRejectsAnInvalidResourceName) {
  const std::vector<std::string> names = {"gpu", "kubernetes.io/gpu", "Example.com/gpu",
                                          "example.com/a/b", "requests.example.com/gpu"};
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<PluginRunner>> runner =
        Create(One(std::make_unique<TestPlugin>(name)));
    EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(runner.status().message(), "the ResourceName \"" + name + "\" is invalid");
  }
}

TEST_F(PluginRunnerTest, CreateRejectsAResourceServedTwice) {
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<TestPlugin>());
  plugins.push_back(std::make_unique<TestPlugin>("example.com/fpga"));
  plugins.push_back(std::make_unique<TestPlugin>());
  absl::StatusOr<std::unique_ptr<PluginRunner>> runner = Create(std::move(plugins));
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(runner.status().message(), HasSubstr(kGpuResource));
}

TEST_F(PluginRunnerTest, CreateRejectsAnEmptyPluginList) {
  EXPECT_EQ(Create({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PluginRunnerTest, CreateRejectsANullPlugin) {
  EXPECT_EQ(Create(One(nullptr)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PluginRunnerTest, CreateRejectsASocketPathOverTheUnixLimit) {
  RunnerOptions options;
  options.kubelet_root = "/tmp/" + std::string(100, 'x');
  absl::StatusOr<std::unique_ptr<PluginRunner>> runner =
      PluginRunner::Create(options, One(std::make_unique<TestPlugin>()));
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PluginRunnerTest, SocketNameReplacesTheSlash) {
  EXPECT_EQ(SocketNameFor("example.com/gpu"), "example.com_gpu.sock");
  EXPECT_EQ(SocketNameFor("example.com/gpu", "pod-x7k2p"), "example.com_gpu-pod-x7k2p.sock");
}

TEST_F(PluginRunnerTest, CreateRejectsABadSocketSuffix) {
  for (const std::string& suffix : {std::string("a/b"), std::string("a b"), std::string(65, 'x')}) {
    RunnerOptions options = FastOptions(root_);
    options.socket_suffix = suffix;
    absl::StatusOr<std::unique_ptr<PluginRunner>> runner =
        PluginRunner::Create(options, One(std::make_unique<TestPlugin>()));
    EXPECT_EQ(runner.status().code(), absl::StatusCode::kInvalidArgument) << suffix;
    EXPECT_THAT(runner.status().message(), HasSubstr("socket suffix")) << suffix;
  }
}

// A rolling update without a suffix: the new instance takes the socket path over. The old one
// must not fight for it (re-serving would delete the new instance's socket); when it stops, gRPC
// unlinks the path, and the new instance serves again by itself.
TEST_F(PluginRunnerTest, AnInstanceThatTookTheSocketOverKeepsIt) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_TRUE(IsSocket(PluginSocket()));
  absl::StatusOr<std::unique_ptr<PluginRunner>> successor =
      PluginRunner::Create(FastOptions(root_), One(std::make_unique<TestPlugin>()));
  ASSERT_TRUE(successor.ok()) << successor.status();
  ASSERT_TRUE((*successor)->Start().ok());
  struct stat taken {};
  ASSERT_EQ(::lstat(PluginSocket().c_str(), &taken), 0);
  // Longer than the old runner's 1 s re-check: it has noticed by then.
  absl::SleepFor(absl::Milliseconds(1500));
  struct stat later {};
  ASSERT_EQ(::lstat(PluginSocket().c_str(), &later), 0);
  EXPECT_EQ(later.st_ino, taken.st_ino) << "the old instance re-served over the new one";
  runner_->Stop();
  EXPECT_TRUE(WaitUntil([&] { return IsSocket(PluginSocket()); }))
      << "the new instance serves again";
  (*successor)->Stop();
  EXPECT_FALSE(IsSocket(PluginSocket())) << "the owner removes its own socket";
}

// ---------------------------------------------------------------------------------------------
// Start and registration

TEST_F(PluginRunnerTest, StartFailsWithDiscoverError) {
  ASSERT_NO_FATAL_FAILURE(CreateRunner(std::make_unique<FailingDiscoveryPlugin>()));
  absl::Status status = runner_->Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("no driver"));
  runner_->Stop();
}

TEST_F(PluginRunnerTest, StartTwiceIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(StartRunner(std::make_unique<TestPlugin>()));
  EXPECT_EQ(runner_->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PluginRunnerTest, ServesBeforeRegisteringAndSendsTheRegisterFields) {
  ASSERT_NO_FATAL_FAILURE(StartRegistered());
  EXPECT_EQ(runner_->registrations(), 1);

  RecordedRegistration got;
  ASSERT_NO_FATAL_FAILURE(OnlyRegistration(&got));
  EXPECT_EQ(got.dial_code, grpc::StatusCode::OK) << "plugin socket not served at Register";
  EXPECT_EQ(got.request.version(), "v1beta1");
  EXPECT_EQ(got.request.endpoint(), kSocketName);
  EXPECT_EQ(got.request.resource_name(), kGpuResource);
  EXPECT_FALSE(got.request.options().get_preferred_allocation_available());
  EXPECT_FALSE(got.request.options().pre_start_required());
}

TEST_F(PluginRunnerTest, AdvertisesPreferredAllocation) {
  ASSERT_NO_FATAL_FAILURE(
      StartRegistered(std::make_unique<PreferringPlugin>(kGpuResource, Inventory())));

  RecordedRegistration got;
  ASSERT_NO_FATAL_FAILURE(OnlyRegistration(&got));
  EXPECT_EQ(got.dial_code, grpc::StatusCode::OK);
  EXPECT_TRUE(got.request.options().get_preferred_allocation_available());
  EXPECT_FALSE(got.request.options().pre_start_required());
  EXPECT_TRUE(got.served_options.get_preferred_allocation_available());
  EXPECT_FALSE(got.served_options.pre_start_required());
}

TEST_F(PluginRunnerTest, AdvertisesPreStartRequired) {
  ASSERT_NO_FATAL_FAILURE(
      StartRegistered(std::make_unique<PreStartingPlugin>(kGpuResource, Inventory())));

  RecordedRegistration got;
  ASSERT_NO_FATAL_FAILURE(OnlyRegistration(&got));
  EXPECT_EQ(got.dial_code, grpc::StatusCode::OK);
  EXPECT_TRUE(got.request.options().pre_start_required());
  EXPECT_FALSE(got.request.options().get_preferred_allocation_available());
  EXPECT_TRUE(got.served_options.pre_start_required());
}

TEST_F(PluginRunnerTest, RegistersEveryPluginOnItsOwnSocket) {
  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  plugins.push_back(InventoryPlugin());
  plugins.push_back(std::make_unique<TestPlugin>("example.com/fpga"));
  absl::StatusOr<std::unique_ptr<PluginRunner>> runner = Create(std::move(plugins));
  ASSERT_TRUE(runner.ok()) << runner.status();
  ASSERT_TRUE((*runner)->Start().ok());
  ASSERT_TRUE((*runner)->WaitForRegistrations(2, kTimeout));

  std::vector<std::string> endpoints;
  for (const RecordedRegistration& got : kubelet_->registrations()) {
    EXPECT_EQ(got.dial_code, grpc::StatusCode::OK) << got.request.endpoint();
    endpoints.push_back(got.request.endpoint());
  }
  std::sort(endpoints.begin(), endpoints.end());
  EXPECT_THAT(endpoints, ElementsAre("example.com_fpga.sock", "example.com_gpu.sock"));
}

TEST_F(PluginRunnerTest, RegistersOnceAKubeletAppears) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  EXPECT_TRUE(IsSocket(PluginSocket()));
  EXPECT_EQ(runner_->registrations(), 0);

  ASSERT_NO_FATAL_FAILURE(StartKubelet());
  ASSERT_TRUE(runner_->WaitForRegistrations(1, kTimeout));
  ASSERT_TRUE(WaitUntil([&] { return kubelet_->count() == 1; }));
  EXPECT_EQ(kubelet_->registrations()[0].dial_code, grpc::StatusCode::OK);
}

TEST_F(PluginRunnerTest, ServesAndRegistersAgainAfterAKubeletRestart) {
  ASSERT_NO_FATAL_FAILURE(StartRegistered());
  ASSERT_TRUE(WaitUntil([&] { return kubelet_->count() >= 1; }));
  const int before = runner_->registrations();

  // What a restarting kubelet does: its server goes, the directory's sockets are removed, and a
  // new kubelet.sock appears.
  kubelet_->Stop();
  kubelet_.reset();
  ASSERT_TRUE(RemoveSocketIfPresent(PluginSocket()).ok());
  ASSERT_NO_FATAL_FAILURE(StartKubelet());

  ASSERT_TRUE(runner_->WaitForRegistrations(before + 1, kTimeout));
  ASSERT_TRUE(WaitUntil([&] { return kubelet_->count() >= 1; }));
  std::vector<RecordedRegistration> registrations = kubelet_->registrations();
  EXPECT_EQ(registrations[0].dial_code, grpc::StatusCode::OK);
  EXPECT_EQ(registrations[0].request.endpoint(), kSocketName);
  EXPECT_TRUE(IsSocket(PluginSocket()));

  // The new server answers ListAndWatch with the inventory.
  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));
  EXPECT_EQ(response.devices_size(), 3);
}

TEST_F(PluginRunnerTest, RegistersAgainWhenOnlyKubeletSockIsRecreated) {
  ASSERT_NO_FATAL_FAILURE(StartRegistered());
  ASSERT_TRUE(WaitUntil([&] { return kubelet_->count() >= 1; }));
  const int before = runner_->registrations();

  ASSERT_NO_FATAL_FAILURE(StartKubelet());  // Stops the first kubelet, then serves anew.
  ASSERT_TRUE(runner_->WaitForRegistrations(before + 1, kTimeout));
  ASSERT_TRUE(WaitUntil([&] { return kubelet_->count() >= 1; }));
  EXPECT_EQ(kubelet_->registrations()[0].dial_code, grpc::StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// ListAndWatch

TEST_F(PluginRunnerTest, ListAndWatchSendsTheFullListFirst) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());

  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));
  EXPECT_THAT(Summary(response),
              ElementsAre("gpu0/Healthy/0", "gpu1/Unhealthy/0,1", "gpu2/Healthy/-"));
}

TEST_F(PluginRunnerTest, ListAndWatchSendsASnapshotOnSetHealth) {
  ASSERT_NO_FATAL_FAILURE(StartInventoryRunner());
  TestPlugin* plugin = inventory_plugin_;

  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));

  std::thread health([plugin] { EXPECT_TRUE(plugin->SetHealth("gpu2", Health::kUnhealthy).ok()); });
  health.join();
  ASSERT_TRUE(stream.Read(&response));
  EXPECT_THAT(Summary(response),
              ElementsAre("gpu0/Healthy/0", "gpu1/Unhealthy/0,1", "gpu2/Unhealthy/-"));

  // A new stream starts from the current state.
  Stream later(Plugin());
  ASSERT_TRUE(later.Read(&response));
  EXPECT_THAT(Summary(response),
              ElementsAre("gpu0/Healthy/0", "gpu1/Unhealthy/0,1", "gpu2/Unhealthy/-"));
}

TEST_F(PluginRunnerTest, ListAndWatchUpdatesEveryOpenStream) {
  ASSERT_NO_FATAL_FAILURE(StartInventoryRunner());
  TestPlugin* plugin = inventory_plugin_;

  Stream first(Plugin());
  Stream second(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(first.Read(&response));
  ASSERT_TRUE(second.Read(&response));

  std::thread health([plugin] { EXPECT_TRUE(plugin->SetHealth("gpu1", Health::kHealthy).ok()); });
  health.join();
  for (Stream* stream : {&first, &second}) {
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_THAT(Summary(response),
                ElementsAre("gpu0/Healthy/0", "gpu1/Healthy/0,1", "gpu2/Healthy/-"));
  }
}

TEST_F(PluginRunnerTest, ListAndWatchEndsWithTheLatestSnapshotAfterABurst) {
  ASSERT_NO_FATAL_FAILURE(StartInventoryRunner());
  TestPlugin* plugin = inventory_plugin_;

  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));

  std::thread health([plugin] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_TRUE(
          plugin->SetHealth("gpu0", i % 2 == 0 ? Health::kUnhealthy : Health::kHealthy).ok());
    }
    EXPECT_TRUE(plugin->SetHealth("gpu2", Health::kUnhealthy).ok());
  });
  health.join();
  // Intermediate snapshots may be coalesced; the last one must arrive.
  std::vector<std::string> want = {"gpu0/Healthy/0", "gpu1/Unhealthy/0,1", "gpu2/Unhealthy/-"};
  while (Summary(response) != want) ASSERT_TRUE(stream.Read(&response));
}

// ---------------------------------------------------------------------------------------------
// Stop

TEST_F(PluginRunnerTest, StopRemovesThePluginSocketAndIsIdempotent) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  ASSERT_TRUE(IsSocket(PluginSocket()));

  runner_->Stop();
  EXPECT_FALSE(IsSocket(PluginSocket()));
  runner_->Stop();
  EXPECT_FALSE(IsSocket(PluginSocket()));
}

TEST_F(PluginRunnerTest, StopMayRunConcurrently) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());
  std::thread other([this] { runner_->Stop(); });
  runner_->Stop();
  other.join();
  EXPECT_FALSE(IsSocket(PluginSocket()));
}

TEST_F(PluginRunnerTest, StopWithoutStartIsHarmless) {
  ASSERT_NO_FATAL_FAILURE(CreateRunner(std::make_unique<TestPlugin>()));
  runner_->Stop();
  runner_->Stop();
  EXPECT_EQ(runner_->registrations(), 0);
}

TEST_F(PluginRunnerTest, StopEndsOpenListAndWatchStreams) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());

  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));
  runner_->Stop();
  EXPECT_FALSE(stream.Read(&response));
  grpc::Status status = stream.reader->Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

// Stop() is documented to cancel the ListAndWatch streams; only other open calls get the grace
// (RunnerOptions::shutdown_grace). A kubelet always holds a stream open, so waiting the grace for
// it would make every Stop() last the whole grace.
TEST_F(PluginRunnerTest, StopDoesNotWaitTheGraceForListAndWatchStreams) {
  RunnerOptions options = FastOptions(root_);
  options.shutdown_grace = absl::Seconds(30);
  ASSERT_NO_FATAL_FAILURE(StartRunner(InventoryPlugin(), options));

  Stream stream(Plugin());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream.Read(&response));
  const absl::Time before = absl::Now();
  runner_->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(10));
  EXPECT_FALSE(stream.Read(&response));
}

// ---------------------------------------------------------------------------------------------
// Unary calls

// An Allocate request with one container per entry of `containers`, each asking for those ids.
v1beta1::AllocateRequest AllocateFor(const std::vector<std::vector<std::string>>& containers) {
  v1beta1::AllocateRequest request;
  for (const std::vector<std::string>& ids : containers) {
    v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
  }
  return request;
}

TEST_F(PluginRunnerTest, AllocateAnswersWithTheDeviceRuntimeFields) {
  Device gpu0 = Dev("gpu0");
  gpu0.specs.emplace_back();
  gpu0.specs[0].container_path = gpu0.specs[0].host_path = "/dev/gpu0";
  gpu0.mounts.emplace_back();
  gpu0.mounts[0].container_path = "/lib/gpu";
  gpu0.mounts[0].host_path = "/opt/gpu";
  gpu0.mounts[0].read_only = true;
  gpu0.envs = {{"GPU", "0"}};
  gpu0.cdi_devices = {"example.com/gpu=gpu0"};
  ASSERT_NO_FATAL_FAILURE(
      StartRunner(std::make_unique<TestPlugin>(kGpuResource, std::vector{gpu0})));

  v1beta1::AllocateResponse response;
  CallContext context;
  grpc::Status status = Plugin().Allocate(&context, AllocateFor({{"gpu0"}}), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& got = response.container_responses(0);
  EXPECT_EQ(got.envs().at("GPU"), "0");
  ASSERT_EQ(got.devices_size(), 1);
  EXPECT_EQ(got.devices(0).host_path(), "/dev/gpu0");
  EXPECT_EQ(got.devices(0).permissions(), "rw");
  ASSERT_EQ(got.mounts_size(), 1);
  EXPECT_TRUE(got.mounts(0).read_only());
  ASSERT_EQ(got.cdi_devices_size(), 1);
  EXPECT_EQ(got.cdi_devices(0).name(), "example.com/gpu=gpu0");
}

TEST_F(PluginRunnerTest, AllocateOfAnUnknownIdIsInvalidArgument) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());

  v1beta1::AllocateResponse response;
  CallContext context;
  grpc::Status status = Plugin().Allocate(&context, AllocateFor({{"gpu0"}, {"gpu7"}}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("gpu7"));
}

TEST_F(PluginRunnerTest, AllocatePassesVendorErrorCodesThrough) {
  ASSERT_NO_FATAL_FAILURE(StartRunner(std::make_unique<TestPlugin>(
      kGpuResource, Inventory(), absl::ResourceExhaustedError("all busy"))));

  v1beta1::AllocateResponse response;
  CallContext context;
  grpc::Status status = Plugin().Allocate(&context, AllocateFor({{"gpu0"}}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("all busy"));
}

TEST_F(PluginRunnerTest, GetPreferredAllocationWithoutTheCapabilityIsUnimplemented) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());

  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  container->add_available_deviceids("gpu0");
  container->set_allocation_size(1);
  v1beta1::PreferredAllocationResponse response;
  CallContext context;
  EXPECT_EQ(Plugin().GetPreferredAllocation(&context, request, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(PluginRunnerTest, GetPreferredAllocationAsksThePlugin) {
  ASSERT_NO_FATAL_FAILURE(
      StartRunner(std::make_unique<PreferringPlugin>(kGpuResource, Inventory())));

  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const char* id : {"gpu0", "gpu1", "gpu2"}) container->add_available_deviceids(id);
  container->add_must_include_deviceids("gpu2");
  container->set_allocation_size(2);
  v1beta1::PreferredAllocationResponse response;
  CallContext context;
  grpc::Status status = Plugin().GetPreferredAllocation(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_THAT(response.container_responses(0).deviceids(), ElementsAre("gpu2", "gpu0"));
}

TEST_F(PluginRunnerTest, PreStartContainerWithoutTheCapabilityIsUnimplemented) {
  ASSERT_NO_FATAL_FAILURE(StartRunner());

  v1beta1::PreStartContainerRequest request;
  request.add_devices_ids("gpu0");
  v1beta1::PreStartContainerResponse response;
  CallContext context;
  EXPECT_EQ(Plugin().PreStartContainer(&context, request, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(PluginRunnerTest, PreStartContainerCallsThePlugin) {
  auto owned = std::make_unique<PreStartingPlugin>(kGpuResource, Inventory());
  PreStartingPlugin* plugin = owned.get();
  ASSERT_NO_FATAL_FAILURE(StartRunner(std::move(owned)));

  v1beta1::PreStartContainerRequest request;
  request.add_devices_ids("gpu0");
  request.add_devices_ids("gpu2");
  v1beta1::PreStartContainerResponse response;
  CallContext context;
  grpc::Status status = Plugin().PreStartContainer(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(plugin->prestarted(), ElementsAre("gpu0", "gpu2"));
}

}  // namespace
}  // namespace kdp
