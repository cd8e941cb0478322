// Security of a running node, end to end with real processes (kdp-manager, kdp-gpu-plugin,
// kdp-dra-driver, kdpctl) in a temporary kubelet root:
//  - every socket, directory and state file under the kubelet root is not world-accessible
//    (sockets 0600, directories 0750 or tighter, kdp/ 0700, files 0600/0640, kubeconfig 0600),
//    with every process started under umask 0, so the modes come from the code, not the umask;
//  - hostile peers (a device plugin registering "../../escape.sock" and friends on kubelet.sock,
//    registration sockets in plugins_registry advertising path-escaping driver names and
//    endpoints, a "kubelet" sending path-escaping claim UIDs to the DRA driver) are refused with
//    errors naming the input and the rule, and nothing is written outside the kubelet root or the
//    CDI root: the root's tree is the same before and after, and canary directories next to the
//    root stay empty;
//  - the local resource API answers 401 with a Status to requests without the bearer token (or
//    with a wrong one) and listens on loopback only (/proc/<pid>/net/tcp, and a connection to a
//    non-loopback address of this host is refused).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/resource_name.h"
#include "dra/v1/api.grpc.pb.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/stub_plugin.h"

namespace kdp::testing {
namespace {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;
using namespace std::string_literals;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode;
}

class SecurityE2ETest : public DraE2ETest {
 protected:
  void SetUp() override {
    // Next to the root, as a "../" would find them.
    canary_ = Root() + "-canary";
    outside_ = Root() + "-outside";
    ASSERT_EQ(::mkdir(canary_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(outside_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::error_code error;
    std::filesystem::remove_all(canary_, error);
    std::filesystem::remove_all(outside_, error);
  }

  static std::string Base(const std::string& path) { return kdp::BaseName(path); }

  // The canary must stay empty, whatever a peer asked for.
  void ExpectCanaryEmpty() {
    EXPECT_THAT(DirectoryTree(canary_, /*skip_hidden=*/true), IsEmpty())
        << "a peer made kdp write next to the kubelet root";
  }

  // What is under the root now is what was there `before`, plus at most the state files the
  // manager and the driver write on their own in the meantime (compaction, health state): no
  // name a peer chose.
  void ExpectNothingNewBut(const std::set<std::string>& before) {
    std::set<std::string> allowed = before;
    allowed.insert({"f device-plugins/kubelet_internal_checkpoint", "f kdp/pods.json",
                    "f kdp/resources.json", "f kdp/resources.journal", "f kdp/journal",
                    "f dra_manager_state", "f dra_health_state"});
    for (const std::string& entry : DirectoryTree(Root(), /*skip_hidden=*/true)) {
      EXPECT_TRUE(allowed.contains(entry)) << "unexpected " << entry;
    }
  }

  std::string canary_;
  std::string outside_;
};

// ---- Modes ----------------------------------------------------------------------------------

TEST_F(SecurityE2ETest, NothingUnderTheKubeletRootIsWorldAccessible) {
  const mode_t previous = ::umask(0);  // the children inherit it: the widest possible
  StartDraManager({"--compaction-delay", "100ms"});
  StartGpuPlugin();
  StartDriver();
  ::umask(previous);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  ASSERT_TRUE(WaitForAllocatable("example.com/gpu", 8)) << plugin_->Output();
  // State everywhere: a device-plugin pod (checkpoint, journal, pods.json) and a DRA pod
  // (resources.json, dra_manager_state, the driver's checkpoint and CDI spec).
  ASSERT_EQ(Apply(GpuPod("dp-pod", 1)).exit_code, 0);
  nlohmann::json pod = ApplyPod(ExampleManifests());
  ASSERT_TRUE(pod.value("admitted", false)) << pod.dump();
  const std::vector<std::string> expected = {"kdp/manager.sock",
                                             "kdp/kubeconfig",
                                             "kdp/ca.crt",
                                             "kdp/ca.key",
                                             "kdp/apiserver.crt",
                                             "kdp/apiserver.key",
                                             "kdp/journal",
                                             "kdp/pods.json",
                                             "kdp/resources.json",
                                             "kdp/resources.journal",
                                             "kdp/manager.lock",
                                             "dra_manager_state",
                                             "device-plugins/kubelet.sock",
                                             "pod-resources/kubelet.sock",
                                             "device-plugins/kubelet_internal_checkpoint",
                                             "plugins/gpu.example.com/dra.sock",
                                             "plugins_registry/gpu.example.com-reg.sock"};
  ASSERT_TRUE(WaitUntil([&] {
    for (const std::string& name : expected) {
      if (ModeOf(root_.Path(name)) == 0) return false;
    }
    return true;
  })) << "missing one of the expected files";

  int sockets = 0, directories = 0, files = 0;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(Root(), error);
       it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    ASSERT_FALSE(error) << error.message();
    // Lexically: a file renamed away meanwhile (a compaction's temporary) must not throw.
    const std::string rel = it->path().lexically_relative(Root()).string();
    const std::string name = it->path().filename().string();
    // The test's own files (manifests, health file) and the CDI root (checked below).
    if (rel == "cdi" || absl::StartsWith(rel, "cdi/") || absl::StartsWith(name, ".") ||
        (rel.find('/') == std::string::npos &&
         (absl::EndsWith(name, ".yaml") || name == "unhealthy-gpus"))) {
      continue;
    }
    const mode_t mode = ModeOf(it->path().string());
    if (mode == 0) continue;  // gone meanwhile
    const mode_t perm = mode & 07777;
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(perm));
    SCOPED_TRACE(absl::StrCat(rel, " mode ", octal));
    if (S_ISSOCK(mode)) {
      ++sockets;
      EXPECT_EQ(perm, 0600u) << "socket";
    } else if (S_ISDIR(mode)) {
      ++directories;
      EXPECT_EQ(perm & 0027u, 0u) << "directory wider than 0750";
      if (rel == "kdp") {
        EXPECT_EQ(perm, 0700u);
      }
    } else {
      ++files;
      EXPECT_EQ(perm & 0037u, 0u) << "file wider than 0640";
      if (rel == "kdp/kubeconfig") {
        EXPECT_EQ(perm, 0600u);
      }
    }
  }
  // The CDI root is the runtime's: specs are read by it (0644 in 0755), never writable by others.
  EXPECT_EQ(ModeOf(CdiRoot()) & 07777, 0755u);
  const std::vector<std::string> specs = CdiSpecs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(ModeOf(CdiRoot() + "/" + specs[0]) & 07777, 0644u);
  std::cout << "FIGURE: security_e2e sockets_checked " << sockets << "\n"
            << "FIGURE: security_e2e directories_checked " << directories << "\n"
            << "FIGURE: security_e2e files_checked " << files << std::endl;
  EXPECT_GE(sockets, 6);
  ExpectCanaryEmpty();
}

// An empty root would put device-plugins/, kdp/ and plugins_registry/ at the file system's root.
TEST_F(SecurityE2ETest, AnEmptyKubeletRootIsRefused) {
  const bool existed = ModeOf("/kdp") != 0 || ModeOf("/device-plugins") != 0;
  absl::StatusOr<CommandResult> run =
      RunCommand({KDP_MANAGER_BIN, "--kubelet-root", ""}, absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->exit_code, 0);
  EXPECT_THAT(run->out + run->err, HasSubstr("must be a directory path, not empty"));
  if (!existed) {
    EXPECT_EQ(ModeOf("/kdp"), 0u);
    EXPECT_EQ(ModeOf("/device-plugins"), 0u);
  }
}

// ---- Hostile peers --------------------------------------------------------------------------

TEST_F(SecurityE2ETest, HostileDevicePluginEndpointsAreRefused) {
  StartManager({"--compaction-delay", "100ms"});
  ASSERT_FALSE(HasFatalFailure());
  // A real device plugin outside the root: were the endpoint joined unchecked, "../../<outside>"
  // would reach it and the registration would succeed.
  StubPlugin outside(outside_ + "/escape.sock");
  ASSERT_TRUE(outside.Start().ok());
  outside.SetDevices({MakeDevice("d0")});
  const std::set<std::string> before = DirectoryTree(Root(), /*skip_hidden=*/true);
  const std::vector<std::string> endpoints = {
      absl::StrCat("../../", Base(outside_), "/escape.sock"),
      absl::StrCat("../../", Base(canary_), "/escape.sock"),
      "../../escape.sock",
      "..",
      ".",
      outside_ + "/escape.sock",
      "a/b.sock",
      "escape\0.sock"s,
      ""};
  for (const std::string& endpoint : endpoints) {
    absl::Status status =
        StubPlugin::Register(KubeletSocket(), "v1beta1", endpoint, "example.com/hostile");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << GoQuote(endpoint) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(absl::StrCat("invalid endpoint ", GoQuote(endpoint))));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(absl::StrCat("must be a file name in ", PluginsDir())));
  }
  EXPECT_TRUE(Resource("example.com/hostile").is_null()) << Status().dump();
  ExpectNothingNewBut(before);
  ExpectCanaryEmpty();
  const std::string parent = kdp::DirectoryOf(Root());
  EXPECT_EQ(ModeOf(parent + "/escape.sock"), 0u) << "something was created in " << parent;
  outside.Stop();
}

