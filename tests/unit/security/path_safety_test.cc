// Every name a peer or a file can hand kdp that becomes part of a filesystem path is refused when
// it could leave its directory: one test per rule (registration endpoints, plugin GetInfo
// endpoints, DRA driver names, claim UIDs, CDI spec names, resource names, checkpoint and
// registration socket names), each fed `../`, `..`, `.`, absolute paths, embedded '/', NUL bytes
// and the empty name, each checking the error names the input and the rule. Where the name is
// used to write or remove a file, the test also shows that nothing outside the directory changed.
#include "common/path_safety.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/resource_name.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/cdi.h"
#include "kdp/dra_driver.h"
#include "kdp/plugin_runner.h"
#include "manager/src/devicemanager/plugin_watcher_handler.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "sdk/src/dra/checkpoint.h"
#include "sdk/src/dra/node_server.h"
#include "sdk/src/dra/resource_slice.h"
#include "sdk/src/dra/runner_impl.h"
#include "tests/testing/temp_dir.h"
#include "tests/unit/sdk/dra_fake_kube_client.h"

namespace kdp {
namespace {

using namespace std::string_literals;
using ::kdp::testing::DirectoryTree;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Names that would climb out of a directory, name another one, or be cut short by a C API.
std::vector<std::string> EscapingNames() {
  return {"../escape.sock", "../../escape.sock", "..",        ".",     "/etc/passwd",
          "/abs.sock",      "a/b.sock",          "a/../../b", "x\0y"s, ""};
}

void ExpectRefused(const absl::Status& status, const std::string& name, const std::string& rule) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << GoQuote(name) << ": " << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(GoQuote(name))) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(rule)) << status;
}

// ---- The shared rules themselves ----

TEST(PathSafety, FileNameRuleRefusesEverythingButOneComponent) {
  for (const std::string& name : EscapingNames()) {
    ExpectRefused(ValidateFileName("endpoint", name, "/r/device-plugins"), name,
                  "must be a file name in /r/device-plugins, without '/' or \"..\"");
  }
  EXPECT_TRUE(ValidateFileName("endpoint", "gpu.sock", "/d").ok());
  EXPECT_TRUE(ValidateFileName("endpoint", "...", "/d").ok());  // a file name, not a step up
  EXPECT_TRUE(ValidateFileName("endpoint", "a=b:c..d", "/d").ok());
  EXPECT_TRUE(ValidateFileName("endpoint", std::string(kMaxFileNameLength, 'a'), "/d").ok());
  EXPECT_FALSE(ValidateFileName("endpoint", std::string(kMaxFileNameLength + 1, 'a'), "/d").ok());
  // The brief's wording: what, the value as Go quotes it, the rule.
  EXPECT_EQ(ValidateFileName("endpoint", "x\0y"s, "/d").message(),
            "invalid endpoint \"x\\x00y\": must be a file name in /d, without '/' or \"..\" (not "
            "empty, not \".\" or \"..\", no '/' or NUL, at most 255 bytes)");
}

TEST(PathSafety, SocketPathRuleWantsAbsolutePathsWithoutDotDot) {
  for (const std::string& path :
       {"../escape.sock"s, "escape.sock"s, ""s, "/r/plugins/../../escape.sock"s, "/r/.."s,
        "/r/x\0y.sock"s, "/"s + std::string(kMaxUnixSocketPath, 'a')}) {
    ExpectRefused(ValidateSocketPath("endpoint", path), path,
                  "must be an absolute unix socket path without \"..\" components");
  }
  EXPECT_TRUE(ValidateSocketPath("endpoint", "/var/lib/kubelet/plugins/a/dra.sock").ok());
  EXPECT_TRUE(ValidateSocketPath("endpoint", "/r/..a/b...sock").ok());
}

// ---- Registration endpoints (device plugin Register on kubelet.sock) ----

