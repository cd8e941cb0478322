// kdp-gpu-plugin: flags only. The plugin itself is GpuPlugin (gpu_plugin.h); serving, registering
// with the kubelet and shutting down on SIGTERM/SIGINT are the SDK's RunPluginsUntilSignal().
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "examples/gpu-plugin/gpu_plugin.h"
#include "kdp/logging.h"
#include "kdp/plugin_runner.h"

int main(int argc, char** argv) {
  kdp::RunnerOptions runner_options;
  kdp::example::GpuPluginOptions options;
  std::string vendor;

  CLI::App app{
      "kdp-gpu-plugin: advertises the GPUs (PCI class 0x0300/0x0302) of this node to the "
      "kubelet as a device plugin, with their NUMA nodes."};
  app.add_option("--kubelet-root", runner_options.kubelet_root,
                 "kubelet root directory; sockets live in <dir>/device-plugins/")
      ->capture_default_str();
  app.add_option("--topology-xml", options.topology_xml,
                 "discover GPUs from this hwloc XML file (lstopo --of xml) instead of the host");
  app.add_option("--resource-name", options.resource_name,
                 "extended resource to advertise; its domain is also the CDI vendor")
      ->capture_default_str();
  app.add_option("--vendor", vendor,
                 "only GPUs of this PCI vendor ID, in hex with or without 0x (e.g. 10de); "
                 "default: any vendor");
  app.add_option("--replicas", options.replicas,
                 "devices advertised per GPU for time-slicing; above 1, IDs are <gpu>::<k>")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--health-file", options.health_file,
                 "file listing unhealthy GPU IDs, one per line ('#' starts a comment); re-read "
                 "every 100 ms; missing file: all healthy");
  std::string allocation_policy = "link-best-fit";
  app.add_option("--allocation-policy", allocation_policy,
                 "how GetPreferredAllocation chooses: link-best-fit (the best-connected GPUs by "
                 "NVLink and PCIe locality, leaving the best-connected rest), numa-packed (fewest "
                 "NUMA nodes first) or spread (across NUMA nodes)")
      ->capture_default_str()
      ->check(CLI::IsMember({"link-best-fit", "numa-packed", "spread"}));
  app.add_option("--socket-suffix", runner_options.socket_suffix,
                 "added to the socket name (<resource>-<suffix>.sock), e.g. the pod name, so the "
                 "old and new pods of a rolling update serve on sockets of their own");
  runner_options.metrics_address = "127.0.0.1:9471";
  CLI::Option* metrics_flag =
      app.add_option("--metrics-address", runner_options.metrics_address,
                     "serve Prometheus metrics at http://ADDRESS/metrics and a health check at "
                     "/healthz, /readyz and /livez (failing while the plugin is not registered "
                     "with the kubelet or its GPU discovery fails): host:port, port 0 for any "
                     "free port, \"\" to disable. Without this flag a default port in use only "
                     "logs a warning")
          ->capture_default_str();
  kdp::LogOptions log_options;
  app.add_option("--log-level", log_options.level,
                 "lowest level logged: debug, info, warning or error (default: $KDP_LOG_LEVEL, "
                 "else info)")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  app.add_option("--log-format", log_options.format,
                 "log line format: text (klog-like) or json (one JSON object per line; default: "
                 "$KDP_LOG_FORMAT, else text)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("-v,--verbosity", log_options.verbosity,
                 "log verbosity: 0 logs at --log-level, 1 or more logs debug lines too")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Prints the help or the error; any bad usage exits 2, like kdpctl.
    return app.exit(error) == 0 ? 0 : 2;
  }
  // Given explicitly, the address must be served; the default may be taken by another plugin.
  runner_options.metrics_required = metrics_flag->count() > 0;
  if (absl::Status logging = kdp::SetLogOptions(log_options); !logging.ok()) {
    std::fprintf(stderr, "%s\n", logging.ToString().c_str());
    return 2;
  }

  if (!vendor.empty()) {
    absl::StatusOr<uint16_t> vendor_id = kdp::example::ParseVendorId(vendor);
    if (!vendor_id.ok()) {
      std::fprintf(stderr, "--vendor: %s\n", vendor_id.status().ToString().c_str());
      return 2;
    }
    options.vendor_id = *vendor_id;
  }
  // Checked by CLI11 above.
  options.allocation_policy = kdp::ParseAllocationPolicy(allocation_policy).value();
  // hwloc dlopen()s every plugin it ships before loading a topology: libxml2 with ICU, OpenCL
  // and X11, several milliseconds of the start-up and those libraries' pages, for OS devices
  // this program never reads and an XML parser its builtin one replaces. hwloc_pci stays: on a
  // live host the PCI devices come from it (scripts/deps installs it). A user's setting wins.
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml", /*overwrite=*/0);

  absl::StatusOr<std::unique_ptr<kdp::example::GpuPlugin>> plugin =
      kdp::example::GpuPlugin::Create(std::move(options));
  if (!plugin.ok()) {
    std::fprintf(stderr, "kdp-gpu-plugin: %s\n", plugin.status().ToString().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<kdp::DevicePlugin>> plugins;
  plugins.push_back(*std::move(plugin));
  // Destroying the plugin, before this returns, stops its health watcher.
  return kdp::RunPluginsUntilSignal(std::move(runner_options), std::move(plugins));
}
