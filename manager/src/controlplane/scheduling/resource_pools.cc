#include "manager/src/controlplane/scheduling/resource_pools.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kdp::manager::scheduling {

namespace {

bool SliceForNode(const resourceapi::ResourceSliceSpec& spec, const NodeView& node) {
  if (!spec.node_name.empty()) return spec.node_name == node.name;
  if (spec.all_nodes || spec.per_device_node_selection) return true;
  if (spec.node_selector) return NodeSelectorMatches(*spec.node_selector, node);
  return false;
}

// The pool-wide rules: unique device and counter set names, consumed counters defined.
void CheckPool(ResourcePoolView& pool) {
  auto invalidate = [&pool](std::string reason) {
    if (pool.invalid) return;
    pool.invalid = true;
    pool.invalid_reason = std::move(reason);
  };
  std::set<std::string> names;
  for (const resourceapi::ResourceSlice* slice : pool.slices) {
    for (const resourceapi::CounterSet& set : slice->spec.shared_counters) {
      if (!pool.counter_sets.emplace(set.name, &set).second) {
        invalidate("duplicate counter set name " + set.name);
      }
    }
    for (const resourceapi::Device& device : slice->spec.devices) {
      if (!names.insert(device.name).second) invalidate("duplicate device name " + device.name);
    }
  }
  for (const resourceapi::ResourceSlice* slice : pool.slices) {
    for (const resourceapi::Device& device : slice->spec.devices) {
      for (const resourceapi::DeviceCounterConsumption& c : device.consumes_counters) {
        auto set = pool.counter_sets.find(c.counter_set);
        if (set == pool.counter_sets.end()) {
          invalidate("device " + device.name + " consumes counters of counter set " +
                     c.counter_set + ", which the pool does not define");
          continue;
        }
        for (const auto& [counter, value] : c.counters) {
          if (set->second->counters.count(counter) == 0) {
            invalidate("device " + device.name + " consumes counter " + counter +
                       ", which counter set " + c.counter_set + " does not define");
          }
        }
      }
    }
  }
}

}  // namespace

bool DeviceAvailableOn(const resourceapi::ResourceSlice& slice, const resourceapi::Device& device,
                       const NodeView& node) {
  if (!slice.spec.per_device_node_selection) return true;
  if (device.node_name) return *device.node_name == node.name;
  if (device.all_nodes) return true;
  if (device.node_selector) return NodeSelectorMatches(*device.node_selector, node);
  return false;
}

std::vector<ResourcePoolView> GatherPools(const NodeView& node,
                                          const std::vector<resourceapi::ResourceSlice>& slices) {
  std::map<std::pair<std::string, std::string>, ResourcePoolView> pools;
  for (const resourceapi::ResourceSlice& slice : slices) {
    const resourceapi::ResourceSliceSpec& spec = slice.spec;
    if (!SliceForNode(spec, node)) continue;
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
    CheckPool(pool);
    result.push_back(std::move(pool));
  }
  return result;
}

std::optional<nlohmann::json> AllocationNodeSelector(
    const std::vector<std::pair<const resourceapi::ResourceSlice*, const resourceapi::Device*>>&
        devices) {
  using Json = nlohmann::json;
  std::optional<Json> merged;
  for (const auto& [slice, device] : devices) {
    const resourceapi::ResourceSliceSpec& spec = slice->spec;
    const bool per_device = spec.per_device_node_selection;
    const std::string node_name = per_device ? device->node_name.value_or("") : spec.node_name;
    if (!node_name.empty()) {
      return Json{{"nodeSelectorTerms",
                   Json::array({{{"matchFields", Json::array({{{"key", "metadata.name"},
                                                               {"operator", "In"},
                                                               {"values", {node_name}}}})}}})}};
    }
    const std::optional<Json>& selector = per_device ? device->node_selector : spec.node_selector;
    if (!selector || !selector->contains("nodeSelectorTerms")) continue;
    const Json& terms = selector->at("nodeSelectorTerms");
    if (!terms.is_array() || terms.empty()) continue;
    const Json& term = terms[0];
    if (!merged) {
      merged = Json{{"nodeSelectorTerms", Json::array({term})}};
      continue;
    }
    Json& into = (*merged)["nodeSelectorTerms"][0];
    for (const char* key : {"matchExpressions", "matchFields"}) {
      if (!term.contains(key) || !term[key].is_array()) continue;
      for (const Json& r : term[key]) into[key].push_back(r);
    }
  }
  return merged;
}

}  // namespace kdp::manager::scheduling
