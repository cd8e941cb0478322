#include "manager/src/devicemanager/manager.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/devicemanager/allocator.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/devicemanager/errors.h"
#include "manager/src/devicemanager/free_devices.h"
#include "manager/src/devicemanager/topology_hints.h"

namespace kdp::manager {

DeviceManager::DeviceManager(DeviceManagerOptions options)
    : options_(std::move(options)),
      registration_server_(
          options_.plugins_dir, this,
          options_.metrics != nullptr ? options_.metrics->plugin_registrations : nullptr,
          options_.endpoint.observer) {}

DeviceManager::~DeviceManager() { Stop(); }

void DeviceManager::Restore(const checkpoint::Data& data) {
  for (const checkpoint::Entry& entry : data.entries) {
    PodDevicesEntry restored{.pod_uid = entry.pod_uid,
                             .container_name = entry.container_name,
                             .resource_name = entry.resource_name,
                             .devices = entry.devices,
                             .response = {}};
    if (!restored.response.ParseFromString(entry.alloc_resp)) {
      KDP_LOG_ERROR("Skipping checkpoint entry: its AllocResp does not parse", "podUID",
                    entry.pod_uid, "containerName", entry.container_name, "resourceName",
                    entry.resource_name);
      continue;
    }
    pod_devices_.Restore(std::move(restored), entry.alloc_resp);
  }
  const absl::Time now = Now();
  absl::MutexLock lock(&mu_);
  for (const auto& [resource, ids] : data.registered_devices) {
    registry_.Restore(resource);
    pod_devices_.SetDevices(resource, registry_.GetShared(resource));
    ResourceEndpoints& endpoints = endpoints_[resource];
    if (endpoints.connected.empty() && !endpoints.stopped_at.has_value()) {
      endpoints.stopped_at = now;
    }
  }
  KDP_LOG_INFO("Restored device manager state", "entries", data.entries.size(), "resources",
               data.registered_devices.size());
}

void DeviceManager::SetActivePodsSource(const ActivePodsSource* source) {
  absl::MutexLock lock(&mu_);
  pod_source_ = source;
  collected_generation_.reset();
}

absl::Status DeviceManager::Start() {
  KDP_RETURN_IF_ERROR(registration_server_.Start());
  if (options_.housekeeping_interval > absl::ZeroDuration()) {
    housekeeping_ = std::thread([this] { HousekeepingLoop(); });
  }
  return absl::OkStatus();
}

void DeviceManager::HousekeepingLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), options_.housekeeping_interval)) return;
    }
    (void)GetCapacity();
  }
}

void DeviceManager::Stop() {
  registration_server_.Stop();
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    for (auto& [resource, state] : endpoints_) {
      endpoints.insert(endpoints.end(), state.connected.begin(), state.connected.end());
      state.connected.clear();
      state.snapshots.clear();
      if (state.last_stopped != nullptr) endpoints.push_back(std::move(state.last_stopped));
    }
    endpoints.insert(endpoints.end(), retired_.begin(), retired_.end());
    retired_.clear();
  }
  for (auto& endpoint : endpoints) endpoint->Stop();
  if (housekeeping_.joinable()) housekeeping_.join();
}

