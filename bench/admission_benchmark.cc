// admission_benchmark measures what one durable pod admission costs in kdp-manager's real code
// path (PodManager::Admit of a pod whose one container asks for 1 device, then its Delete, timed
// apart) with 10, 1,000 and 10,000 pods already admitted, against the disk's floors measured in the
// same run (4 KiB and admission-sized appends + fdatasync beside the journal, a durable 4 KiB
// write), and the 10,000 / 10 ratio against its 2.0 target: kdp journals each change, so an
// admission should not grow with the state, where the kubelet rewrites and fsyncs its whole
// checkpoint per allocation (also measured, for contrast).
//
// Each size is a node: its own temporary kubelet root, wired exactly as manager/src/main.cc wires
// it (1 s compaction delay), with an in-process SDK PluginRunner registered on its kubelet.sock
// serving the measured resource (8 devices) and the filler resources whose devices the
// pre-admitted pods (admitted through Admit too) hold: the measured resource's device choice is
// then the same at every size, so the ratio shows the cost of the state size alone. Repetitions
// are interleaved at random; after each admission repetition the node settles (untimed) so that
// its compaction never runs during another figure, while those inside it count. A breakdown of
// where the time goes follows, timed from outside the manager's code.
//
// A second family, kdp/inventory_admit_then_delete/<devices>: admissions/s from nodes with no other
// pod whose one resource has 10, 1,000 or 10,000 devices (the default device choice), and the ratio
// 10 / 10,000 devices (issue 19: choosing must not cost O(devices)).
//
// Usage: admission_benchmark [--benchmark_* flags] [--kdp_dir=DIR] [--kdp_skip_breakdown]
//                            [--kdp_inventory_only]
// --kdp_dir: where the temporary state directory goes (default $TMPDIR, else /tmp); not tmpfs.
// --kdp_inventory_only: only the inventory family (no state-size nodes, floors or breakdown).
// Exit status: 0 when everything was measured (a missed target is reported, not an error), 1 when
// a measurement could not be made, 2 on a bad argument. docs/benchmarks.md has our figures.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_stats.h"
#include "bench/bench_temp_dir.h"
#include "bench/summary_reporter.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/pod/pod.h"
#include "manager/src/podmanager/pod_manager.h"
#include "manager/src/state/state_store.h"

namespace kdp::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRatioTarget = 2.0;
// The resource the measured pod asks for, and the one the pre-admitted pods hold.
constexpr char kMeasuredResource[] = "example.com/gpu";
constexpr int kMeasuredDevices = 8;
// Filler devices are spread over resources of 512: the kubelet's device choice (kept by kdp) costs
// O(devices of the resource) per admission, which would make populating one resource of 10,000
// devices take minutes.
constexpr char kFillerPrefix[] = "example.com/filler-";
constexpr int kFillerResources = 20;
constexpr int kFillerDevicesEach = 512;
constexpr int kStateSizes[] = {10, 1'000, 10'000};
// The inventory family: one resource of this many devices per node, no pod admitted beforehand.
constexpr char kInventoryResource[] = "example.com/inventory";
constexpr int kInventorySizes[] = {10, 1'000, 10'000};
// Admissions/s at 10 devices over those at 10,000: at most this (the choice is O(1) in devices).
constexpr double kInventoryRatioTarget = 1.5;
// main.cc's default --compaction-delay.
constexpr absl::Duration kCompactionDelay = absl::Seconds(1);
// Wall time of admissions (each followed by its deletion) per repetition, and the fewest.
constexpr auto kRepetitionTime = std::chrono::seconds(3);
constexpr size_t kMinAdmissions = 100;
constexpr int kRepetitions = 5;
constexpr size_t kFloorBytes = 4096;

constexpr char kAppendFloorName[] = "floor/append_4KiB_fdatasync";
constexpr char kRecordFloorName[] = "floor/append_admission_records_fdatasync";
constexpr char kDurableFloorName[] = "floor/durable_write_4KiB";
constexpr char kKubeletName[] = "kubelet/encode_and_write_checkpoint/10000";

std::string FillerResource(int k) { return absl::StrFormat("%s%02d", kFillerPrefix, k); }
std::string AdmissionName(int pods) { return absl::StrCat("kdp/admit_then_delete/", pods); }
std::string InventoryName(int devices) {
  return absl::StrCat("kdp/inventory_admit_then_delete/", devices);
}

// CPU time of the calling thread so far, µs.

