// PluginHandler is the kubelet's cache.PluginHandler: what a consumer of one plugin type (DRA
// drivers, device plugins) gives the plugin manager, which calls it for every registration socket
// found under <kubelet-root>/plugins_registry whose PluginInfo.type names it. Implemented by the
// DRA plugin manager ("DRAPlugin") and the device manager's watcher handler ("DevicePlugin");
// called by PluginManager only, from its operation threads.
//
// Thread-safety: implementations must be thread-safe; the plugin manager never calls a handler
// twice at once for the same socket, but may call it concurrently for different sockets.
#ifndef KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_HANDLER_H_
#define KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_HANDLER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kdp::manager::pluginmanager {

// PluginInfo.type values (pluginregistration/v1 constants.go).
inline constexpr char kCSIPlugin[] = "CSIPlugin";
inline constexpr char kDevicePlugin[] = "DevicePlugin";
inline constexpr char kDRAPlugin[] = "DRAPlugin";

class PluginHandler {
 public:
  virtual ~PluginHandler() = default;

  // Checks the plugin's name and supported versions before anything is registered. An error is
  // sent to the plugin ("RegisterPlugin error -- plugin validation failed with err: <message>")
  // and the registration is retried with backoff. `endpoint` is PluginInfo.endpoint, or the
  // registration socket's path when the plugin left it empty.
  [[nodiscard]] virtual absl::Status ValidatePlugin(const std::string& name,
                                                    const std::string& endpoint,
                                                    const std::vector<std::string>& versions) = 0;

  // Starts using the plugin (called after a successful ValidatePlugin). An error is sent to the
  // plugin ("RegisterPlugin error -- plugin registration failed with err: <message>") and the
  // registration is retried with backoff.
  [[nodiscard]] virtual absl::Status RegisterPlugin(const std::string& name,
                                                    const std::string& endpoint,
                                                    const std::vector<std::string>& versions) = 0;

  // The registration socket of a plugin this handler registered went away (or was re-created,
  // in which case RegisterPlugin follows). Since kubelet 1.33 the endpoint identifies the
  // instance, so one of several instances of a plugin can be dropped.
  virtual void DeRegisterPlugin(const std::string& name, const std::string& endpoint) = 0;
};

}  // namespace kdp::manager::pluginmanager

#endif  // KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_HANDLER_H_
