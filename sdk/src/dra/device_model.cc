// The helpers of kdp/dra_device.h that build devices for vendors.
#include <utility>

#include "absl/strings/str_cat.h"
#include "kdp/dra_device.h"

namespace kdp {

DraPool PartitionedPool(std::vector<DraDevice> devices, const Quantities& total,
                        const std::vector<PartitionProfile>& profiles) {
  DraPool pool;
  for (DraDevice& whole : devices) {
    pool.shared_counters.push_back({.name = whole.name, .counters = total});
    whole.consumes_counters.push_back({.counter_set = whole.name, .counters = total});
    std::vector<DraDevice> partitions;
    for (const PartitionProfile& profile : profiles) {
      for (int i = 0; i < profile.count; ++i) {
        DraDevice& partition = partitions.emplace_back(
            DraDevice{.name = absl::StrCat(whole.name, "-", profile.name, "-", i),
                      .attributes = whole.attributes});
        partition.attributes["profile"] = profile.name;
        partition.consumes_counters = {{.counter_set = whole.name, .counters = profile.counters}};
      }
    }
    pool.devices.push_back(std::move(whole));
    for (DraDevice& partition : partitions) pool.devices.push_back(std::move(partition));
  }
  return pool;
}

void MakeShareable(DraDevice& device, const std::string& capacity, const std::string& step) {
  device.allow_multiple_allocations = true;
  device.request_policies[capacity] = {
      .default_value = step,
      .valid_values = {},
      .valid_range = CapacityRange{.min = step, .max = {}, .step = step}};
}

}  // namespace kdp
