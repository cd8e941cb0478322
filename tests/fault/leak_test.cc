// Leak suite (issue 7, part 3): one kdp-manager process (temporary --kubelet-root, the fake
// dual-socket topology) lives through KDP_LEAK_CYCLES crash-and-restart cycles of kdp-gpu-plugin
// and then as many of kdp-dra-driver, every one ended with SIGKILL, with a pod admitted and
// deleted every kPodEvery cycles. The manager's open file descriptors, threads and resident
// memory (read from /proc/<pid>) after the cycles must be back within a small bound of what they
// were after a few warm-up cycles (so that lazily created pools, arenas and caches count as
// baseline), and its visible state (resources, driver endpoints, registered plugins, files under
// the kubelet root) must be the baseline's. The manager then gets SIGTERM and must exit 0: under
// the ASan preset (ASAN_OPTIONS detect_leaks=1) LeakSanitizer runs in the child at exit, and a
// report would make the exit code non-zero and put "LeakSanitizer" into its output.
//
// Every wait is on a condition read over the manager's admin API (one gRPC channel for the whole
// test, polled every few milliseconds), never a sleep, so a cycle costs what a start, a
// registration and a kill cost. Environment: KDP_LEAK_CYCLES (measured cycles per phase, default
// 200), KDP_LEAK_POD_EVERY (default kPodEvery; 0: one pod, in the warm-up), KDP_LEAK_BIN_DIR
// (take the four binaries from that directory instead, e.g. to time build/ci's ASan ones).
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "kdp/admin/v1/admin.grpc.pb.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/example_names.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KDP_LEAK_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define KDP_LEAK_TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(KDP_LEAK_TEST_ASAN)
#define KDP_LEAK_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(KDP_LEAK_TEST_TSAN)
#define KDP_LEAK_TEST_TSAN 1
#endif

