#include "manager/src/devicemanager/free_devices.h"

#include <algorithm>

#include "manager/src/devicemanager/allocator.h"

namespace kdp::manager {

FreeDevices::FreeDevices(std::shared_ptr<const ResourceDevices> devices)
    : devices_(std::move(devices)) {
  by_rank_.reserve(devices_->devices.size());
  for (const auto& entry : devices_->devices) {
    if (!entry.second.numa_nodes.empty()) has_topology_ = true;
    if (entry.second.healthy) by_rank_.push_back(&entry);
  }
  std::sort(by_rank_.begin(), by_rank_.end(),
            [](Slot a, Slot b) { return NaturalLess(a->first, b->first); });
  for (int32_t rank = 0; rank < static_cast<int32_t>(by_rank_.size()); ++rank) {
    free_.insert(free_.end(), rank);
    if (!has_topology_) continue;
    const std::vector<int64_t>& nodes = by_rank_[rank]->second.numa_nodes;
    if (nodes.empty()) no_node_.insert(no_node_.end(), rank);
    for (int64_t node : nodes) {
      std::set<int32_t>& ranks = per_node_[node];
      ranks.insert(ranks.end(), rank);
    }
  }
}

std::optional<int32_t> FreeDevices::Rank(const std::string& id) const {
  auto it = std::lower_bound(
      by_rank_.begin(), by_rank_.end(), id,
      [](Slot slot, const std::string& key) { return NaturalLess(slot->first, key); });
  if (it == by_rank_.end() || (*it)->first != id) return std::nullopt;
  return static_cast<int32_t>(it - by_rank_.begin());
}

void FreeDevices::Hold(const std::string& id) {
  const std::optional<int32_t> rank = Rank(id);
  if (!rank.has_value() || free_.erase(*rank) == 0) return;
  if (!has_topology_) return;
  const std::vector<int64_t>& nodes = by_rank_[*rank]->second.numa_nodes;
  if (nodes.empty()) no_node_.erase(*rank);
  for (int64_t node : nodes) {
    auto it = per_node_.find(node);
    if (it != per_node_.end()) it->second.erase(*rank);
  }
}

void FreeDevices::Release(const std::string& id) {
  const std::optional<int32_t> rank = Rank(id);
  if (!rank.has_value() || !free_.insert(*rank).second) return;
  if (!has_topology_) return;
  const std::vector<int64_t>& nodes = by_rank_[*rank]->second.numa_nodes;
  if (nodes.empty()) no_node_.insert(*rank);
  for (int64_t node : nodes) per_node_[node].insert(*rank);
}

bool FreeDevices::IsFree(const std::string& id) const {
  const std::optional<int32_t> rank = Rank(id);
  return rank.has_value() && free_.contains(*rank);
}

bool FreeDevices::InAffinity(int32_t rank, const std::set<int64_t>& affinity) const {
  const std::vector<int64_t>& nodes = by_rank_[rank]->second.numa_nodes;
  return std::any_of(nodes.begin(), nodes.end(),
                     [&](int64_t node) { return affinity.contains(node); });
}

void FreeDevices::ForEachFree(const std::function<bool(const std::string&)>& fn) const {
  for (int32_t rank : free_) {
    if (!fn(by_rank_[rank]->first)) return;
  }
}

void FreeDevices::ForEach(Tier tier, const std::optional<std::set<int64_t>>& affinity,
                          const std::function<bool(const std::string&)>& fn) const {
  if (!has_topology_ || !affinity.has_value() || affinity->empty()) {
    if (tier == Tier::kNoAffinity) ForEachFree(fn);
    return;
  }
  if (tier == Tier::kNoAffinity) {
    for (int32_t rank : no_node_) {
      if (!fn(by_rank_[rank]->first)) return;
    }
    return;
  }
  // Merges the nodes' ranks in order (a device on several of the nodes comes once).
  using Cursor = std::pair<std::set<int32_t>::const_iterator, std::set<int32_t>::const_iterator>;
  std::vector<Cursor> cursors;
  for (const auto& [node, ranks] : per_node_) {
    if (affinity->contains(node) == (tier == Tier::kAligned) && !ranks.empty()) {
      cursors.emplace_back(ranks.begin(), ranks.end());
    }
  }
  int32_t last = -1;
  while (true) {
    Cursor* next = nullptr;
    for (Cursor& cursor : cursors) {
      if (cursor.first != cursor.second && (next == nullptr || *cursor.first < *next->first)) {
        next = &cursor;
      }
    }
    if (next == nullptr) return;
    const int32_t rank = *next->first++;
    if (rank == last) continue;
    last = rank;
    // A device on a node of the affinity and on another is aligned, never unaligned.
    if (tier == Tier::kUnaligned && InAffinity(rank, *affinity)) continue;
    if (!fn(by_rank_[rank]->first)) return;
  }
}

}  // namespace kdp::manager
