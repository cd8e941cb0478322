// DevicePluginWatcherHandler lets device plugins register through <kubelet-root>/plugins_registry
// (PluginInfo.type "DevicePlugin") instead of calling Register on kubelet.sock, as the kubelet's
// device manager allows (plugin/v1beta1/handler.go: ValidatePlugin, RegisterPlugin,
// DeRegisterPlugin). A validated plugin is connected through the same RegistrationHandler as a
// kubelet.sock registration (DeviceManager::RegisterPlugin), so both paths behave alike from
// then on. Given to the PluginManager by whoever wires kdp-manager together.
//
// Thread-safe (stateless; the callees are thread-safe).
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_WATCHER_HANDLER_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_WATCHER_HANDLER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "manager/src/devicemanager/plugin_observer.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/pluginmanager/plugin_handler.h"

namespace kdp::manager {

class DevicePluginWatcherHandler final : public pluginmanager::PluginHandler {
 public:
  // Drops the endpoint of `resource_name` served on `socket_path`, as a disconnect does (the
  // kubelet's disconnectClient → PluginDisconnected: devices unhealthy, capacity kept for the
  // grace period).
  using Deregister =
      std::function<void(const std::string& resource_name, const std::string& socket_path)>;

  // `registration` is borrowed and must outlive the handler; `deregister` may be empty (then a
  // removed socket only ends the plugin's stream when the plugin exits). `observer` (borrowed,
  // may be null) is told of each registration as a RegisterRequest would carry it (version
  // "v1beta1", the socket's absolute path as the endpoint) with its answer.
  DevicePluginWatcherHandler(RegistrationHandler* registration, Deregister deregister,
                             DevicePluginObserver* observer = nullptr);

  // INVALID_ARGUMENT with the kubelet's texts: "manager version, v1beta1, is not among plugin
  // supported versions [<versions>]" when "v1beta1" is not listed; "invalid name of device
  // plugin socket: the ResourceName \"<name>\" is invalid" when `name` is not an extended
  // resource name. kdp also requires `endpoint` to be an absolute socket path without ".."
  // components that fits a unix socket address (common/path_safety.h ValidateSocketPath; the
  // kubelet would dial a relative one from its working directory).
  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  // RegistrationHandler::RegisterPlugin(name, endpoint): dials the plugin and starts its stream.
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  void DeRegisterPlugin(const std::string& name, const std::string& endpoint) override;

 private:
  RegistrationHandler* const registration_;
  const Deregister deregister_;
  DevicePluginObserver* const observer_;
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_PLUGIN_WATCHER_HANDLER_H_
