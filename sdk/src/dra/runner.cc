// DraRunner::Create and RunDraDriverUntilSignal: the only parts of the DRA runner that build the
// real API client (sdk/src/kube/kube_client.h). Kept apart from dra_runner_impl.cc so that code
// using an injected client (tests) does not link the HTTP client.
#include <signal.h>

#include <cstring>
#include <utility>

#include "common/logging.h"
#include "common/status_macros.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/runner_impl.h"
#include "sdk/src/kube/kube_client.h"
#include "sdk/src/runtime/run_until_signal.h"

namespace kdp {

absl::StatusOr<std::unique_ptr<DraRunner>> DraRunner::Create(DraRunnerOptions options,
                                                             std::unique_ptr<DraDriver> driver) {
  if (driver == nullptr) return absl::InvalidArgumentError("null DraDriver");
  // Validate the options before touching the kubeconfig: their errors are the likelier ones.
  KDP_ASSIGN_OR_RETURN(
      options, internal::ResolveDraRunnerOptions(std::move(options), driver->driver_name()));
  KDP_ASSIGN_OR_RETURN(internal::KubeConfig config,
                       internal::ResolveKubeConfig(options.kubeconfig));
  config.timeout = options.api_timeout;
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<internal::KubeClient> client,
                       internal::KubeClient::Create(std::move(config)));
  return internal::CreateDraRunnerWithClient(
      std::move(options), std::move(driver),
      std::shared_ptr<internal::KubeClient>(std::move(client)));
}

int RunDraDriverUntilSignal(DraRunnerOptions options, std::unique_ptr<DraDriver> driver) {
  return internal::RunUntilSignal(
      [&] { return DraRunner::Create(std::move(options), std::move(driver)); }, "DRA driver");
}

}  // namespace kdp