absl::Status DeviceManager::RegisterPlugin(const std::string& resource_name,
                                           const std::string& socket_path) {
  auto already_connected = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    if (stopped_) return absl::UnavailableError("kdp-manager is shutting down");
    auto it = endpoints_.find(resource_name);
    if (it == endpoints_.end()) return absl::OkStatus();
    for (const auto& endpoint : it->second.connected) {
      if (endpoint->socket_path() == socket_path) {
        return absl::AlreadyExistsError(errors::AlreadyConnected(socket_path));
      }
    }
    return absl::OkStatus();
  };
  {
    absl::MutexLock lock(&mu_);
    KDP_RETURN_IF_ERROR(already_connected());
    if (dialing_.contains(socket_path)) {
      return absl::UnavailableError(
          absl::StrCat("a registration of ", socket_path,
                       " is already being dialled; retry once it is answered"));
    }
    if (dialing_.size() >= kMaxDialsInFlight) {
      return absl::ResourceExhaustedError(
          absl::StrCat("too many device plugin registrations are being dialled (",
                       kMaxDialsInFlight, "); retry later"));
    }
    dialing_.insert(socket_path);
  }
  absl::Cleanup dialled = [this, &socket_path] {
    absl::MutexLock lock(&mu_);
    dialing_.erase(socket_path);
  };
  ReleaseRetired();
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> connected,
                       Endpoint::Connect(resource_name, socket_path, options_.endpoint));
  std::shared_ptr<Endpoint> endpoint = std::move(connected);
  absl::MutexLock registration(&registration_mu_);
  bool new_resource = false;
  std::shared_ptr<Endpoint> previously_stopped;
  {
    absl::MutexLock lock(&mu_);
    // A registration of the same socket may have won the race while this one dialled.
    KDP_RETURN_IF_ERROR(already_connected());
    new_resource = !registry_.Has(resource_name);
    ResourceEndpoints& state = endpoints_[resource_name];
    state.connected.push_back(endpoint);
    state.stopped_at.reset();
    previously_stopped = std::move(state.last_stopped);
    removed_.erase(resource_name);
    registry_.Connected(resource_name, socket_path);
    if (new_resource) pod_devices_.SetDevices(resource_name, registry_.GetShared(resource_name));
  }
  if (previously_stopped != nullptr) previously_stopped->Stop();
  if (new_resource && options_.store != nullptr) {
    // The checkpoint lists the resource from now on; journal it so a crash before the next
    // compaction still brings it back as a stopped endpoint.
    if (absl::Status recorded = options_.store->RecordResource(resource_name, true, {});
        !recorded.ok()) {
      KDP_LOG_ERROR("Failed to journal a new resource", "resourceName", resource_name, "err",
                    recorded.message());
    }
  }
  const Endpoint* raw = endpoint.get();
  endpoint->Run(
      [this, resource_name, raw](const v1beta1::ListAndWatchResponse& snapshot) {
        OnSnapshot(resource_name, raw, snapshot);
      },
      [this, resource_name, raw](const absl::Status&) { OnStreamEnded(resource_name, raw); });
  KDP_LOG_INFO("Registered device plugin", "resourceName", resource_name, "endpoint", socket_path,
               "preStartRequired", endpoint->options().pre_start_required(),
               "getPreferredAllocationAvailable",
               endpoint->options().get_preferred_allocation_available());
  return absl::OkStatus();
}

void DeviceManager::OnSnapshot(const std::string& resource, const Endpoint* endpoint,
                               const v1beta1::ListAndWatchResponse& snapshot) {
  // Parsed outside the lock (100,000 devices take tens of milliseconds), and shared by the
  // endpoint's snapshot and the registry rather than copied.
  SnapshotAnomalies anomalies;
  auto devices = std::make_shared<ResourceDevices>();
  devices->name = resource;
  devices->devices = ParseSnapshot(snapshot, &anomalies);
  devices->CountHealthy();
  devices->connected = true;
  devices->endpoint = endpoint->socket_path();
  if (anomalies.any()) {
    // The kubelet takes all of these silently; a plugin author wants to hear of them.
    KDP_LOG_WARNING("ListAndWatch snapshot lists devices no plugin should send", "resourceName",
                    resource, "endpoint", endpoint->socket_path(), "devices",
                    snapshot.devices_size(), "emptyIDs", anomalies.empty_ids, "duplicateIDs",
                    anomalies.duplicate_ids, "duplicateID", anomalies.duplicate_example,
                    "otherHealth", anomalies.other_health, "health", anomalies.health_example,
                    "rule",
                    "IDs unique and non-empty, health \"Healthy\" or \"Unhealthy\"; a "
                    "duplicate is unhealthy if any entry is, other health is unhealthy");
  }
  // The allocator's index of the free devices, built outside the lock too.
  FreeDevices index(devices);
  std::shared_ptr<const ResourceDevices> replaced;  // released outside the lock
  std::optional<FreeDevices> replaced_index;        // likewise
  {
    absl::MutexLock lock(&mu_);
    auto it = endpoints_.find(resource);
    if (it == endpoints_.end()) return;
    ResourceEndpoints& state = it->second;
    if (state.connected.empty()) return;
    const bool active = state.connected.back().get() == endpoint;
    bool found = active;
    for (const auto& connected : state.connected) found = found || connected.get() == endpoint;
    if (!found) return;
    replaced = std::exchange(state.snapshots[endpoint], devices);
    // Only the active endpoint's devices are the resource's; a standby's are kept for promotion.
    if (!active) return;
    registry_.Publish(std::move(devices));
    // The index follows the registry under the same lock, so a later snapshot's index never
    // loses to an earlier one.
    replaced_index = pod_devices_.SetFreeDevices(resource, std::move(index));
  }
  // The kubelet writes its checkpoint after every ListAndWatch message (healthy devices change).
  if (options_.store != nullptr) options_.store->RequestCompaction();
}

