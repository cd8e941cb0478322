// kdp-dra-driver: the GPU DRA driver (gpu_dra_driver.h) with its flags, run by the SDK.
// kdp::RunDraDriver() owns the process: the SDK's flags ("--kubelet-root", "--node-name",
// "--kubeconfig", "--cdi-root", "--instance-suffix", "--health-file", "--metrics-address", the
// log flags, "--help", "--version"), the signal mask, serving the DRA service, registering
// through plugins_registry, publishing ResourceSlices and a clean shutdown on SIGTERM/SIGINT.
#include "examples/dra-driver/gpu_dra_driver.h"
#include "kdp/dra_runner.h"

int main(int argc, char** argv) {
  kdp::example::GpuDraDriverOptions options;
  return kdp::RunDraDriver(
      argc, argv,
      {.name = "kdp-dra-driver",
       .description = "kdp-dra-driver: publishes this node's GPUs as DRA devices and prepares them",
       .metrics_address = "127.0.0.1:9472",
       .add_flags =
           [&](kdp::Flags& flags) {
             options.gpus.AddFlags(flags);  // --topology-xml, --vendor
             flags.AddString("--gpu-memory", &options.gpu_memory, "memory capacity of each GPU");
             flags.AddChoice("--layout", &options.layout, {"gpus", "partitions", "shareable"},
                             "what each GPU is published as");
           },
       .driver =
           [&](const kdp::DraRunnerOptions& runner) {
             options.cdi_root = runner.cdi_root;  // The SDK owns --cdi-root and --node-name.
             options.node_name = runner.node_name;
             return kdp::example::NewGpuDraDriver(options);
           }});
}