namespace kdp::testing {
namespace {

namespace admin = ::kdp::admin::v1;

// Cycles before the baseline is read: the first registration creates the endpoint machinery,
// the first pod the journal and checkpoint files and the pods' claim objects, the first driver
// the DRA client pools; and the server threads touch their stacks' deeper pages the first time
// they serve a rarer call.
constexpr int kWarmupCycles = 10;
// A pod is admitted and deleted on cycles 0, N, 2N, ... (N = KDP_LEAK_POD_EVERY, default
// kPodEvery; 0: on cycle 0 only).
constexpr int kPodEvery = 10;
// The driver's ResourceSlices are deleted before cycles kWipeEvery, 2 * kWipeEvery, ... (as a
// restarted kubelet wipes them), so that the instance starting then has to publish them anew.
// Not more often: every wipe and republication stays in the resource API's event log (bounded
// by its capacity, but ~20 KiB an event here), which is retention by design, not a leak.
constexpr int kWipeEvery = 50;
// Allowed growth after the cycles. Descriptors and threads: a gRPC pool may hold one more idle
// poller or a connection being torn down at the moment of reading; a leak of one per cycle
// shows as hundreds.
constexpr int kFdSlack = 2;
constexpr int kThreadSlack = 2;
// Resident memory (VmRSS). A leaked plugin endpoint (its gRPC channel, subchannel, stream
// thread's touched stack pages and the last ListAndWatch snapshot) or a leaked DRA client (channel
// and health-stream thread) is at least ~30 KiB, so 200 of them are at least ~6 MiB. What stays
// below it in a plain build (measured: 0.6-1 MiB over the plugin's cycles, 2.5-3.5 MiB over the
// driver's): server threads touching deeper stack pages the first time they serve a rarer call,
// and the resource API's event log keeping the pods' claims and the republished slices (bounded
// by its capacity: retention, not a leak). heaptrack finds no live heap growth from the cycles
// themselves. The manager child runs with MALLOC_ARENA_MAX=2, so that glibc arenas created for
// late threads do not count.
constexpr int64_t kRssSlackKiB = 6 * 1024;
// Under a sanitizer the runtime's own memory keeps growing with the cycles for a long while,
// slowing down: under ASan its stack depot (the system libraries have no frame pointers, so the
// fast unwinder records ever new stacks), per-thread allocator caches filling up in every size
// class, the quarantine cycling through the classes (the manager child gets a small one,
// kAsanQuarantineMiB plus kAsanThreadQuarantineKiB per thread, instead of 256 MiB), shadow, and
// stack frames with redzones reaching deeper pages; under TSan, shadow and the state of every
// thread a cycle starts. There the first half of the measured cycles counts as the runtime's
// warm-up and the bound applies to the growth over the second half (measured with 200 cycles:
// ASan 3 and 11-15 MiB, TSan 4.4 and 7.5 MiB for the plugin's and the driver's cycles), so it
// only catches gross leaks (~200 KiB a cycle); the plain build's bound and LeakSanitizer at the
// manager's exit are the fine-grained checks.
constexpr int kAsanQuarantineMiB = 2;
constexpr int kAsanThreadQuarantineKiB = 32;
#if defined(KDP_LEAK_TEST_ASAN)
constexpr bool kSanitized = true;
constexpr int64_t kSanitizerTailRssKiB = 24 * 1024;
constexpr char kBuildKind[] = "asan";
#elif defined(KDP_LEAK_TEST_TSAN)
constexpr bool kSanitized = true;
constexpr int64_t kSanitizerTailRssKiB = 20 * 1024;
constexpr char kBuildKind[] = "tsan";
#else
constexpr bool kSanitized = false;
constexpr int64_t kSanitizerTailRssKiB = 0;
constexpr char kBuildKind[] = "plain";
#endif

int IntFromEnv(const char* name, int fallback, int min) {
  int value = fallback;
  if (const char* env = std::getenv(name); env != nullptr) {
    if (!absl::SimpleAtoi(env, &value) || value < min) value = fallback;
  }
  return value;
}

// `built` (a path this build made), or the file of the same name in $KDP_LEAK_BIN_DIR when that
// is set: the suite can then time another build's binaries (build/ci's ASan ones, say).
std::string Binary(const std::string& built) {
  const char* dir = std::getenv("KDP_LEAK_BIN_DIR");
  if (dir == nullptr || *dir == '\0') return built;
  return absl::StrCat(dir, "/", std::filesystem::path(built).filename().string());
}

// What /proc says about a process.
struct Figures {
  int fds = -1;
  int threads = -1;
  int64_t rss_kib = -1;
  int64_t rss_anon_kib = -1;  // VmRSS less the pages of mapped files (code paged in late)
};

std::optional<Figures> ReadFigures(pid_t pid) {
  Figures figures;
  std::error_code error;
  figures.fds = 0;
  for (std::filesystem::directory_iterator it(absl::StrCat("/proc/", pid, "/fd"), error), end;
       !error && it != end; it.increment(error)) {
    ++figures.fds;
  }
  if (error) return std::nullopt;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view view(line);
    if (absl::ConsumePrefix(&view, "Threads:")) {
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(view), &figures.threads)) return {};
    } else if (absl::ConsumePrefix(&view, "VmRSS:")) {
      absl::ConsumeSuffix(&view, "kB");
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(view), &figures.rss_kib)) return {};
    } else if (absl::ConsumePrefix(&view, "RssAnon:")) {
      absl::ConsumeSuffix(&view, "kB");
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(view), &figures.rss_anon_kib)) return {};
    }
  }
  if (figures.threads < 0 || figures.rss_kib < 0) return std::nullopt;
  return figures;
}

// Entries (files, sockets, directories) under `root`, recursively, and the bytes of its files.
struct TreeFigures {
  int entries = 0;
  int64_t bytes = 0;
};

TreeFigures ReadTree(const std::string& root) {
  TreeFigures tree;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    ++tree.entries;
    std::error_code size_error;
    if (it->is_regular_file(size_error)) {
      const auto size = it->file_size(size_error);
      if (!size_error) tree.bytes += static_cast<int64_t>(size);
    }
  }
  return tree;
}

