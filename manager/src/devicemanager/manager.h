// DeviceManager is kdp-manager's device manager: the kubelet's ManagerImpl split into its concepts.
// It owns the registration server (kubelet.sock), one Endpoint per registered resource, the
// DeviceRegistry fed by their ListAndWatch streams, and PodDevices; it allocates devices to
// containers with the kubelet's order and reuse rules and merges their runtime options.
//
// Thread-safe. Allocate() calls for different resources run concurrently; per resource, reading
// the free devices, the pick (GetPreferredAllocation included) and the reservation are serialised
// (a per-resource pick lock), while the Allocate RPC runs outside every lock: the devices it is
// for are reserved in PodDevices first and committed or rolled back after it, so a plugin that
// hangs in Allocate holds up no other allocation, not even of its own resource. Registrations,
// stream callbacks, garbage collection and deletions run concurrently with them. Hints and the
// allocation that follows them are consistent only when the caller serialises admissions that
// share a resource (PodManager does): GetTopologyHints() takes no admission lock, so another
// admission of the same resource between the two would make the hints stale. The calls in flight
// to plugins are listed by peer_calls().
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/endpoint.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/devicemanager/run_options.h"
#include "manager/src/metrics/manager_metrics.h"
#include "manager/src/peercalls/peer_calls.h"
#include "manager/src/pod/pod.h"
#include "manager/src/state/state_store.h"
#include "manager/src/topologymanager/topology_manager.h"

namespace kdp::manager {

// The pods the node runs, as the device manager's garbage collection sees them (the kubelet's
// activePods and sourcesReady callbacks). Implemented by the pod manager.
class ActivePodsSource {
 public:
  virtual ~ActivePodsSource() = default;
  // False until every pod source has been read (at start, until the pod store is restored).
  virtual bool SourcesReady() const = 0;
  // Changes whenever a pod may have left the active set without its devices being released
  // (RemovePod): while it is unchanged no allocation can have become stale, and garbage
  // collection has nothing to do.
  virtual uint64_t Generation() const = 0;
  // UIDs of the active pods, the one being admitted included.
  virtual std::set<std::string> ActivePodUids() const = 0;
};

struct DeviceManagerOptions {
  // <kubelet-root>/device-plugins: kubelet.sock and the plugins' sockets.
  std::string plugins_dir;
  EndpointOptions endpoint = {};
  // How long a resource whose plugin disconnected (or that was read back from the checkpoint)
  // keeps its capacity before it is removed (the kubelet's endpointStopGracePeriod).
  absl::Duration endpoint_grace_period = absl::Minutes(5);
  // How often capacity is recomputed (purging expired resources), as the kubelet's node status
  // sync does; zero: only when GetCapacity() is called.
  absl::Duration housekeeping_interval = absl::ZeroDuration();
  // The clock of the grace period; absl::Now when empty.
  std::function<absl::Time()> now = {};
  // Where changes are journaled and the checkpoint written; nullptr: memory only. Borrowed; must
  // outlive the manager.
  StateStore* store = nullptr;
  // The machine's NUMA nodes (Linux numbers, ascending), as the kubelet reads them from cadvisor:
  // topology hints never name another node. Empty: the devices' own nodes.
  std::vector<int> numa_nodes = {};
  // Where registrations and Allocate durations are recorded (kubelet_device_plugin_*); nullptr:
  // nowhere. Borrowed; must outlive the manager.
  const ManagerMetrics* metrics = nullptr;
};

// One resource as the node reports it (GetCapacity).
struct ResourceCapacity {
  std::string name;
  int64_t capacity = 0;
  int64_t allocatable = 0;
  // The resource was removed after its grace period (reported as 0, as the kubelet does).
  bool removed = false;
};

class DeviceManager : public RegistrationHandler, public HintProvider {
 public:
  explicit DeviceManager(DeviceManagerOptions options);
  ~DeviceManager() override;

  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;

  // Restores the checkpoint's allocations (entries whose AllocResp does not parse are skipped, as
  // in the kubelet) and brings back every resource it lists as a stopped endpoint: capacity and
  // allocatable 0 until its plugin registers again, removed if it does not within the grace
  // period. REQUIRES: before Start().
  void Restore(const checkpoint::Data& data) ABSL_LOCKS_EXCLUDED(mu_);
  // Garbage collection's view of the node's pods. Borrowed; must outlive the manager.
  void SetActivePodsSource(const ActivePodsSource* source) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes stale plugin sockets and serves kubelet.sock.
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the registration server and every endpoint. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // True while kubelet.sock is served (after Start(), before Stop()): /healthz.
  bool RegistrationServing() const { return registration_server_.serving(); }