// The /proc/mounts line ("device mount-point type ...") of the mount holding `path`: the longest
// mount point above it, the last listed among equals (an over-mount hides what is under it).
// Mount points with blanks (written escaped) are not matched.
absl::StatusOr<std::vector<std::string>> MountOf(const std::string& path) {
  std::error_code error;
  const std::string real = std::filesystem::canonical(path, error).string();
  if (error) return absl::NotFoundError(absl::StrCat(path, ": ", error.message()));
  std::ifstream mounts("/proc/self/mounts");
  std::vector<std::string> best;
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream in(line);
    std::vector<std::string> fields(3);
    in >> fields[0] >> fields[1] >> fields[2];
    const std::string& point = fields[1];
    if ((point == "/" || real == point || absl::StartsWith(real, point + "/")) &&
        (best.empty() || point.size() >= best[1].size())) {
      best = std::move(fields);
    }
  }
  if (best.empty()) return absl::NotFoundError(absl::StrCat("no mount holds ", real));
  return best;
}

off_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// A plugin with `count` devices that carry what DefaultAllocate() merges (two device nodes, a
// mount, an env, a CDI name), so each Allocate answer and checkpoint entry has a realistic size.
class BenchPlugin final : public DevicePlugin {
 public:
  BenchPlugin(std::string resource_name, int count)
      : DevicePlugin(std::move(resource_name)), count_(count) {}

  absl::StatusOr<std::vector<Device>> Discover() override {
    std::vector<Device> devices;
    devices.reserve(count_);
    for (int i = 0; i < count_; ++i) {
      Device& device = devices.emplace_back();
      device.id = absl::StrCat("dev", i);
      device.numa_nodes = {i % 2};
      const std::string card = absl::StrCat("/dev/dri/card", i);
      const std::string render = absl::StrCat("/dev/dri/renderD", 128 + i);
      device.specs = {{.container_path = card, .host_path = card},
                      {.container_path = render, .host_path = render}};
      device.mounts = {
          {.container_path = "/usr/lib/kdp", .host_path = "/opt/kdp/lib", .read_only = true}};
      device.envs = {{"KDP_VISIBLE_DEVICES", device.id}};
      device.cdi_devices = {absl::StrCat(resource_name(), "=", device.id)};
    }
    return devices;
  }

 private:
  const int count_;
};

// A random-looking UUID v4 for `n`, as real pod UIDs are (comparing two then ends as early as on
// a node); were two ever equal, Admit would refuse the second and the run would fail.
std::string UidFor(uint64_t n) {
  auto mix = [](uint64_t z) {  // splitmix64's finalizer: a bijection
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const uint64_t hi = mix(n), lo = mix(n + (uint64_t{1} << 63));
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", hi >> 32, (hi >> 16) & 0xffff, hi & 0xfff,
                         0x8000 | ((lo >> 48) & 0x3fff), lo & 0xffffffffffffull);
}

// A pod as kdpctl builds it from a manifest: one app container with a device count and the
// usual cpu/memory limits.
manager::Pod OneContainerPod(std::string namespace_, std::string name, std::string uid,
                             const std::string& resource) {
  return {.namespace_ = std::move(namespace_),
          .name = std::move(name),
          .uid = std::move(uid),
          .init_containers = {},
          .containers = {{.name = "main",
                          .kind = manager::ContainerKind::kApp,
                          .extended_resources = {{resource, 1}},
                          .other_limits = {{"cpu", "500m"}, {"memory", "256Mi"}}}}};
}

// One kdp-manager's state on its own kubelet root, wired as manager/src/main.cc wires it, with
// an in-process PluginRunner registered on its kubelet.sock.
class Node {
 public:
  // Resource name → device count, served by the node's plugin runner.
  using Inventory = std::vector<std::pair<std::string, int>>;

  // The state-size node: the measured resource and the filler resources.
  static absl::StatusOr<std::unique_ptr<Node>> Start(const std::string& root) {
    Inventory inventory = {{kMeasuredResource, kMeasuredDevices}};
    for (int k = 0; k < kFillerResources; ++k) {
      inventory.emplace_back(FillerResource(k), kFillerDevicesEach);
    }
    return StartWith(root, std::move(inventory), kMeasuredResource);
  }
  // A node serving `inventory`, whose measured pods ask for one device of `measured`.
  static absl::StatusOr<std::unique_ptr<Node>> StartWith(const std::string& root,
                                                         Inventory inventory,
                                                         std::string measured) {
    std::unique_ptr<Node> node(new Node(root, std::move(inventory), std::move(measured)));
    KDP_RETURN_IF_ERROR(node->Wire());
    return node;
  }

