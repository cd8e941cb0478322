// preferred_allocation_benchmark measures kdp::DeviceGraph::Choose(), the SDK's preferred
// allocator, on the two sizes issue 4 sets targets for, each beside a naive baseline measured in
// the same run:
//   - 8 of 16 GPUs with a link matrix (two DGX-1 hybrid cube meshes: 100 per NVLink plus PCI
//     locality, 4 NUMA nodes), target <= 1 ms. kdp searches exhaustively here (incremental scores
//     over the C(16,8) = 12,870 sets); the baseline is NVIDIA go-gpuallocator's way, every set of 8
//     scored from scratch (its pair sum and its leftover's), O(C(n,k)·k²).
//   - 64 of 512 devices (8 NUMA nodes in 2 packages, 4 host bridges per node, 2 PCIe switches per
//     bridge, 8 devices per switch; PciLocality scores; 30% of the devices already taken, so no
//     node holds the request), target <= 5 ms. kdp runs its greedy search (seeds, gain arrays,
//     lookahead, swaps); the baseline is a greedy that rescores the whole set for every candidate
//     at every pick, O(k²·n) per pick.
// Each figure is the median over repetitions of the mean time per call, in µs. The summary also
// says whether kdp's and the baseline's answers agree (the 16-GPU baseline is exact, so they must)
// and the pair-score sum of each answer (the 512-device baseline is a plain greedy).
//
// Usage: preferred_allocation_benchmark [--benchmark_* flags]
// Exit status: 0 when everything was measured (a missed target is reported, not an error), 1 when
// a measurement could not be made.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/summary_reporter.h"
#include "kdp/device_plugin.h"
#include "kdp/preferred_allocation.h"

namespace kdp::bench {
namespace {

constexpr int kRepetitions = 5;

// One measured request: the graph, the request, and the same scores as a dense matrix over the
// inventory (Build() order) for the baselines.
struct Case {
  std::string label = {};
  double target_us = 0;
  DeviceGraph graph;
  PreferredRequest request = {};
  AllocationPolicy policy = AllocationPolicy::kLinkBestFit;
  std::vector<int32_t> matrix = {};  // n × n
  int n = 0;

