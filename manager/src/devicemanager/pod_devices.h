// PodDevices records which devices each (pod, container, resource) holds, per NUMA node, with the
// plugin's cached Allocate answer (the kubelet's pod_devices.go). An allocation is first reserved
// (its devices count as allocated at once) and then committed with the answer or rolled back, so
// devices picked for an in-flight Allocate can never be handed out twice (kubernetes PR #137534).
// The set of allocated devices is derived from these entries: an index (resource → device → number
// of entries holding it) is updated with every change under the same lock, so asking which devices
// are taken costs O(devices of the resource), not O(every pod on the node). Per registered resource
// it also keeps a FreeDevices index (SetDevices() with each snapshot, updated here as devices are
// held and released), so that choosing devices costs nothing per free device (WithFreeDevices()).
// The plugin's answer is kept only as the bytes the checkpoint stores (parsed when read), one copy
// per allocation.
//
// Thread-safe.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_POD_DEVICES_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_POD_DEVICES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/free_devices.h"

namespace kdp::manager {

// NUMA node → device IDs; key -1 holds devices without topology. A device on several nodes is
// listed under each (the kubelet's DevicesPerNUMA).
using DevicesPerNuma = std::map<int64_t, std::vector<std::string>>;

// The plugin's answer as the checkpoint stores it: deterministic protobuf bytes (maps in key
// order), the same bytes for the same answer every time.
std::string SerializeResponse(const v1beta1::ContainerAllocateResponse& response);

// All device IDs of a DevicesPerNuma, ordered, without repeats.
std::set<std::string> DeviceIds(const DevicesPerNuma& devices);

struct PodDevicesEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  DevicesPerNuma devices;
  v1beta1::ContainerAllocateResponse response;
};

class PodDevices {
 public:
  // Reserves `devices` for (pod, container, resource), replacing any earlier entry for it.
  void Reserve(const std::string& pod_uid, const std::string& container,
               const std::string& resource, DevicesPerNuma devices) ABSL_LOCKS_EXCLUDED(mu_);
  // Commits a reservation with the plugin's answer. False (and nothing recorded) when the
  // reservation is gone: the pod was removed while its Allocate call was in flight.
  [[nodiscard]] bool Commit(const std::string& pod_uid, const std::string& container,
                            const std::string& resource,
                            v1beta1::ContainerAllocateResponse response) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops a reservation (committed entries are kept).
  void Rollback(const std::string& pod_uid, const std::string& container,
                const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);

  // Records a committed entry read back from the checkpoint (replacing any for its key).
  // `response_bytes`: the answer's bytes as the file held them, kept so that a checkpoint written
  // by a kubelet is written back with the same AllocResp; serialised from `entry` when absent.
  void Restore(PodDevicesEntry entry, std::optional<std::string> response_bytes = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);

  void DeletePod(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_);
  bool HasPod(const std::string& pod_uid) const ABSL_LOCKS_EXCLUDED(mu_);
  // UIDs of every pod with an entry (reserved or committed), ordered.
  std::set<std::string> PodUids() const ABSL_LOCKS_EXCLUDED(mu_);

  // Devices of `resource` held by any container, reserved ones included.
  std::set<std::string> Allocated(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);
  // Resources with devices held by some entry (reserved or committed).
  std::set<std::string> Resources() const ABSL_LOCKS_EXCLUDED(mu_);
  // The devices (pod, container) holds for `resource`, reserved or committed; nullopt when none.
  std::optional<std::set<std::string>> ContainerDevices(const std::string& pod_uid,
                                                        const std::string& container,
                                                        const std::string& resource) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The devices all containers of the pod hold for `resource`, reserved or committed (the
  // kubelet's podDevices(podUID, resource)).
  std::set<std::string> PodResourceDevices(const std::string& pod_uid,
                                           const std::string& resource) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Committed entries of one container, ordered by resource name.
  std::vector<PodDevicesEntry> ContainerEntries(const std::string& pod_uid,
                                                const std::string& container) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `devices` (a ListAndWatch snapshot, or a resource with no devices) the resource's
  // candidates for WithFreeDevices(): its healthy devices that no entry holds; nullptr forgets the
  // resource (WithFreeDevices() then sees nullptr). O(devices log devices), most of it before the
  // lock is taken.
  void SetDevices(const std::string& resource, std::shared_ptr<const ResourceDevices> devices)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same with an index the caller built (FreeDevices(snapshot), outside any lock: the sort
  // of 100,000 IDs takes tens of milliseconds); under the lock only the held devices are marked.
  // Returns the index it replaces, for the caller to destroy outside its own locks.
  [[nodiscard]] std::optional<FreeDevices> SetFreeDevices(const std::string& resource,
                                                          FreeDevices index)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn` with the resource's free devices (nullptr: no SetDevices() for it) under the lock.
  // `fn` must not call back into PodDevices, nor call a plugin.
  void WithFreeDevices(const std::string& resource,
                       const std::function<void(const FreeDevices*)>& fn) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every committed entry, ordered by (pod, container, resource).
  std::vector<PodDevicesEntry> Entries() const ABSL_LOCKS_EXCLUDED(mu_);
  // The same as the checkpoint stores them; each answer's bytes were serialised once, at commit.
  std::vector<checkpoint::Entry> CheckpointEntries() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Allocation {
    DevicesPerNuma devices;
    // SerializeResponse(the plugin's answer), what the checkpoint stores; parsed when read.
    std::string response_bytes;
    bool committed = false;
  };
  using Key = std::tuple<std::string, std::string, std::string>;  // pod, container, resource

  void EraseLocked(std::map<Key, Allocation>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void IndexLocked(const std::string& resource, const DevicesPerNuma& devices, int delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<Key, Allocation> entries_ ABSL_GUARDED_BY(mu_);
  // Resource → device ID → number of entries holding it.
  std::map<std::string, std::map<std::string, int>> allocated_ ABSL_GUARDED_BY(mu_);
  // Resource → its free devices (the healthy devices of its snapshot that allocated_ lacks).
  std::map<std::string, FreeDevices> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_POD_DEVICES_H_
