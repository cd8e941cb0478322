// DeviceGraph: pair scores between physical devices, and Choose(): a request reduced to the
// fresh physical devices (preferred_allocation_search.h searches those), then the IDs: one free
// replica per chosen device, in Build() order, and the extra replicas a request may need from the
// touched devices with the most free replicas.
#include "kdp/preferred_allocation.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sdk/src/deviceplugin/preferred_allocation_search.h"

namespace kdp {
namespace internal {

// DeviceGraph's immutable data (DeviceGraph::Data derives from it so that the helpers below can
// name it).
struct AllocationGraph {
  std::vector<AllocatableDevice> devices;
  std::unordered_map<std::string, int> index;  // ID -> position in `devices`
  std::vector<int> physical_of;                // device -> its physical device
  std::vector<int> first_device;               // physical device -> its first replica
  int physicals = 0;
  // (physicals + 1)² pair scores, row-major. Row and column `physicals` stand for any ID outside
  // the inventory and stay 0; so does the diagonal.
  std::vector<int32_t> scores;
  // Per physical device, its NUMA nodes as dense indexes, ascending; {unknown_node} when it has
  // no locality. There are unknown_node + 1 dense nodes.
  std::vector<std::vector<int>> nodes;
  int unknown_node = 0;

  const int32_t* Row(int physical) const {
    return scores.data() + static_cast<size_t>(physical) * (physicals + 1);
  }
  void Set(int p, int q, int32_t score) {
    scores[static_cast<size_t>(p) * (physicals + 1) + q] = score;
    scores[static_cast<size_t>(q) * (physicals + 1) + p] = score;
  }
};

}  // namespace internal

struct DeviceGraph::Data : internal::AllocationGraph {};

namespace {

using internal::AllocationGraph;

constexpr char kNumaPackedName[] = "numa-packed";
constexpr char kLinkBestFitName[] = "link-best-fit";
constexpr char kSpreadName[] = "spread";

// Scores of PairScore()'s scale.
constexpr int kSameSwitchScore = 50;
constexpr int kSameHostBridgeScore = 30;
constexpr int kSamePackageScore = 20;
constexpr int kCrossPackageScore = 10;
constexpr int kSameNumaScore = 20;
constexpr int kOtherNumaScore = 10;
constexpr int kLinkScore = 100;
// Caps the link count so that a score stays far from int overflow.
constexpr uint64_t kMaxLinks = 1'000'000;

int LocalityScore(PciLocality locality) {
  switch (locality) {
    case PciLocality::kSameSwitch:
      return kSameSwitchScore;
    case PciLocality::kSameHostBridge:
      return kSameHostBridgeScore;
    case PciLocality::kSamePackage:
      return kSamePackageScore;
    case PciLocality::kCrossPackage:
      return kCrossPackageScore;
    case PciLocality::kUnknown:
      break;
  }
  return -1;
}

int NumaScore(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.empty() || b.empty()) return 0;
  for (int node : a) {
    if (std::find(b.begin(), b.end(), node) != b.end()) return kSameNumaScore;
  }
  return kOtherNumaScore;
}

int LinkScore(uint64_t bandwidth, uint64_t link_unit) {
  if (link_unit == 0) return 0;
  return kLinkScore * static_cast<int>(std::min(bandwidth / link_unit, kMaxLinks));
}

// Indexes `devices` into `graph` (IDs, physical devices, dense NUMA nodes) with zero scores.
absl::Status IndexDevices(std::vector<AllocatableDevice> devices, AllocationGraph& graph) {
  graph.devices = std::move(devices);
  std::unordered_map<std::string, int> physical_index;
  std::vector<int> node_ids;
  for (size_t i = 0; i < graph.devices.size(); ++i) {
    const AllocatableDevice& device = graph.devices[i];
    if (device.id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", i, " of the inventory has an empty ID"));
    }
    if (!graph.index.emplace(device.id, static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ID \"", device.id, "\" appears more than once in the inventory"));
    }
    const std::string& key = device.physical_id.empty() ? device.id : device.physical_id;
    auto [it, added] = physical_index.emplace(key, graph.physicals);
    if (added) {
      ++graph.physicals;
      graph.first_device.push_back(static_cast<int>(i));
      for (int node : device.numa_nodes) {
        if (node >= 0) node_ids.push_back(node);
      }
    }
    graph.physical_of.push_back(it->second);
  }
  std::sort(node_ids.begin(), node_ids.end());
  node_ids.erase(std::unique(node_ids.begin(), node_ids.end()), node_ids.end());
  graph.unknown_node = static_cast<int>(node_ids.size());
  graph.nodes.resize(graph.physicals);
  for (int p = 0; p < graph.physicals; ++p) {
    std::vector<int>& dense = graph.nodes[p];
    for (int node : graph.devices[graph.first_device[p]].numa_nodes) {
      if (node < 0) continue;
      dense.push_back(static_cast<int>(std::lower_bound(node_ids.begin(), node_ids.end(), node) -
                                       node_ids.begin()));
    }
    std::sort(dense.begin(), dense.end());
    dense.erase(std::unique(dense.begin(), dense.end()), dense.end());
    if (dense.empty()) dense.push_back(graph.unknown_node);
  }
  const size_t side = static_cast<size_t>(graph.physicals) + 1;
  graph.scores.assign(side * side, 0);
  return absl::OkStatus();
}

}  // namespace

