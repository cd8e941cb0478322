// Fuzzes what a plugin sends to register, and the name rules applied to it: the input is parsed
// as a device plugin's v1beta1.RegisterRequest (kubelet.sock, ValidateRegisterRequest in
// manager/src/devicemanager/registration_server.h) and, the same bytes, as the
// pluginregistration.PluginInfo a plugin's GetInfo answers (plugins_registry), given to the
// device-plugin handler (DevicePluginWatcherHandler::ValidatePlugin) and the DRA handler
// (DraPluginManager::ValidatePlugin, ChooseDraService). Protobuf that does not parse is what gRPC
// refuses before kdp sees it.
//
// Properties checked beyond "no crash": whatever is accepted cannot lead outside its directory:
// a device plugin's socket path is <plugins dir>/<one file name>; a registry endpoint is an
// absolute socket path without ".." components or NUL bytes; a DRA driver name has no '/'. The
// common/path_safety.h rules themselves are checked the same way on the raw input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "manager/src/devicemanager/plugin_watcher_handler.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"
#include "pluginregistration/v1/api.pb.h"

namespace {

constexpr char kPluginsDir[] = "/var/lib/kubelet/device-plugins";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "registration_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckCode(const absl::Status& status, const char* what) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    Fail(what, status.ToString());
  }
}

bool HasDotDotComponent(std::string_view path) {
  for (absl::string_view part : absl::StrSplit(absl::string_view(path.data(), path.size()), '/')) {
    if (part == "..") return true;
  }
  return false;
}

// An accepted absolute socket path: '/', no "..", no NUL, fits sockaddr_un.
void CheckSocketPath(std::string_view path, const char* who) {
  if (path.empty() || path.front() != '/' || HasDotDotComponent(path) ||
      path.find('\0') != std::string_view::npos || path.size() > 107) {
    Fail(who, std::string(path));
  }
}

void CheckPathSafety(std::string_view text) {
  if (kdp::ValidateFileName("endpoint", text, kPluginsDir).ok()) {
    if (text.empty() || text == "." || text == ".." || text.find('/') != std::string_view::npos ||
        text.find('\0') != std::string_view::npos || text.size() > kdp::kMaxFileNameLength) {
      Fail("ValidateFileName accepted a name that is not one file name", std::string(text));
    }
  }
  if (kdp::ValidateSocketPath("endpoint", text).ok()) {
    CheckSocketPath(text, "ValidateSocketPath accepted an unsafe path");
  }
  if (kdp::ValidateUid("uid", text).ok()) {
    if (text.empty() || text == "." || text == ".." || text.find('/') != std::string_view::npos ||
        text.find('\0') != std::string_view::npos || text.size() > kdp::kMaxUidLength) {
      Fail("ValidateUid accepted a UID that is not a plain name", std::string(text));
    }
  }
  if (kdp::ValidateDraDriverName(text).ok()) {
    if (text.empty() || text.find('/') != std::string_view::npos ||
        text.find("..") != std::string_view::npos || text.size() > kdp::kMaxDriverNameLength) {
      Fail("ValidateDraDriverName accepted a name unfit for a directory", std::string(text));
    }
  }
}

void CheckRegisterRequest(const v1beta1::RegisterRequest& request) {
  std::string socket_path;
  const absl::Status valid =
      kdp::manager::ValidateRegisterRequest(request, kPluginsDir, &socket_path);
  CheckCode(valid, "ValidateRegisterRequest: undocumented code");
  if (!valid.ok()) return;
  const std::string prefix = std::string(kPluginsDir) + "/";
  const std::string_view name =
      std::string_view(socket_path).substr(socket_path.starts_with(prefix) ? prefix.size() : 0);
  if (!socket_path.starts_with(prefix) || name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    Fail("an accepted endpoint leaves the device-plugins directory", socket_path);
  }
  CheckSocketPath(socket_path, "an accepted endpoint is not a usable socket path");
}

void CheckPluginInfo(const pluginregistration::PluginInfo& info) {
  // The plugin manager substitutes the registration socket for an empty endpoint.
  const std::string endpoint =
      info.endpoint().empty() ? "/var/lib/kubelet/plugins_registry/x.sock" : info.endpoint();
  const std::vector<std::string> versions(info.supported_versions().begin(),
                                          info.supported_versions().end());

  static kdp::manager::DevicePluginWatcherHandler* const kDevicePlugins =
      new kdp::manager::DevicePluginWatcherHandler(/*registration=*/nullptr, /*deregister=*/{});
  const absl::Status device = kDevicePlugins->ValidatePlugin(info.name(), endpoint, versions);
  CheckCode(device, "DevicePluginWatcherHandler::ValidatePlugin: undocumented code");
  if (device.ok()) CheckSocketPath(endpoint, "a device plugin's accepted endpoint is unsafe");

  absl::StatusOr<std::string> service = kdp::manager::dra::ChooseDraService(versions);
  CheckCode(service.status(), "ChooseDraService: undocumented code");
  // One manager for the whole run: it starts a timer thread, and ValidatePlugin keeps no state.
  static kdp::manager::dra::DraPluginManager* const kDra =
      new kdp::manager::dra::DraPluginManager();
  const absl::Status dra = kDra->ValidatePlugin(info.name(), endpoint, versions);
  CheckCode(dra, "DraPluginManager::ValidatePlugin: undocumented code");
  if (dra.ok()) {
    if (!service.ok()) Fail("ValidatePlugin accepted versions ChooseDraService refuses", "");
    CheckSocketPath(endpoint, "a DRA driver's accepted endpoint is unsafe");
    if (info.name().empty() || info.name().find('/') != std::string::npos ||
        info.name().find("..") != std::string::npos) {
      Fail("an accepted DRA driver name is unfit for plugins/<driver>/", info.name());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool kQuiet = [] {
    kdp::log::SetMinLevel(kdp::log::Level::kError);  // ValidatePlugin logs every attempt
    google::protobuf::SetLogHandler(nullptr);        // and protobuf each non-UTF-8 string
    return true;
  }();
  (void)kQuiet;
  CheckPathSafety(std::string_view(reinterpret_cast<const char*>(data), size));

  v1beta1::RegisterRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size))) CheckRegisterRequest(request);
  pluginregistration::PluginInfo info;
  if (info.ParseFromArray(data, static_cast<int>(size))) CheckPluginInfo(info);
  return 0;
}