  // RegistrationHandler: rejects a second registration of a (resource, socket) that is still
  // connected (ALREADY_EXISTS, "device plugin already connected: <socket>"), dials the plugin,
  // then makes it the resource's active endpoint. Endpoints are keyed by (resource, socket): an
  // older instance on another socket stays connected as a standby, and the end of its stream never
  // disconnects the new one (kubernetes #121994, #127803).
  //
  // A socket being dialled is not dialled again (UNAVAILABLE), and at most kMaxDialsInFlight
  // dials run at once (RESOURCE_EXHAUSTED): a flood of registrations naming sockets that never
  // answer would otherwise hold a gRPC thread and a connection per request for the whole dial
  // timeout. Plugins retry registration, as they do after any failure.
  absl::Status RegisterPlugin(const std::string& resource_name,
                              const std::string& socket_path) override
      ABSL_LOCKS_EXCLUDED(registration_mu_, mu_);
  static constexpr int kMaxDialsInFlight = 32;

  // Drops the endpoint of `resource_name` served on `socket_path` because its registration socket
  // went away from plugins_registry (the kubelet's DeRegisterPlugin → disconnectClient): the same
  // as the end of its stream (a standby is dropped; the active one hands over to the newest
  // remaining instance, or the resource's devices turn unhealthy and the grace period starts),
  // then the endpoint is stopped. An unknown (resource, socket) is a no-op.
  void DeregisterPlugin(const std::string& resource_name, const std::string& socket_path)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Allocates the container's devices (the kubelet's Allocate(pod, container)): init containers
  // before app containers; devices of finished regular init containers are reused by later
  // containers of the pod, sidecars keep theirs. Errors carry the kubelet's texts; a journal
  // write failure fails the allocation, as the kubelet's checkpoint write failure does.
  // `affinity` is the topology manager's merged NUMA affinity for the container (nullopt: none,
  // as under policy "none"): devices on its nodes are taken first (filterByAffinity).
  absl::Status Allocate(const Pod& pod, const Container& container,
                        const std::optional<NumaMask>& affinity) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Allocate(const Pod& pod, const Container& container) ABSL_LOCKS_EXCLUDED(mu_) {
    return Allocate(pod, container, std::nullopt);
  }
  // Forgets the devices the pod's finished init containers left for its later containers
  // (devicesToReuse) once its admission is over, whatever its outcome (kubernetes #103838: the
  // pool must not outlive the admission). RemovePod() forgets them too.
  void AdmissionEnded(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_);

  // The topology manager's hint provider, container scope (GetTopologyHints in topology_hints.go):
  // per device-plugin resource of the container, nullopt when no device of the resource has a NUMA
  // node, an empty list when the request cannot be met (or differs from what the container already
  // holds), else the hints of GenerateDeviceTopologyHints() (regenerated from the held devices for
  // a container that already has them). A request of 0 gets hints too (every mask, single nodes
  // preferred), as in the kubelet. Collects garbage first when a pod left the active set since the
  // last collection.
  ProviderHints GetTopologyHints(const Pod& pod, const Container& container) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Pod scope (GetPodTopologyHints in topology_hints.go): the same per resource of the pod, for the
  // pod's effective request (PodDeviceRequest()), against the devices all its containers hold; no
  // reusable devices.
  ProviderHints GetPodTopologyHints(const Pod& pod) override ABSL_LOCKS_EXCLUDED(mu_);

  // Calls PreStartContainer where the plugin requires it, then merges the container's cached
  // Allocate answers (GetDeviceRunContainerOptions).
  absl::StatusOr<RunContainerOptions> GetDeviceRunContainerOptions(const Pod& pod,
                                                                   const Container& container)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The merged cached Allocate answers only: for containers already running (restored pods).
  RunContainerOptions CachedRunContainerOptions(const std::string& pod_uid,
                                                const std::string& container) const;

  // Releases every device of the pod.
  void RemovePod(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_);
  // Garbage collection (UpdateAllocatedDevices): a no-op until the pod sources are ready; then
  // releases the devices of every pod that is not active. Allocate() runs it first whenever a pod
  // left the active set since the last run.
  void UpdateAllocatedDevices() ABSL_LOCKS_EXCLUDED(mu_);

  // Capacity and allocatable per resource (GetCapacity): a resource whose endpoint stopped more
  // than the grace period ago is removed first (and reported, from then on, as removed with 0).
  std::vector<ResourceCapacity> GetCapacity() ABSL_LOCKS_EXCLUDED(mu_);

  // A resource some plugin registered (or that the checkpoint listed) and that is not removed, or
  // that devices are allocated from (the kubelet's isDevicePluginResource). Other extended
  // resources are not the device manager's: the node has none of them.
  bool IsDevicePluginResource(const std::string& resource) const;