  ~Node() {
    // main.cc's order: plugins' endpoints, then the store's last compaction; then the rest.
    if (devices_ != nullptr) devices_->Stop();
    if (runner_ != nullptr) runner_->Stop();
    if (store_ != nullptr) store_->Close();
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  manager::PodManager& pods() { return *pods_; }
  manager::DeviceManager& devices() { return *devices_; }
  manager::StateStore& store() { return *store_; }
  std::string kdp_dir() const { return root_ + "/kdp"; }
  std::string checkpoint_path() const {
    return root_ + "/device-plugins/" + manager::checkpoint::kFileName;
  }

  // Admits `count` filler pods, each holding one filler device (of the filler resources in
  // turn), through PodManager::Admit.
  absl::Status Populate(int count) {
    for (int i = 0; i < count; ++i) {
      KDP_RETURN_IF_ERROR(
          AdmitOrError(OneContainerPod("filler", absl::StrFormat("filler-%05d", i), UidFor(i),
                                       FillerResource(i % kFillerResources))));
    }
    return absl::OkStatus();
  }

  // The next measured pod: a new name and UID each time, as a new pod would have.
  manager::Pod NextMeasuredPod() {
    const int64_t n = next_measured_++;
    return OneContainerPod("bench", absl::StrCat("measured-", n), UidFor((uint64_t{1} << 40) + n),
                           measured_);
  }

  // Admits `pod`; an error when it is rejected.
  absl::Status AdmitOrError(manager::Pod pod) {
    absl::StatusOr<manager::AdmitResult> result = pods_->Admit(std::move(pod));
    if (!result.ok()) return result.status();
    if (!result->admitted) {
      return absl::InternalError(
          absl::StrCat("pod rejected: ", result->reason, ": ", result->message));
    }
    return absl::OkStatus();
  }

  // The bytes one admission appends to the journal (its allocation and pod records). Settles.
  absl::StatusOr<size_t> AdmissionJournalBytes() {
    KDP_RETURN_IF_ERROR(Settle());  // The journal is now its header alone.
    const std::string journal = kdp_dir() + "/journal";
    const off_t before = FileSize(journal);
    manager::Pod pod = NextMeasuredPod();
    const std::string name = pod.name;
    KDP_RETURN_IF_ERROR(AdmitOrError(std::move(pod)));
    const off_t after = FileSize(journal);
    KDP_RETURN_IF_ERROR(pods_->Delete("bench", name).status());
    KDP_RETURN_IF_ERROR(Settle());
    if (before < 0 || after <= before) return absl::InternalError("cannot size " + journal);
    return static_cast<size_t>(after - before);
  }

  // Outside any timing: waits until the compaction this node's changes asked for (at most
  // kCompactionDelay after the first) has started, then compacts once more (Compact() waits for
  // one in progress), so nothing is dirty and the compaction thread idles through what follows.
  absl::Status Settle() {
    absl::SleepFor(kCompactionDelay + absl::Milliseconds(200));
    return store_->Compact();
  }

 private:
  Node(std::string root, Inventory inventory, std::string measured)
      : root_(std::move(root)), inventory_(std::move(inventory)), measured_(std::move(measured)) {}

  absl::Status Wire() {
    const std::string plugins_dir = root_ + "/device-plugins";
    for (const std::string& dir :
         {plugins_dir, root_ + "/pod-resources", kdp_dir(), root_ + "/plugins_registry"}) {
      KDP_RETURN_IF_ERROR(MakeDirectories(dir, 0750));
    }
    manager::RestoredState restored;
    KDP_ASSIGN_OR_RETURN(store_, manager::StateStore::Open({.checkpoint_path = checkpoint_path(),
                                                            .pods_path = kdp_dir() + "/pods.json",
                                                            .journal_path = kdp_dir() + "/journal",
                                                            .compaction_delay = kCompactionDelay,
                                                            .strict = false},
                                                           &restored));
    devices_ = std::make_unique<manager::DeviceManager>(manager::DeviceManagerOptions{
        .plugins_dir = plugins_dir,
        .endpoint = {.dial_timeout = absl::Seconds(10),
                     .call_timeout = absl::Seconds(30),
                     .pre_start_timeout = absl::Seconds(30)},
        .endpoint_grace_period = absl::Minutes(5),
        .housekeeping_interval = absl::Seconds(1),
        .now = {},
        .store = store_.get(),
    });
    pods_ = std::make_unique<manager::PodManager>(devices_.get(), store_.get());
    devices_->SetActivePodsSource(pods_.get());
    devices_->Restore(restored.devices);
    // A fresh root: no foreign checkpoint to adopt.
    pods_->Restore(std::move(restored.pods));
    manager::DeviceManager* devices = devices_.get();
    manager::PodManager* pods = pods_.get();
    store_->StartCompaction([devices, pods] {
      return manager::StateSnapshot{.devices = devices->CheckpointData(), .pods = pods->Pods()};
    });
    KDP_RETURN_IF_ERROR(devices_->Start());

    std::vector<std::unique_ptr<DevicePlugin>> plugins;
    std::map<std::string, int> want;
    for (const auto& [resource, count] : inventory_) {
      plugins.push_back(std::make_unique<BenchPlugin>(resource, count));
      want[resource] = count;
    }
    KDP_ASSIGN_OR_RETURN(runner_,
                         PluginRunner::Create({.kubelet_root = root_}, std::move(plugins)));
    KDP_RETURN_IF_ERROR(runner_->Start());
    // Registered, then listed by a first ListAndWatch: nothing to wait on but the registry.
    const size_t resources = want.size();
    for (const absl::Time deadline = absl::Now() + absl::Seconds(30); absl::Now() < deadline;) {
      size_t ready = 0;
      for (const auto& resource : devices_->SharedResources()) {
        auto it = want.find(resource->name);
        if (it != want.end() && resource->connected && resource->allocatable() == it->second) {
          ++ready;
        }
      }
      if (ready == resources) return absl::OkStatus();
      absl::SleepFor(absl::Milliseconds(10));
    }
    return absl::DeadlineExceededError(absl::StrCat("devices not listed on ", root_));
  }

  const std::string root_;
  const Inventory inventory_;
  const std::string measured_;
  std::unique_ptr<manager::StateStore> store_;
  std::unique_ptr<manager::DeviceManager> devices_;
  std::unique_ptr<manager::PodManager> pods_;
  std::unique_ptr<PluginRunner> runner_;
  int64_t next_measured_ = 0;
};

// Admissions, each followed by the deletion of its pod (timed apart) so that the state size stays
// fixed, for kRepetitionTime of wall time: long enough for the compactions the changes cause (at
// most one per kCompactionDelay) to fall inside, as they do on a busy node. One benchmark
// iteration per repetition; its manual time is the mean admission, the rest are counters. The
// node then settles, outside the timing.
void BM_AdmitThenDelete(benchmark::State& state, Node* node) {
  std::vector<double> admit_us;
  std::vector<double> admit_cpu_us;  // CPU time of the admitting thread: the disk left out
  std::vector<double> delete_us;
  const uint64_t compactions_before = node->store().compactions();
  for (auto _ : state) {
    const Clock::time_point until = Clock::now() + kRepetitionTime;
    while (Clock::now() < until || admit_us.size() < kMinAdmissions) {
      manager::Pod pod = node->NextMeasuredPod();
      const std::string name = pod.name;
      const Clock::time_point start = Clock::now();
      const double cpu_start = ThreadCpuMicros();
      absl::Status status = node->AdmitOrError(std::move(pod));
      const double cpu_end = ThreadCpuMicros();
      const Clock::time_point admitted_at = Clock::now();
      if (status.ok()) status = node->pods().Delete("bench", name).status();
      const Clock::time_point deleted_at = Clock::now();
      if (!status.ok()) {
        state.SkipWithError(status.ToString().c_str());
        return;
      }
      admit_us.push_back(Micros(admitted_at - start));
      admit_cpu_us.push_back(cpu_end - cpu_start);
      delete_us.push_back(Micros(deleted_at - admitted_at));
    }
    state.SetIterationTime(Summarize(admit_us).mean / 1e6);
  }
  const uint64_t compactions = node->store().compactions() - compactions_before;
  if (absl::Status settled = node->Settle(); !settled.ok()) {
    state.SkipWithError(settled.ToString().c_str());
    return;
  }
  const Stats admit = Summarize(admit_us);
  const Stats del = Summarize(std::move(delete_us));
  state.counters["admissions"] = static_cast<double>(admit_us.size());
  state.counters["p50_us"] = admit.p50;
  state.counters["p99_us"] = admit.p99;
  state.counters["cpu_us"] = Summarize(std::move(admit_cpu_us)).mean;
  state.counters["del_us"] = del.mean;
  state.counters["del_p50_us"] = del.p50;
  state.counters["del_p99_us"] = del.p99;
  state.counters["compactions"] = static_cast<double>(compactions);
}

// Runs `call` once per iteration; adds this repetition's per-call p50 and p99 (µs) as counters.
template <typename Call>
void TimeCalls(benchmark::State& state, Call call) {
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    if (absl::Status status = call(); !status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    micros.push_back(Micros(Clock::now() - start));
  }
  const Stats stats = Summarize(std::move(micros));
  state.counters["p50_us"] = stats.p50;
  state.counters["p99_us"] = stats.p99;
}

struct AppendFloor {
  std::string path;
  size_t bytes = 0;
};

// The journal's unavoidable cost: `bytes` appended to a file beside the journal and fdatasync'd
// (the file grows, as the journal does between compactions).
void BM_AppendFloor(benchmark::State& state, const AppendFloor* floor) {
  const int fd =
      ::open(floor->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    state.SkipWithError(absl::StrCat("open ", floor->path, ": ", std::strerror(errno)).c_str());
    return;
  }
  ::fsync(fd);
  const std::string block(floor->bytes, 'j');
  TimeCalls(state, [&] {
    if (::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size()) &&
        ::fdatasync(fd) == 0) {
      return absl::OkStatus();
    }
    return absl::InternalError(absl::StrCat("append ", floor->path, ": ", std::strerror(errno)));
  });
  ::close(fd);
}

