#include "manager/src/devicemanager/manager.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "manager/src/devicemanager/allocator.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {

DeviceManager::DeviceManager(DeviceManagerOptions options)
    : options_(std::move(options)), registration_server_(options_.plugins_dir, this) {}

DeviceManager::~DeviceManager() { Stop(); }

absl::Status DeviceManager::Start() { return registration_server_.Start(); }

void DeviceManager::Stop() {
  registration_server_.Stop();
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    endpoints.swap(endpoints_);
  }
  for (auto& [resource, endpoint] : endpoints) endpoint->Stop();
}

absl::Status DeviceManager::RegisterPlugin(const std::string& resource_name,
                                           const std::string& socket_path) {
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> connected,
                       Endpoint::Connect(resource_name, socket_path, options_.endpoint));
  std::shared_ptr<Endpoint> endpoint = std::move(connected);
  absl::MutexLock registration(&registration_mu_);
  std::shared_ptr<Endpoint> previous;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::UnavailableError("kdp-manager is shutting down");
    previous = std::exchange(endpoints_[resource_name], endpoint);
  }
  // The old stream is cancelled and joined before the new one starts, so a stale snapshot can
  // never overwrite a fresh one.
  if (previous != nullptr) previous->Stop();
  registry_.Connected(resource_name, socket_path);
  const Endpoint* raw = endpoint.get();
  endpoint->Run(
      [this, resource_name](const v1beta1::ListAndWatchResponse& snapshot) {
        registry_.Update(resource_name, snapshot);
        if (absl::Status written = WriteCheckpoint(); !written.ok()) {
          KDP_LOG_ERROR("Failed to write checkpoint file", "err", written.message());
        }
      },
      [this, resource_name, raw](const absl::Status&) { OnStreamEnded(resource_name, raw); });
  KDP_LOG_INFO("Registered device plugin", "resourceName", resource_name, "endpoint", socket_path,
               "preStartRequired", endpoint->options().pre_start_required(),
               "getPreferredAllocationAvailable",
               endpoint->options().get_preferred_allocation_available());
  return absl::OkStatus();
}

void DeviceManager::OnStreamEnded(const std::string& resource, const Endpoint* endpoint) {
  {
    absl::MutexLock lock(&mu_);
    auto it = endpoints_.find(resource);
    // Only the current endpoint's end counts (kubernetes #121994, #127803).
    if (it == endpoints_.end() || it->second.get() != endpoint) return;
  }
  KDP_LOG_WARNING("Device plugin disconnected; its devices are unhealthy", "resourceName",
                  resource);
  registry_.Disconnected(resource);
}

std::shared_ptr<Endpoint> DeviceManager::EndpointFor(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? nullptr : it->second;
}

bool DeviceManager::IsDevicePluginResource(const std::string& resource) const {
  return registry_.Has(resource) || pod_devices_.Resources().contains(resource);
}

absl::Status DeviceManager::Allocate(const Pod& pod, const Container& container) {
  std::map<std::string, std::set<std::string>> reusable;
  {
    absl::MutexLock lock(&mu_);
    // Keep only the pod being admitted (kubernetes #103838).
    for (auto it = devices_to_reuse_.begin(); it != devices_to_reuse_.end();) {
      it = it->first == pod.uid ? std::next(it) : devices_to_reuse_.erase(it);
    }
    reusable = devices_to_reuse_[pod.uid];
  }
  KDP_RETURN_IF_ERROR(AllocateContainerResources(pod, container, reusable));

  absl::MutexLock lock(&mu_);
  auto& pool = devices_to_reuse_[pod.uid];
  for (const PodDevicesEntry& entry : pod_devices_.ContainerEntries(pod.uid, container.name)) {
    std::set<std::string> ids = DeviceIds(entry.devices);
    if (container.kind == ContainerKind::kInit) {
      // A regular init container has finished before the next one starts: its devices are
      // free for the pod's later containers.
      pool[entry.resource_name].insert(ids.begin(), ids.end());
    } else {
      // Sidecars and app containers keep theirs.
      for (const std::string& id : ids) pool[entry.resource_name].erase(id);
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceManager::AllocateContainerResources(
    const Pod& pod, const Container& container,
    const std::map<std::string, std::set<std::string>>& reusable) {
  bool allocated = false;
  // std::map iterates resources in name order: deterministic where the kubelet's Go map is not.
  for (const auto& [resource, required] : container.extended_resources) {
    if (!IsDevicePluginResource(resource)) continue;
    std::shared_ptr<Endpoint> endpoint = EndpointFor(resource);
    AllocationRequest request{
        .pod_uid = pod.uid,
        .container = container.name,
        .resource = resource,
        .required = required,
        .devices = registry_.Get(resource),
        .existing = pod_devices_.ContainerDevices(pod.uid, container.name, resource),
        .in_use = pod_devices_.Allocated(resource),
        .reusable = {},
        .numa_affinity = std::nullopt,
    };
    if (auto it = reusable.find(resource); it != reusable.end()) request.reusable = it->second;
    PreferredAllocationFn preferred;
    if (endpoint != nullptr && endpoint->options().get_preferred_allocation_available()) {
      preferred = [&endpoint](const std::vector<std::string>& available,
                              const std::vector<std::string>& must_include,
                              int size) -> absl::StatusOr<std::vector<std::string>> {
        KDP_ASSIGN_OR_RETURN(v1beta1::PreferredAllocationResponse response,
                             endpoint->GetPreferredAllocation(available, must_include, size));
        // The kubelet reads only the first container response.
        if (response.container_responses_size() == 0) return std::vector<std::string>{};
        const auto& ids = response.container_responses(0).deviceids();
        return std::vector<std::string>(ids.begin(), ids.end());
      };
    }
    KDP_ASSIGN_OR_RETURN(std::vector<std::string> picked, DevicesToAllocate(request, preferred));
    if (picked.empty()) continue;

    DevicesPerNuma per_numa;
    for (const std::string& id : picked) {
      // A reused device may have left the plugin's list since: it counts as without topology.
      auto it = request.devices->devices.find(id);
      if (it == request.devices->devices.end() || it->second.numa_nodes.empty()) {
        per_numa[-1].push_back(id);
        continue;
      }
      for (int64_t node : it->second.numa_nodes) per_numa[node].push_back(id);
    }
    // Reserved before the RPC: no other allocation can pick these while it is in flight.
    pod_devices_.Reserve(pod.uid, container.name, resource, std::move(per_numa));
    if (endpoint == nullptr) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return absl::FailedPreconditionError(errors::UnknownDevicePlugin(resource));
    }
    absl::StatusOr<v1beta1::AllocateResponse> response = endpoint->Allocate(picked);
    if (!response.ok()) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return response.status();
    }
    if (response->container_responses_size() == 0) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return absl::InternalError(errors::NoContainersInResponse(response->ShortDebugString()));
    }
    KDP_LOG_INFO("Allocated devices", "podUID", pod.uid, "containerName", container.name,
                 "resourceName", resource, "devices", absl::StrJoin(picked, ","));
    pod_devices_.Commit(pod.uid, container.name, resource, response->container_responses(0));
    allocated = true;
  }
  // Once per container, and a failed write fails the admission, as in the kubelet.
  return allocated ? WriteCheckpoint() : absl::OkStatus();
}