  int32_t S(int a, int b) const { return matrix[static_cast<size_t>(a) * n + b]; }
};

// Dense scores for the baselines, from the function the graph was built with.
std::vector<int32_t> Matrix(const std::vector<AllocatableDevice>& devices,
                            const DeviceGraph::PairScoreFn& score) {
  const size_t n = devices.size();
  std::vector<int32_t> matrix(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      matrix[a * n + b] = matrix[b * n + a] = score(devices[a], devices[b]);
    }
  }
  return matrix;
}

// Two DGX-1 (V100) hybrid cube meshes: in each, quads {0..3} and {4..7} fully linked plus 0-4,
// 1-5, 2-6, 3-7, six NVLinks per GPU; PCIe switch pairs (0,1) (2,3) ..., one NUMA node per quad.
constexpr int kDgx1Links[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                                  {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                                  {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                                  {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};

int GpuOf(const AllocatableDevice& device) { return std::stoi(device.id.substr(3)); }

int TwoMeshScore(const AllocatableDevice& a, const AllocatableDevice& b) {
  const int i = GpuOf(a), j = GpuOf(b);
  if (i / 8 != j / 8) return 10;  // different meshes, different sockets
  const int pci = i / 2 == j / 2 ? 50 : (i / 4 == j / 4 ? 20 : 10);
  return 100 * kDgx1Links[i % 8][j % 8] + pci;
}

absl::StatusOr<Case> SixteenGpus(AllocationPolicy policy) {
  std::vector<AllocatableDevice> devices;
  for (int i = 0; i < 16; ++i) {
    devices.push_back({.id = absl::StrCat("gpu", i),
                       .physical_id = "",
                       .numa_nodes = {i / 4},
                       .pci_address = std::nullopt});
  }
  std::vector<int32_t> matrix = Matrix(devices, TwoMeshScore);
  PreferredRequest request{.available = {}, .must_include = {}, .size = 8};
  for (const AllocatableDevice& device : devices) request.available.push_back(device.id);
  absl::StatusOr<DeviceGraph> graph = DeviceGraph::Build(std::move(devices), TwoMeshScore);
  if (!graph.ok()) return graph.status();
  return Case{
      .label = absl::StrCat("8 of 16 GPUs (2x DGX-1 NVLink), ", AllocationPolicyName(policy)),
      .target_us = 1000,
      .graph = *std::move(graph),
      .request = std::move(request),
      .policy = policy,
      .matrix = std::move(matrix),
      .n = 16};
}

// 8 NUMA nodes (4 per package) × 4 host bridges × 2 PCIe switches × 8 devices.
int PciScore(const AllocatableDevice& a, const AllocatableDevice& b) {
  const int i = std::stoi(a.id.substr(3)), j = std::stoi(b.id.substr(3));
  if (i / 8 == j / 8) return 50;      // switch
  if (i / 16 == j / 16) return 30;    // host bridge
  if (i / 256 == j / 256) return 20;  // package (same node or not)
  return 10;
}

absl::StatusOr<Case> FiveTwelveDevices(AllocationPolicy policy) {
  std::vector<AllocatableDevice> devices;
  for (int i = 0; i < 512; ++i) {
    devices.push_back({.id = absl::StrCat("dev", i),
                       .physical_id = "",
                       .numa_nodes = {i / 64},
                       .pci_address = std::nullopt});
  }
  std::vector<int32_t> matrix = Matrix(devices, PciScore);
  PreferredRequest request{.available = {}, .must_include = {}, .size = 64};
  std::mt19937 rng(42);
  for (const AllocatableDevice& device : devices) {
    if (rng() % 100 >= 30) request.available.push_back(device.id);
  }
  absl::StatusOr<DeviceGraph> graph = DeviceGraph::Build(std::move(devices), PciScore);
  if (!graph.ok()) return graph.status();
  return Case{.label = absl::StrCat("64 of 512 devices (8 nodes, 30% taken), ",
                                    AllocationPolicyName(policy)),
              .target_us = 5000,
              .graph = *std::move(graph),
              .request = std::move(request),
              .policy = policy,
              .matrix = std::move(matrix),
              .n = 512};
}

// Inventory positions of the available IDs (the baselines' candidates), ascending.
std::vector<int> Candidates(const Case& c) {
  std::map<std::string, int> index;
  for (int i = 0; i < c.n; ++i) index[c.graph.devices()[i].id] = i;
  std::vector<int> out;
  for (const std::string& id : c.request.available) out.push_back(index.at(id));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> IdsOf(const Case& c, const std::vector<int>& positions) {
  std::vector<std::string> ids;
  for (int i : positions) ids.push_back(c.graph.devices()[i].id);
  return ids;
}

// NVIDIA go-gpuallocator's way: every set of `size` candidates scored from scratch; the highest
// pair sum, then the highest leftover pair sum, the first in order among equals.
std::vector<std::string> AllSubsets(const Case& c) {
  const std::vector<int> candidates = Candidates(c);
  const int n = static_cast<int>(candidates.size());
  const int k = std::min(c.request.size, n);
  std::vector<char> in(n, 0);
  std::fill(in.begin(), in.begin() + k, 1);  // lexicographically first combination
  std::vector<int> best;
  int64_t best_score = -1, best_leftover = -1;
  std::vector<int> set, left;
  do {
    set.clear();
    left.clear();
    for (int i = 0; i < n; ++i) (in[i] ? set : left).push_back(candidates[i]);
    int64_t score = 0, leftover = 0;
    for (size_t a = 0; a < set.size(); ++a) {
      for (size_t b = a + 1; b < set.size(); ++b) score += c.S(set[a], set[b]);
    }
    for (size_t a = 0; a < left.size(); ++a) {
      for (size_t b = a + 1; b < left.size(); ++b) leftover += c.S(left[a], left[b]);
    }
    if (score > best_score || (score == best_score && leftover > best_leftover)) {
      best = set;
      best_score = score;
      best_leftover = leftover;
    }
  } while (std::prev_permutation(in.begin(), in.end()));
  return IdsOf(c, best);
}

// A greedy that rescores the whole set for every candidate at every pick.
std::vector<std::string> NaiveGreedy(const Case& c) {
  const std::vector<int> candidates = Candidates(c);
  std::vector<int> set;
  std::vector<char> taken(candidates.size(), 0);
  while (static_cast<int>(set.size()) < c.request.size && set.size() < candidates.size()) {
    int best = -1;
    int64_t best_score = -1;
    for (size_t x = 0; x < candidates.size(); ++x) {
      if (taken[x]) continue;
      set.push_back(candidates[x]);
      int64_t score = 0;
      for (size_t a = 0; a < set.size(); ++a) {
        for (size_t b = a + 1; b < set.size(); ++b) score += c.S(set[a], set[b]);
      }
      set.pop_back();
      if (score > best_score) {
        best = static_cast<int>(x);
        best_score = score;
      }
    }
    taken[best] = 1;
    set.push_back(candidates[best]);
  }
  std::sort(set.begin(), set.end());
  return IdsOf(c, set);
}

int64_t PairSum(const Case& c, const std::vector<std::string>& ids) {
  int64_t sum = 0;
  for (size_t a = 0; a < ids.size(); ++a) {
    for (size_t b = a + 1; b < ids.size(); ++b) sum += c.graph.Score(ids[a], ids[b]);
  }
  return sum;
}

void BM_Kdp(benchmark::State& state, const Case* c) {
  for (auto _ : state) {
    absl::StatusOr<std::vector<std::string>> chosen = c->graph.Choose(c->request, c->policy);
    if (!chosen.ok()) {
      state.SkipWithError(chosen.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(chosen->data());
  }
}

void BM_Baseline(benchmark::State& state, const Case* c,
                 std::vector<std::string> (*baseline)(const Case&)) {
  for (auto _ : state) {
    std::vector<std::string> chosen = baseline(*c);
    benchmark::DoNotOptimize(chosen.data());
  }
}

struct Measured {
  const Case* c;
  std::string kdp_name, baseline_name, baseline_label;
  std::vector<std::string> (*baseline)(const Case&);
};

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "preferred_allocation_benchmark: %s\n", status.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<Case> cases;
  for (AllocationPolicy policy : {AllocationPolicy::kLinkBestFit, AllocationPolicy::kNumaPacked}) {
    absl::StatusOr<Case> c = SixteenGpus(policy);
    if (!c.ok()) return Fail(c.status());
    cases.push_back(*std::move(c));
  }
  for (AllocationPolicy policy :
       {AllocationPolicy::kLinkBestFit, AllocationPolicy::kNumaPacked, AllocationPolicy::kSpread}) {
    absl::StatusOr<Case> c = FiveTwelveDevices(policy);
    if (!c.ok()) return Fail(c.status());
    cases.push_back(*std::move(c));
  }
  std::vector<Measured> measured;
  for (const Case& c : cases) {
    const bool small = c.n == 16;
    const std::string size = small ? "16" : "512";
    Measured m{.c = &c,
               .kdp_name = absl::StrCat("kdp/", size, "/", AllocationPolicyName(c.policy)),
               .baseline_name = absl::StrCat(small ? "nvidia_all_subsets/" : "naive_greedy/", size),
               .baseline_label = small ? "NVIDIA-style all subsets" : "naive rescoring greedy",
               .baseline = small ? AllSubsets : NaiveGreedy};
    benchmark::RegisterBenchmark(m.kdp_name.c_str(), BM_Kdp, &c)
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(kRepetitions)
        ->ReportAggregatesOnly(true);
    // One baseline per size: its answer does not depend on the policy.
    if (std::none_of(measured.begin(), measured.end(),
                     [&](const Measured& o) { return o.baseline_name == m.baseline_name; })) {
      benchmark::RegisterBenchmark(m.baseline_name.c_str(), BM_Baseline, &c, m.baseline)
          ->Unit(benchmark::kMicrosecond)
          ->Repetitions(kRepetitions)
          ->ReportAggregatesOnly(true);
    }
    measured.push_back(std::move(m));
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  absl::PrintF("\n== Summary: medians over %d repetitions of the mean per call, µs ==\n",
               kRepetitions);
  bool all_measured = true, all_met = true;
  for (const Measured& m : measured) {
    absl::StatusOr<double> kdp = reporter.MeanUs(m.kdp_name);
    absl::StatusOr<double> baseline = reporter.MeanUs(m.baseline_name);
    if (!kdp.ok() || !baseline.ok()) {
      absl::PrintF("%s: %s\n", m.c->label,
                   !kdp.ok() ? kdp.status().ToString() : baseline.status().ToString());
      all_measured = false;
      continue;
    }
    const std::vector<std::string> ours = *m.c->graph.Choose(m.c->request, m.c->policy);
    const std::vector<std::string> theirs = m.baseline(*m.c);
    const bool met = *kdp <= m.c->target_us;
    all_met = all_met && met;
    absl::PrintF(
        "%-58s kdp %9.1f   %s %11.1f   ratio %7.1fx   target <= %.0f us %s\n"
        "%-58s pair-score sum: kdp %lld, baseline %lld%s\n",
        m.c->label, *kdp, m.baseline_label, *baseline, *baseline / *kdp, m.c->target_us,
        met ? "PASS" : "FAIL", "", static_cast<long long>(PairSum(*m.c, ours)),
        static_cast<long long>(PairSum(*m.c, theirs)),
        m.c->policy == AllocationPolicy::kLinkBestFit
            ? (ours == theirs ? "; same answer" : "; different answers")
            : (m.c->policy == AllocationPolicy::kSpread ? " (spread seeks the lowest)" : ""));
  }
  absl::PrintF("\npreferred_allocation_benchmark: %s\n",
               !all_measured
                   ? "some figures could not be measured"
                   : (all_met ? "every target met (PASS)" : "a target was missed (FAIL)"));
  return all_measured ? 0 : 1;
}

}  // namespace
}  // namespace kdp::bench

int main(int argc, char** argv) { return kdp::bench::Main(argc, argv); }
