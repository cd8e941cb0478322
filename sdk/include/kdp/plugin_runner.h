// kdp::PluginRunner serves one or more DevicePlugins the way the kubelet expects: each on its own
// unix socket in <kubelet-root>/device-plugins/, serving before it registers on kubelet.sock, a
// full device list first on every ListAndWatch stream, and serving and registering again (with
// backoff) whenever the kubelet restarts: kubelet.sock re-created, or the plugin's own socket
// removed. A socket replaced by another instance of the plugin (same name, same directory) is left
// to it: this runner stops registering instead of fighting over the path. (gRPC unlinks the path
// when this runner's server finally stops, so that instance then serves again once, by itself;
// RunnerOptions::socket_suffix avoids sharing a path at all.)
// RunPlugins() is a plugin's whole main() (flags, signals, runner); RunPluginsUntilSignal() the
// same for a main() that parses its own flags. With RunnerOptions::metrics_address set,
// it also serves Prometheus metrics (kdp_device_plugin_*) at /metrics and a health check at
// /healthz (also /readyz and /livez), which fails while a plugin is not registered with the
// running kubelet or its last Discover() (at start, by Publish()) failed: what a DaemonSet's
// liveness probe wants to see.
//
// Thread-safety: thread-safe. Stop() may be called more than once, concurrently, or without
// Start().
#ifndef KDP_PLUGIN_RUNNER_H_
#define KDP_PLUGIN_RUNNER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kdp/device_plugin.h"
#include "kdp/flags.h"

namespace kdp {

struct RunnerOptions {
  // The kubelet's root directory; sockets live in <kubelet_root>/device-plugins/.
  std::string kubelet_root = "/var/lib/kubelet";
  // Deadline of one Register call on kubelet.sock (dial included).
  absl::Duration register_timeout = absl::Seconds(10);
  // First and longest wait between failed registrations (doubling in between).
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
  // How long Stop() lets open calls and streams finish before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  // Added to every socket name (SocketNameFor), e.g. the pod's name, so that the old and the new
  // instance of a DaemonSet rolling update (maxSurge) serve on sockets of their own and the
  // manager keeps both endpoints; empty: none. Letters, digits, '.', '_', '-'; at most 64.
  std::string socket_suffix = {};
  // Serves http://<metrics_address>/metrics (Prometheus text format), /healthz, /readyz and
  // /livez: "host:port",
  // "[ipv6]:port", port 0 for any free port (see metrics_port()); empty: nothing is served.
  // Bind a loopback address unless the metrics must be scraped from another host.
  std::string metrics_address = {};
  // Whether Start() fails when metrics_address cannot be bound (the port is taken). False: Start()
  // logs a warning and the plugins run without metrics, for a default address that another
  // process may hold. A malformed address is always an error (Create()).
  bool metrics_required = true;
};

// The socket file name a plugin serves on: the resource name with '/' replaced by '_', then
// "-<suffix>" when a suffix is given, then ".sock" (e.g. "example.com_gpu.sock",
// "example.com_gpu-gpu-plugin-x7k2p.sock").
std::string SocketNameFor(const std::string& resource_name, const std::string& suffix = "");

namespace internal {
class RunnerImpl;
}  // namespace internal

class PluginRunner {
 public:
  // Validates the options and every plugin (resource names with the kubelet's rules, no
  // resource served twice, a well-formed metrics address): INVALID_ARGUMENT naming the rule
  // broken. Does not start anything.
  static absl::StatusOr<std::unique_ptr<PluginRunner>> Create(
      RunnerOptions options, std::vector<std::unique_ptr<DevicePlugin>> plugins);
  ~PluginRunner();  // Stops.

  PluginRunner(const PluginRunner&) = delete;
  PluginRunner& operator=(const PluginRunner&) = delete;

  // Serves the metrics address (if any), discovers each plugin's devices, serves every plugin
  // socket and starts registering in the background (a kubelet that is not there yet is waited
  // for, not an error). Errors: UNAVAILABLE naming the metrics address when it cannot be bound
  // and metrics_required; Discover()'s error; INTERNAL when a socket cannot be served.
  // FAILED_PRECONDITION when called twice.
  [[nodiscard]] absl::Status Start();

  // Stops registering, cancels the ListAndWatch streams, stops the servers and removes the
  // plugin sockets. Idempotent.
  void Stop();

  // Number of successful Register calls so far, over all plugins (re-registrations included).
  int registrations() const;

  // Blocks until `count` registrations have succeeded or `timeout` passes; true on success.
  bool WaitForRegistrations(int count, absl::Duration timeout) const;

  // The TCP port serving the metrics (the kernel's choice when metrics_address has port 0);
  // 0 before Start(), after Stop(), and when no metrics are served.
  int metrics_port() const;

 private:
  explicit PluginRunner(std::unique_ptr<internal::RunnerImpl> impl);
  std::unique_ptr<internal::RunnerImpl> impl_;
};

// For a plugin's main(): blocks SIGTERM and SIGINT, starts a runner, waits for one of them, stops
// and returns the process exit status (0 after a clean stop, 1 when the runner failed to start,
// with the reason logged).
[[nodiscard]] int RunPluginsUntilSignal(RunnerOptions options,
                                        std::vector<std::unique_ptr<DevicePlugin>> plugins);

// What RunPlugins() needs of the vendor. Set exactly one of `plugin` and `plugins`.
struct PluginMain {
  // The program's name: --version prints "<name> <version>"; logs name it.
  std::string name = {};
  // The first paragraph of --help: what the plugin advertises.
  std::string description = {};
  // --metrics-address's default; empty: no metrics unless the flag is given.
  std::string metrics_address = {};
  // Adds the vendor's own flags; may be null.
  std::function<void(Flags&)> add_flags = nullptr;
  // Builds the plugin once the flags are parsed (the vendor's flag variables hold their values)
  // and SIGTERM/SIGINT are blocked (threads it starts inherit the mask). Its error ends the
  // program with status 1, logged.
  std::function<absl::StatusOr<std::unique_ptr<DevicePlugin>>()> plugin = nullptr;
  // The same for a program serving several resources.
  std::function<absl::StatusOr<std::vector<std::unique_ptr<DevicePlugin>>>()> plugins = nullptr;
};

// A plugin's main(): `return kdp::RunPlugins(argc, argv, {...});`. Parses the flags the SDK owns
// (--kubelet-root, --socket-suffix, --health-file (kdp::HealthFileWatcher), --metrics-address,
// --log-level, --log-format, -v, --help, --version) and the vendor's, blocks SIGTERM and SIGINT,
// runs the factory, watches the health file, then serves as RunPluginsUntilSignal(). Returns the
// process exit status: 0 after --help, --version or a clean stop; 1 when the factory, the health
// file or the runner fails (logged); 2 for bad usage (printed, naming the flag).
[[nodiscard]] int RunPlugins(int argc, char** argv, PluginMain main);

}  // namespace kdp

#endif  // KDP_PLUGIN_RUNNER_H_