  // Committed allocations of one container, ordered by resource.
  std::vector<PodDevicesEntry> ContainerEntries(const std::string& pod_uid,
                                                const std::string& container) const;
  // Every resource with its devices, ordered by name.
  std::vector<ResourceDevices> Resources() const { return registry_.List(); }
  // The same without copying any device: immutable entries, valid as long as they are held.
  std::vector<std::shared_ptr<const ResourceDevices>> SharedResources() const {
    return registry_.Shared();
  }
  // The state as the kubelet checkpoints it: committed allocations, and per resource its healthy
  // devices.
  checkpoint::Data CheckpointData() const;

  // The Allocate, GetPreferredAllocation and PreStartContainer calls in flight to plugins.
  const PeerCallTracker& peer_calls() const { return peer_calls_; }

 private:
  // The endpoints of one resource (kubernetes PR #135437: keyed by socket).
  struct ResourceEndpoints {
    // Connected endpoints in registration order; the last one is active: it serves the calls and
    // its snapshots are the resource's devices.
    std::vector<std::shared_ptr<Endpoint>> connected;
    // Latest snapshot of each connected endpoint (the registry's entry while it is active),
    // applied when it becomes active.
    std::map<const Endpoint*, std::shared_ptr<const ResourceDevices>> snapshots;
    // When the last endpoint disconnected, or the resource was restored; unset while connected.
    std::optional<absl::Time> stopped_at;
    // The endpoint that disconnected last (its calls fail as "has been stopped").
    std::shared_ptr<Endpoint> last_stopped;
  };
  struct EndpointLookup {
    std::shared_ptr<Endpoint> endpoint;  // connected (active) or stopped
    bool known = false;                  // the resource has endpoints, possibly none connected
  };

  absl::Time Now() const { return options_.now ? options_.now() : absl::Now(); }
  // Garbage collection when a pod left the active set since the last one.
  void CollectIfStale() ABSL_LOCKS_EXCLUDED(mu_);
  // Hints for `request` devices of `resource`, given what the pod or container already holds
  // (nullopt: nothing) and the devices it may reuse.
  std::optional<std::vector<TopologyHint>> ResourceHints(
      const std::string& resource, int64_t request,
      const std::optional<std::set<std::string>>& held, const std::set<std::string>& reusable);
  EndpointLookup EndpointFor(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AllocateContainerResources(
      const Pod& pod, const Container& container,
      const std::map<std::string, std::set<std::string>>& reusable,
      const std::optional<NumaMask>& affinity) ABSL_LOCKS_EXCLUDED(mu_);
  // The lock serialising the picks of `resource` (created on first use, never freed: one per
  // resource name).
  absl::Mutex* PickLock(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);
  // Records a call to the plugin of `resource` for `pod` in peer_calls() for the scope's life.
  PeerCallTracker::Scope TrackCall(const Endpoint& endpoint, const std::string& method,
                                   const Pod& pod, absl::Duration timeout);
  void OnSnapshot(const std::string& resource, const Endpoint* endpoint,
                  const v1beta1::ListAndWatchResponse& snapshot) ABSL_LOCKS_EXCLUDED(mu_);
  void OnStreamEnded(const std::string& resource, const Endpoint* endpoint)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Endpoints that ended are released here, never on their own stream thread.
  void ReleaseRetired() ABSL_LOCKS_EXCLUDED(mu_);
  void HousekeepingLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const DeviceManagerOptions options_;
  DeviceRegistry registry_;
  PodDevices pod_devices_;
  RegistrationServer registration_server_;

  // Held from an endpoint's publication to its stream's start, so that of two registrations of
  // one resource racing each other the later one wins in every respect (endpoint, registry entry,
  // stream). The dial-back runs before it, unserialised.
  absl::Mutex registration_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  PeerCallTracker peer_calls_;
  mutable absl::Mutex mu_;
  // Resource → the lock held from reading its free devices to reserving the pick (never across
  // the Allocate RPC; across GetPreferredAllocation, whose answer is only valid for the free
  // devices it was offered).
  std::map<std::string, std::unique_ptr<absl::Mutex>> pick_locks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ResourceEndpoints> endpoints_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> removed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Endpoint>> retired_ ABSL_GUARDED_BY(mu_);
  // Pod UID → resource → devices of its finished init containers (devicesToReuse). Holds the pods
  // being admitted (AdmissionEnded and RemovePod forget the others).
  std::map<std::string, std::map<std::string, std::set<std::string>>> devices_to_reuse_
      ABSL_GUARDED_BY(mu_);
  // Sockets being dialled back by RegisterPlugin (at most kMaxDialsInFlight, one per socket).
  std::set<std::string> dialing_ ABSL_GUARDED_BY(mu_);
  const ActivePodsSource* pod_source_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<uint64_t> collected_generation_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread housekeeping_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_