void DeviceManager::OnStreamEnded(const std::string& resource, const Endpoint* endpoint) {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) return;
  ResourceEndpoints& state = it->second;
  auto pos = std::find_if(state.connected.begin(), state.connected.end(),
                          [&](const auto& e) { return e.get() == endpoint; });
  // Not connected any more (Stop(), or already handled): nothing to do (kubernetes #121994).
  if (pos == state.connected.end()) return;
  const bool was_active = std::next(pos) == state.connected.end();
  std::shared_ptr<Endpoint> ended = std::move(*pos);
  state.connected.erase(pos);
  state.snapshots.erase(endpoint);
  if (state.connected.empty()) {
    KDP_LOG_WARNING("Device plugin disconnected; its devices are unhealthy", "resourceName",
                    resource, "endpoint", ended->socket_path());
    registry_.Disconnected(resource);
    pod_devices_.SetDevices(resource, registry_.GetShared(resource));
    state.stopped_at = Now();
    if (state.last_stopped != nullptr) retired_.push_back(std::move(state.last_stopped));
    state.last_stopped = std::move(ended);
    return;
  }
  // Kept alive until released from another thread: this is its own stream thread.
  retired_.push_back(std::move(ended));
  if (!was_active) return;
  // The newest surviving instance takes over with its latest snapshot.
  const std::shared_ptr<Endpoint>& promoted = state.connected.back();
  KDP_LOG_INFO("Device plugin endpoint disconnected; a newer one still serving takes over",
               "resourceName", resource, "endpoint", promoted->socket_path());
  registry_.Connected(resource, promoted->socket_path());
  if (auto snap = state.snapshots.find(promoted.get()); snap != state.snapshots.end()) {
    registry_.Publish(snap->second);
  }
  pod_devices_.SetDevices(resource, registry_.GetShared(resource));
}

void DeviceManager::DeregisterPlugin(const std::string& resource_name,
                                     const std::string& socket_path) {
  std::shared_ptr<Endpoint> endpoint;
  {
    absl::MutexLock lock(&mu_);
    auto it = endpoints_.find(resource_name);
    if (it == endpoints_.end()) return;
    for (const std::shared_ptr<Endpoint>& connected : it->second.connected) {
      if (connected->socket_path() == socket_path) endpoint = connected;
    }
  }
  if (endpoint == nullptr) return;
  KDP_LOG_INFO("Device plugin deregistered: its registration socket was removed", "resourceName",
               resource_name, "endpoint", socket_path);
  OnStreamEnded(resource_name, endpoint.get());
  endpoint->Stop();
  ReleaseRetired();
}

void DeviceManager::ReleaseRetired() {
  std::vector<std::shared_ptr<Endpoint>> retired;
  {
    absl::MutexLock lock(&mu_);
    retired.swap(retired_);
  }
  for (auto& endpoint : retired) endpoint->Stop();
}

DeviceManager::EndpointLookup DeviceManager::EndpointFor(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) return {};
  const ResourceEndpoints& state = it->second;
  return {.endpoint = state.connected.empty() ? state.last_stopped : state.connected.back(),
          .known = true};
}

bool DeviceManager::IsDevicePluginResource(const std::string& resource) const {
  return registry_.Has(resource) || pod_devices_.Resources().contains(resource);
}