// A whole small file made durable: temporary file, fsync, rename, fsync of the directory.
void BM_DurableWriteFloor(benchmark::State& state, const std::string* path) {
  const std::string content(kFloorBytes, 'd');
  TimeCalls(state, [&] { return WriteFileDurably(*path, content); });
}

struct KubeletWay {
  manager::checkpoint::Data data;
  std::string path;
};

// What every allocation costs a kubelet: the whole checkpoint encoded (JSON and the go-spew
// checksum) and written durably. Counters: the mean encoding time and the checkpoint's size.
void BM_KubeletWay(benchmark::State& state, const KubeletWay* way) {
  double encode_us = 0;
  size_t bytes = 0;
  TimeCalls(state, [&] {
    const Clock::time_point start = Clock::now();
    const std::string encoded = manager::checkpoint::Encode(way->data);
    encode_us += Micros(Clock::now() - start);
    bytes = encoded.size();
    return WriteFileDurably(way->path, encoded);
  });
  state.counters["encode_us"] = encode_us / std::max<double>(1, state.iterations());
  state.counters["bytes"] = static_cast<double>(bytes);
}

// Prints the table and ratios; returns the verdict sentence, or an error when a figure the
// verdict needs is missing.
absl::StatusOr<std::string> PrintSummary(const SummaryReporter& reporter, size_t record_bytes) {
  absl::PrintF("\n== Summary: medians over repetitions, µs ==\n%-58s %9s %9s %9s\n", "figure",
               "mean", "p50", "p99");
  const auto* append =
      reporter.Print("floor: 4 KiB append + fdatasync, beside the journal", kAppendFloorName);
  const auto* record = reporter.Print(
      absl::StrFormat("floor: %zu B append + fdatasync (an admission's records)", record_bytes),
      kRecordFloorName);
  const auto* durable = reporter.Print(
      "floor: 4 KiB durable write (temp, fsync, rename, dir fsync)", kDurableFloorName);
  std::map<int, const SummaryReporter::Figure*> admissions;
  for (int pods : kStateSizes) {
    const auto* f = admissions[pods] =
        reporter.Print(absl::StrFormat("kdp: Admit, %d pods admitted", pods), AdmissionName(pods));
    if (f == nullptr) continue;
    absl::PrintF("%-58s %9.1f %9.1f %9.1f\n",
                 absl::StrFormat("kdp: Delete, %d pods admitted", pods), f->Counter("del_us"),
                 f->Counter("del_p50_us"), f->Counter("del_p99_us"));
  }
  const auto* kubelet =
      reporter.Print("kubelet: Encode + WriteFileDurably, 10000 entries", kKubeletName);
  if (kubelet != nullptr) {
    absl::PrintF("%-58s %9.1f   (%.2f MB; the rest is the write)\n", "  of which Encode",
                 kubelet->Counter("encode_us"), kubelet->Counter("bytes") / 1e6);
  }
  auto over = [](const SummaryReporter::Figure* f, const SummaryReporter::Figure* floor) {
    return floor == nullptr ? std::string("n/a")
                            : absl::StrFormat("%.2f", f->mean_us / floor->mean_us);
  };
  absl::PrintF("\n");
  for (const auto& [pods, f] : admissions) {
    if (f == nullptr) continue;
    absl::PrintF(
        "%-58s %9s   (/ record-sized append %s, / durable write %s; %.0f admissions, "
        "%.0f compactions per repetition)\n",
        absl::StrFormat("Admit with %d pods / 4 KiB append floor", pods), over(f, append),
        over(f, record), over(f, durable), f->Counter("admissions"), f->Counter("compactions"));
  }
  const auto* small = admissions[kStateSizes[0]];
  const auto* large = admissions[kStateSizes[2]];
  if (small == nullptr || large == nullptr) return absl::UnavailableError("ratio not measured");
  const double ratio = large->mean_us / small->mean_us;
  absl::PrintF("%-58s %9.2f   (p50 ratio %.2f, p99 ratio %.2f)\n",
               "ratio Admit 10000 pods / 10 pods", ratio,
               large->Counter("p50_us") / small->Counter("p50_us"),
               large->Counter("p99_us") / small->Counter("p99_us"));
  if (kubelet != nullptr) {
    absl::PrintF("%-58s %9.1f\n", "ratio kubelet checkpoint rewrite / kdp Admit, 10000 pods",
                 kubelet->mean_us / large->mean_us);
  }
  return absl::StrFormat(
      "Admit %.1f us with 10000 pods vs %.1f us with 10: ratio %.2f (target <= %.1f) %s; Admit "
      "at 10000 pods = %s x the 4 KiB append+fdatasync floor",
      large->mean_us, small->mean_us, ratio, kRatioTarget, ratio <= kRatioTarget ? "PASS" : "FAIL",
      over(large, append));
}