TEST_F(SecurityE2ETest, HostileRegistrationSocketsAreRefused) {
  StartDraManager();
  ASSERT_FALSE(HasFatalFailure());
  const std::string escape = absl::StrCat("../../", Base(canary_), "/dra.sock");
  struct Hostile {
    std::string type;
    std::string name;
    std::string endpoint;
    std::string rule;  // in the error the manager sends back
  };
  const std::vector<Hostile> hostile = {
      {"DRAPlugin", "../../escape", outside_ + "/dra.sock", "must be a DNS subdomain"},
      {"DRAPlugin", "/abs/driver", outside_ + "/dra.sock", "must be a DNS subdomain"},
      {"DRAPlugin", "gpu.example.com/../x", outside_ + "/dra.sock", "must be a DNS subdomain"},
      {"DRAPlugin", "evil\0.example.com"s, outside_ + "/dra.sock", "must be a DNS subdomain"},
      {"DRAPlugin", "evil.example.com", escape, "must be an absolute unix socket path"},
      {"DRAPlugin", "evil.example.com", Root() + "/plugins/../../" + Base(canary_) + "/dra.sock",
       "must be an absolute unix socket path"},
      {"DevicePlugin", "example.com/hostile", "../../escape.sock",
       "must be an absolute unix socket path"},
      {"DevicePlugin", "../../escape", outside_ + "/x.sock", "is invalid"},
  };
  const std::set<std::string> before = DirectoryTree(Root(), /*skip_hidden=*/true);
  std::vector<std::unique_ptr<FakeRegistration>> services;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  std::set<std::string> mine;
  for (size_t i = 0; i < hostile.size(); ++i) {
    const Hostile& h = hostile[i];
    const std::vector<std::string> versions = h.type == "DRAPlugin"
                                                  ? std::vector<std::string>{"v1.DRAPlugin"}
                                                  : std::vector<std::string>{"v1beta1"};
    services.push_back(std::make_unique<FakeRegistration>(
        FakeRegistration::Info(h.type, h.name, h.endpoint, versions)));
    const std::string socket = absl::StrCat(RegistryDir(), "/hostile-", i, ".sock");
    auto server = ServeOnUnixSocket(socket, services.back().get());
    ASSERT_TRUE(server.ok()) << server.status();
    servers.push_back(std::move(*server));
    mine.insert(absl::StrCat("s plugins_registry/hostile-", i, ".sock"));
  }
  for (size_t i = 0; i < hostile.size(); ++i) {
    SCOPED_TRACE(absl::StrCat(hostile[i].type, " ", GoQuote(hostile[i].name), " at ",
                              GoQuote(hostile[i].endpoint)));
    ASSERT_TRUE(WaitUntil([&] { return !services[i]->statuses().empty(); })) << DriverLogs();
    const auto first = services[i]->statuses().front();
    EXPECT_FALSE(first.plugin_registered());
    EXPECT_THAT(first.error(), HasSubstr(hostile[i].rule));
    EXPECT_FALSE(services[i]->registered());
  }
  nlohmann::json status = Status();
  EXPECT_THAT(status["dra_drivers"], IsEmpty()) << status.dump();
  EXPECT_TRUE(Resource("example.com/hostile").is_null()) << status.dump();
  std::set<std::string> before_and_mine = before;
  before_and_mine.insert(mine.begin(), mine.end());
  ExpectNothingNewBut(before_and_mine);
  ExpectCanaryEmpty();
  for (auto& server : servers) ShutdownServer(server);
}