TEST(PathSafety, RegistrationEndpointIsAFileNameInTheDevicePluginsDirectory) {
  const std::string dir = "/r/device-plugins";
  for (const std::string& endpoint : EscapingNames()) {
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_resource_name("example.com/gpu");
    request.set_endpoint(endpoint);
    std::string socket_path = "untouched";
    ExpectRefused(manager::ValidateRegisterRequest(request, dir, &socket_path), endpoint,
                  "must be a file name in /r/device-plugins");
    EXPECT_EQ(socket_path, "untouched");
  }
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_resource_name("example.com/gpu");
  request.set_endpoint("example.com_gpu.sock");
  std::string socket_path;
  ASSERT_TRUE(manager::ValidateRegisterRequest(request, dir, &socket_path).ok());
  EXPECT_EQ(socket_path, "/r/device-plugins/example.com_gpu.sock");
}

// Probe-mode device plugins (plugins_registry) give an absolute endpoint in GetInfo.
TEST(PathSafety, PluginWatcherEndpointIsAnAbsolutePathWithoutDotDot) {
  manager::DevicePluginWatcherHandler handler(nullptr, nullptr);
  for (const std::string& endpoint : {"../../escape.sock"s, "relative.sock"s, ""s,
                                      "/r/device-plugins/../../escape.sock"s, "/r/x\0y.sock"s}) {
    ExpectRefused(handler.ValidatePlugin("example.com/gpu", endpoint, {"v1beta1"}), endpoint,
                  "must be an absolute unix socket path");
  }
  EXPECT_TRUE(
      handler.ValidatePlugin("example.com/gpu", "/r/device-plugins/gpu.sock", {"v1beta1"}).ok());
}

// ---- DRA driver names (GetInfo name; the SDK's plugins/<driver>/) ----

TEST(PathSafety, DriverNamesAreDnsSubdomainsOfAtMost63) {
  std::vector<std::string> names = EscapingNames();
  names.insert(names.end(), {"gpu.example.com/../x", "GPU.example.com", "gpu_example.com",
                             std::string(60, 'a') + ".com"});
  for (const std::string& name : names) {
    ExpectRefused(ValidateDraDriverName(name), name, "must be a DNS subdomain of at most 63");
    // The SDK's check is the same rule.
    EXPECT_FALSE(internal::ValidateDriverName(name).ok()) << GoQuote(name);
  }
  EXPECT_TRUE(ValidateDraDriverName("gpu.example.com").ok());
}

TEST(PathSafety, ManagerRefusesHostileDraDriverNamesAndEndpoints) {
  manager::dra::DraPluginManager manager;
  for (const std::string& name : EscapingNames()) {
    ExpectRefused(manager.ValidatePlugin(name, "/r/plugins/x/dra.sock", {"v1.DRAPlugin"}), name,
                  "must be a DNS subdomain");
    ExpectRefused(manager.RegisterPlugin(name, "/r/plugins/x/dra.sock", {"v1.DRAPlugin"}), name,
                  "must be a DNS subdomain");
  }
  for (const std::string& endpoint :
       {"../../escape.sock"s, "dra.sock"s, "/r/plugins/../../escape.sock"s, "/r/a\0b"s}) {
    ExpectRefused(manager.ValidatePlugin("gpu.example.com", endpoint, {"v1.DRAPlugin"}), endpoint,
                  "must be an absolute unix socket path");
    ExpectRefused(manager.RegisterPlugin("gpu.example.com", endpoint, {"v1.DRAPlugin"}), endpoint,
                  "must be an absolute unix socket path");
  }
  EXPECT_THAT(manager.Instances(), IsEmpty());
  manager.Stop();
}

TEST(PathSafety, SdkRefusesDriverNamesThatWouldLeaveThePluginsDirectory) {
  testing::TempDir root;
  for (const std::string& name : EscapingNames()) {
    absl::StatusOr<DraRunnerOptions> resolved = internal::ResolveDraRunnerOptions(
        DraRunnerOptions{.kubelet_root = root.path(), .node_name = "node-a"}, name);
    ExpectRefused(resolved.status(), name, "must be a DNS subdomain");
  }
  EXPECT_THAT(DirectoryTree(root.path()), IsEmpty());
}

