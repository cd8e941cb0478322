// kdp/preferred_allocation.h chooses which devices a container should get: the answer to the
// kubelet's GetPreferredAllocation (kdp::PreferredAllocator). A DeviceGraph holds the inventory
// with, for every pair of physical devices, a score of how well they work together (NVIDIA's scale:
// PCI locality plus 100 per link's worth of NVLink / xGMI / XeLink bandwidth); Choose() picks the
// best set under a policy, always including must_include, deterministically (one request, one
// answer). Small candidate sets are searched exhaustively, larger ones by a bounded heuristic.
//
// Thread-safety: a DeviceGraph is immutable after Build(), so any number of threads may call
// Choose() concurrently. Build a new graph when the inventory changes. GraphAllocator, which
// answers from the latest graph, is thread-safe.
#ifndef KDP_PREFERRED_ALLOCATION_H_
#define KDP_PREFERRED_ALLOCATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kdp/device_plugin.h"
#include "kdp/topology.h"

namespace kdp {

namespace internal {
class DeviceGraphTestPeer;
}  // namespace internal

// How Choose() ranks candidate sets. Every policy honours must_include, then prefers distinct
// physical devices over replicas of one (time-slicing), so that a container asking for two
// replicas gets two GPUs when two are free; numa-packed only after its NUMA-node count (two
// replicas of a GPU beat two GPUs on two nodes).
enum class AllocationPolicy {
  // "numa-packed": the fewest NUMA nodes (devices without locality count as one more node), then
  // the highest sum of pair scores (tightest PCI locality and links), then the best-connected
  // devices left over (least fragmentation).
  kNumaPacked,
  // "link-best-fit": the highest sum of pair scores, then the best-connected devices left over
  // (NVIDIA's best-effort allocator's goal, without its exponential partitioning).
  kLinkBestFit,
  // "spread": as many NUMA nodes as possible (devices without locality count as one more node),
  // as evenly used as possible (the smallest sum of squared devices per node), then the lowest
  // sum of pair scores (devices as far apart as possible, e.g. for memory bandwidth).
  kSpread,
};

// "numa-packed", "link-best-fit" or "spread".
const char* AllocationPolicyName(AllocationPolicy policy);

// Parses a policy name as AllocationPolicyName() writes it. INVALID_ARGUMENT, naming `text` and
// the valid names, for anything else.
absl::StatusOr<AllocationPolicy> ParseAllocationPolicy(std::string_view text);

// One allocatable device (one ID of the plugin's inventory) as the allocator sees it.
struct AllocatableDevice {
  std::string id = {};
  // The hardware the ID stands for: replicas of one GPU share it; empty means the ID itself.
  std::string physical_id = {};
  // Linux NUMA node numbers; empty when unknown.
  std::vector<int> numa_nodes = {};
  // PCI address of the physical device, when it is one; drives PCI locality and link scores.
  std::optional<PciAddress> pci_address = std::nullopt;

  friend bool operator==(const AllocatableDevice&, const AllocatableDevice&) = default;
};

// The score of two distinct physical devices working together, on NVIDIA's go-gpuallocator scale:
// PCI locality (same switch 50, same host bridge 30, same package 20, across packages 10; when the
// topology does not know, the NUMA nodes it lists for the devices decide: a shared node 20,
// disjoint known nodes 10, unknown 0), plus 100 per `link_unit` of link bandwidth between them
// (Topology::LinkBandwidth(), rounded down). `link_unit` 0 ignores links.
int PairScore(const Topology& topology, const PciAddress& a, const PciAddress& b,
              uint64_t link_unit);

// The inventory with pair scores. Copyable and cheap to share (the data is held by a shared
// immutable block).
class DeviceGraph {
 public:
  using PairScoreFn = std::function<int(const AllocatableDevice&, const AllocatableDevice&)>;

  // Scores from `topology`: PairScore() between the devices' PCI addresses, with `link_unit` the
  // smallest positive LinkBandwidth() between two of the graph's physical devices (one link's
  // worth, so a pair joined by four links scores 400 more than one joined by none). A pair whose
  // PCI locality the topology does not know (a device without a PCI address, or one the topology
  // lacks) scores by the devices' own numa_nodes as PairScore() describes. A physical device's
  // PCI address and NUMA nodes are those of its first replica in `devices`. Holds one int per
  // pair of physical devices. INVALID_ARGUMENT for an empty or duplicate ID, naming it.
  [[nodiscard]] static absl::StatusOr<DeviceGraph> Build(std::vector<AllocatableDevice> devices,
                                                         const Topology& topology);