TEST_F(SecurityE2ETest, DriverRefusesHostileClaimUidsFromItsPeer) {
  StartAll();
  ASSERT_FALSE(HasFatalFailure());
  const std::set<std::string> cdi_before = DirectoryTree(CdiRoot(), /*skip_hidden=*/true);
  const std::set<std::string> root_before = DirectoryTree(Root(), /*skip_hidden=*/true);
  auto channel = DialUnixSocket(Root() + "/plugins/gpu.example.com/dra.sock");
  auto stub = drapb::DRAPlugin::NewStub(channel);
  for (const std::string& uid : {absl::StrCat("../../", Base(canary_), "/evil"), "../evil"s, ".."s,
                                 "/etc/evil"s, "a/b"s, "evil\0uid"s, ""s}) {
    drapb::Claim* claim = nullptr;
    drapb::NodePrepareResourcesRequest prepare;
    claim = prepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("claim");
    claim->set_uid(uid);
    drapb::NodePrepareResourcesResponse prepared;
    grpc::ClientContext prepare_context;
    prepare_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status = stub->NodePrepareResources(&prepare_context, prepare, &prepared);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << GoQuote(uid);
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat("invalid claim UID ", GoQuote(uid))));

    drapb::NodeUnprepareResourcesRequest unprepare;
    claim = unprepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("claim");
    claim->set_uid(uid);
    drapb::NodeUnprepareResourcesResponse unprepared;
    grpc::ClientContext unprepare_context;
    unprepare_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    status = stub->NodeUnprepareResources(&unprepare_context, unprepare, &unprepared);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << GoQuote(uid);
  }
  EXPECT_EQ(DirectoryTree(CdiRoot(), /*skip_hidden=*/true), cdi_before);
  ExpectNothingNewBut(root_before);
  ExpectCanaryEmpty();
  EXPECT_TRUE(DriverConnected(kGpuDriver)) << DriverLogs();
}