// Prints admissions/s per inventory size and the ratio between the smallest and the largest;
// returns the verdict sentence, or an error when a figure is missing.
absl::StatusOr<std::string> PrintInventorySummary(const SummaryReporter& reporter) {
  absl::PrintF(
      "\n== Admissions against the inventory: one resource, no other pod, default device choice "
      "(medians over repetitions) ==\n%-10s %12s %9s %9s %14s %12s %18s\n",
      "devices", "Admit µs", "p50", "p99", "admissions/s", "CPU µs", "CPU-bound adm./s");
  std::map<int, double> per_second;
  std::map<int, double> cpu_us;
  for (int devices : kInventorySizes) {
    const SummaryReporter::Figure* f = reporter.Get(InventoryName(devices));
    if (f == nullptr) {
      absl::PrintF("%-10d %12s\n", devices, "not measured");
      continue;
    }
    per_second[devices] = 1e6 / f->mean_us;
    const double cpu = cpu_us[devices] = f->Counter("cpu_us");
    absl::PrintF("%-10d %12.1f %9.1f %9.1f %14.0f %12.1f %18.0f\n", devices, f->mean_us,
                 f->Counter("p50_us"), f->Counter("p99_us"), per_second[devices], cpu,
                 cpu > 0 ? 1e6 / cpu : 0.0);
  }
  const int small = kInventorySizes[0], large = kInventorySizes[std::size(kInventorySizes) - 1];
  if (!per_second.contains(small) || !per_second.contains(large)) {
    return absl::UnavailableError("inventory ratio not measured");
  }
  const double ratio = per_second[small] / per_second[large];
  const double cpu_ratio = cpu_us[small] > 0 ? cpu_us[large] / cpu_us[small] : 0;
  return absl::StrFormat(
      "%.0f admissions/s from %d devices vs %.0f/s from %d: ratio %.2f (target <= %.1f) %s; "
      "admitting thread's CPU per admission %.0f us vs %.0f us (ratio %.2f)",
      per_second[large], large, per_second[small], small, ratio, kInventoryRatioTarget,
      ratio <= kInventoryRatioTarget ? "PASS" : "FAIL", cpu_us[large], cpu_us[small], cpu_ratio);
}