// ---- Registration socket names the SDK creates in plugins_registry ----

TEST(PathSafety, SdkRegistrationSocketNameIsAFileName) {
  testing::TempDir root;
  for (const std::string& name : EscapingNames()) {
    if (name.empty()) continue;  // empty means "<driver>-reg.sock"
    absl::StatusOr<DraRunnerOptions> resolved = internal::ResolveDraRunnerOptions(
        DraRunnerOptions{
            .kubelet_root = root.path(), .node_name = "node-a", .registration_socket_name = name},
        "gpu.example.com");
    EXPECT_EQ(resolved.status().code(), absl::StatusCode::kInvalidArgument) << GoQuote(name);
    EXPECT_THAT(std::string(resolved.status().message()), HasSubstr("registration socket name"));
  }
}

// ---- Claim UIDs (a driver names its CDI spec after the claim) ----

TEST(PathSafety, ClaimUidsAreUids) {
  for (const std::string& uid : EscapingNames()) {
    ExpectRefused(ValidateUid("claim UID", uid), uid, "must be 1 to 128 letters, digits");
  }
  EXPECT_FALSE(ValidateUid("claim UID", "-leading-dash").ok());
  EXPECT_FALSE(ValidateUid("claim UID", std::string(kMaxUidLength + 1, 'a')).ok());
  EXPECT_TRUE(ValidateUid("claim UID", "5b1c3e0a-9d7e-4f7a-8a51-2f3c4d5e6f70").ok());
  EXPECT_TRUE(ValidateUid("claim UID", "uid-1").ok());
}