// ---- The local resource API -----------------------------------------------------------------

struct RawAnswer {
  int status = 0;
  nlohmann::json body = nullptr;
};

// One HTTPS request (`headers` as given, no Authorization added) to 127.0.0.1:`port`, the
// server verified against `ca_pem`.
RawAnswer RawGet(int port, const std::string& path, const std::string& headers,
                 const std::string& ca_pem) {
  HttpAnswer answer = SendHttpRequest({.port = port,
                                       .path = path,
                                       .headers = headers,
                                       .timeout = absl::Seconds(10),
                                       .ca_pem = ca_pem});
  RawAnswer raw{.status = answer.status};
  if (answer.status != 0) {
    raw.body = nlohmann::json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  }
  return raw;
}

// Local addresses of the TCP sockets `pid` listens on, as /proc/<pid>/net/tcp{,6} write them
// ("0100007F:1F90"), found through the socket inodes of /proc/<pid>/fd.
std::vector<std::string> ListeningAddresses(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code error;
  const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
  for (const auto& entry : std::filesystem::directory_iterator(fd_dir, error)) {
    std::error_code link_error;
    const std::string link = std::filesystem::read_symlink(entry.path(), link_error).string();
    absl::string_view target = link;
    if (absl::ConsumePrefix(&target, "socket:[") && absl::ConsumeSuffix(&target, "]")) {
      inodes.insert(std::string(target));
    }
  }
  std::vector<std::string> out;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/net/", table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (fields.size() < 10 || fields[3] != "0A" || !inodes.contains(fields[9])) continue;
      out.push_back(fields[1]);
    }
  }
  return out;
}