std::vector<ResourceCapacity> DeviceManager::GetCapacity() {
  const absl::Time now = Now();
  std::vector<std::string> expired;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = endpoints_.begin(); it != endpoints_.end();) {
      const ResourceEndpoints& state = it->second;
      if (!state.connected.empty() || !state.stopped_at.has_value() ||
          now - *state.stopped_at <= options_.endpoint_grace_period) {
        ++it;
        continue;
      }
      KDP_LOG_WARNING(
          "Device plugin resource removed: its endpoint stayed stopped past the grace "
          "period",
          "resourceName", it->first, "gracePeriod",
          absl::FormatDuration(options_.endpoint_grace_period));
      registry_.Remove(it->first);
      pod_devices_.SetDevices(it->first, nullptr);
      removed_.insert(it->first);
      expired.push_back(it->first);
      if (it->second.last_stopped != nullptr)
        retired_.push_back(std::move(it->second.last_stopped));
      it = endpoints_.erase(it);
    }
  }
  ReleaseRetired();
  for (const std::string& resource : expired) {
    if (options_.store == nullptr) continue;
    if (absl::Status recorded = options_.store->RecordResource(resource, false, {});
        !recorded.ok()) {
      KDP_LOG_ERROR("Failed to journal a removed resource", "resourceName", resource, "err",
                    recorded.message());
    }
  }
  std::vector<ResourceCapacity> out;
  for (const std::shared_ptr<const ResourceDevices>& resource : registry_.Shared()) {
    out.push_back({.name = resource->name,
                   .capacity = resource->capacity(),
                   .allocatable = resource->allocatable(),
                   .removed = false});
  }
  absl::MutexLock lock(&mu_);
  for (const std::string& name : removed_) {
    if (registry_.Has(name)) continue;
    out.push_back({.name = name, .capacity = 0, .allocatable = 0, .removed = true});
  }
  std::sort(out.begin(), out.end(),
            [](const ResourceCapacity& a, const ResourceCapacity& b) { return a.name < b.name; });
  return out;
}

void DeviceManager::UpdateAllocatedDevices() {
  const ActivePodsSource* source = nullptr;
  {
    absl::MutexLock lock(&mu_);
    source = pod_source_;
  }
  if (source == nullptr || !source->SourcesReady()) return;
  const uint64_t generation = source->Generation();
  // Allocated pods first, active pods second: a pod whose admission starts in between is in the
  // second set, so its reservation in flight is never taken for garbage.
  const std::set<std::string> allocated = pod_devices_.PodUids();
  const std::set<std::string> active = source->ActivePodUids();
  for (const std::string& uid : allocated) {
    if (active.contains(uid)) continue;
    KDP_LOG_INFO("Releasing the devices of a pod that is no longer active", "podUID", uid);
    RemovePod(uid);
  }
  absl::MutexLock lock(&mu_);
  collected_generation_ = generation;
}

void DeviceManager::CollectIfStale() {
  // The kubelet collects garbage before every allocation and hint; here only when a pod has left
  // the active set since the last collection, the only way an allocation can become stale.
  bool collect = false;
  {
    absl::MutexLock lock(&mu_);
    collect = pod_source_ != nullptr && collected_generation_ != pod_source_->Generation();
  }
  if (collect) UpdateAllocatedDevices();
}

std::optional<std::vector<TopologyHint>> DeviceManager::ResourceHints(
    const std::string& resource, int64_t request, const std::optional<std::set<std::string>>& held,
    const std::set<std::string>& reusable) {
  std::optional<ResourceDevices> devices = registry_.Get(resource);
  if (!devices.has_value() || !HasTopology(*devices)) return std::nullopt;
  if (held.has_value() && !held->empty()) {
    if (static_cast<int64_t>(held->size()) != request) {
      KDP_LOG_INFO("Resource already allocated with a different number of devices: no hints",
                   "resourceName", resource, "request", request, "allocated", held->size());
      return std::vector<TopologyHint>{};
    }
    return GenerateDeviceTopologyHints(*devices, options_.numa_nodes, *held, {}, request);
  }
  const std::set<std::string> in_use = pod_devices_.Allocated(resource);
  std::set<std::string> available;
  for (const std::string& id : devices->Healthy()) {
    if (!in_use.contains(id)) available.insert(id);
  }
  std::set<std::string> usable = available;
  usable.insert(reusable.begin(), reusable.end());
  if (static_cast<int64_t>(usable.size()) < request) {
    KDP_LOG_INFO("Not enough devices for topology hints", "resourceName", resource, "request",
                 request, "available", usable.size());
    return std::vector<TopologyHint>{};
  }
  return GenerateDeviceTopologyHints(*devices, options_.numa_nodes, available, reusable, request);
}

