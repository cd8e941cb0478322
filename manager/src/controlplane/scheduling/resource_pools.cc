#include "manager/src/controlplane/scheduling/resource_pools.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kdp::manager::scheduling {

std::vector<ResourcePoolView> GatherPools(std::string_view node_name,
                                          const std::vector<resourceapi::ResourceSlice>& slices) {
  std::map<std::pair<std::string, std::string>, ResourcePoolView> pools;
  for (const resourceapi::ResourceSlice& slice : slices) {
    const resourceapi::ResourceSliceSpec& spec = slice.spec;
    const bool for_node = !spec.node_name.empty() ? spec.node_name == node_name : spec.all_nodes;
    if (!for_node) continue;
    auto key = std::make_pair(spec.driver, spec.pool.name);
    auto [it, inserted] = pools.try_emplace(key);
    ResourcePoolView& pool = it->second;
    if (inserted) {
      pool.driver = spec.driver;
      pool.name = spec.pool.name;
      pool.generation = spec.pool.generation;
    } else if (spec.pool.generation < pool.generation) {
      continue;  // out-dated (addSlice)
    } else if (spec.pool.generation > pool.generation) {
      pool.generation = spec.pool.generation;  // newer: replaces all old slices
      pool.slices.clear();
    }
    pool.slices.push_back(&slice);
  }
  std::vector<ResourcePoolView> result;
  result.reserve(pools.size());
  for (auto& [key, pool] : pools) {
    std::stable_sort(pool.slices.begin(), pool.slices.end(),
                     [](const resourceapi::ResourceSlice* a, const resourceapi::ResourceSlice* b) {
                       return a->metadata.name < b->metadata.name;
                     });
    // Upstream compares against the first slice's resourceSliceCount.
    pool.incomplete = static_cast<int64_t>(pool.slices.size()) !=
                      pool.slices.front()->spec.pool.resource_slice_count;
    std::set<std::string> names;
    for (const resourceapi::ResourceSlice* slice : pool.slices) {
      for (const resourceapi::Device& device : slice->spec.devices) {
        if (!names.insert(device.name).second && !pool.invalid) {
          pool.invalid = true;
          pool.invalid_reason = "duplicate device name " + device.name;
        }
      }
    }
    result.push_back(std::move(pool));
  }
  return result;
}

}  // namespace kdp::manager::scheduling