const char* AllocationPolicyName(AllocationPolicy policy) {
  switch (policy) {
    case AllocationPolicy::kNumaPacked:
      return kNumaPackedName;
    case AllocationPolicy::kLinkBestFit:
      return kLinkBestFitName;
    case AllocationPolicy::kSpread:
      return kSpreadName;
  }
  return "unknown";
}

absl::StatusOr<AllocationPolicy> ParseAllocationPolicy(std::string_view text) {
  for (AllocationPolicy policy :
       {AllocationPolicy::kNumaPacked, AllocationPolicy::kLinkBestFit, AllocationPolicy::kSpread}) {
    if (text == AllocationPolicyName(policy)) return policy;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown allocation policy \"", std::string(text),
                                                 "\"; valid policies: ", kNumaPackedName, ", ",
                                                 kLinkBestFitName, ", ", kSpreadName));
}

int PairScore(const Topology& topology, const PciAddress& a, const PciAddress& b,
              uint64_t link_unit) {
  int score = LocalityScore(topology.Locality(a, b));
  if (score < 0) {
    const PciDevice* da = topology.FindPciDevice(a);
    const PciDevice* db = topology.FindPciDevice(b);
    score = da != nullptr && db != nullptr ? NumaScore(da->numa_nodes, db->numa_nodes) : 0;
  }
  return score + LinkScore(topology.LinkBandwidth(a, b), link_unit);
}

absl::StatusOr<DeviceGraph> DeviceGraph::Build(std::vector<AllocatableDevice> devices,
                                               const Topology& topology) {
  auto data = std::make_shared<Data>();
  if (absl::Status status = IndexDevices(std::move(devices), *data); !status.ok()) return status;
  const int n = data->physicals;
  auto pci = [&](int p) -> const std::optional<PciAddress>& {
    return data->devices[data->first_device[p]].pci_address;
  };
  // One link's worth: the smallest positive bandwidth between two of the graph's devices.
  uint64_t link_unit = 0;
  if (!topology.link_matrices().empty()) {
    for (int p = 0; p < n; ++p) {
      for (int q = p + 1; q < n && pci(p).has_value(); ++q) {
        if (!pci(q).has_value()) continue;
        const uint64_t bandwidth = topology.LinkBandwidth(*pci(p), *pci(q));
        if (bandwidth > 0 && (link_unit == 0 || bandwidth < link_unit)) link_unit = bandwidth;
      }
    }
  }
  for (int p = 0; p < n; ++p) {
    const AllocatableDevice& a = data->devices[data->first_device[p]];
    for (int q = p + 1; q < n; ++q) {
      const AllocatableDevice& b = data->devices[data->first_device[q]];
      int locality = -1;
      int links = 0;
      if (a.pci_address.has_value() && b.pci_address.has_value()) {
        locality = LocalityScore(topology.Locality(*a.pci_address, *b.pci_address));
        if (link_unit > 0) {
          links = LinkScore(topology.LinkBandwidth(*a.pci_address, *b.pci_address), link_unit);
        }
      }
      // The topology does not know: the plugin's NUMA nodes for the devices decide.
      if (locality < 0) locality = NumaScore(a.numa_nodes, b.numa_nodes);
      const int score = locality + links;
      data->Set(p, q, score);
    }
  }
  return DeviceGraph(std::move(data));
}