// A reading of the tree once it has held still for three reads 200 ms apart (at most 10 s): a
// compaction renaming a file over another while readdir runs can hide both names from that one
// reading (POSIX leaves it unspecified), which is no file vanishing.
TreeFigures SettledTree(const std::string& root) {
  TreeFigures last = ReadTree(root);
  int same = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (same < 3 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    const TreeFigures now = ReadTree(root);
    same = now.entries == last.entries && now.bytes == last.bytes ? same + 1 : 0;
    last = now;
  }
  return last;
}

std::string Tail(const std::string& text, size_t bytes = 6000) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

class LeakTest : public DraE2ETest {
 protected:
  void TearDown() override {
    // Children first (the Subprocess destructors SIGKILL what still runs), then the channel.
    child_.reset();
    stub_.reset();
    channel_.reset();
  }

  // kdp-manager on Root() as node-a with the fixture's NUMA nodes; the admin channel is the
  // test's only connection to it for the whole run.
  void StartLeakManager() {
    std::string asan_options;
    if (const char* inherited = std::getenv("ASAN_OPTIONS"); inherited != nullptr) {
      asan_options = inherited;
    }
    absl::StrAppend(&asan_options, asan_options.empty() ? "" : ":",
                    "quarantine_size_mb=", kAsanQuarantineMiB,
                    ":thread_local_quarantine_size_kb=", kAsanThreadQuarantineKiB);
    auto process =
        Subprocess::Start({Binary(KDP_MANAGER_BIN), "--kubelet-root", Root(), "--node-name",
                           kDraNode, "--topology-xml", Fixture()},
                          {.env = {{"ASAN_OPTIONS", asan_options}, {"MALLOC_ARENA_MAX", "2"}},
                           .output_path = logs_.Path("manager.log")});
    ASSERT_TRUE(process.ok()) << process.status();
    manager_ = std::move(*process);
    channel_ = DialUnixSocket(Root() + "/kdp/manager.sock");
    stub_ = admin::Admin::NewStub(channel_);
    ASSERT_TRUE(WaitUntil([&] { return AdminStatus().has_value(); }, absl::Seconds(60)))
        << Tail(manager_->Output());
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  std::optional<admin::NodeStatus> AdminStatus() {
    admin::NodeStatus status;
    if (!stub_->GetStatus(Context().get(), admin::GetStatusRequest(), &status).ok()) {
      return std::nullopt;
    }
    return status;
  }

  // example.com/gpu's entry is connected (true) or not (false) with all 8 GPUs allocatable.
  bool GpuResourceIs(bool connected) {
    std::optional<admin::NodeStatus> status = AdminStatus();
    if (!status.has_value()) return false;
    for (const admin::ResourceStatus& resource : status->resources()) {
      if (resource.name() != kGpuResource) continue;
      return connected ? resource.connected() && resource.allocatable() == kFixtureGpus
                       : !resource.connected();
    }
    return false;
  }

  // gpu.example.com has exactly one endpoint, connected (true) or not (false).
  bool DriverEndpointIs(bool connected) {
    std::optional<admin::NodeStatus> status = AdminStatus();
    if (!status.has_value()) return false;
    for (const admin::DraDriverStatus& driver : status->dra_drivers()) {
      if (driver.name() != kGpuDriver) continue;
      return driver.endpoints_size() == 1 && driver.endpoints(0).connected() == connected;
    }
    return false;
  }

  // Starts `argv` with its output in logs/<name>.log (the previous instance's log removed), so
  // the log always holds the current instance only.
  void StartChild(std::vector<std::string> argv, const std::string& name) {
    child_log_ = logs_.Path(name + ".log");
    std::filesystem::remove(child_log_);
    started_at_ = absl::Now();
    auto process = Subprocess::Start(std::move(argv), {.output_path = child_log_});
    ASSERT_TRUE(process.ok()) << process.status();
    child_ = std::move(*process);
  }

  // Called once the manager shows the child registered / its death noticed.
  void Registered() { to_registered_ += absl::Now() - started_at_; }
  void DeathNoticed() { to_death_noticed_ += absl::Now() - killed_at_; }

  void KillChild() {
    killed_at_ = absl::Now();
    ASSERT_TRUE(child_->Signal(SIGKILL).ok());
    absl::StatusOr<int> code = child_->Wait(absl::Seconds(30));
    ASSERT_TRUE(code.ok()) << code.status();
    ASSERT_EQ(*code, 128 + SIGKILL) << "it must have run until killed:\n" << Tail(ChildLog());
  }

  std::string ChildLog() const { return DraE2ETest::ReadFile(child_log_); }

  std::string Diagnostics() {
    return absl::StrCat("\n--- manager (tail) ---\n", Tail(manager_->Output()),
                        "\n--- last child (tail) ---\n", Tail(ChildLog()));
  }

  // Admits a one-GPU pod through the admin API and deletes it again.
  void GpuPodRoundTrip(int cycle) {
    const std::string name = absl::StrCat("leak-", cycle);
    admin::ApplyPodRequest request;
    request.set_manifest(GpuPod(name, 1));
    request.set_source(name + ".yaml");
    admin::ApplyPodResponse applied;
    grpc::Status rpc = stub_->ApplyPod(Context().get(), request, &applied);
    ASSERT_TRUE(rpc.ok()) << rpc.error_message();
    ASSERT_TRUE(applied.admitted()) << applied.ShortDebugString();
    ASSERT_EQ(applied.pod().containers_size(), 1);
    DeleteAdminPod(name);
  }

  // Applies the example DeviceClass, claim template and pod, checks the claim was prepared on
  // two GPUs, and deletes the pod: the claim is unprepared and its CDI spec removed.
  void DraPodRoundTrip() {
    admin::ApplyRequest request;
    request.set_manifest(ExampleManifests());
    request.set_source("examples.yaml");
    admin::ApplyResponse applied;
    grpc::Status rpc = stub_->Apply(Context().get(), request, &applied);
    ASSERT_TRUE(rpc.ok()) << rpc.error_message() << Diagnostics();
    const admin::AppliedObject* pod = nullptr;
    for (const admin::AppliedObject& object : applied.objects()) {
      if (object.kind() == "Pod") pod = &object;
    }
    ASSERT_NE(pod, nullptr) << applied.ShortDebugString();
    ASSERT_TRUE(pod->pod().admitted()) << pod->ShortDebugString() << Diagnostics();
    ASSERT_EQ(pod->pod().pod().claims_size(), 1);
    EXPECT_EQ(pod->pod().pod().claims(0).devices_size(), 2);
    EXPECT_EQ(CdiSpecs().size(), 1u);
    DeleteAdminPod(pod->name());
    std::optional<admin::NodeStatus> status = AdminStatus();
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->prepared_claims_size(), 0) << status->ShortDebugString();
    EXPECT_TRUE(CdiSpecs().empty());
  }

