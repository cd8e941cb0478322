// kdp::RunDraDriver: a DRA driver's main(). Kept apart from dra_runner.cc so that a program with
// its own main() does not link the flag parser.
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "CLI/CLI.hpp"
#include "kdp/dra_runner.h"
#include "kdp/health_file.h"
#include "sdk/src/runtime/program_flags.h"
#include "sdk/src/topology/hwloc_plugins.h"

namespace kdp {

int RunDraDriver(int argc, char** argv, DraMain main) {
  internal::LimitMallocArenas();  // before any thread: they all share one arena
  internal::ProgramFlags program(main.name, main.description);
  DraRunnerOptions options;
  CLI::App& app = program.app();
  app.add_option("--kubelet-root", options.kubelet_root,
                 "kubelet root directory: sockets in <dir>/plugins/<driver>/ and "
                 "<dir>/plugins_registry/")
      ->capture_default_str();
  app.add_option("--node-name", options.node_name,
                 "the node this driver runs on (ResourceSlice nodeName and pool name); default: "
                 "$NODE_NAME");
  app.add_option("--kubeconfig", options.kubeconfig,
                 "kubeconfig of the API server (kdp-manager writes <kubelet-root>/kdp/kubeconfig); "
                 "default: $KUBECONFIG, then the in-cluster service account");
  app.add_option("--cdi-root", options.cdi_root,
                 "directory for the driver's CDI specs (the runtime's dynamic spec directory)")
      ->capture_default_str();
  app.add_option("--instance-suffix", options.instance_suffix,
                 "rolling update (kubelet >= 1.33): a per-instance suffix such as the pod UID, for "
                 "socket names of its own");
  std::string health_file;
  app.add_option("--health-file", health_file,
                 "file listing unhealthy device names, one per line ('#' starts a comment); "
                 "re-read every 100 ms; missing file: all healthy. Reported on the DRA health "
                 "stream (DRAResourceHealth)");
  options.metrics_address = main.metrics_address;
  if (std::optional<int> exit = program.Parse(
          argc, argv, main.add_flags, &options.metrics_address,
          "serve Prometheus metrics at http://ADDRESS/metrics and health checks at /healthz and "
          "/readyz (failing while the kubelet has not registered the driver, or listing devices "
          "or publishing ResourceSlices fails) and /livez (the same without publishing): "
          "host:port, port 0 for any free port, \"\" to disable. Without this flag a default "
          "port in use only logs a warning");
      exit.has_value()) {
    return *exit;
  }
  // Given explicitly, the address must be served; the default may be taken by another plugin.
  options.metrics_required = program.metrics_address_given();
  if (options.node_name.empty()) {
    if (const char* env = std::getenv("NODE_NAME"); env != nullptr) options.node_name = env;
  }
  if (options.node_name.empty()) {
    std::fprintf(stderr, "%s: --node-name (or $NODE_NAME) is required\n", main.name.c_str());
    return 2;
  }

  // Before the vendor's factory: threads it starts (a health watcher) inherit the mask.
  internal::BlockTerminationSignals();
  internal::ConfigureHwlocPlugins();
  if (main.driver == nullptr) {
    internal::LogFactoryError(main.name, absl::InvalidArgumentError("DraMain: no driver factory"));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<DraDriver>> driver = main.driver(options);
  if (!driver.ok()) {
    internal::LogFactoryError(main.name, driver.status());
    return 1;
  }
  // Applied before the runner starts, so the first health message carries it. The watcher holds
  // the driver's health table, not the driver: it may outlive it.
  std::unique_ptr<HealthFileWatcher> watcher;
  if (!health_file.empty() && *driver != nullptr) {
    absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watched =
        HealthFileWatcher::Watch(health_file, **driver);
    if (!watched.ok()) {
      internal::LogFactoryError(main.name, watched.status());
      return 1;
    }
    watcher = *std::move(watched);
  }
  // Destroying the driver, before this returns, stops what it started.
  return RunDraDriverUntilSignal(std::move(options), *std::move(driver));
}

}  // namespace kdp