absl::StatusOr<DeviceGraph> DeviceGraph::Build(std::vector<AllocatableDevice> devices,
                                               const PairScoreFn& score) {
  auto data = std::make_shared<Data>();
  if (absl::Status status = IndexDevices(std::move(devices), *data); !status.ok()) return status;
  for (int p = 0; p < data->physicals; ++p) {
    const AllocatableDevice& a = data->devices[data->first_device[p]];
    for (int q = p + 1; q < data->physicals; ++q) {
      const AllocatableDevice& b = data->devices[data->first_device[q]];
      const int s = score(a, b);
      if (s < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("pair score of \"", a.id, "\" and \"", b.id, "\" is negative (", s, ")"));
      }
      data->Set(p, q, s);
    }
  }
  return DeviceGraph(std::move(data));
}

const std::vector<AllocatableDevice>& DeviceGraph::devices() const { return data_->devices; }

int DeviceGraph::Score(const std::string& a, const std::string& b) const {
  auto ia = data_->index.find(a);
  auto ib = data_->index.find(b);
  if (ia == data_->index.end() || ib == data_->index.end()) return 0;
  return data_->Row(data_->physical_of[ia->second])[data_->physical_of[ib->second]];
}

absl::StatusOr<std::vector<std::string>> DeviceGraph::Choose(const PreferredRequest& request,
                                                             AllocationPolicy policy) const {
  return ChooseWith(request, policy, Search::kAuto);
}

