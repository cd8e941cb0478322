#include "manager/src/devicemanager/plugin_watcher_handler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "common/resource_name.h"
#include "common/unix_socket.h"

namespace kdp::manager {
namespace {

// api.SupportedVersions of the device plugin API.
constexpr char kSupportedVersion[] = "v1beta1";

}  // namespace

DevicePluginWatcherHandler::DevicePluginWatcherHandler(RegistrationHandler* registration,
                                                       Deregister deregister,
                                                       DevicePluginObserver* observer)
    : registration_(registration), deregister_(std::move(deregister)), observer_(observer) {}

absl::Status DevicePluginWatcherHandler::ValidatePlugin(const std::string& name,
                                                        const std::string& endpoint,
                                                        const std::vector<std::string>& versions) {
  KDP_LOG_INFO("Got plugin at endpoint with versions", "plugin", name, "endpoint", endpoint,
               "versions", absl::StrJoin(versions, ","));
  if (std::find(versions.begin(), versions.end(), kSupportedVersion) == versions.end()) {
    // Go's %v of a []string: "[a b]".
    return absl::InvalidArgumentError(absl::StrCat("manager version, ", kSupportedVersion,
                                                   ", is not among plugin supported versions [",
                                                   absl::StrJoin(versions, " "), "]"));
  }
  if (absl::Status valid = ValidateExtendedResourceName(name); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid name of device plugin socket: ", valid.message()));
  }
  // The plugin manager substitutes the registration socket's (absolute) path for an empty one.
  if (absl::Status valid = ValidateSocketPath("endpoint", endpoint); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("device plugin ", name, ": ", valid.message()));
  }
  return absl::OkStatus();
}

absl::Status DevicePluginWatcherHandler::RegisterPlugin(const std::string& name,
                                                        const std::string& endpoint,
                                                        const std::vector<std::string>&) {
  KDP_LOG_INFO("Registering plugin at endpoint", "plugin", name, "endpoint", endpoint);
  absl::Status answer = registration_->RegisterPlugin(name, endpoint);
  if (observer_ != nullptr) {
    v1beta1::RegisterRequest request;
    request.set_version(kSupportedVersion);
    request.set_endpoint(endpoint);
    request.set_resource_name(name);
    observer_->Registered(request, answer);
  }
  return answer;
}

void DevicePluginWatcherHandler::DeRegisterPlugin(const std::string& name,
                                                  const std::string& endpoint) {
  KDP_LOG_INFO("Deregistering plugin", "plugin", name, "endpoint", endpoint);
  if (deregister_) deregister_(name, endpoint);
}

}  // namespace kdp::manager