template <typename F>
double MedianMicros(int samples, F f) {
  std::vector<double> micros;
  for (int i = 0; i < samples; ++i) {
    const Clock::time_point start = Clock::now();
    f();
    micros.push_back(Micros(Clock::now() - start));
  }
  return Summarize(std::move(micros)).p50;
}

// The rows of the breakdown, in the order MeasureBreakdown returns them.
constexpr const char* kBreakdownRows[] = {
    "Admit p50 in the benchmark (after a Delete, compactions run)",
    "Admit after a Delete, no compaction running (collection)",
    "  CPU time of the admitting thread",
    "Admit after an Admit, no compaction running (no collection)",
    "  CPU time of the admitting thread",
    "  DeviceManager::UpdateAllocatedDevices (the collection)",
    "    of which PodManager::ActivePodUids",
    "compaction: CheckpointData + Pods (under the change lock)",
    "compaction: checkpoint::Encode of that snapshot",
    "compaction: StateStore::Compact, whole",
};

// Medians, µs: admissions in bursts shorter than the compaction delay, each after Settle(), so
// that no compaction runs during them (the first admission of each pair follows the previous
// pair's deletions, so garbage collection runs; the second follows an admission: none does);
// then the O(pods) steps one by one.
absl::StatusOr<std::vector<double>> MeasureBreakdown(Node& node, double benchmark_p50) {
  constexpr size_t kSamples = 100;
  constexpr auto kBurst = std::chrono::milliseconds(700);  // < kCompactionDelay
  std::vector<double> wall[2], cpu[2];                     // [0]: after a Delete, [1]: an Admit
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(30);
  while (wall[1].size() < kSamples && Clock::now() < give_up) {
    KDP_RETURN_IF_ERROR(node.Settle());
    const Clock::time_point burst_end = Clock::now() + kBurst;
    while (Clock::now() < burst_end && wall[1].size() < kSamples) {
      std::string names[2];
      for (int i = 0; i < 2; ++i) {
        manager::Pod pod = node.NextMeasuredPod();
        names[i] = pod.name;
        const Clock::time_point start = Clock::now();
        const double cpu_start = ThreadCpuMicros();
        KDP_RETURN_IF_ERROR(node.AdmitOrError(std::move(pod)));
        wall[i].push_back(Micros(Clock::now() - start));
        cpu[i].push_back(ThreadCpuMicros() - cpu_start);
      }
      for (const std::string& name : names) {
        KDP_RETURN_IF_ERROR(node.pods().Delete("bench", name).status());
      }
    }
  }
  KDP_RETURN_IF_ERROR(node.Settle());
  size_t sink = 0;
  manager::StateSnapshot snapshot;
  absl::Status compacted;
  std::vector<double> rows = {
      benchmark_p50,
      Summarize(wall[0]).p50,
      Summarize(cpu[0]).p50,
      Summarize(wall[1]).p50,
      Summarize(cpu[1]).p50,
      MedianMicros(kSamples, [&] { node.devices().UpdateAllocatedDevices(); }),
      MedianMicros(kSamples, [&] { sink += node.pods().ActivePodUids().size(); }),
      MedianMicros(5,
                   [&] {
                     snapshot = {node.devices().CheckpointData(), node.pods().Pods()};
                   }),
      MedianMicros(5, [&] { sink += manager::checkpoint::Encode(snapshot.devices).size(); }),
      MedianMicros(5, [&] { compacted.Update(node.store().Compact()); }),
  };
  benchmark::DoNotOptimize(sink);
  KDP_RETURN_IF_ERROR(compacted);
  return rows;
}