  void DeleteAdminPod(const std::string& name) {
    admin::DeletePodRequest request;
    request.set_namespace_("default");
    request.set_name(name);
    admin::DeletePodResponse deleted;
    grpc::Status rpc = stub_->DeletePod(Context().get(), request, &deleted);
    ASSERT_TRUE(rpc.ok()) << name << ": " << rpc.error_message();
  }

  // Deletes this node's ResourceSlices of the example driver, as a restarted kubelet wipes them:
  // the next driver instance has to publish them again.
  void DeleteDriverSlices() {
    HttpResponse list = Api("GET", "/apis/resource.k8s.io/v1/resourceslices");
    ASSERT_EQ(list.status, 200) << list.error << list.body;
    const nlohmann::json items = list.json["items"];
    for (const auto& slice : items) {
      if (slice["spec"].value("driver", "") != kGpuDriver) continue;
      const std::string name = slice["metadata"]["name"];
      HttpResponse deleted =
          Api("DELETE", absl::StrCat("/apis/resource.k8s.io/v1/resourceslices/", name));
      ASSERT_EQ(deleted.status, 200) << deleted.error << deleted.body;
    }
    ASSERT_EQ(SliceDevices(kGpuDriver), 0);
  }

  bool PodCycle(int cycle) const {
    return cycle == 0 || (pod_every_ > 0 && cycle % pod_every_ == 0);
  }

