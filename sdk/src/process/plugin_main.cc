// kdp::RunPlugins: a device plugin's main(). Kept apart from plugin_runner.cc so that a program
// with its own main() does not link the flag parser.
#include <utility>

#include "CLI/CLI.hpp"
#include "kdp/health_file.h"
#include "kdp/plugin_runner.h"
#include "sdk/src/runtime/program_flags.h"
#include "sdk/src/topology/hwloc_plugins.h"

namespace kdp {

int RunPlugins(int argc, char** argv, PluginMain main) {
  internal::LimitMallocArenas();  // before any thread: they all share one arena
  internal::ProgramFlags program(main.name, main.description);
  RunnerOptions options;
  CLI::App& app = program.app();
  app.add_option("--kubelet-root", options.kubelet_root,
                 "kubelet root directory; sockets live in <dir>/device-plugins/")
      ->capture_default_str();
  app.add_option("--socket-suffix", options.socket_suffix,
                 "added to the socket name (<resource>-<suffix>.sock), e.g. the pod name, so the "
                 "old and new pods of a rolling update serve on sockets of their own");
  std::string health_file;
  app.add_option("--health-file", health_file,
                 "file listing unhealthy device IDs, one per line ('#' starts a comment; a GPU's "
                 "ID covers its replicas); re-read every 100 ms; missing file: all healthy");
  options.metrics_address = main.metrics_address;
  if (std::optional<int> exit = program.Parse(
          argc, argv, main.add_flags, &options.metrics_address,
          "serve Prometheus metrics at http://ADDRESS/metrics and a health check at /healthz, "
          "/readyz and /livez (failing while a plugin is not registered with the kubelet or its "
          "device discovery fails): host:port, port 0 for any free port, \"\" to disable. "
          "Without this flag a default port in use only logs a warning");
      exit.has_value()) {
    return *exit;
  }
  // Given explicitly, the address must be served; the default may be taken by another plugin.
  options.metrics_required = program.metrics_address_given();

  // Before the vendor's factory: threads it starts (a health watcher) inherit the mask.
  internal::BlockTerminationSignals();
  internal::ConfigureHwlocPlugins();
  std::vector<std::unique_ptr<DevicePlugin>> plugins;
  if ((main.plugin == nullptr) == (main.plugins == nullptr)) {
    internal::LogFactoryError(
        main.name, absl::InvalidArgumentError("PluginMain: set exactly one of plugin and plugins"));
    return 1;
  }
  if (main.plugin != nullptr) {
    absl::StatusOr<std::unique_ptr<DevicePlugin>> plugin = main.plugin();
    if (!plugin.ok()) {
      internal::LogFactoryError(main.name, plugin.status());
      return 1;
    }
    plugins.push_back(*std::move(plugin));
  } else {
    absl::StatusOr<std::vector<std::unique_ptr<DevicePlugin>>> made = main.plugins();
    if (!made.ok()) {
      internal::LogFactoryError(main.name, made.status());
      return 1;
    }
    plugins = *std::move(made);
  }
  // Applied before the runner starts, so the first device lists carry it. The watchers hold the
  // plugins' device state, not the plugins: they may outlive them.
  std::vector<std::unique_ptr<HealthFileWatcher>> watchers;
  for (const std::unique_ptr<DevicePlugin>& plugin : plugins) {
    if (health_file.empty() || plugin == nullptr) break;
    absl::StatusOr<std::unique_ptr<HealthFileWatcher>> watcher =
        HealthFileWatcher::Watch(health_file, *plugin);
    if (!watcher.ok()) {
      internal::LogFactoryError(main.name, watcher.status());
      return 1;
    }
    watchers.push_back(*std::move(watcher));
  }
  // Destroying the plugins, before this returns, stops what they started.
  return RunPluginsUntilSignal(std::move(options), std::move(plugins));
}

}  // namespace kdp
