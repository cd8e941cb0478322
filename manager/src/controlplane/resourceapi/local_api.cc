#include "manager/src/controlplane/resourceapi/local_api.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/controlplane/resourceapi/kubeconfig.h"

namespace kdp::manager::resourceapi {

absl::StatusOr<std::unique_ptr<LocalApi>> LocalApi::Start(ObjectStore* store,
                                                          LocalApiOptions options) {
  KDP_ASSIGN_OR_RETURN(std::string dir, EnsureCredentialsDirectory(options.kubelet_root));
  KDP_ASSIGN_OR_RETURN(ServingCertificates certificates,
                       EnsureServingCertificates(dir, options.certificates));
  // The previous run's port and token when there was one: clients read the kubeconfig once (as
  // client-go does) and keep talking to the restarted manager as to a restarted API server.
  const std::optional<KubeconfigCredentials> previous =
      ReadKubeconfigCredentials(options.kubelet_root);
  std::string token;
  if (previous.has_value()) {
    token = previous->token;
  } else {
    KDP_ASSIGN_OR_RETURN(token, GenerateBearerToken());
  }
  const int port = options.port != 0 ? options.port : (previous.has_value() ? previous->port : 0);
  auto new_server = [&](int server_port) {
    ResourceApiServerOptions server_options = options.server;
    server_options.port = server_port;
    server_options.token = token;
    server_options.tls = certificates;
    return std::make_unique<ResourceApiServer>(store, std::move(server_options));
  };
  std::unique_ptr<ResourceApiServer> server = new_server(port);
  absl::Status started = server->Start();
  if (!started.ok() && options.port == 0 && port != 0) {
    KDP_LOG_WARNING(
        "The resource API's previous port is taken; serving on a new one (running "
        "DRA drivers must be restarted to read the new kubeconfig)",
        "port", port);
    server = new_server(0);
    started = server->Start();
  }
  KDP_RETURN_IF_ERROR(started);
  absl::StatusOr<std::string> kubeconfig =
      WriteKubeconfig(options.kubelet_root, server->port(), certificates.ca_pem, token);
  if (!kubeconfig.ok()) {
    server->Stop();
    return kubeconfig.status();
  }
  std::unique_ptr<LocalApi> api(new LocalApi(std::move(options), std::move(dir), std::move(token),
                                             std::move(certificates), std::move(server),
                                             *std::move(kubeconfig)));
  LocalApi* raw = api.get();
  api->renewal_.Start(api->options_.renewal_check_period, [raw] {
    if (absl::Status renewed = raw->RenewCertificates(); !renewed.ok()) {
      KDP_LOG_ERROR("Cannot renew the local API's certificate; retrying next period", "err",
                    renewed.ToString());
    }
  });
  return api;
}

LocalApi::LocalApi(LocalApiOptions options, std::string dir, std::string token,
                   ServingCertificates certificates, std::unique_ptr<ResourceApiServer> server,
                   std::string kubeconfig_path)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      token_(std::move(token)),
      server_(std::move(server)),
      kubeconfig_path_(std::move(kubeconfig_path)),
      ca_pem_(std::move(certificates.ca_pem)) {}

LocalApi::~LocalApi() { Stop(); }

void LocalApi::Stop() {
  renewal_.Stop();
  server_->Stop();
}

absl::Status LocalApi::RenewCertificates() {
  absl::MutexLock renewal(&renewal_mu_);
  KDP_ASSIGN_OR_RETURN(ServingCertificates certificates,
                       EnsureServingCertificates(dir_, options_.certificates));
  if (!certificates.cert_created && !certificates.ca_created) return absl::OkStatus();
  KDP_RETURN_IF_ERROR(server_->SetServingCertificates(certificates));
  if (certificates.ca_pem != ca_pem_) {
    KDP_RETURN_IF_ERROR(
        WriteKubeconfig(options_.kubelet_root, server_->port(), certificates.ca_pem, token_)
            .status());
    ca_pem_ = certificates.ca_pem;
  }
  KDP_LOG_INFO("Serving the renewed certificate of the local API", "notAfter",
               absl::FormatTime(absl::RFC3339_sec, certificates.not_after, absl::UTCTimeZone()));
  return absl::OkStatus();
}

}  // namespace kdp::manager::resourceapi