  // Scores from `score`, called once per unordered pair of distinct physical devices (with one
  // device of each); it must be symmetric and return at least 0. For vendors whose link data comes
  // from their own library (NVML, amdsmi). INVALID_ARGUMENT as above, or for a negative score.
  [[nodiscard]] static absl::StatusOr<DeviceGraph> Build(std::vector<AllocatableDevice> devices,
                                                         const PairScoreFn& score);

  // The devices in Build() order.
  const std::vector<AllocatableDevice>& devices() const;

  // The pair score of the physical devices behind IDs `a` and `b`; 0 for replicas of one physical
  // device and for unknown IDs.
  int Score(const std::string& a, const std::string& b) const;

  // Chooses request.size devices among request.available under `policy`: every must_include ID
  // first (in its order, duplicates dropped, also IDs outside the inventory), then the chosen
  // rest in Build() order. Available IDs outside the inventory are never chosen (the graph is the
  // inventory; a stale ID could not be allocated). Fewer than
  // request.size when too few are available; the must_include IDs alone when they already reach
  // request.size. Replicas: a set's score counts each pair of distinct physical devices once; a
  // request needing more IDs than there are free physical devices takes the extra replicas from
  // the physical devices with the most free replicas (least loaded), each's in Build() order.
  // Deterministic: among equally ranked sets, the least loaded, then the one whose devices come
  // first in Build() order; the order of request.available does not matter. Exhaustive when the
  // search space is small (at most 2^17 candidate sets of physical devices, so any request among
  // 16 free physical devices), otherwise a greedy search (from the best device overall and per
  // NUMA node; numa-packed inside the fewest nodes that hold the request) followed by a bounded
  // pass of improving swaps: O(seeds × size × candidates) with at most 16 seeds (64 growths for
  // numa-packed), plus O(candidates²) to score what is left over. The greedy answer may rank
  // below the best one; tests/unit/sdk/preferred_allocation_test.cc measures how often.
  // INVALID_ARGUMENT when request.size is negative.
  absl::StatusOr<std::vector<std::string>> Choose(const PreferredRequest& request,
                                                  AllocationPolicy policy) const;

 private:
  friend class internal::DeviceGraphTestPeer;
  struct Data;
  // Which search Choose() runs: kAuto decides by the search space's size; the others force one
  // (tests compare them; kExhaustive on a large space takes exponential time).
  enum class Search { kAuto, kExhaustive, kGreedy };
  absl::StatusOr<std::vector<std::string>> ChooseWith(const PreferredRequest& request,
                                                      AllocationPolicy policy, Search search) const;

  explicit DeviceGraph(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

// A PreferredAllocator that answers from the DeviceGraph its plugin last set (normally in every
// Discover()), under one policy: inherit it instead of PreferredAllocator.
class GraphAllocator : public PreferredAllocator {
 public:
  explicit GraphAllocator(AllocationPolicy policy = AllocationPolicy::kLinkBestFit)
      : policy_(policy) {}

  // Replaces the graph later answers choose from. Thread-safe.
  void SetDeviceGraph(DeviceGraph graph) ABSL_LOCKS_EXCLUDED(mu_);
  // DeviceGraph::Build(devices, topology), then SetDeviceGraph(); Build()'s error keeps the graph.
  [[nodiscard]] absl::Status SetDeviceGraph(std::vector<AllocatableDevice> devices,
                                            const Topology& topology) ABSL_LOCKS_EXCLUDED(mu_);

  // DeviceGraph::Choose() under the policy, without holding a lock; FAILED_PRECONDITION before
  // the first SetDeviceGraph().
  absl::StatusOr<std::vector<std::string>> PreferredAllocation(
      const PreferredRequest& request) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const AllocationPolicy policy_;
  absl::Mutex mu_;
  std::optional<DeviceGraph> graph_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp

#endif  // KDP_PREFERRED_ALLOCATION_H_