absl::StatusOr<std::vector<std::string>> DeviceGraph::ChooseWith(const PreferredRequest& request,
                                                                 AllocationPolicy policy,
                                                                 Search search) const {
  if (request.size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("preferred allocation size ", request.size, " is negative"));
  }
  const AllocationGraph& graph = *data_;
  std::vector<std::string> result;
  std::unordered_set<std::string> taken;
  for (const std::string& id : request.must_include) {
    if (taken.insert(id).second) result.push_back(id);
  }
  if (result.size() >= static_cast<size_t>(request.size)) return result;
  const int needed = request.size - static_cast<int>(result.size());

  // must_include's physical devices and NUMA nodes; each unknown ID is a device of its own.
  internal::SearchProblem p{.policy = policy,
                            .needed = needed,
                            .scores = graph.scores.data(),
                            .stride = static_cast<size_t>(graph.physicals) + 1};
  p.must_count.assign(graph.unknown_node + 1, 0);
  std::vector<char> must_physical(graph.physicals, 0);
  std::vector<int> must_list;
  for (const std::string& id : result) {
    auto it = graph.index.find(id);
    if (it == graph.index.end()) {
      ++p.must_distinct;
      ++p.must_count[graph.unknown_node];
      continue;
    }
    const int physical = graph.physical_of[it->second];
    if (must_physical[physical]) continue;
    must_physical[physical] = 1;
    for (int m : must_list) p.must_score += graph.Row(physical)[m];
    must_list.push_back(physical);
    ++p.must_distinct;
    for (int v : graph.nodes[physical]) ++p.must_count[v];
  }

  // The candidates: known IDs in Build() order. An available ID outside the inventory is never
  // chosen: the graph is the plugin's inventory, and Allocate would refuse that ID.
  std::vector<char> offered(graph.devices.size(), 0);
  std::vector<int> known;
  for (const std::string& id : request.available) {
    if (taken.contains(id)) continue;
    auto it = graph.index.find(id);
    if (it != graph.index.end() && !offered[it->second]) {
      offered[it->second] = 1;
      known.push_back(it->second);
    }
  }
  std::sort(known.begin(), known.end());
  if (known.size() <= static_cast<size_t>(needed)) {
    for (int d : known) result.push_back(graph.devices[d].id);
    return result;
  }

  // Group the known candidates by physical device, in the order of their first free replica.
  struct Group {
    int physical;
    std::vector<int> devices;  // free replicas, Build() order
    bool fresh;
    int fresh_index = -1;
  };
  std::vector<Group> groups;
  std::vector<int> group_of(graph.physicals, -1);
  for (int d : known) {
    const int physical = graph.physical_of[d];
    if (group_of[physical] < 0) {
      group_of[physical] = static_cast<int>(groups.size());
      groups.push_back({.physical = physical, .devices = {}, .fresh = !must_physical[physical]});
    }
    groups[group_of[physical]].devices.push_back(d);
  }
  for (Group& group : groups) {
    if (!group.fresh) {
      p.reused_capacity += static_cast<int64_t>(group.devices.size());
      continue;
    }
    group.fresh_index = p.n++;
    p.physical.push_back(group.physical);
    p.capacity.push_back(static_cast<int>(group.devices.size()));
    p.nodes.push_back(graph.nodes[group.physical]);
  }
  p.base.assign(p.n, 0);
  p.rowsum.assign(p.n, 0);
  p.node_free.assign(graph.unknown_node + 1, 0);
  for (int x = 0; x < p.n; ++x) {
    const int32_t* row = p.Row(x);
    for (int m : must_list) p.base[x] += row[m];
    int64_t sum = 0;
    for (int y = 0; y < p.n; ++y) sum += row[p.physical[y]];
    p.rowsum[x] = sum;
    p.total += sum;
    for (int v : p.nodes[x]) p.node_free[v] += p.capacity[x];
  }
  p.total /= 2;

  // Bounds on |F|: every policy takes as many fresh devices as it can, except that numa-packed
  // may take fewer (with more replicas each) when that saves nodes.
  p.max_size = std::min(needed, p.n);
  p.min_size = p.max_size;
  if (policy == AllocationPolicy::kNumaPacked) {
    std::vector<int> capacities = p.capacity;
    std::sort(capacities.begin(), capacities.end(), std::greater<>());
    int64_t covered = p.reused_capacity;
    int size = 0;
    while (covered < needed && size < p.n) covered += capacities[size++];
    p.min_size = std::min(size, p.max_size);
  }

  std::vector<int> chosen;  // fresh indexes
  if (p.min_size == p.n) {
    for (int x = 0; x < p.n; ++x) chosen.push_back(x);
  } else {
    const bool exhaustive = search == Search::kExhaustive ||
                            (search == Search::kAuto &&
                             internal::CountCandidateSets(p) <= internal::kMaxExhaustiveSets);
    chosen = exhaustive ? internal::SearchExhaustive(p) : internal::SearchGreedy(p);
  }

  // The IDs: one replica per chosen fresh device, then the extra replicas from the touched
  // devices with the most free replicas left.
  std::vector<int> taken_from(groups.size(), 0);
  std::vector<int> ids;
  std::vector<char> chosen_fresh(p.n, 0);
  for (int x : chosen) chosen_fresh[x] = 1;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].fresh && chosen_fresh[groups[g].fresh_index]) {
      ids.push_back(groups[g].devices[taken_from[g]++]);
    }
  }
  for (int extra = needed - static_cast<int>(chosen.size()); extra > 0; --extra) {
    int best = -1;
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool touched = !groups[g].fresh || chosen_fresh[groups[g].fresh_index];
      const int left = static_cast<int>(groups[g].devices.size()) - taken_from[g];
      if (!touched || left == 0) continue;
      if (best < 0 || left > static_cast<int>(groups[best].devices.size()) - taken_from[best]) {
        best = static_cast<int>(g);
      }
    }
    if (best < 0) break;  // Cannot happen: the bounds on |F| guarantee the capacity.
    ids.push_back(groups[best].devices[taken_from[best]++]);
  }
  std::sort(ids.begin(), ids.end());
  for (int d : ids) result.push_back(graph.devices[d].id);
  return result;
}

void GraphAllocator::SetDeviceGraph(DeviceGraph graph) {
  absl::MutexLock lock(&mu_);
  graph_ = std::move(graph);
}

absl::Status GraphAllocator::SetDeviceGraph(std::vector<AllocatableDevice> devices,
                                            const Topology& topology) {
  absl::StatusOr<DeviceGraph> graph = DeviceGraph::Build(std::move(devices), topology);
  if (graph.ok()) SetDeviceGraph(*std::move(graph));
  return graph.status();
}

absl::StatusOr<std::vector<std::string>> GraphAllocator::PreferredAllocation(
    const PreferredRequest& request) {
  std::optional<DeviceGraph> graph;
  {
    absl::MutexLock lock(&mu_);  // A copy shares the graph's data: Choose() runs unlocked.
    graph = graph_;
  }
  if (!graph.has_value()) {
    return absl::FailedPreconditionError("no inventory yet: Discover() has not run");
  }
  return graph->Choose(request, policy_);
}

}  // namespace kdp
