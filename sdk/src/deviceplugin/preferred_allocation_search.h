// The search behind kdp::DeviceGraph::Choose() (kdp/preferred_allocation.h): which fresh
// physical devices to take. Replicas of a physical device are interchangeable, so a candidate
// set is a set F of physical devices, one ID each; every policy ranks F by a few numbers that are
// cheap to update when one device joins or leaves F:
//   score(F)    = intra(must) + Σ_{x∈F} base(x) + intra(F), base(x) = Σ_{m∈must} s(x, m)
//   leftover(F) = intra(C \ F) = W − Σ_{x∈F} rowsum(x) + intra(F), over the fresh devices C
// with s the pair score, intra(X) the sum over pairs of X, rowsum(x) = Σ_{y∈C} s(x, y) and
// W = intra(C), plus per-NUMA-node device counts. Private to the SDK.
#ifndef KDP_SDK_SRC_DEVICEPLUGIN_PREFERRED_ALLOCATION_SEARCH_H_
#define KDP_SDK_SRC_DEVICEPLUGIN_PREFERRED_ALLOCATION_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kdp/preferred_allocation.h"

namespace kdp::internal {

// One Choose() call reduced to the fresh physical devices: the candidates that must_include
// does not already touch, numbered 0..n-1 in the order of their first free ID (Build() order,
// then IDs outside the inventory, sorted). The search picks F, a set of them, one ID each.
struct SearchProblem {
  AllocationPolicy policy = AllocationPolicy::kNumaPacked;
  int n = 0;                       // fresh candidates
  int needed = 0;                  // IDs to choose besides must_include
  int min_size = 0, max_size = 0;  // bounds on |F|; REQUIRES: min_size < n
  // Pair scores: row r of the matrix starts at scores + r × stride; candidate x's row is
  // physical[x] (IDs outside the inventory share a row of zeros).
  const int32_t* scores = nullptr;
  size_t stride = 0;
  std::vector<int> physical = {};
  std::vector<int> capacity = {};            // free replicas
  std::vector<std::vector<int>> nodes = {};  // dense NUMA node indexes ("none" is one)
  std::vector<int64_t> base = {};            // Σ pair score with must_include's devices
  std::vector<int64_t> rowsum = {};          // Σ pair score with the other fresh candidates
  std::vector<int64_t> node_free = {};       // per dense node, free IDs of candidates on it
  int64_t total = 0;                         // W: Σ pair score over the fresh candidates
  int64_t must_score = 0;                    // Σ pair score over must_include's devices
  int must_distinct = 0;                     // must_include's distinct physical devices
  int64_t reused_capacity = 0;               // free replicas of must_include's devices
  std::vector<int> must_count = {};          // per dense node, must_include's devices on it

  const int32_t* Row(int x) const { return scores + static_cast<size_t>(physical[x]) * stride; }
};

// Exhaustive search up to this many candidate sets (2^16 is every subset of 16 devices).
inline constexpr double kMaxExhaustiveSets = 1 << 17;

// Σ C(n, m) over min_size <= m <= max_size: the sets SearchExhaustive() ranks, saturating a
// little above kMaxExhaustiveSets.
double CountCandidateSets(const SearchProblem& problem);

// The best F under problem.policy, ascending; among equally ranked sets the least loaded, then
// the lexicographically smallest. Time O(CountCandidateSets() × max_size).
std::vector<int> SearchExhaustive(const SearchProblem& problem);

// A good F, ascending, by greedy growth from a few seeds (numa-packed: inside the fewest NUMA
// nodes that hold the request), then improving swaps; deterministic. Time
// O(seeds × max_size × n + n²), with at most 16 seeds.
std::vector<int> SearchGreedy(const SearchProblem& problem);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DEVICEPLUGIN_PREFERRED_ALLOCATION_SEARCH_H_