TEST_F(SecurityE2ETest, ResourceApiWantsTheTokenAndListensOnLoopbackOnly) {
  StartDraManager();
  ASSERT_FALSE(HasFatalFailure());
  auto [server, token] = ApiCredentials();
  absl::string_view rest = server;
  ASSERT_TRUE(absl::ConsumePrefix(&rest, "https://127.0.0.1:")) << server;
  const std::string ca = ApiCa();
  ASSERT_FALSE(ca.empty());
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(rest, &port)) << server;
  ASSERT_EQ(token.size(), 64u);

  std::string wrong = token;
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  for (const std::string& headers :
       {""s, absl::StrCat("Authorization: Bearer ", wrong, "\r\n"),
        absl::StrCat("Authorization: ", token, "\r\n"),
        absl::StrCat("Authorization: Basic ", token, "\r\n"),
        absl::StrCat("Authorization: Bearer ", token, "x\r\n"), "Authorization: Bearer \r\n"s}) {
    for (const char* path : {"/apis/resource.k8s.io/v1/resourceclaims", "/version", "/api"}) {
      RawAnswer answer = RawGet(port, path, headers, ca);
      SCOPED_TRACE(absl::StrCat(path, " with ", GoQuote(headers)));
      EXPECT_EQ(answer.status, 401);
      ASSERT_TRUE(answer.body.is_object());
      EXPECT_EQ(answer.body.value("kind", ""), "Status");
      EXPECT_EQ(answer.body.value("apiVersion", ""), "v1");
      EXPECT_EQ(answer.body.value("status", ""), "Failure");
      EXPECT_EQ(answer.body.value("reason", ""), "Unauthorized");
      EXPECT_EQ(answer.body.value("code", 0), 401);
    }
  }
  RawAnswer ok = RawGet(port, "/apis/resource.k8s.io/v1/resourceclaims",
                        absl::StrCat("Authorization: Bearer ", token, "\r\n"), ca);
  EXPECT_EQ(ok.status, 200);
  // Never in the clear: the right token over plain HTTP gets no HTTP answer.
  HttpAnswer plain =
      SendHttpRequest({.port = port,
                       .path = "/version",
                       .headers = absl::StrCat("Authorization: Bearer ", token, "\r\n"),
                       .timeout = absl::Seconds(10)});
  EXPECT_EQ(plain.status, 0) << plain.body;
  // The TLS keys of the API are the manager's alone.
  for (const char* key : {"/kdp/ca.key", "/kdp/apiserver.key"}) {
    struct stat st {};
    ASSERT_EQ(::stat((Root() + key).c_str(), &st), 0) << key;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << key;
  }

  // Every TCP socket the manager listens on is bound to loopback.
  const std::vector<std::string> listening = ListeningAddresses(manager_->pid());
  char port_hex[8];
  std::snprintf(port_hex, sizeof(port_hex), "%04X", port);
  ASSERT_THAT(listening, ::testing::Contains(absl::StrCat("0100007F:", port_hex)));
  for (const std::string& address : listening) {
    EXPECT_TRUE(absl::StartsWith(address, "0100007F:") ||
                absl::StartsWith(address, "00000000000000000000000001000000:"))
        << "listening on a non-loopback address: " << address;
  }
  std::cout << "FIGURE: security_e2e manager_tcp_listeners " << listening.size() << std::endl;

  // And a connection to a non-loopback address of this host finds nobody there.
  ifaddrs* interfaces = nullptr;
  ASSERT_EQ(::getifaddrs(&interfaces), 0);
  std::string tried;
  for (ifaddrs* i = interfaces; i != nullptr && tried.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    sockaddr_in address = *reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if ((ntohl(address.sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
    tried = text;
    address.sin_port = htons(static_cast<uint16_t>(port));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    const int connected =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    const int saved = errno;
    ::close(fd);
    EXPECT_NE(connected, 0) << "the resource API answered on " << tried;
    EXPECT_EQ(saved, ECONNREFUSED) << tried;
  }
  ::freeifaddrs(interfaces);
  std::cout << (tried.empty() ? "no non-loopback IPv4 address on this host; not tried"
                              : "connection to " + tried + " refused")
            << std::endl;
}

}  // namespace
}  // namespace kdp::testing