  // One kdp-gpu-plugin life: start, registered with all GPUs, a pod every kPodEvery cycles,
  // SIGKILL, and the manager has seen the stream end.
  void PluginCycle(int cycle) {
    ASSERT_NO_FATAL_FAILURE(StartChild(
        {Binary(KDP_GPU_PLUGIN_BIN), "--kubelet-root", Root(), "--topology-xml", Fixture()},
        "gpu-plugin"));
    ASSERT_TRUE(WaitUntil([&] { return GpuResourceIs(true); }, absl::Seconds(60), kPoll))
        << "cycle " << cycle << Diagnostics();
    Registered();
    if (PodCycle(cycle)) {
      ASSERT_NO_FATAL_FAILURE(GpuPodRoundTrip(cycle));
    }
    ASSERT_NO_FATAL_FAILURE(KillChild());
    ASSERT_TRUE(WaitUntil([&] { return GpuResourceIs(false); }, absl::Seconds(60), kPoll))
        << "cycle " << cycle << Diagnostics();
    DeathNoticed();
  }

  // One kdp-dra-driver life: start, registered (the driver was told so, the manager's client is
  // connected and the node's ResourceSlices list all GPUs, after a wipe every kWipeEvery
  // cycles), a pod prepared and unprepared every kPodEvery cycles, SIGKILL, and the manager's
  // client has seen the connection go.
  void DriverCycle(int cycle) {
    if (cycle > 0 && cycle % kWipeEvery == 0) {
      ASSERT_NO_FATAL_FAILURE(DeleteDriverSlices());
    }
    ASSERT_NO_FATAL_FAILURE(
        StartChild({Binary(KDP_DRA_DRIVER_BIN), "--kubelet-root", Root(), "--cdi-root", CdiRoot(),
                    "--node-name", kDraNode, "--kubeconfig", Root() + "/kdp/kubeconfig",
                    "--topology-xml", Fixture()},
                   "dra-driver"));
    ASSERT_TRUE(WaitUntil(
        [&] {
          return absl::StrContains(ChildLog(), "Registered with the kubelet") &&
                 DriverEndpointIs(true);
        },
        absl::Seconds(60), kPoll))
        << "cycle " << cycle << Diagnostics();
    ASSERT_TRUE(WaitUntil([&] { return SliceDevices(kGpuDriver) == kFixtureGpus; },
                          absl::Seconds(60), kPoll))
        << "cycle " << cycle << Diagnostics();
    Registered();
    if (PodCycle(cycle)) {
      ASSERT_NO_FATAL_FAILURE(DraPodRoundTrip());
    }
    ASSERT_NO_FATAL_FAILURE(KillChild());
    ASSERT_TRUE(WaitUntil([&] { return DriverEndpointIs(false); }, absl::Seconds(60), kPoll))
        << "cycle " << cycle << Diagnostics();
    DeathNoticed();
  }

