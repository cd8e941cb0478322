#include "manager/src/pluginmanager/operation_executor.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "manager/src/pluginmanager/grpc_error.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace kdp::manager::pluginmanager {
namespace {

using ::pluginregistration::Registration;

constexpr char kPrefix[] = "RegisterPlugin error -- ";

std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

// One connection for one registration attempt, as the kubelet's dial(): the same channel
// arguments as DialUnixSocket (a private subchannel pool, so a socket re-created by a new plugin
// process never reaches the old one; no proxy), plus a short reconnect backoff, since the socket
// file appears at bind(), possibly a moment before the plugin listens.
std::shared_ptr<grpc::Channel> Dial(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel(UnixTarget(socket_path), grpc::InsecureChannelCredentials(),
                                   args);
}

// Blocks until the channel is connected (grpc.WithBlock), the timeout passes or `cancelled`.
bool WaitConnected(grpc::Channel& channel, absl::Duration timeout,
                   const std::atomic<bool>& cancelled) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!cancelled.load()) {
    const absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(50));
    if (channel.WaitForConnected(absl::ToChronoTime(slice))) return true;
    if (absl::Now() >= deadline) return false;
  }
  return false;
}

// The kubelet's notifyPlugin: OK only when `registered` and the call succeeded; otherwise the
// error text (with the RPC's error appended when the call failed too).
absl::Status Notify(Registration::Stub& stub, bool registered, const std::string& error,
                    absl::Duration timeout, absl::StatusCode code) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(registered);
  status.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  grpc::Status sent = stub.NotifyRegistrationStatus(&context, status, &response);
  if (!sent.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(sent.error_code()),
                        absl::StrCat(error, ": ", GoGrpcErrorText(sent)));
  }
  if (!error.empty()) return absl::Status(code, error);
  return absl::OkStatus();
}

// A failure the plugin was told about, or could not be told about (the kubelet's "failed to send
// error at socket" wrapping).
absl::Status Refuse(Registration::Stub& stub, const std::string& socket_path,
                    const std::string& message, absl::StatusCode code,
                    const RegistrationTimeouts& timeouts) {
  absl::Status notified = Notify(stub, false, message, timeouts.notify, code);
  if (notified.code() == code && notified.message() == message) return notified;
  return absl::Status(notified.code(), absl::StrCat(kPrefix, "failed to send error at socket ",
                                                    socket_path, ", err: ", notified.message()));
}

}  // namespace

std::string NoHandlerMessage(const std::string& type, const std::string& socket_path,
                             const std::map<std::string, PluginHandler*>& handlers) {
  std::vector<std::string> types;
  for (const auto& entry : handlers) types.push_back(entry.first);
  return absl::StrCat(kPrefix, "no handler registered for plugin type: ", type, " at socket ",
                      socket_path, ": kdp-manager does not support plugin type \"", type,
                      "\" (supported: ", types.empty() ? "none" : absl::StrJoin(types, ", "), ")");
}

absl::StatusOr<RegistrationOutcome> RegisterPluginAt(
    const std::string& socket_path, const std::map<std::string, PluginHandler*>& handlers,
    const RegistrationTimeouts& timeouts, const std::atomic<bool>& cancelled) {
  std::shared_ptr<grpc::Channel> channel = Dial(socket_path);
  if (!WaitConnected(*channel, timeouts.dial, cancelled)) {
    return absl::UnavailableError(absl::StrCat(kPrefix, "dial failed at socket ", socket_path,
                                               ", err: failed to dial socket ", socket_path,
                                               ", err: context deadline exceeded"));
  }
  std::unique_ptr<Registration::Stub> stub = Registration::NewStub(channel);

  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    context.set_deadline(Deadline(timeouts.get_info));
    grpc::Status got = stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    if (!got.ok()) {
      return absl::Status(
          static_cast<absl::StatusCode>(got.error_code()),
          absl::StrCat(kPrefix, "failed to get plugin info using RPC GetInfo at socket ",
                       socket_path, ", err: ", GoGrpcErrorText(got)));
    }
  }

  auto handler_it = handlers.find(info.type());
  if (handler_it == handlers.end()) {
    return Refuse(*stub, socket_path, NoHandlerMessage(info.type(), socket_path, handlers),
                  absl::StatusCode::kNotFound, timeouts);
  }
  PluginHandler* handler = handler_it->second;
  RegisteredPlugin plugin{
      .type = info.type(),
      .name = info.name(),
      .endpoint = info.endpoint().empty() ? socket_path : info.endpoint(),
      .socket_path = socket_path,
      .versions = {info.supported_versions().begin(), info.supported_versions().end()},
      .registered_at = absl::InfinitePast()};

  if (absl::Status valid = handler->ValidatePlugin(plugin.name, plugin.endpoint, plugin.versions);
      !valid.ok()) {
    return Refuse(*stub, socket_path,
                  absl::StrCat(kPrefix, "plugin validation failed with err: ", valid.message()),
                  absl::StatusCode::kInvalidArgument, timeouts);
  }
  if (absl::Status registered =
          handler->RegisterPlugin(plugin.name, plugin.endpoint, plugin.versions);
      !registered.ok()) {
    return Refuse(
        *stub, socket_path,
        absl::StrCat(kPrefix, "plugin registration failed with err: ", registered.message()),
        registered.code(), timeouts);
  }
  plugin.registered_at = absl::Now();
  RegistrationOutcome outcome{.handler = handler, .plugin = std::move(plugin)};
  // Notified after RegisterPlugin, so Register always follows a successful Validate even when
  // the plugin cannot be told (the kubelet's order).
  if (absl::Status notified = Notify(*stub, true, "", timeouts.notify, absl::StatusCode::kOk);
      !notified.ok()) {
    outcome.notify_error = absl::Status(
        notified.code(), absl::StrCat(kPrefix, "failed to send registration status at socket ",
                                      socket_path, ", err: ", notified.message()));
  }
  return outcome;
}

}  // namespace kdp::manager::pluginmanager
