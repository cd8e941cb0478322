// Node: one manager in-process over a temporary kubelet root. Start-up order (nothing registers
// against a socket before it is served; PodResources, then the admin socket, last), shutdown in
// reverse (plugins first, the admin socket still answering while kubelet.sock goes), Stop
// idempotent and concurrent, and failures at Create (an explicit metrics address already bound,
// a corrupt checkpoint under strict_checkpoint) and half-way through Start (the admin socket's
// path taken) that return the error naming the input and leave nothing served or running.
#include "manager/src/node/node.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/node/manager_options.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::manager {

class NodeTestPeer {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Create(
      ManagerOptions options, std::function<void(std::string_view)> observer) {
    return Node::Create(std::move(options), std::move(observer));
  }
};

namespace {

using ::kdp::testing::TempDir;
using ::kdp::testing::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// True when something accepts connections on the unix socket `path`.
bool Answers(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

// True when something accepts TCP connections on 127.0.0.1:`port`.
bool TcpAnswers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

// The name of thread `tid` of this process.
std::string ThreadName(const char* tid) {
  std::ifstream comm(absl::StrCat("/proc/self/task/", tid, "/comm"));
  std::string name;
  std::getline(comm, name);
  return name;
}

// gRPC's process-wide pools (executor, resolver, timers, event engine): they live while any gRPC
// object does, whoever owns it, and end with the last one (grpc_shutdown).
bool IsGrpcGlobalThread(const std::string& name) {
  for (const char* prefix :
       {"default-executo", "resolver-execut", "grpc_global_tim", "event_engine", "timer_manager"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The process's threads now; without gRPC's process-wide ones when `without_grpc_pools`.
int ThreadCount(bool without_grpc_pools = false) {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    if (without_grpc_pools && IsGrpcGlobalThread(ThreadName(entry->d_name))) continue;
    ++count;
  }
  ::closedir(dir);
  return count;
}

// The process's threads' names, for a failure message.
std::string ThreadNames() {
  std::string names;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    absl::StrAppend(&names, names.empty() ? "" : ", ", ThreadName(entry->d_name));
  }
  ::closedir(dir);
  return names;
}

// True when `path` can be locked as a second manager would lock it (nobody holds it).
bool LockIsFree(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return true;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

// A listening loopback TCP socket on a free port: an address another process holds.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
        ::listen(fd_, 1) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~HeldPort() { ::close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class NodeTest : public ::testing::Test {
 protected:
  // gRPC and the TLS stack keep a few process-wide threads once first used; one full cycle
  // starts them, so that what a test counts afterwards is the node's own.
  static void SetUpTestSuite() {
    TempDir root;
    absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(Options(root.path()));
    ASSERT_TRUE(node.ok()) << node.status();
    ASSERT_TRUE((*node)->Start().ok());
    (*node)->Stop();
  }

  static ManagerOptions Options(const std::string& root) {
    return ManagerOptions{.kubelet_root = root,
                          .metrics_address = "127.0.0.1:0",
                          .metrics_address_required = true,
                          .node_name = "node-test"};
  }

  // Waits until the process has no more threads than `baseline` (a joined thread leaves the
  // kernel's list a moment after its join returns); without gRPC's process-wide pools when
  // `without_grpc_pools`.
  static bool ThreadsBackTo(int baseline, bool without_grpc_pools = false) {
    return WaitUntil([=] { return ThreadCount(without_grpc_pools) <= baseline; },
                     absl::Seconds(10));
  }

  // Nothing under the root is a socket anyone answers on, and the lock is free.
  void ExpectNothingServed() const {
    EXPECT_FALSE(Answers(root_.Path("device-plugins/kubelet.sock")));
    EXPECT_FALSE(Answers(root_.Path("pod-resources/kubelet.sock")));
    EXPECT_FALSE(Answers(root_.Path("kdp/manager.sock")));
    EXPECT_TRUE(LockIsFree(root_.Path("kdp/manager.lock")));
  }

  TempDir root_;
};

// What the sockets look like at one step.
struct Probe {
  bool registration = false;
  bool podresources = false;
  bool admin = false;
  bool metrics = false;

  bool operator==(const Probe&) const = default;
  friend std::ostream& operator<<(std::ostream& out, const Probe& probe) {
    return out << "{registration=" << probe.registration << " podresources=" << probe.podresources
               << " admin=" << probe.admin << " metrics=" << probe.metrics << "}";
  }
};

TEST_F(NodeTest, StartsServingBeforeRegisteringAndStopsInReverse) {
  const int baseline = ThreadCount();
  const int baseline_without_grpc = ThreadCount(/*without_grpc_pools=*/true);
  std::vector<std::string> steps;
  std::map<std::string, Probe> probes;
  int metrics_port = 0;
  auto observe = [&](std::string_view step) {
    steps.emplace_back(step);
    probes[std::string(step)] = {.registration = Answers(root_.Path("device-plugins/kubelet.sock")),
                                 .podresources = Answers(root_.Path("pod-resources/kubelet.sock")),
                                 .admin = Answers(root_.Path("kdp/manager.sock")),
                                 .metrics = metrics_port != 0 && TcpAnswers(metrics_port)};
  };
  absl::StatusOr<std::unique_ptr<Node>> node = NodeTestPeer::Create(Options(root_.path()), observe);
  ASSERT_TRUE(node.ok()) << node.status();
  metrics_port = (*node)->metrics_port();
  ASSERT_GT(metrics_port, 0);
  EXPECT_TRUE(TcpAnswers(metrics_port)) << "Create serves metrics (and nothing else)";
  EXPECT_FALSE(Answers((*node)->registration_socket()));
  EXPECT_FALSE(LockIsFree(root_.Path("kdp/manager.lock")));
  EXPECT_THAT(steps, ElementsAre("lock", "metrics", "state", "restored"));

  ASSERT_TRUE((*node)->Start().ok());
  EXPECT_TRUE(Answers((*node)->registration_socket()));
  EXPECT_TRUE(Answers((*node)->podresources_socket()));
  EXPECT_TRUE(Answers((*node)->admin_socket()));
  EXPECT_EQ((*node)->Start().code(), absl::StatusCode::kFailedPrecondition);

  (*node)->Stop();
  EXPECT_THAT(steps,
              ElementsAre("lock", "metrics", "state", "restored",
                          // Start
                          "resource-api", "registration", "plugin-watcher", "loops", "podresources",
                          "admin", "ready",
                          // Stop, in reverse
                          "stop plugin-watcher", "stop loops", "stop registration", "stop servers",
                          "stop resource-api", "stop state", "stop metrics", "stop lock"));
  // kubelet.sock is served before the plugins_registry watcher can register a plugin on it;
  // PodResources and the admin socket come last, when everything they report on runs.
  EXPECT_EQ(probes["restored"], Probe{}) << "(the metrics port is known once Create returns)";
  EXPECT_EQ(probes["resource-api"], (Probe{.metrics = true}));
  EXPECT_EQ(probes["registration"], (Probe{.registration = true, .metrics = true}));
  EXPECT_EQ(probes["loops"], (Probe{.registration = true, .metrics = true}));
  EXPECT_EQ(probes["podresources"],
            (Probe{.registration = true, .podresources = true, .metrics = true}));
  EXPECT_EQ(probes["ready"],
            (Probe{.registration = true, .podresources = true, .admin = true, .metrics = true}));
  // Plugins stop first while every server still answers; kubelet.sock goes before the admin
  // and PodResources servers; metrics go last of all but the lock.
  EXPECT_EQ(probes["stop plugin-watcher"],
            (Probe{.registration = true, .podresources = true, .admin = true, .metrics = true}));
  EXPECT_EQ(probes["stop registration"],
            (Probe{.podresources = true, .admin = true, .metrics = true}));
  EXPECT_EQ(probes["stop servers"], (Probe{.metrics = true}));
  EXPECT_EQ(probes["stop state"], (Probe{.metrics = true}));
  EXPECT_EQ(probes["stop metrics"], Probe{});
  EXPECT_FALSE(::access((*node)->admin_socket().c_str(), F_OK) == 0) << "socket removed";
  EXPECT_FALSE(::access((*node)->podresources_socket().c_str(), F_OK) == 0) << "socket removed";
  ExpectNothingServed();
  EXPECT_TRUE(::access(root_.Path("kdp/pods.json").c_str(), F_OK) == 0)
      << "the state store's last compaction ran";

  EXPECT_TRUE(ThreadsBackTo(baseline_without_grpc, /*without_grpc_pools=*/true))
      << ThreadNames() << "; " << baseline_without_grpc << " before";

  const size_t stopped_steps = steps.size();
  (*node)->Stop();
  node->reset();
  EXPECT_EQ(steps.size(), stopped_steps) << "Stop is idempotent, the destructor too";
  EXPECT_TRUE(ThreadsBackTo(baseline)) << ThreadNames() << "; " << baseline << " before";
}

TEST_F(NodeTest, StopsOnceWhenCalledConcurrentlyOrWithoutStart) {
  {
    absl::StatusOr<std::unique_ptr<Node>> created = Node::Create(Options(root_.path()));
    ASSERT_TRUE(created.ok()) << created.status();
    // Never started: the destructor closes what Create opened.
  }
  ExpectNothingServed();
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(Options(root_.path()));
  ASSERT_TRUE(node.ok()) << node.status() << ": the lock was released";
  ASSERT_TRUE((*node)->Start().ok());
  std::thread other([&node] { (*node)->Stop(); });
  (*node)->Stop();
  other.join();
  ExpectNothingServed();
  EXPECT_EQ((*node)->Start().code(), absl::StatusCode::kFailedPrecondition)
      << "a stopped node does not start again";
}

TEST_F(NodeTest, ASecondNodeOnTheSameRootIsRefusedNamingTheLock) {
  absl::StatusOr<std::unique_ptr<Node>> first = Node::Create(Options(root_.path()));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<Node>> second = Node::Create(Options(root_.path()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(root_.Path("kdp/manager.lock")));
  EXPECT_THAT(second.status().message(), HasSubstr(absl::StrCat("pid ", ::getpid())));
  EXPECT_FALSE(LockIsFree(root_.Path("kdp/manager.lock"))) << "the first one keeps its lock";
}

TEST_F(NodeTest, AnExplicitMetricsAddressAlreadyBoundFailsCreateBeforeAnyState) {
  const int baseline = ThreadCount();
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  ManagerOptions options = Options(root_.path());
  options.metrics_address = absl::StrCat("127.0.0.1:", held.port());
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(options);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(node.status().message(), HasSubstr(options.metrics_address));
  EXPECT_FALSE(::access(root_.Path("kdp/journal").c_str(), F_OK) == 0) << "no state was opened";
  ExpectNothingServed();
  EXPECT_TRUE(ThreadsBackTo(baseline))
      << ThreadCount() << " threads (" << ThreadNames() << "), " << baseline << " before";

  // The default address (not given explicitly) being taken only costs the metrics.
  options.metrics_address_required = false;
  node = Node::Create(options);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)->metrics_port(), 0);
}

TEST_F(NodeTest, ACorruptCheckpointUnderStrictCheckpointFailsCreateNamingTheFile) {
  const int baseline = ThreadCount();
  ASSERT_EQ(::mkdir(root_.Path("device-plugins").c_str(), 0750), 0);
  const std::string checkpoint = root_.Path("device-plugins/kubelet_internal_checkpoint");
  std::ofstream(checkpoint) << "{not a checkpoint";
  ManagerOptions options = Options(root_.path());
  options.strict_checkpoint = true;
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(options);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(node.status().message(), HasSubstr(checkpoint));
  ExpectNothingServed();
  EXPECT_TRUE(ThreadsBackTo(baseline))
      << ThreadCount() << " threads (" << ThreadNames() << "), " << baseline << " before";
  std::ifstream kept(checkpoint);
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{not a checkpoint") << "strict: the file stays where it is";
}

TEST_F(NodeTest, AFailureHalfWayThroughStartStopsEverythingStartedBefore) {
  absl::StatusOr<std::unique_ptr<Node>> node;
  std::vector<std::string> steps;
  int metrics_port = 0;
  const int baseline = ThreadCount();
  const int baseline_without_grpc = ThreadCount(/*without_grpc_pools=*/true);
  // The admin socket's path is taken by a directory: kubelet.sock, the watcher, the loops and
  // PodResources are running by the time the admin server cannot be served.
  ASSERT_EQ(::mkdir(root_.Path("kdp").c_str(), 0750), 0);
  ASSERT_EQ(::mkdir(root_.Path("kdp/manager.sock").c_str(), 0750), 0);
  node = NodeTestPeer::Create(Options(root_.path()),
                              [&steps](std::string_view step) { steps.emplace_back(step); });
  ASSERT_TRUE(node.ok()) << node.status();
  metrics_port = (*node)->metrics_port();
  absl::Status started = (*node)->Start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(started.message(), HasSubstr(root_.Path("kdp/manager.sock")));
  EXPECT_THAT(steps,
              ElementsAre("lock", "metrics", "state", "restored", "resource-api", "registration",
                          "plugin-watcher", "loops", "podresources", "stop plugin-watcher",
                          "stop loops", "stop registration", "stop servers", "stop resource-api",
                          "stop state", "stop metrics", "stop lock"));
  ExpectNothingServed();
  EXPECT_FALSE(TcpAnswers(metrics_port));
  EXPECT_FALSE(::access(root_.Path("pod-resources/kubelet.sock").c_str(), F_OK) == 0);
  // Stopped: none of the node's threads runs (gRPC's own pools stay while its objects do).
  EXPECT_TRUE(ThreadsBackTo(baseline_without_grpc, /*without_grpc_pools=*/true))
      << ThreadNames() << "; " << baseline_without_grpc << " before";
  (*node)->Stop();  // already stopped: nothing more
  EXPECT_EQ(steps.size(), 17u);
  node->reset();
  EXPECT_TRUE(ThreadsBackTo(baseline)) << ThreadNames() << "; " << baseline << " before";
}

TEST_F(NodeTest, OptionsOutOfRangeAreRefusedNamingTheFlag) {
  ManagerOptions options = Options(root_.path());
  options.call_timeout = absl::ZeroDuration();
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(options);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(node.status().message(), HasSubstr("--call-timeout"));

  options = Options("");
  node = Node::Create(options);
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.status().message(), HasSubstr("--kubelet-root"));

  options = Options(root_.path());
  options.topology_policy = "single-numa-node";  // no machine reader: no NUMA nodes known
  node = Node::Create(options);
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.status().message(), HasSubstr("topology"));
  EXPECT_FALSE(::access(root_.Path("kdp/journal").c_str(), F_OK) == 0)
      << "refused before any state was opened";
  ExpectNothingServed();
}

}  // namespace
}  // namespace kdp::manager