ProviderHints DeviceManager::GetTopologyHints(const Pod& pod, const Container& container) {
  CollectIfStale();
  std::map<std::string, std::set<std::string>> reusable;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = devices_to_reuse_.find(pod.uid); it != devices_to_reuse_.end()) {
      reusable = it->second;
    }
  }
  ProviderHints hints;
  for (const auto& [resource, request] : container.extended_resources) {
    if (!IsDevicePluginResource(resource)) continue;
    hints[resource] = ResourceHints(
        resource, request, pod_devices_.ContainerDevices(pod.uid, container.name, resource),
        reusable[resource]);
  }
  return hints;
}

ProviderHints DeviceManager::GetPodTopologyHints(const Pod& pod) {
  CollectIfStale();
  std::set<std::string> resources;
  for (const Container* c : ContainersInAdmissionOrder(pod)) {
    for (const auto& [resource, count] : c->extended_resources) resources.insert(resource);
  }
  ProviderHints hints;
  for (const std::string& resource : resources) {
    const int64_t request = PodDeviceRequest(pod, resource);
    if (!IsDevicePluginResource(resource)) continue;
    hints[resource] =
        ResourceHints(resource, request, pod_devices_.PodResourceDevices(pod.uid, resource), {});
  }
  return hints;
}

absl::Status DeviceManager::Allocate(const Pod& pod, const Container& container,
                                     const std::optional<NumaMask>& affinity) {
  // No manager-wide lock: each resource's pick is serialised in AllocateContainerResources, and
  // the reuse pool is the pod's own (one admission per pod at a time).
  CollectIfStale();
  std::map<std::string, std::set<std::string>> reusable;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = devices_to_reuse_.find(pod.uid); it != devices_to_reuse_.end()) {
      reusable = it->second;
    }
  }
  KDP_RETURN_IF_ERROR(AllocateContainerResources(pod, container, reusable, affinity));

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

void DeviceManager::AdmissionEnded(const std::string& pod_uid) {
  absl::MutexLock lock(&mu_);
  devices_to_reuse_.erase(pod_uid);
}

absl::Mutex* DeviceManager::PickLock(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<absl::Mutex>& slot = pick_locks_[resource];
  if (slot == nullptr) slot = std::make_unique<absl::Mutex>();
  return slot.get();
}

PeerCallTracker::Scope DeviceManager::TrackCall(const Endpoint& endpoint, const std::string& method,
                                                const Pod& pod, absl::Duration timeout) {
  return peer_calls_.Begin({.kind = PeerKind::kDevicePlugin,
                            .peer = endpoint.resource_name(),
                            .method = method,
                            .pod = absl::StrCat(pod.namespace_, "/", pod.name),
                            .endpoint = endpoint.socket_path(),
                            .started = {},
                            .timeout = timeout});
}

