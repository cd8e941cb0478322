// DeviceManager is kdp-manager's device manager: the kubelet's ManagerImpl split into its concepts.
// It owns the registration server (kubelet.sock), one Endpoint per registered resource, the
// DeviceRegistry fed by their ListAndWatch streams, and PodDevices; it allocates devices to
// containers with the kubelet's order and reuse rules and merges their runtime options.
//
// Thread-safe. Allocate() and RemovePod() are meant to be called serially (admission is serial on
// a node, as in the kubelet); the registration and stream callbacks run concurrently with them.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/devicemanager/device_registry.h"
#include "manager/src/devicemanager/endpoint.h"
#include "manager/src/devicemanager/pod_devices.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/devicemanager/run_options.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager {

struct DeviceManagerOptions {
  // <kubelet-root>/device-plugins: kubelet.sock and the plugins' sockets.
  std::string plugins_dir;
  EndpointOptions endpoint;
  // Where the kubelet-format checkpoint is written (normally
  // <plugins_dir>/kubelet_internal_checkpoint); empty: not written.
  std::string checkpoint_path = {};
};

class DeviceManager : public RegistrationHandler {
 public:
  explicit DeviceManager(DeviceManagerOptions options);
  ~DeviceManager() override;

  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;

  // Removes stale plugin sockets and serves kubelet.sock.
  [[nodiscard]] absl::Status Start();
  // Stops the registration server and every endpoint. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // RegistrationHandler: dials the plugin, then replaces any endpoint of the same resource (its
  // stream is cancelled: newest registration wins, and a late end of the old stream can no
  // longer mark the new one's devices unhealthy, kubernetes #121994).
  absl::Status RegisterPlugin(const std::string& resource_name,
                              const std::string& socket_path) override
      ABSL_LOCKS_EXCLUDED(registration_mu_, mu_);

  // Allocates the container's devices (the kubelet's Allocate(pod, container)): init containers
  // before app containers; devices of finished regular init containers are reused by later
  // containers of the pod, sidecars keep theirs. Errors carry the kubelet's texts.
  absl::Status Allocate(const Pod& pod, const Container& container) ABSL_LOCKS_EXCLUDED(mu_);

  // Calls PreStartContainer where the plugin requires it, then merges the container's cached
  // Allocate answers (GetDeviceRunContainerOptions).
  absl::StatusOr<RunContainerOptions> GetDeviceRunContainerOptions(const Pod& pod,
                                                                   const Container& container)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Releases every device of the pod.
  void RemovePod(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_);

  // Committed allocations of one container, ordered by resource.
  std::vector<PodDevicesEntry> ContainerEntries(const std::string& pod_uid,
                                                const std::string& container) const;
  // Every resource with its devices, ordered by name.
  std::vector<ResourceDevices> Resources() const { return registry_.List(); }

 private:
  std::shared_ptr<Endpoint> EndpointFor(const std::string& resource) const ABSL_LOCKS_EXCLUDED(mu_);
  bool IsDevicePluginResource(const std::string& resource) const;
  absl::Status AllocateContainerResources(
      const Pod& pod, const Container& container,
      const std::map<std::string, std::set<std::string>>& reusable);
  void OnStreamEnded(const std::string& resource, const Endpoint* endpoint)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the whole state in the kubelet's format, as the kubelet does after every ListAndWatch
  // message and every allocation. The state is read under the same lock as the write, so a
  // later write never carries an older state.
  absl::Status WriteCheckpoint() ABSL_LOCKS_EXCLUDED(checkpoint_mu_);

  const DeviceManagerOptions options_;
  DeviceRegistry registry_;
  PodDevices pod_devices_;
  RegistrationServer registration_server_;

  // Held from an endpoint's publication to its stream's start, so that of two registrations of
  // one resource racing each other the later one wins in every respect (endpoint, registry entry,
  // stream). The dial-back runs before it, unserialised.
  absl::Mutex registration_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints_ ABSL_GUARDED_BY(mu_);
  // Pod UID → resource → devices of its finished init containers (devicesToReuse). Holds at most
  // the pod being admitted.
  std::map<std::string, std::map<std::string, std::set<std::string>>> devices_to_reuse_
      ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex checkpoint_mu_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_MANAGER_H_
