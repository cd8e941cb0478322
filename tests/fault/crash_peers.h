// Peers of kdp-manager that hold a call until they are killed, for the crash suite
// (crash_rounds_test.cc): a device plugin (the tests' StubPlugin) whose Allocate never answers,
// and a DRA driver (hold.example.com, one device dev0) whose NodePrepareResources never answers
// (or, not holding, prepares every claim as dev0). They run as separate processes, so that the
// test can SIGKILL them in the middle of the call: the test binary itself, run with
// --gtest_also_run_disabled_tests and a filter naming a CrashPeer.DISABLED_* entry whose body is
// ServeHeldDevicePlugin() or ServeHeldDraDriver(), configured by KDP_PEER_ROOT (the kubelet
// root), KDP_PEER_DIR (where they leave files for the test: `allocate-held` / `prepare-held`
// once a call is held, `calls` logging "prepare <claim uid>" / "unprepare <claim uid>") and
// KDP_PEER_HOLD ("1": hold). PeerFixture starts them and reads what they leave.
//
// Thread-safety: the peers' handlers run on gRPC threads and only append to files; PeerFixture
// is used from the test's main thread.
#ifndef KDP_TESTS_FAULT_CRASH_PEERS_H_
#define KDP_TESTS_FAULT_CRASH_PEERS_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "dra/v1/api.grpc.pb.h"
#include "tests/fault/crash_fixture.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

inline constexpr char kStubResource[] = "example.com/stub";
inline constexpr char kHoldDriver[] = "hold.example.com";
inline constexpr char kHoldCdiId[] = "hold.example.com/dev=dev0";

inline std::string PeerEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

inline void AppendLine(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n";
}