absl::Status DeviceManager::WriteCheckpoint() {
  if (options_.checkpoint_path.empty()) return absl::OkStatus();
  absl::MutexLock lock(&checkpoint_mu_);
  checkpoint::Data data;
  for (PodDevicesEntry& entry : pod_devices_.Entries()) {
    std::string alloc_resp;
    {
      google::protobuf::io::StringOutputStream stream(&alloc_resp);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);  // Maps in key order: the same bytes each time.
      entry.response.SerializeToCodedStream(&coded);
    }
    data.entries.push_back({.pod_uid = std::move(entry.pod_uid),
                            .container_name = std::move(entry.container_name),
                            .resource_name = std::move(entry.resource_name),
                            .devices = std::move(entry.devices),
                            .alloc_resp = std::move(alloc_resp)});
  }
  for (const ResourceDevices& resource : registry_.List()) {
    std::set<std::string> healthy = resource.Healthy();
    data.registered_devices[resource.name] = {healthy.begin(), healthy.end()};
  }
  return WriteFileDurably(options_.checkpoint_path, checkpoint::Encode(data));
}

absl::StatusOr<RunContainerOptions> DeviceManager::GetDeviceRunContainerOptions(
    const Pod& pod, const Container& container) {
  std::vector<PodDevicesEntry> entries = pod_devices_.ContainerEntries(pod.uid, container.name);
  for (const PodDevicesEntry& entry : entries) {
    auto limit = container.extended_resources.find(entry.resource_name);
    if (limit == container.extended_resources.end() || limit->second == 0) continue;
    std::shared_ptr<Endpoint> endpoint = EndpointFor(entry.resource_name);
    if (endpoint == nullptr) {
      return absl::FailedPreconditionError(errors::EndpointNotFound(entry.resource_name));
    }
    if (!endpoint->options().pre_start_required()) continue;
    std::set<std::string> ids = DeviceIds(entry.devices);
    KDP_RETURN_IF_ERROR(endpoint->PreStartContainer({ids.begin(), ids.end()}));
  }
  std::vector<const v1beta1::ContainerAllocateResponse*> responses;
  for (const PodDevicesEntry& entry : entries) responses.push_back(&entry.response);
  return MergeRunContainerOptions(responses);
}

void DeviceManager::RemovePod(const std::string& pod_uid) {
  pod_devices_.DeletePod(pod_uid);
  if (absl::Status written = WriteCheckpoint(); !written.ok()) {
    KDP_LOG_ERROR("Failed to write checkpoint file", "err", written.message());
  }
  absl::MutexLock lock(&mu_);
  devices_to_reuse_.erase(pod_uid);
}

std::vector<PodDevicesEntry> DeviceManager::ContainerEntries(const std::string& pod_uid,
                                                             const std::string& container) const {
  return pod_devices_.ContainerEntries(pod_uid, container);
}

}  // namespace kdp::manager
