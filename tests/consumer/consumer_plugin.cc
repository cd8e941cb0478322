// kdp-consumer-plugin: a device plugin built outside kdp's tree against the installed SDK, the way
// a vendor's project consumes it (find_package(kdp) or pkg-config kdp-sdk). It serves
// "consumer.kdp.dev/widget" with four fake widgets; the package tests run it against kdp-manager
// and admit a pod that asks for two.
//
// Usage: kdp-consumer-plugin --kubelet-root DIR
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kdp/device_plugin.h"
#include "kdp/plugin_runner.h"

namespace {

class Widgets : public kdp::DevicePlugin {
 public:
  Widgets() : DevicePlugin("consumer.kdp.dev/widget") {}

  absl::StatusOr<std::vector<kdp::Device>> Discover() override {
    std::vector<kdp::Device> devices;
    for (int i = 0; i < 4; ++i) {
      kdp::Device device;
      device.id = "widget" + std::to_string(i);
      device.numa_nodes = {i / 2};
      device.envs = {{"WIDGET_" + std::to_string(i), "ready"}};
      devices.push_back(std::move(device));
    }
    return devices;
  }
};

}  // namespace

int main(int argc, char** argv) {
  kdp::RunnerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--kubelet-root" && i + 1 < argc) {
      options.kubelet_root = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s --kubelet-root DIR\n", argv[0]);
      return 2;
    }
  }
  std::vector<std::unique_ptr<kdp::DevicePlugin>> plugins;
  plugins.push_back(std::make_unique<Widgets>());
  return kdp::RunPluginsUntilSignal(std::move(options), std::move(plugins));
}