// The DRA side of the held peer: NodePrepareResources creates `<dir>/prepare-held` and waits
// until the process is killed (hold) or prepares every claim as dev0; calls are logged to
// `<dir>/calls` as "prepare <uid>" / "unprepare <uid>".
class PeerDraPlugin final : public drapb::DRAPlugin::Service {
 public:
  PeerDraPlugin(std::string dir, bool hold) : dir_(std::move(dir)), hold_(hold) {}
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drapb::NodePrepareResourcesRequest* request,
                                    drapb::NodePrepareResourcesResponse* response) override {
    for (const drapb::Claim& claim : request->claims()) {
      AppendLine(dir_ + "/calls", "prepare " + claim.uid());
    }
    if (hold_) {
      AppendLine(dir_ + "/prepare-held", "held");
      while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    for (const drapb::Claim& claim : request->claims()) {
      drapb::Device* device = (*response->mutable_claims())[claim.uid()].add_devices();
      device->set_pool_name(kDraNode);
      device->set_device_name("dev0");
      device->add_cdi_device_ids(kHoldCdiId);
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const drapb::NodeUnprepareResourcesRequest* request,
                                      drapb::NodeUnprepareResourcesResponse* response) override {
    for (const drapb::Claim& claim : request->claims()) {
      AppendLine(dir_ + "/calls", "unprepare " + claim.uid());
      (*response->mutable_claims())[claim.uid()];
    }
    return grpc::Status::OK;
  }

 private:
  const std::string dir_;
  const bool hold_;
};

// The device-plugin peer: example.com/stub with dev0..dev3 on <root>/device-plugins/stub.sock;
// with KDP_PEER_HOLD=1 every Allocate is held (and `allocate-held` written). Serves until killed
// (at most 5 minutes).
inline void ServeHeldDevicePlugin() {
  const std::string root = PeerEnv("KDP_PEER_ROOT"), dir = PeerEnv("KDP_PEER_DIR");
  if (root.empty()) GTEST_SKIP() << "a peer process of CrashRounds, not a test";
  StubPlugin stub(root + "/device-plugins/stub.sock");
  ASSERT_TRUE(stub.Start().ok());
  stub.SetDevices({MakeDevice("dev0"), MakeDevice("dev1"), MakeDevice("dev2"), MakeDevice("dev3")});
  if (PeerEnv("KDP_PEER_HOLD") == "1") stub.Hold(StubPlugin::Call::kAllocate);
  ASSERT_TRUE(StubPlugin::Register(root + "/device-plugins/kubelet.sock", "v1beta1", "stub.sock",
                                   kStubResource)
                  .ok());
  bool told = false;
  WaitUntil(
      [&] {
        if (!told && stub.waiting(StubPlugin::Call::kAllocate) > 0) {
          AppendLine(dir + "/allocate-held", "held");
          told = true;
        }
        return false;
      },
      absl::Minutes(5), absl::Milliseconds(5));
}

// The DRA peer: hold.example.com's DRA and registration sockets; see PeerDraPlugin.
inline void ServeHeldDraDriver() {
  const std::string root = PeerEnv("KDP_PEER_ROOT"), dir = PeerEnv("KDP_PEER_DIR");
  if (root.empty()) GTEST_SKIP() << "a peer process of CrashRounds, not a test";
  const std::string socket = root + "/plugins/hold.example.com/dra.sock";
  PeerDraPlugin dra(dir, PeerEnv("KDP_PEER_HOLD") == "1");
  FakeRegistration registration(
      FakeRegistration::Info("DRAPlugin", kHoldDriver, socket, {"v1.DRAPlugin"}));
  std::unique_ptr<grpc::Server> dra_server = ServeUnix(socket, {&dra});
  ASSERT_NE(dra_server, nullptr);
  std::unique_ptr<grpc::Server> registration_server =
      ServeUnix(root + "/plugins_registry/hold.example.com-reg.sock", {&registration});
  ASSERT_NE(registration_server, nullptr);
  WaitUntil([] { return false; }, absl::Minutes(5), absl::Milliseconds(50));
}

class PeerFixture : public FaultFixture {
 protected:
  // This binary run as the peer `test` (CrashPeer.DISABLED_<test>); its files go to PeerDir().
  std::unique_ptr<Subprocess> StartPeer(const std::string& test, bool hold) {
    // The call log stays: it counts calls over every instance of the peer.
    std::filesystem::create_directories(PeerDir());
    std::filesystem::remove(PeerDir() + "/allocate-held");
    std::filesystem::remove(PeerDir() + "/prepare-held");
    auto peer = Subprocess::Start(
        {std::filesystem::read_symlink("/proc/self/exe").string(),
         "--gtest_also_run_disabled_tests", "--gtest_filter=CrashPeer.DISABLED_" + test},
        {.env = {{"KDP_PEER_ROOT", Root()},
                 {"KDP_PEER_DIR", PeerDir()},
                 {"KDP_PEER_HOLD", hold ? "1" : "0"}}});
    EXPECT_TRUE(peer.ok()) << peer.status();
    return peer.ok() ? std::move(*peer) : nullptr;
  }
  std::string PeerDir() const { return scratch_.Path("peer"); }
  static void Kill(std::unique_ptr<Subprocess>& process) {
    ASSERT_TRUE(process->Signal(SIGKILL).ok());
    ASSERT_TRUE(process->Wait(absl::Seconds(20)).ok());
  }
  // Lines of the DRA peer's call log.
  std::vector<std::string> PeerCalls() const {
    std::vector<std::string> lines =
        absl::StrSplit(ReadFile(PeerDir() + "/calls"), '\n', absl::SkipEmpty());
    return lines;
  }

  // The DRA peer (hold.example.com, one device dev0) registered, its slice published (as its
  // driver would), and its device class and claim "hold-claim" (REQUIRES: the manager runs).
  void StartHoldDriver(bool hold) {
    driver_ = StartPeer("DraDriver", hold);
    ASSERT_NE(driver_, nullptr);
    ASSERT_TRUE(WaitUntil([&] { return DriverConnected(kHoldDriver); })) << DriverLogs();
    // Published again after each manager start, which deletes the node's slices.
    if (SliceDevices(kHoldDriver) == 1) return;
    nlohmann::json slice = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceSlice"},
        {"metadata", {{"name", "node-a-hold.example.com"}}},
        {"spec",
         {{"driver", kHoldDriver},
          {"nodeName", kDraNode},
          {"pool", {{"name", kDraNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
          {"devices", {{{"name", "dev0"}}}}}}};
    HttpResponse posted = Api("POST", "/apis/resource.k8s.io/v1/resourceslices", slice.dump());
    ASSERT_EQ(posted.status, 201) << posted.error << posted.body;
    if (GetClaim("hold-claim").status == 200) return;
    KdpctlResult objects = ApplyYaml(absl::StrCat(DeviceClass(kHoldDriver, kHoldDriver), "---\n",
                                                  Claim("hold-claim", 1, "", kHoldDriver)));
    ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  }
  // How often the DRA peer logged `call` ("prepare"/"unprepare") for claim `uid`.
  int PeerCallCount(const std::string& call, const std::string& uid) const {
    int n = 0;
    for (const std::string& line : PeerCalls()) n += line == call + " " + uid ? 1 : 0;
    return n;
  }
  // "" when hold-claim is neither allocated nor reserved, else the claim.
  std::string HoldClaimHeld() const {
    HttpResponse claim = GetClaim("hold-claim");
    if (claim.status != 200) return claim.error + claim.body;
    const nlohmann::json status = claim.json.value("status", nlohmann::json::object());
    const bool free = !status.contains("allocation") &&
                      (!status.contains("reservedFor") || status["reservedFor"].empty());
    return free ? "" : claim.body;
  }
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_FAULT_CRASH_PEERS_H_