absl::Status DeviceManager::AllocateContainerResources(
    const Pod& pod, const Container& container,
    const std::map<std::string, std::set<std::string>>& reusable,
    const std::optional<NumaMask>& affinity) {
  std::optional<std::set<int64_t>> numa_affinity;
  if (affinity.has_value()) {
    numa_affinity.emplace();
    for (int node : affinity->Nodes()) numa_affinity->insert(node);
  }
  // std::map iterates resources in name order: deterministic where the kubelet's Go map is not.
  for (const auto& [resource, required] : container.extended_resources) {
    if (!IsDevicePluginResource(resource)) continue;
    // clang 14 cannot capture a structured binding.
    const std::string& resource_name = resource;
    std::shared_ptr<Endpoint> endpoint = EndpointFor(resource).endpoint;
    // The free devices, the pick and the reservation of one resource do not interleave with
    // another container's (the kubelet's whole Allocate is under its mutex); the Allocate RPC
    // below runs after the lock is released, on devices already reserved.
    absl::ReleasableMutexLock pick(PickLock(resource));
    PickRequest request{
        .pod_uid = pod.uid,
        .container = container.name,
        .resource = resource,
        .required = required,
        .existing = pod_devices_.ContainerDevices(pod.uid, container.name, resource),
        .reusable = {},
        .numa_affinity = numa_affinity,
    };
    if (auto it = reusable.find(resource); it != reusable.end()) request.reusable = it->second;
    PreferredAllocationFn preferred;
    if (endpoint != nullptr && endpoint->options().get_preferred_allocation_available()) {
      preferred = [&](const std::vector<std::string>& available,
                      const std::vector<std::string>& must_include,
                      int size) -> absl::StatusOr<std::vector<std::string>> {
        PeerCallTracker::Scope tracked =
            TrackCall(*endpoint, "GetPreferredAllocation", pod, options_.endpoint.call_timeout);
        KDP_ASSIGN_OR_RETURN(v1beta1::PreferredAllocationResponse response,
                             endpoint->GetPreferredAllocation(available, must_include, size));
        // The kubelet reads only the first container response.
        if (response.container_responses_size() == 0) return std::vector<std::string>{};
        const auto& ids = response.container_responses(0).deviceids();
        return std::vector<std::string>(ids.begin(), ids.end());
      };
    }
    // The free devices are read from PodDevices' index (no copy of the resource's devices), with
    // the snapshot they come from for the devices' NUMA nodes.
    std::shared_ptr<const ResourceDevices> snapshot;
    WithFreeDevices with_free = [&](const std::function<void(const FreeDevices*)>& fn) {
      pod_devices_.WithFreeDevices(resource_name, [&](const FreeDevices* free) {
        if (free != nullptr) snapshot = free->shared_devices();
        fn(free);
      });
    };
    absl::StatusOr<std::vector<std::string>> chosen =
        DevicesToAllocate(request, with_free, preferred);
    if (!chosen.ok()) return chosen.status();
    if (chosen->empty()) continue;
    const std::vector<std::string> picked = *std::move(chosen);

    DevicesPerNuma per_numa;
    for (const std::string& id : picked) {
      // A reused device may have left the plugin's list since: it counts as without topology.
      auto it = snapshot->devices.find(id);
      if (it == snapshot->devices.end() || it->second.numa_nodes.empty()) {
        per_numa[-1].push_back(id);
        continue;
      }
      for (int64_t node : it->second.numa_nodes) per_numa[node].push_back(id);
    }
    checkpoint::Entry entry{.pod_uid = pod.uid,
                            .container_name = container.name,
                            .resource_name = resource,
                            .devices = per_numa,
                            .alloc_resp = {}};
    // Reserved before the RPC: no other allocation can pick these while it is in flight.
    pod_devices_.Reserve(pod.uid, container.name, resource, std::move(per_numa));
    pick.Release();
    if (endpoint == nullptr) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return absl::FailedPreconditionError(errors::UnknownDevicePlugin(resource));
    }
    absl::StatusOr<v1beta1::AllocateResponse> response;
    {
      // The kubelet times exactly the RPC (DevicePluginAllocationDuration).
      metrics::ScopedTimer timer(
          options_.metrics != nullptr
              ? options_.metrics->plugin_alloc_duration->WithLabels({resource})
              : nullptr);
      PeerCallTracker::Scope tracked =
          TrackCall(*endpoint, "Allocate", pod, options_.endpoint.call_timeout);
      response = endpoint->Allocate(picked);
    }
    if (!response.ok()) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return response.status();
    }
    if (response->container_responses_size() == 0) {
      pod_devices_.Rollback(pod.uid, container.name, resource);
      return absl::InternalError(errors::NoContainersInResponse(response->ShortDebugString()));
    }
    const v1beta1::ContainerAllocateResponse& answer = response->container_responses(0);
    bool committed = false;
    auto commit = [&] {
      committed = pod_devices_.Commit(pod.uid, container.name, resource_name, answer);
    };
    if (options_.store != nullptr) {
      entry.alloc_resp = SerializeResponse(answer);
      // A failed journal write fails the admission, as the kubelet's failed checkpoint write does.
      if (absl::Status recorded = options_.store->RecordAllocation(entry, commit); !recorded.ok()) {
        pod_devices_.Rollback(pod.uid, container.name, resource);
        return recorded;
      }
    } else {
      commit();
    }
    if (!committed) {
      // Never admit a container without the devices it was answered for.
      return absl::AbortedError(absl::StrCat("the devices of ", resource, " for pod ", pod.uid,
                                             " container ", container.name,
                                             " were released while Allocate was in flight"));
    }
    KDP_LOG_INFO("Allocated devices", "podUID", pod.uid, "containerName", container.name,
                 "resourceName", resource, "devices", absl::StrJoin(picked, ","));
  }
  return absl::OkStatus();
}

