// kdp-gpu-plugin: GpuPlugin (gpu_plugin.h) with its flags, run by the SDK. kdp::RunPlugins() owns
// the process: the SDK's flags ("--kubelet-root", "--socket-suffix", "--health-file",
// "--metrics-address", the log flags, "--help", "--version"), the signal mask, serving, registering
// with the kubelet and a clean shutdown on SIGTERM/SIGINT.
#include <memory>

#include "examples/gpu-plugin/gpu_plugin.h"
#include "kdp/plugin_runner.h"

int main(int argc, char** argv) {
  kdp::example::GpuPluginOptions options;
  return kdp::RunPlugins(
      argc, argv,
      {.name = "kdp-gpu-plugin",
       .description = "kdp-gpu-plugin: advertises this node's GPUs with their NUMA nodes",
       .metrics_address = "127.0.0.1:9471",
       .add_flags = [&](kdp::Flags& flags) { kdp::example::AddGpuPluginFlags(flags, options); },
       .plugin = [&] { return std::make_unique<kdp::example::GpuPlugin>(options); }});
}
