// The plugin manager's two operations on one registration socket (the kubelet's
// operationexecutor.GenerateRegisterPluginFunc / GenerateUnregisterPluginFunc), as free functions
// the reconciler runs on an operation thread: dial the socket, GetInfo, pick the handler by
// PluginInfo.type, ValidatePlugin, RegisterPlugin, NotifyRegistrationStatus. Every error text is
// the kubelet's ("RegisterPlugin error -- ..."), so a plugin author sees what a real node says.
//
// Thread-safety: the functions are thread-safe; handlers are called from the calling thread.
#ifndef KDP_MANAGER_SRC_PLUGINMANAGER_OPERATION_EXECUTOR_H_
#define KDP_MANAGER_SRC_PLUGINMANAGER_OPERATION_EXECUTOR_H_

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "manager/src/pluginmanager/plugin_handler.h"

namespace kdp::manager::pluginmanager {

struct RegistrationTimeouts {
  // How long to wait for the socket to accept a connection (the kubelet's dialTimeoutDuration).
  absl::Duration dial = absl::Seconds(10);
  // GetInfo deadline (the kubelet's 1 s).
  absl::Duration get_info = absl::Seconds(1);
  // NotifyRegistrationStatus deadline (the kubelet's notifyTimeoutDuration).
  absl::Duration notify = absl::Seconds(5);
};

// A plugin as the reconciler's actual state of the world records it.
struct RegisteredPlugin {
  std::string type;         // PluginInfo.type, e.g. "DRAPlugin"
  std::string name;         // PluginInfo.name (DRA: driver name; device plugin: resource name)
  std::string endpoint;     // PluginInfo.endpoint, or socket_path when the plugin left it empty
  std::string socket_path;  // the registration socket
  std::vector<std::string> versions;  // PluginInfo.supported_versions
  absl::Time registered_at = absl::InfinitePast();
};

struct RegistrationOutcome {
  PluginHandler* handler = nullptr;
  RegisteredPlugin plugin = {};
  // NotifyRegistrationStatus(true) failed after the handler registered the plugin: it stays
  // registered (the kubelet's actual state has it too), the error is only logged.
  absl::Status notify_error = absl::OkStatus();
};

// Runs the registration sequence on `socket_path`. Errors (the registration is then retried):
//  - UNAVAILABLE "RegisterPlugin error -- dial failed at socket <p>, err: ..." (also when
//    `cancelled` turns true while dialling),
//  - the GetInfo RPC's code, "RegisterPlugin error -- failed to get plugin info using RPC GetInfo
//    at socket <p>, err: rpc error: code = ... desc = ...",
//  - NOT_FOUND "RegisterPlugin error -- no handler registered for plugin type: <t> at socket <p>"
//    followed by ": kdp-manager does not support plugin type \"<t>\" (supported: ...)"; the same
//    text was sent to the plugin,
//  - INVALID_ARGUMENT "RegisterPlugin error -- plugin validation failed with err: <err>" (sent),
//  - the handler's code, "RegisterPlugin error -- plugin registration failed with err: <err>"
//    (sent),
//  - "... failed to send error at socket <p>, err: ..." when a failure could not be sent.
// `handlers` maps PluginInfo.type to its handler (borrowed for the call).
absl::StatusOr<RegistrationOutcome> RegisterPluginAt(
    const std::string& socket_path, const std::map<std::string, PluginHandler*>& handlers,
    const RegistrationTimeouts& timeouts, const std::atomic<bool>& cancelled);

// The message sent to a plugin whose type has no handler (exposed for tests and status output).
std::string NoHandlerMessage(const std::string& type, const std::string& socket_path,
                             const std::map<std::string, PluginHandler*>& handlers);

}  // namespace kdp::manager::pluginmanager

#endif  // KDP_MANAGER_SRC_PLUGINMANAGER_OPERATION_EXECUTOR_H_