checkpoint::Data DeviceManager::CheckpointData() const {
  checkpoint::Data data;
  data.entries = pod_devices_.CheckpointEntries();
  for (const std::shared_ptr<const ResourceDevices>& resource : registry_.Shared()) {
    std::vector<std::string>& healthy = data.registered_devices[resource->name];
    for (const auto& [id, info] : resource->devices) {
      if (info.healthy) healthy.push_back(id);
    }
  }
  return data;
}

absl::StatusOr<RunContainerOptions> DeviceManager::GetDeviceRunContainerOptions(
    const Pod& pod, const Container& container) {
  std::vector<PodDevicesEntry> entries = pod_devices_.ContainerEntries(pod.uid, container.name);
  for (const PodDevicesEntry& entry : entries) {
    auto limit = container.extended_resources.find(entry.resource_name);
    if (limit == container.extended_resources.end() || limit->second == 0) continue;
    EndpointLookup lookup = EndpointFor(entry.resource_name);
    if (!lookup.known) {
      return absl::FailedPreconditionError(errors::EndpointNotFound(entry.resource_name));
    }
    // A resource restored from the checkpoint has a stopped endpoint without options: no
    // PreStartContainer, as in the kubelet.
    const std::shared_ptr<Endpoint>& endpoint = lookup.endpoint;
    if (endpoint == nullptr || !endpoint->options().pre_start_required()) continue;
    std::set<std::string> ids = DeviceIds(entry.devices);
    PeerCallTracker::Scope tracked =
        TrackCall(*endpoint, "PreStartContainer", pod, options_.endpoint.pre_start_timeout);
    KDP_RETURN_IF_ERROR(endpoint->PreStartContainer({ids.begin(), ids.end()}));
  }
  std::vector<const v1beta1::ContainerAllocateResponse*> responses;
  for (const PodDevicesEntry& entry : entries) responses.push_back(&entry.response);
  return MergeRunContainerOptions(responses);
}

RunContainerOptions DeviceManager::CachedRunContainerOptions(const std::string& pod_uid,
                                                             const std::string& container) const {
  std::vector<PodDevicesEntry> entries = pod_devices_.ContainerEntries(pod_uid, container);
  std::vector<const v1beta1::ContainerAllocateResponse*> responses;
  for (const PodDevicesEntry& entry : entries) responses.push_back(&entry.response);
  return MergeRunContainerOptions(responses);
}

void DeviceManager::RemovePod(const std::string& pod_uid) {
  {
    absl::MutexLock lock(&mu_);
    devices_to_reuse_.erase(pod_uid);
  }
  if (!pod_devices_.HasPod(pod_uid)) return;
  auto remove = [&] { pod_devices_.DeletePod(pod_uid); };
  if (options_.store == nullptr) return remove();
  if (absl::Status recorded = options_.store->RecordPodDevicesRemoved(pod_uid, remove);
      !recorded.ok()) {
    // The devices are free all the same: should the removal be lost in a crash, the pod is no
    // longer in the pod store and garbage collection frees them again after the restart.
    KDP_LOG_ERROR("Failed to journal a pod's released devices", "podUID", pod_uid, "err",
                  recorded.message());
    remove();
  }
}

std::vector<PodDevicesEntry> DeviceManager::ContainerEntries(const std::string& pod_uid,
                                                             const std::string& container) const {
  return pod_devices_.ContainerEntries(pod_uid, container);
}

}  // namespace kdp::manager
