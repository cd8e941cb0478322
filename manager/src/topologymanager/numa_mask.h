// NumaMask is a set of Linux NUMA node numbers, the kubelet's topologymanager bitmask.BitMask
// (pkg/kubelet/cm/topologymanager/bitmask) widened from 64 bits to the kernel's 1,024 nodes
// (MAX_NUMNODES with CONFIG_NODES_SHIFT=10): hwloc topologies of GPU servers number the GPUs'
// memory nodes 250-255, which a 64-bit mask cannot hold. Comparisons keep upstream's meaning: a
// mask orders as the unsigned number whose bit N is node N, so "narrower" is fewer nodes, then the
// smaller number. NumaInfo is the kubelet's NUMAInfo (numa_info.go): the machine's nodes and their
// SLIT distances, with the Narrowest and Closest choices the hint merge uses. Hint providers build
// masks with IterateMasks; the topology manager's policies (policy.h) merge them.
//
// Thread-safety: value types; const methods are safe to call concurrently.
#ifndef KDP_MANAGER_SRC_TOPOLOGYMANAGER_NUMA_MASK_H_
#define KDP_MANAGER_SRC_TOPOLOGYMANAGER_NUMA_MASK_H_

#include <array>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"

namespace kdp::manager {

class NumaMask {
 public:
  // The highest node number a mask holds; nodes are 0..kMaxNode.
  static constexpr int kMaxNode = 1023;

  // The empty mask.
  NumaMask() = default;

  // A mask of `nodes`; numbers outside 0..kMaxNode are ignored (check with IsValidNode first when
  // they come from outside). Duplicates are harmless.
  static NumaMask Of(std::initializer_list<int> nodes);
  static NumaMask FromNodes(absl::Span<const int> nodes);

  // True when `node` is in 0..kMaxNode.
  static bool IsValidNode(int node) { return node >= 0 && node <= kMaxNode; }

  // Adds / removes `node`; false (and no change) when it is outside 0..kMaxNode.
  bool Add(int node);
  bool Remove(int node);

  // Whether `node` is in the mask (false for any number outside 0..kMaxNode).
  bool Contains(int node) const;
  // Number of nodes in the mask.
  int Count() const;
  bool IsEmpty() const;
  // The nodes, ascending (upstream's GetBits).
  std::vector<int> Nodes() const;

  // Intersection and union.
  NumaMask And(const NumaMask& other) const;
  NumaMask Or(const NumaMask& other) const;
  // True when the masks share at least one node.
  bool Intersects(const NumaMask& other) const;

  bool IsEqual(const NumaMask& other) const { return *this == other; }
  // True when every node of this mask is in `other` (the empty mask is a subset of all).
  bool IsSubsetOf(const NumaMask& other) const;
  // Upstream's IsNarrowerThan: fewer nodes, or as many and IsLessThan(other).
  bool IsNarrowerThan(const NumaMask& other) const;
  // Upstream's IsLessThan / IsGreaterThan: the masks compared as unsigned numbers (bit N = node
  // N), so of two masks the one whose highest differing node is set is the greater.
  bool IsLessThan(const NumaMask& other) const { return *this < other; }
  bool IsGreaterThan(const NumaMask& other) const { return *this > other; }

  // The nodes as a comma-separated ascending list: "0,1", "250,255"; "" when empty. kdp's
  // human-readable form (kdpctl, logs).
  std::string ToString() const;
  // The kubelet's BitMask.String(): the number in binary, most significant bit first, zero-padded
  // to an even width as upstream pads it ("00" empty, "01" {0}, "10" {1}, "0101" {0,2}; upstream's
  // quirk keeps "100" for {2}). Shown by the kubelet in its topology-manager log lines.
  std::string ToBitString() const;

  // Equality, and the numeric order of IsLessThan (so std::set<NumaMask> iterates as upstream's
  // masks compare).
  friend bool operator==(const NumaMask& a, const NumaMask& b) = default;
  friend std::strong_ordering operator<=>(const NumaMask& a, const NumaMask& b);

  template <typename H>
  friend H AbslHashValue(H h, const NumaMask& mask) {
    return H::combine(std::move(h), mask.words_);
  }

 private:
  static constexpr int kWords = (kMaxNode + 1) / 64;
  std::array<uint64_t, kWords> words_{};
};

// Calls `callback` with every non-empty subset of `nodes` in upstream's order (IterateBitMasks):
// by size 1..N, and within a size in lexicographic order of the positions in `nodes`, so for
// {0, 1, 2}: {0} {1} {2} {0,1} {0,2} {1,2} {0,1,2}. 2^N - 1 calls: callers enumerate only the
// nodes that matter (kubernetes #131735). Numbers outside 0..kMaxNode are dropped first; a
// duplicate number makes repeated masks, as upstream's does.
void IterateMasks(absl::Span<const int> nodes, absl::FunctionRef<void(const NumaMask&)> callback);

// The machine's NUMA nodes and the distances between them (the kubelet's NUMAInfo, which it builds
// from cadvisor). An aggregate: `NumaInfo{.nodes = {0, 1}}` is a two-node machine with unknown
// distances.
struct NumaInfo {
  // Linux node numbers of the machine (0..NumaMask::kMaxNode, no duplicates); the policies'
  // default affinity is all of them.
  std::vector<int> nodes = {};
  // SLIT distances: distances[i][j] is the distance from nodes[i] to nodes[j] (10 = local); an
  // empty matrix, a short row or 0 means unknown. Only prefer-closest-numa-nodes reads them.
  std::vector<std::vector<int>> distances = {};

  // `nodes` with distances[i][j] = distance(nodes[i], nodes[j]), for example from
  // kdp::Topology::NumaDistance (0 = unknown). `distance` is called only during this call.
  static NumaInfo FromDistances(std::vector<int> nodes, absl::FunctionRef<int(int, int)> distance);

  // All of `nodes` (upstream's DefaultAffinityMask); numbers outside 0..kMaxNode are left out.
  NumaMask DefaultAffinity() const;
  // The distance from node `from` to node `to`; 0 when either is not in `nodes` or it is unknown.
  int Distance(int from, int to) const;
  // Upstream's CalculateAverageFor: the mean of Distance(a, b) over every ordered pair of nodes
  // of `mask`, a node with itself included; 0 for the empty mask. Summed in upstream's order so
  // that equal averages compare equal exactly as they do upstream.
  double AverageDistance(const NumaMask& mask) const;
  // Upstream's Narrowest: `a` when a.IsNarrowerThan(b), else `b`. The result refers to `a` or `b`.
  static const NumaMask& Narrowest(const NumaMask& a, const NumaMask& b);
  // Upstream's Closest: Narrowest when the counts differ; else the smaller AverageDistance; on
  // equal averages the smaller mask (IsLessThan). The result refers to `a` or `b`.
  const NumaMask& Closest(const NumaMask& a, const NumaMask& b) const;

  friend bool operator==(const NumaInfo& a, const NumaInfo& b) = default;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_TOPOLOGYMANAGER_NUMA_MASK_H_
