#include "manager/src/devicemanager/pod_devices.h"

#include <tuple>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace kdp::manager {

std::string SerializeResponse(const v1beta1::ContainerAllocateResponse& response) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    response.SerializeToCodedStream(&coded);
  }
  return bytes;
}

namespace {

// The bytes were serialised from a parsed answer (or parsed already when restored): they parse.
v1beta1::ContainerAllocateResponse ParseResponse(const std::string& bytes) {
  v1beta1::ContainerAllocateResponse response;
  (void)response.ParseFromString(bytes);
  return response;
}

}  // namespace

std::set<std::string> DeviceIds(const DevicesPerNuma& devices) {
  std::set<std::string> ids;
  for (const auto& [node, list] : devices) ids.insert(list.begin(), list.end());
  return ids;
}

void PodDevices::IndexLocked(const std::string& resource, const DevicesPerNuma& devices,
                             int delta) {
  std::map<std::string, int>& counts = allocated_[resource];
  auto free = free_.find(resource);
  for (const std::string& id : DeviceIds(devices)) {
    int& count = counts[id];
    const bool was_held = count > 0;
    count += delta;
    const bool held = count > 0;
    if (!held) counts.erase(id);
    if (free == free_.end() || was_held == held) continue;
    if (held) {
      free->second.Hold(id);
    } else {
      free->second.Release(id);
    }
  }
  if (counts.empty()) allocated_.erase(resource);
}

void PodDevices::EraseLocked(std::map<Key, Allocation>::iterator it) {
  IndexLocked(std::get<2>(it->first), it->second.devices, -1);
  entries_.erase(it);
}

void PodDevices::Reserve(const std::string& pod_uid, const std::string& container,
                         const std::string& resource, DevicesPerNuma devices) {
  absl::MutexLock lock(&mu_);
  Key key(pod_uid, container, resource);
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  IndexLocked(resource, devices, +1);
  entries_[key] =
      Allocation{.devices = std::move(devices), .response_bytes = {}, .committed = false};
}

void PodDevices::Restore(PodDevicesEntry entry, std::optional<std::string> response_bytes) {
  std::string bytes =
      response_bytes.has_value() ? *std::move(response_bytes) : SerializeResponse(entry.response);
  absl::MutexLock lock(&mu_);
  Key key(entry.pod_uid, entry.container_name, entry.resource_name);
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  IndexLocked(entry.resource_name, entry.devices, +1);
  entries_[key] = Allocation{
      .devices = std::move(entry.devices), .response_bytes = std::move(bytes), .committed = true};
}

bool PodDevices::Commit(const std::string& pod_uid, const std::string& container,
                        const std::string& resource, v1beta1::ContainerAllocateResponse response) {
  std::string bytes = SerializeResponse(response);
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key(pod_uid, container, resource));
  if (it == entries_.end()) return false;
  it->second.response_bytes = std::move(bytes);
  it->second.committed = true;
  return true;
}

void PodDevices::Rollback(const std::string& pod_uid, const std::string& container,
                          const std::string& resource) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key(pod_uid, container, resource));
  if (it != entries_.end() && !it->second.committed) EraseLocked(it);
}

void PodDevices::DeletePod(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.lower_bound(Key(pod_uid, "", ""));
  while (it != entries_.end() && std::get<0>(it->first) == pod_uid) EraseLocked(it++);
}

void PodDevices::SetDevices(const std::string& resource,
                            std::shared_ptr<const ResourceDevices> devices) {
  if (devices != nullptr) {
    std::optional<FreeDevices> replaced = SetFreeDevices(resource, FreeDevices(std::move(devices)));
    return;
  }
  std::optional<FreeDevices> replaced;  // destroyed outside the lock
  absl::MutexLock lock(&mu_);
  auto it = free_.find(resource);
  if (it == free_.end()) return;
  replaced.emplace(std::move(it->second));
  free_.erase(it);
}

