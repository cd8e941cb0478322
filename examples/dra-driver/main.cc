// kdp-dra-driver: flags only. The driver itself is GpuDraDriver (gpu_dra_driver.h); serving the
// DRA service, registering through plugins_registry, publishing ResourceSlices and shutting down
// on SIGTERM/SIGINT are the SDK's RunDraDriverUntilSignal().
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "examples/dra-driver/gpu_dra_driver.h"
#include "kdp/dra_driver.h"
#include "kdp/logging.h"

int main(int argc, char** argv) {
  kdp::DraRunnerOptions runner_options;
  kdp::example::GpuDraDriverOptions options;
  std::string vendor;

  CLI::App app{
      "kdp-dra-driver: publishes the GPUs (PCI class 0x0300/0x0302) of this node as DRA devices "
      "of driver gpu.example.com and prepares ResourceClaims with one CDI spec per claim."};
  app.add_option("--kubelet-root", runner_options.kubelet_root,
                 "kubelet root directory: sockets in <dir>/plugins/gpu.example.com/ and "
                 "<dir>/plugins_registry/")
      ->capture_default_str();
  app.add_option("--cdi-root", options.cdi_root,
                 "directory for the per-claim CDI specs (the runtime's dynamic spec directory)")
      ->capture_default_str();
  app.add_option("--node-name", runner_options.node_name,
                 "the node this driver runs on (ResourceSlice nodeName and pool name); default: "
                 "$NODE_NAME");
  app.add_option("--kubeconfig", runner_options.kubeconfig,
                 "kubeconfig of the API server (kdp-manager writes <kubelet-root>/kdp/kubeconfig); "
                 "default: $KUBECONFIG, then the in-cluster service account");
  app.add_option("--topology-xml", options.topology_xml,
                 "discover GPUs from this hwloc XML file (lstopo --of xml) instead of the host");
  app.add_option("--vendor", vendor,
                 "only GPUs of this PCI vendor ID, in hex with or without 0x (e.g. 10de); "
                 "default: any vendor");
  app.add_option("--gpu-memory", options.gpu_memory,
                 "the memory capacity published for each GPU (a quantity)")
      ->capture_default_str();
  app.add_option("--health-file", options.health_file,
                 "file listing unhealthy GPU IDs (gpu0, gpu1, ...), one per line ('#' starts a "
                 "comment); re-read every 100 ms; missing file: all healthy. Reported on the DRA "
                 "health stream (DRAResourceHealth)");
  app.add_option("--instance-suffix", runner_options.instance_suffix,
                 "rolling update (kubelet >= 1.33): a per-instance suffix such as the pod UID, for "
                 "socket names of its own");
  runner_options.metrics_address = "127.0.0.1:9472";
  CLI::Option* metrics_flag =
      app.add_option(
             "--metrics-address", runner_options.metrics_address,
             "serve Prometheus metrics at http://ADDRESS/metrics and health checks at "
             "/healthz and /readyz (failing while the kubelet has not registered the driver, or "
             "listing GPUs or publishing ResourceSlices fails) and /livez (the same without "
             "publishing): host:port, port 0 for any free "
             "port, \"\" to disable. Without this flag a default port in use only "
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
    return app.exit(error) == 0 ? 0 : 2;
  }
  // Given explicitly, the address must be served; the default may be taken by another plugin.
  runner_options.metrics_required = metrics_flag->count() > 0;
  if (absl::Status logging = kdp::SetLogOptions(log_options); !logging.ok()) {
    std::fprintf(stderr, "%s\n", logging.ToString().c_str());
    return 2;
  }
  if (runner_options.node_name.empty()) {
    if (const char* env = std::getenv("NODE_NAME"); env != nullptr) runner_options.node_name = env;
  }
  if (runner_options.node_name.empty()) {
    std::fprintf(stderr, "kdp-dra-driver: --node-name (or $NODE_NAME) is required\n");
    return 2;
  }
  options.node_name = runner_options.node_name;
  if (!vendor.empty()) {
    absl::StatusOr<uint16_t> vendor_id = kdp::example::ParseVendorId(vendor);
    if (!vendor_id.ok()) {
      std::fprintf(stderr, "--vendor: %s\n", vendor_id.status().ToString().c_str());
      return 2;
    }
    options.vendor_id = *vendor_id;
  }
  // hwloc dlopen()s every plugin it ships before loading a topology: libxml2 with ICU, OpenCL
  // and X11, several milliseconds of the start-up and those libraries' pages, for OS devices
  // this program never reads and an XML parser its builtin one replaces. hwloc_pci stays: on a
  // live host the PCI devices come from it (scripts/deps installs it). A user's setting wins.
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml", /*overwrite=*/0);

  absl::StatusOr<std::unique_ptr<kdp::example::GpuDraDriver>> driver =
      kdp::example::GpuDraDriver::Create(std::move(options));
  if (!driver.ok()) {
    std::fprintf(stderr, "kdp-dra-driver: %s\n", driver.status().ToString().c_str());
    return 1;
  }
  return kdp::RunDraDriverUntilSignal(std::move(runner_options), *std::move(driver));
}