  // A reading taken once descriptors and threads have held still for five reads 40 ms apart
  // (at most 5 s): a gRPC poller thread or a connection closing at that instant is not counted.
  Figures SettledFigures() {
    std::optional<Figures> last = ReadFigures(manager_->pid());
    int same = 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (same < 5 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(40));
      std::optional<Figures> now = ReadFigures(manager_->pid());
      if (!now.has_value()) break;
      same =
          last.has_value() && now->fds == last->fds && now->threads == last->threads ? same + 1 : 0;
      last = now;
    }
    return last.value_or(Figures{});
  }

  // State entries the manager shows: resources, DRA endpoints, registered plugins, claims.
  std::string VisibleState() {
    std::optional<admin::NodeStatus> status = AdminStatus();
    if (!status.has_value()) return "unreachable";
    int endpoints = 0;
    for (const auto& driver : status->dra_drivers()) endpoints += driver.endpoints_size();
    return absl::StrCat("resources=", status->resources_size(),
                        " dra_drivers=", status->dra_drivers_size(), " dra_endpoints=", endpoints,
                        " registered_plugins=", status->registered_plugins_size(),
                        " prepared_claims=", status->prepared_claims_size());
  }

  // Runs `cycle` kWarmupCycles times, reads the baseline, runs it `cycles` more times, and checks
  // and prints what came back. `phase` names the figures.
  void RunPhase(const std::string& phase, int cycles, const std::function<void(int)>& cycle) {
    for (int i = 0; i < kWarmupCycles; ++i) ASSERT_NO_FATAL_FAILURE(cycle(i));
    const Figures before = SettledFigures();
    const TreeFigures tree_before = SettledTree(Root());
    const std::string state_before = VisibleState();
    ASSERT_GE(before.fds, 0);

    to_registered_ = to_death_noticed_ = absl::ZeroDuration();
    const absl::Time start = absl::Now();
    std::string rss_trace;  // VmRSS every tenth of the cycles: flat, or growing with them
    int64_t mid_rss_kib = before.rss_kib;  // after half the cycles
    for (int i = kWarmupCycles; i < kWarmupCycles + cycles; ++i) {
      ASSERT_NO_FATAL_FAILURE(cycle(i));
      const int done = i - kWarmupCycles + 1;
      if (done == cycles / 2) {
        std::optional<Figures> now = ReadFigures(manager_->pid());
        if (now.has_value()) mid_rss_kib = now->rss_kib;
      }
      if (done % std::max(cycles / 10, 1) == 0) {
        std::optional<Figures> now = ReadFigures(manager_->pid());
        absl::StrAppend(&rss_trace, rss_trace.empty() ? "" : " ", done, ":",
                        now.has_value() ? now->rss_kib : -1);
      }
    }
    const absl::Duration elapsed = absl::Now() - start;

    // The manager has seen the last death (the cycle waited for it); closing descriptors and
    // ending threads may lag a little behind what the status shows.
    std::optional<Figures> latest;
    WaitUntil(
        [&] {
          latest = ReadFigures(manager_->pid());
          return latest.has_value() && latest->fds <= before.fds + kFdSlack &&
                 latest->threads <= before.threads + kThreadSlack;
        },
        absl::Seconds(15), absl::Milliseconds(50));
    const Figures after = SettledFigures();
    const TreeFigures tree_after = SettledTree(Root());
    const std::string state_after = VisibleState();

    const double ms_per_cycle = absl::ToDoubleMilliseconds(elapsed) / cycles;
    std::printf("FIGURE: leak.%s cycles=%d build=%s\n", phase.c_str(), cycles, kBuildKind);
    std::printf("FIGURE: leak.%s fds before=%d after=%d\n", phase.c_str(), before.fds, after.fds);
    std::printf("FIGURE: leak.%s threads before=%d after=%d\n", phase.c_str(), before.threads,
                after.threads);
    std::printf(
        "FIGURE: leak.%s rss_kib before=%lld after=%lld delta=%lld second_half_delta=%lld\n",
        phase.c_str(), static_cast<long long>(before.rss_kib),
        static_cast<long long>(after.rss_kib),
        static_cast<long long>(after.rss_kib - before.rss_kib),
        static_cast<long long>(after.rss_kib - mid_rss_kib));
    std::printf("FIGURE: leak.%s rss_anon_kib before=%lld after=%lld delta=%lld\n", phase.c_str(),
                static_cast<long long>(before.rss_anon_kib),
                static_cast<long long>(after.rss_anon_kib),
                static_cast<long long>(after.rss_anon_kib - before.rss_anon_kib));
    std::printf("FIGURE: leak.%s rss_kib_by_cycle %s\n", phase.c_str(), rss_trace.c_str());
    std::printf(
        "FIGURE: leak.%s root_entries before=%d after=%d root_bytes before=%lld "
        "after=%lld\n",
        phase.c_str(), tree_before.entries, tree_after.entries,
        static_cast<long long>(tree_before.bytes), static_cast<long long>(tree_after.bytes));
    std::printf(
        "FIGURE: leak.%s ms_per_cycle=%.1f (start to registered %.1f, kill to noticed "
        "%.1f) total_s=%.1f\n",
        phase.c_str(), ms_per_cycle, absl::ToDoubleMilliseconds(to_registered_) / cycles,
        absl::ToDoubleMilliseconds(to_death_noticed_) / cycles, absl::ToDoubleSeconds(elapsed));
    std::fflush(stdout);

    EXPECT_LE(after.fds, before.fds + kFdSlack) << phase << ": descriptors leaked";
    EXPECT_LE(after.threads, before.threads + kThreadSlack) << phase << ": threads leaked";
    if (kSanitized) {
      EXPECT_LE(after.rss_kib - mid_rss_kib, kSanitizerTailRssKiB)
          << phase << ": resident memory grew over the second half of the cycles";
    } else {
      EXPECT_LE(after.rss_kib - before.rss_kib, kRssSlackKiB) << phase << ": resident memory grew";
    }
    EXPECT_EQ(tree_after.entries, tree_before.entries)
        << phase << ": files under the kubelet root appeared or vanished";
    EXPECT_EQ(state_after, state_before) << phase << ": the manager's state entries changed";
    RecordProperty(phase + "_ms_per_cycle", absl::StrFormat("%.1f", ms_per_cycle));
  }

  static constexpr absl::Duration kPoll = absl::Milliseconds(4);

  TempDir logs_;  // outside the kubelet root, whose entries the test counts
  std::unique_ptr<Subprocess> child_;
  std::string child_log_;
  const int pod_every_ = IntFromEnv("KDP_LEAK_POD_EVERY", kPodEvery, 0);
  absl::Time started_at_, killed_at_;
  absl::Duration to_registered_, to_death_noticed_;  // sums over the measured cycles
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<admin::Admin::Stub> stub_;
};