std::optional<FreeDevices> PodDevices::SetFreeDevices(const std::string& resource,
                                                      FreeDevices index) {
  absl::MutexLock lock(&mu_);
  if (auto held = allocated_.find(resource); held != allocated_.end()) {
    for (const auto& [id, count] : held->second) index.Hold(id);
  }
  auto it = free_.find(resource);
  if (it == free_.end()) {
    free_.emplace(resource, std::move(index));
    return std::nullopt;
  }
  std::optional<FreeDevices> replaced(std::move(it->second));
  it->second = std::move(index);
  return replaced;
}

void PodDevices::WithFreeDevices(const std::string& resource,
                                 const std::function<void(const FreeDevices*)>& fn) const {
  absl::MutexLock lock(&mu_);
  auto it = free_.find(resource);
  fn(it == free_.end() ? nullptr : &it->second);
}

std::set<std::string> PodDevices::PodUids() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const auto& [key, allocation] : entries_) out.insert(out.end(), std::get<0>(key));
  return out;
}

bool PodDevices::HasPod(const std::string& pod_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.lower_bound(Key(pod_uid, "", ""));
  return it != entries_.end() && std::get<0>(it->first) == pod_uid;
}

std::set<std::string> PodDevices::Allocated(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  auto it = allocated_.find(resource);
  if (it == allocated_.end()) return out;
  for (const auto& [id, count] : it->second) out.insert(out.end(), id);
  return out;
}

std::set<std::string> PodDevices::Resources() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const auto& [resource, ids] : allocated_) out.insert(out.end(), resource);
  return out;
}

std::optional<std::set<std::string>> PodDevices::ContainerDevices(
    const std::string& pod_uid, const std::string& container, const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key(pod_uid, container, resource));
  if (it == entries_.end()) return std::nullopt;
  return DeviceIds(it->second.devices);
}

std::set<std::string> PodDevices::PodResourceDevices(const std::string& pod_uid,
                                                     const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (auto it = entries_.lower_bound(Key(pod_uid, "", ""));
       it != entries_.end() && std::get<0>(it->first) == pod_uid; ++it) {
    if (std::get<2>(it->first) != resource) continue;
    std::set<std::string> ids = DeviceIds(it->second.devices);
    out.insert(ids.begin(), ids.end());
  }
  return out;
}

std::vector<PodDevicesEntry> PodDevices::ContainerEntries(const std::string& pod_uid,
                                                          const std::string& container) const {
  absl::MutexLock lock(&mu_);
  std::vector<PodDevicesEntry> out;
  for (auto it = entries_.lower_bound(Key(pod_uid, container, ""));
       it != entries_.end() && std::get<0>(it->first) == pod_uid &&
       std::get<1>(it->first) == container;
       ++it) {
    if (!it->second.committed) continue;
    out.push_back({pod_uid, container, std::get<2>(it->first), it->second.devices,
                   ParseResponse(it->second.response_bytes)});
  }
  return out;
}

std::vector<PodDevicesEntry> PodDevices::Entries() const {
  absl::MutexLock lock(&mu_);
  std::vector<PodDevicesEntry> out;
  for (const auto& [key, allocation] : entries_) {
    if (!allocation.committed) continue;
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), allocation.devices,
                   ParseResponse(allocation.response_bytes)});
  }
  return out;
}

}  // namespace kdp::manager

namespace kdp::manager {

std::vector<checkpoint::Entry> PodDevices::CheckpointEntries() const {
  absl::MutexLock lock(&mu_);
  std::vector<checkpoint::Entry> out;
  out.reserve(entries_.size());
  for (const auto& [key, allocation] : entries_) {
    if (!allocation.committed) continue;
    out.push_back({.pod_uid = std::get<0>(key),
                   .container_name = std::get<1>(key),
                   .resource_name = std::get<2>(key),
                   .devices = allocation.devices,
                   .alloc_resp = allocation.response_bytes});
  }
  return out;
}

}  // namespace kdp::manager
