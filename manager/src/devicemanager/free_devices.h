// FreeDevices indexes the free devices of one resource (healthy in its latest ListAndWatch snapshot
// and held by no container) in the allocator's order, natural ID order, overall and per NUMA node,
// so that choosing n devices costs O(n log devices) instead of a copy and sort of every device
// (13–17 ms per admission from one resource of 10,016 devices before, bench/admission_benchmark).
// PodDevices keeps one per registered resource, rebuilt from each snapshot and told of every
// device that becomes held or free; DevicesToAllocate (allocator.h) walks its tiers.
//
// Externally synchronized (PodDevices' lock); the snapshot it indexes is immutable and shared.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_FREE_DEVICES_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_FREE_DEVICES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "manager/src/devicemanager/device_registry.h"

namespace kdp::manager {

class FreeDevices {
 public:
  // The three groups filterByAffinity makes of the free devices for a NUMA affinity (the
  // kubelet's order of taking them): devices with a node in the affinity, devices with nodes none
  // of which is in it, devices without a node. Without an affinity (or when no device of the
  // resource has a node) every free device is kNoAffinity.
  enum class Tier { kAligned, kUnaligned, kNoAffinity };

  // Every healthy device of `devices` is free (Hold() the held ones). REQUIRES: devices != nullptr.
  explicit FreeDevices(std::shared_ptr<const ResourceDevices> devices);

  // Not copyable: a copy would cost O(devices).
  FreeDevices(const FreeDevices&) = delete;
  FreeDevices& operator=(const FreeDevices&) = delete;
  FreeDevices(FreeDevices&&) noexcept = default;
  FreeDevices& operator=(FreeDevices&&) noexcept = default;

  // A device became held (it stops being free) or free again; IDs that are not healthy in the
  // snapshot are ignored, and repeating a call changes nothing. O(log devices).
  void Hold(const std::string& id);
  void Release(const std::string& id);

  // The snapshot indexed (valid as long as this index, or a copy of the pointer, lives).
  const ResourceDevices& devices() const { return *devices_; }
  const std::shared_ptr<const ResourceDevices>& shared_devices() const { return devices_; }
  // Healthy devices in the snapshot, free or not.
  int64_t healthy() const { return static_cast<int64_t>(by_rank_.size()); }
  bool IsHealthy(const std::string& id) const { return Rank(id).has_value(); }
  // Free devices.
  int64_t size() const { return static_cast<int64_t>(free_.size()); }
  bool IsFree(const std::string& id) const;

  // Calls `fn` on the free devices of `tier` for `affinity` (nullopt or empty: none) in natural
  // ID order, each once, until it returns false. O(devices visited × nodes of the affinity).
  void ForEach(Tier tier, const std::optional<std::set<int64_t>>& affinity,
               const std::function<bool(const std::string&)>& fn) const;
  // Every free device in natural ID order, until `fn` returns false.
  void ForEachFree(const std::function<bool(const std::string&)>& fn) const;

 private:
  using Slot = const std::pair<const std::string, DeviceInfo>*;
  std::optional<int32_t> Rank(const std::string& id) const;
  bool InAffinity(int32_t rank, const std::set<int64_t>& affinity) const;

  std::shared_ptr<const ResourceDevices> devices_;
  // The snapshot's healthy devices in natural ID order; a device's rank is its position here.
  std::vector<Slot> by_rank_;
  // Some device of the snapshot (healthy or not) has a NUMA node (filterByAffinity's check).
  bool has_topology_ = false;
  // Ranks of the free devices; of those per NUMA node, and of those without a node (the last
  // two only when has_topology_).
  std::set<int32_t> free_;
  std::map<int64_t, std::set<int32_t>> per_node_;
  std::set<int32_t> no_node_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_FREE_DEVICES_H_