TEST_F(LeakTest, CrashRestartCyclesLeaveNoDescriptorThreadOrMemoryBehind) {
  const int cycles = IntFromEnv("KDP_LEAK_CYCLES", 200, 1);
  ASSERT_NO_FATAL_FAILURE(StartLeakManager());
  const Figures at_start = SettledFigures();

  ASSERT_NO_FATAL_FAILURE(RunPhase("gpu_plugin", cycles, [this](int i) { PluginCycle(i); }));
  ASSERT_NO_FATAL_FAILURE(RunPhase("dra_driver", cycles, [this](int i) { DriverCycle(i); }));

  const Figures at_end = SettledFigures();
  std::printf(
      "FIGURE: leak.manager fds start=%d end=%d threads start=%d end=%d rss_kib start=%lld "
      "end=%lld\n",
      at_start.fds, at_end.fds, at_start.threads, at_end.threads,
      static_cast<long long>(at_start.rss_kib), static_cast<long long>(at_end.rss_kib));

  // A clean exit: LeakSanitizer (ASan preset) checks the child at exit and fails it on a leak.
  child_.reset();
  ASSERT_TRUE(manager_->Signal(SIGTERM).ok());
  absl::StatusOr<int> code = manager_->Wait(absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << code.status() << Tail(manager_->Output());
  const std::string output = manager_->Output();
  EXPECT_EQ(*code, 0) << Tail(output, 20000);
  EXPECT_FALSE(absl::StrContains(output, "LeakSanitizer")) << Tail(output, 20000);
  EXPECT_FALSE(absl::StrContains(output, "AddressSanitizer")) << Tail(output, 20000);
  EXPECT_FALSE(absl::StrContains(output, "ThreadSanitizer")) << Tail(output, 20000);
}

}  // namespace
}  // namespace kdp::testing