absl::Status PrintBreakdown(const SummaryReporter& reporter,
                            const std::map<int, std::unique_ptr<Node>>& nodes) {
  std::map<int, std::vector<double>> columns;
  for (const auto& [pods, node] : nodes) {
    const SummaryReporter::Figure* f = reporter.Get(AdmissionName(pods));
    KDP_ASSIGN_OR_RETURN(columns[pods],
                         MeasureBreakdown(*node, f == nullptr ? 0 : f->Counter("p50_us")));
  }
  absl::PrintF(
      "\n== Where the time goes: steps timed from outside the manager's code, medians, µs ==\n");
  absl::PrintF("%-62s", "step");
  for (const auto& [pods, column] : columns) absl::PrintF(" %10s", absl::StrCat(pods, " pods"));
  for (size_t row = 0; row < std::size(kBreakdownRows); ++row) {
    absl::PrintF("\n%-62s", kBreakdownRows[row]);
    for (const auto& [pods, column] : columns) absl::PrintF(" %10.1f", column[row]);
  }
  absl::PrintF("\n");
  return absl::OkStatus();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "admission_benchmark: %s\n", what.c_str());
  return 1;
}

int Main(int argc, char** argv) {
  // Interleaved repetitions by default; a later flag on the command line still wins.
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave.data());
  int args_count = static_cast<int>(args.size());
  benchmark::Initialize(&args_count, args.data());
  const char* tmpdir = std::getenv("TMPDIR");
  std::string base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  bool skip_breakdown = false;
  bool inventory_only = false;
  for (int i = 1; i < args_count; ++i) {
    const std::string arg = args[i];
    if (absl::StartsWith(arg, "--kdp_dir=")) {
      base = arg.substr(std::strlen("--kdp_dir="));
    } else if (arg == "--kdp_skip_breakdown") {
      skip_breakdown = true;
    } else if (arg == "--kdp_inventory_only") {
      inventory_only = true;
    } else {
      std::fprintf(stderr, "admission_benchmark: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  // The runners retry registration quietly, and the manager logs every admission at info.
  log::SetMinLevel(log::Level::kError);

  TempDir dir("kdp-admission-", base);
  if (dir.path().empty())
    return Fail(absl::StrCat("mkdtemp in ", base, ": ", std::strerror(errno)));
  absl::StatusOr<std::vector<std::string>> mount = MountOf(dir.path());
  if (!mount.ok()) return Fail(mount.status().ToString());
  const std::string& type = (*mount)[2];
  absl::PrintF("state directory %s: %s mounted on %s, %s\n", dir.path(), (*mount)[0], (*mount)[1],
               type);
  if (type == "tmpfs" || type == "ramfs") {
    return Fail(absl::StrCat(dir.path(), " is on ", type,
                             ": its fsyncs cost nothing; use --kdp_dir=<a directory on disk>"));
  }

  auto add = [](const std::string& name, auto function, auto* argument) {
    return benchmark::RegisterBenchmark(name.c_str(), function, argument)
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(kRepetitions)
        ->ReportAggregatesOnly(true);
  };
  std::map<int, std::unique_ptr<Node>> inventory_nodes;
  for (int devices : kInventorySizes) {
    absl::StatusOr<std::unique_ptr<Node>> node =
        Node::StartWith(absl::StrCat(dir.path(), "/inventory", devices),
                        {{kInventoryResource, devices}}, kInventoryResource);
    if (!node.ok()) return Fail(node.status().ToString());
    add(InventoryName(devices), BM_AdmitThenDelete, node->get())->UseManualTime()->Iterations(1);
    inventory_nodes[devices] = *std::move(node);
  }
  SummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                 : benchmark::ConsoleReporter::OO_Tabular);
  auto message = [](const auto& verdict) {
    return verdict.ok() ? std::string(*verdict) : std::string(verdict.status().message());
  };
  if (inventory_only) {
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    absl::StatusOr<std::string> verdict = PrintInventorySummary(reporter);
    absl::PrintF("\nadmission_benchmark: %s\n", message(verdict));
    return verdict.ok() ? 0 : 1;
  }
  std::map<int, std::unique_ptr<Node>> nodes;
  for (int pods : kStateSizes) {
    absl::StatusOr<std::unique_ptr<Node>> node =
        Node::Start(absl::StrCat(dir.path(), "/node", pods));
    if (!node.ok()) return Fail(node.status().ToString());
    const Clock::time_point start = Clock::now();
    if (absl::Status populated = (*node)->Populate(pods); !populated.ok()) {
      return Fail(absl::StrCat("populating ", pods, " pods: ", populated.ToString()));
    }
    const double seconds = Micros(Clock::now() - start) / 1e6;
    if (absl::Status settled = (*node)->Settle(); !settled.ok()) return Fail(settled.ToString());
    absl::PrintF(
        "node with %d pods: admitted in %.1f s (%.0f us per Admit, filler resources of %d "
        "devices); checkpoint %d bytes, pods.json %d bytes\n",
        pods, seconds, seconds * 1e6 / pods, kFillerDevicesEach,
        FileSize((*node)->checkpoint_path()), FileSize((*node)->kdp_dir() + "/pods.json"));
    std::fflush(stdout);
    nodes[pods] = *std::move(node);
  }
  Node& largest = *nodes[kStateSizes[2]];
  const AppendFloor append_floor{.path = largest.kdp_dir() + "/floor.append", .bytes = kFloorBytes};
  absl::StatusOr<size_t> record_bytes = nodes[kStateSizes[0]]->AdmissionJournalBytes();
  if (!record_bytes.ok()) return Fail(record_bytes.status().ToString());
  const AppendFloor record_floor{.path = largest.kdp_dir() + "/floor.records",
                                 .bytes = *record_bytes};
  const std::string durable_path = largest.kdp_dir() + "/floor.durable";
  const KubeletWay kubelet{.data = largest.devices().CheckpointData(),
                           .path = absl::StrCat(dir.path(), "/", manager::checkpoint::kFileName)};

  add(kAppendFloorName, BM_AppendFloor, &append_floor)->UseRealTime()->MinTime(0.5);
  add(kRecordFloorName, BM_AppendFloor, &record_floor)->UseRealTime()->MinTime(0.5);
  add(kDurableFloorName, BM_DurableWriteFloor, &durable_path)->UseRealTime()->MinTime(0.5);
  // One iteration: each repetition then runs (and settles) once.
  for (const auto& [pods, node] : nodes) {
    add(AdmissionName(pods), BM_AdmitThenDelete, node.get())->UseManualTime()->Iterations(1);
  }
  add(kKubeletName, BM_KubeletWay, &kubelet)->UseRealTime()->MinTime(1.0);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  absl::StatusOr<std::string> inventory_verdict = PrintInventorySummary(reporter);
  absl::StatusOr<std::string> verdict = PrintSummary(reporter, record_floor.bytes);
  // The state the 10,000-pod node keeps on disk, just compacted by its last Settle().
  absl::PrintF("%-58s %d bytes; pods.json %d, journal %d\n", "checkpoint file at 10000 pods",
               FileSize(largest.checkpoint_path()), FileSize(largest.kdp_dir() + "/pods.json"),
               FileSize(largest.kdp_dir() + "/journal"));
  absl::Status breakdown = skip_breakdown ? absl::OkStatus() : PrintBreakdown(reporter, nodes);
  if (!breakdown.ok()) absl::PrintF("breakdown not measured: %s\n", breakdown.ToString());
  absl::PrintF("\nadmission_benchmark: %s\n", message(inventory_verdict));
  absl::PrintF("admission_benchmark: %s\n", message(verdict));
  return verdict.ok() && inventory_verdict.ok() && breakdown.ok() ? 0 : 1;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
