// topology_hints_benchmark measures the device manager's topology-hint generation
// (GenerateDeviceTopologyHints, manager/src/devicemanager/topology_hints.h) for one resource of
// 4,096 devices spread over 8 NUMA nodes (512 per node, a quarter of them allocated, 2 reusable),
// requests of 1, 8 and 600 devices, against a naive baseline measured in the same run: the
// kubelet's own loop (generateDeviceTopologyHints: every mask of the machine's nodes, each device
// looked at once per mask). Target: ≤ 1 ms per call. A GB200-like machine (36 NUMA nodes, devices
// on 2) is measured too: there the naive loop would visit 2^36 masks and is not run.
//
// Usage: topology_hints_benchmark [--benchmark_* flags]. Prints the figures, the ratio to the
// baseline and PASS/FAIL per target; exit 0 when measured (a missed target is reported, not an
// error). docs/benchmarks.md has our figures.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/topology_hints.h"
#include "manager/src/topologymanager/numa_mask.h"

namespace kdp::bench {
namespace {

using manager::DeviceInfo;
using manager::NumaMask;
using manager::ResourceDevices;
using manager::TopologyHint;

constexpr double kTargetUs = 1000;

struct Fixture {
  ResourceDevices devices;
  std::vector<int> machine_nodes;
  std::set<std::string> available;
  std::set<std::string> reusable;
};

// `nodes` machine nodes; devices on the first `device_nodes` of them, `per_node` each; every
// fourth device allocated; two reusable.
Fixture MakeFixture(int nodes, int device_nodes, int per_node) {
  Fixture f;
  f.devices.name = "example.com/dev";
  for (int n = 0; n < nodes; ++n) f.machine_nodes.push_back(n);
  int index = 0;
  for (int n = 0; n < device_nodes; ++n) {
    for (int i = 0; i < per_node; ++i, ++index) {
      std::string id = absl::StrCat("dev", index);
      f.devices.devices[id] = DeviceInfo{.healthy = true, .numa_nodes = {n}};
      if (index % 4 == 3) continue;  // allocated
      if (index == 1 || index == per_node + 1) {
        f.reusable.insert(id);
        continue;
      }
      f.available.insert(id);
    }
  }
  return f;
}

// The kubelet's generateDeviceTopologyHints, as written upstream: every mask of the machine's
// nodes, and per mask a pass over every device (and the reusable and available sets).
std::vector<TopologyHint> NaiveHints(const Fixture& f, int64_t request) {
  auto aligned = [&](const DeviceInfo& device, const NumaMask& mask) {
    for (int64_t node : device.numa_nodes) {
      if (mask.Contains(static_cast<int>(node))) return true;
    }
    return false;
  };
  int min_affinity = static_cast<int>(f.machine_nodes.size());
  std::vector<TopologyHint> hints;
  manager::IterateMasks(f.machine_nodes, [&](const NumaMask& mask) {
    int64_t in_mask = 0;
    for (const auto& [id, device] : f.devices.devices) {
      if (!device.numa_nodes.empty() && aligned(device, mask)) ++in_mask;
    }
    if (in_mask >= request && mask.Count() < min_affinity) min_affinity = mask.Count();
    int64_t matching = 0;
    for (const std::string& id : f.reusable) {
      const DeviceInfo& device = f.devices.devices.at(id);
      if (device.numa_nodes.empty()) continue;
      if (!aligned(device, mask)) return;
      ++matching;
    }
    for (const std::string& id : f.available) {
      if (aligned(f.devices.devices.at(id), mask)) ++matching;
    }
    if (matching < request) return;
    hints.push_back({.numa_affinity = mask, .preferred = false});
  });
  for (TopologyHint& hint : hints) hint.preferred = hint.numa_affinity->Count() == min_affinity;
  return hints;
}

const Fixture& EightNodes() {
  static const Fixture* fixture = new Fixture(MakeFixture(8, 8, 512));
  return *fixture;
}

void BM_Kdp(benchmark::State& state) {
  const Fixture& f = EightNodes();
  for (auto _ : state) {
    benchmark::DoNotOptimize(manager::GenerateDeviceTopologyHints(
        f.devices, f.machine_nodes, f.available, f.reusable, state.range(0)));
  }
}

void BM_Naive(benchmark::State& state) {
  const Fixture& f = EightNodes();
  for (auto _ : state) benchmark::DoNotOptimize(NaiveHints(f, state.range(0)));
}

void BM_KdpGb200(benchmark::State& state) {
  static const Fixture* f = new Fixture(MakeFixture(36, 2, 2));
  for (auto _ : state) {
    benchmark::DoNotOptimize(manager::GenerateDeviceTopologyHints(
        f->devices, f->machine_nodes, f->available, f->reusable, state.range(0)));
  }
}

BENCHMARK(BM_Kdp)->Arg(1)->Arg(8)->Arg(600)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Naive)->Arg(1)->Arg(8)->Arg(600)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KdpGb200)->Arg(2)->Unit(benchmark::kMicrosecond);

// Keeps each run's mean time per iteration (µs) by name, and prints as the console does.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.iterations == 0) continue;
      times_us_[run.benchmark_name()] =
          run.GetAdjustedRealTime() * (run.time_unit == benchmark::kMicrosecond   ? 1.0
                                       : run.time_unit == benchmark::kMillisecond ? 1000.0
                                                                                  : 1e-3);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& times_us() const { return times_us_; }

 private:
  std::map<std::string, double> times_us_;
};

int Main(int argc, char** argv) {
  // The two implementations must agree before their speed means anything.
  for (int64_t request : {1, 8, 600}) {
    const Fixture& f = EightNodes();
    if (manager::GenerateDeviceTopologyHints(f.devices, f.machine_nodes, f.available, f.reusable,
                                             request) != NaiveHints(f, request)) {
      std::fprintf(stderr, "topology_hints_benchmark: kdp and the naive loop disagree at %lld\n",
                   static_cast<long long>(request));
      return 1;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  const auto& t = collector.times_us();
  std::printf(
      "\nTopology hints, one resource of 4,096 devices on 8 NUMA nodes (target <= %.0f us):\n",
      kTargetUs);
  for (const char* request : {"1", "8", "600"}) {
    auto kdp = t.find(absl::StrCat("BM_Kdp/", request));
    auto naive = t.find(absl::StrCat("BM_Naive/", request));
    if (kdp == t.end() || naive == t.end()) continue;
    std::printf(
        "  request %-4s kdp %9.1f us   naive (kubelet loop) %9.1f us   naive/kdp %6.1f   %s\n",
        request, kdp->second, naive->second, naive->second / kdp->second,
        kdp->second <= kTargetUs ? "PASS" : "FAIL");
  }
  if (auto gb200 = t.find("BM_KdpGb200/2"); gb200 != t.end()) {
    std::printf(
        "  GB200-like (36 NUMA nodes, devices on 2): kdp %.1f us; the kubelet loop would "
        "visit 2^36 masks\n",
        gb200->second);
  }
  return 0;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