// A driver that records whether the SDK ever handed it a claim.
class RecordingDriver final : public DraDriver {
 public:
  RecordingDriver() : DraDriver("gpu.example.com") {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override {
    calls += static_cast<int>(claims.size());
    return {};
  }
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override {
    calls += static_cast<int>(claims.size());
    return {};
  }
  absl::StatusOr<std::vector<DraDevice>> Discover() override { return std::vector<DraDevice>{}; }
  int calls = 0;
};

TEST(PathSafety, SdkRefusesHostileClaimUidsBeforeAnythingIsWritten) {
  testing::TempDir dir;
  RecordingDriver driver;
  auto client = std::make_shared<testing::FakeKubeClient>();
  internal::DraNodeServer server(
      &driver, client, internal::DraCheckpoint(dir.Path("checkpoint.json"), "gpu.example.com"), "");
  for (const std::string& uid : EscapingNames()) {
    const ClaimRef ref{.namespace_ = "default", .name = "claim", .uid = uid};
    auto prepared = server.NodePrepareResources({ref});
    ExpectRefused(prepared.status(), uid, "invalid claim UID");
    auto unprepared = server.NodeUnprepareResources({ref});
    ExpectRefused(unprepared.status(), uid, "invalid claim UID");
  }
  EXPECT_EQ(driver.calls, 0);
  EXPECT_THAT(client->requests(), IsEmpty());
  EXPECT_THAT(DirectoryTree(dir.path()), IsEmpty());  // not even the checkpoint
}

// ---- CDI spec names and CDI kinds / device names ----

cdi::Spec ValidSpec() {
  cdi::Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "example.com/gpu";
  spec.devices = {
      {.name = "gpu0", .annotations = {}, .container_edits = {.env = {"GPU=0"}}},
  };
  return spec;
}

TEST(PathSafety, CdiSpecNamesNeverLeaveTheCdiRoot) {
  testing::TempDir base;
  const std::string cdi_root = base.Path("cdi");
  const std::string canary = base.Path("canary");
  ASSERT_EQ(::mkdir(canary.c_str(), 0755), 0);
  std::ofstream(canary + "/victim.json") << "{}";
  const std::set<std::string> before = DirectoryTree(base.path());
  std::vector<std::string> names = EscapingNames();
  names.push_back("../canary/victim");
  for (const std::string& name : names) {
    ExpectRefused(cdi::WriteSpec(cdi_root, name, ValidSpec()), name, "invalid CDI spec name");
    ExpectRefused(cdi::RemoveSpec(cdi_root, name), name, "invalid CDI spec name");
  }
  EXPECT_FALSE(
      cdi::WriteSpec(cdi_root, std::string(cdi::kMaxSpecNameLength + 1, 'a'), ValidSpec()).ok());
  EXPECT_EQ(DirectoryTree(base.path()), before);  // the CDI root not even created; the victim kept

  // A transient spec name built from a hostile claim UID stays one file in the CDI root.
  const std::string transient = cdi::TransientSpecName("example.com", "gpu", "../../canary/x");
  ASSERT_TRUE(ValidateFileName("CDI spec name", transient, cdi_root).ok()) << transient;
  ASSERT_TRUE(cdi::WriteSpec(cdi_root, transient, ValidSpec()).ok());
  std::set<std::string> after = before;
  after.insert("d cdi");
  after.insert(absl::StrCat("f cdi/", transient, ".json"));
  EXPECT_EQ(DirectoryTree(base.path()), after);
}

TEST(PathSafety, CdiKindsAndDeviceNamesRefusePathCharacters) {
  for (const std::string& kind :
       {"../gpu"s, "example.com/../gpu"s, "/gpu"s, "example.com/a/b"s, "example.com/g\0pu"s, ""s}) {
    cdi::Spec spec = ValidSpec();
    spec.kind = kind;
    EXPECT_EQ(cdi::Validate(spec).code(), absl::StatusCode::kInvalidArgument) << GoQuote(kind);
  }
  for (const std::string& name : EscapingNames()) {
    cdi::Spec spec = ValidSpec();
    spec.devices[0].name = name;
    EXPECT_EQ(cdi::Validate(spec).code(), absl::StatusCode::kInvalidArgument) << GoQuote(name);
    EXPECT_FALSE(
        cdi::ParseQualifiedName(absl::StrCat("example.com/gpu=", name), nullptr, nullptr).ok())
        << GoQuote(name);
  }
}

// ---- Resource names (Register's resource_name; the SDK's socket names) ----

TEST(PathSafety, ResourceNamesAreExtendedResourceNames) {
  // A resource name has exactly one '/' ("a/b.sock" is a valid one): it is never a path itself,
  // the SDK's socket name replaces the '/' (SocketNameFor), and every other escape is refused.
  std::vector<std::string> names;
  for (const std::string& name : EscapingNames()) {
    if (name != "a/b.sock") names.push_back(name);
  }
  names.insert(names.end(), {"example.com/../gpu", "example.com/a/b", "../example.com/gpu",
                             "example.com/..", "example.com/gpu\0x"s});
  for (const std::string& name : names) {
    ExpectRefused(ValidateExtendedResourceName(name), name, "is invalid");
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_resource_name(name);
    request.set_endpoint("gpu.sock");
    std::string socket_path;
    ExpectRefused(manager::ValidateRegisterRequest(request, "/r/device-plugins", &socket_path),
                  name, "the ResourceName");
  }
  // A valid resource name gives the SDK a socket name that is one file name.
  ASSERT_TRUE(ValidateExtendedResourceName("example.com/gpu").ok());
  EXPECT_TRUE(
      ValidateFileName("socket name", SocketNameFor("example.com/gpu", "pod-1"), "/d").ok());
}

// ---- Checkpoint names ----

TEST(PathSafety, DraCheckpointNameIsAFileName) {
  testing::TempDir base;
  for (const std::string& name : EscapingNames()) {
    ExpectRefused(manager::dra::Checkpointer::Create(base.Path("kubelet"), name).status(), name,
                  "invalid DRA checkpoint name");
  }
  EXPECT_THAT(DirectoryTree(base.path()), IsEmpty());
}

}  // namespace
}  // namespace kdp
