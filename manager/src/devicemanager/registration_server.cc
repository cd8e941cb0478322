#include "manager/src/devicemanager/registration_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "common/resource_name.h"
#include "common/status_macros.h"
#include "common/unix_socket.h"
#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {

absl::Status ValidateRegisterRequest(const v1beta1::RegisterRequest& request,
                                     const std::string& plugins_dir, std::string* socket_path) {
  if (request.version() != "v1beta1") {
    return absl::InvalidArgumentError(errors::UnsupportedVersion(request.version()));
  }
  KDP_RETURN_IF_ERROR(ValidateExtendedResourceName(request.resource_name()));
  const std::string& endpoint = request.endpoint();
  // Any file name is fine ("=" and ":" included, no ".sock" suffix required), but it must name
  // a file directly inside the directory: the kubelet joins it to DevicePluginPath (api.proto
  // "PATH = path.Join(DevicePluginPath, endpoint)"), and "../x" must not leave it.
  KDP_RETURN_IF_ERROR(ValidateFileName("endpoint", endpoint, plugins_dir));
  std::string path = absl::StrCat(plugins_dir, "/", endpoint);
  if (path.size() > kMaxUnixSocketPath) {
    return absl::InvalidArgumentError(absl::StrCat("invalid endpoint ", GoQuote(endpoint),
                                                   ": the socket path ", path, " is longer than ",
                                                   kMaxUnixSocketPath, " bytes"));
  }
  *socket_path = std::move(path);
  return absl::OkStatus();
}

RegistrationServer::RegistrationServer(std::string plugins_dir, RegistrationHandler* handler,
                                       metrics::CounterFamily* registrations,
                                       DevicePluginObserver* observer)
    : plugins_dir_(std::move(plugins_dir)),
      socket_path_(absl::StrCat(plugins_dir_, "/kubelet.sock")),
      handler_(handler),
      registrations_(registrations),
      observer_(observer) {}

bool RegistrationServer::serving() const {
  absl::MutexLock lock(&mu_);
  return server_ != nullptr;
}

RegistrationServer::~RegistrationServer() { Stop(); }

absl::Status RegistrationServer::Start() {
  KDP_RETURN_IF_ERROR(MakeDirectories(plugins_dir_, 0750));
  // Removing the plugins' sockets (and re-creating kubelet.sock) is how plugins learn that the
  // kubelet restarted and must register again.
  KDP_ASSIGN_OR_RETURN(int removed, RemoveSocketsIn(plugins_dir_));
  if (removed > 0) KDP_LOG_INFO("Removed stale sockets", "dir", plugins_dir_, "count", removed);
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<grpc::Server> server,
                       ServeOnUnixSocket(socket_path_, this, kMaxHandlerThreads));
  absl::MutexLock lock(&mu_);
  server_ = std::move(server);
  KDP_LOG_INFO("Device plugin registration server listening", "socket", socket_path_);
  return absl::OkStatus();
}

void RegistrationServer::Stop() {
  std::unique_ptr<grpc::Server> server;
  {
    absl::MutexLock lock(&mu_);
    server = std::move(server_);
  }
  if (server == nullptr) return;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server.reset();
  (void)RemoveSocketIfPresent(socket_path_);
}

grpc::Status RegistrationServer::Register(grpc::ServerContext*,
                                          const v1beta1::RegisterRequest* request,
                                          v1beta1::Empty*) {
  if (registrations_ != nullptr) registrations_->WithLabels({request->resource_name()})->Inc();
  KDP_LOG_INFO("Got registration request from device plugin", "resourceName",
               request->resource_name(), "endpoint", request->endpoint(), "version",
               request->version());
  std::string socket_path;
  absl::Status status = ValidateRegisterRequest(*request, plugins_dir_, &socket_path);
  if (status.ok()) status = handler_->RegisterPlugin(request->resource_name(), socket_path);
  if (!status.ok()) {
    KDP_LOG_ERROR("Registration failed", "resourceName", request->resource_name(), "endpoint",
                  request->endpoint(), "err", status.message());
  }
  if (observer_ != nullptr) observer_->Registered(*request, status);
  return ToGrpcStatus(status);
}

}  // namespace kdp::manager
