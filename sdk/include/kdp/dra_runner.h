// kdp::DraRunner serves a kdp::DraDriver (kdp/dra_driver.h) on one node, as Go's kubeletplugin
// helper does: the kubelet's DRAPlugin service (v1 and v1beta1) on the DRA socket, registration
// through the plugin watcher (plugins_registry), the ResourceClaim lookups, the serialization of
// Prepare and Unprepare, the checkpoint of prepared claims, the driver's pools as ResourceSlices
// (DraDriver::DiscoverPools(); by default one pool named after the node), the DRAResourceHealth
// streams, and metrics with health checks. RunDraDriver() is a driver's whole main() (flags,
// signals, runner); RunDraDriverUntilSignal() the same for a main() that parses its own flags.
//
// Thread-safety: DraRunner is thread-safe; Stop() may be called more than once, concurrently, or
// without Start(). RunDraDriver() and RunDraDriverUntilSignal() are for main()'s thread.
#ifndef KDP_DRA_RUNNER_H_
#define KDP_DRA_RUNNER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kdp/dra_driver.h"
#include "kdp/flags.h"

namespace kdp {

struct DraRunnerOptions {
  // The kubelet's root directory: sockets in <root>/plugins/<driver>/ and <root>/plugins_registry/.
  std::string kubelet_root = "/var/lib/kubelet";
  // The node this driver runs on (slices' nodeName and pool name); empty: $NODE_NAME.
  std::string node_name = {};
  // Kubeconfig file; empty: $KUBECONFIG, then the in-cluster service account.
  std::string kubeconfig = {};
  // Where the driver writes its CDI specs (the runtimes' dynamic spec directory, --cdi-root). The
  // runner does not use it: it is passed on to the factory of RunDraDriver().
  std::string cdi_root = "/var/run/cdi";
  // Timeout of each API server request.
  absl::Duration api_timeout = absl::Seconds(10);
  // Registration socket file name in plugins_registry; empty: "<driver>-reg.sock", or
  // "<driver>-<instance_suffix>-reg.sock". Exclusive with instance_suffix.
  std::string registration_socket_name = {};
  // Rolling update (kubelet ≥ 1.33): e.g. the pod UID, giving per-instance socket names
  // ("<driver>-<suffix>-reg.sock", "dra-<suffix>.sock") and a file lock (serialize.lock in the
  // plugin directory) so that two instances serialize too. Letters, digits, '.', '_', '-'; ≤ 64.
  std::string instance_suffix = {};
  // Checkpoint of prepared claims; empty: <kubelet_root>/plugins/<driver>/prepared-claims.json
  // (not checkpoint.json, the name Go drivers such as dra-example-driver use in that directory).
  std::string checkpoint_path = {};
  // Publish ResourceSlices (needs get on nodes and write access to resourceslices).
  bool publish_resource_slices = true;
  // First and longest wait between failed publication attempts (doubling in between).
  absl::Duration publish_initial_backoff = absl::Milliseconds(500);
  absl::Duration publish_max_backoff = absl::Seconds(30);
  // How long Stop() lets open calls finish before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  // Serve the DRAResourceHealth streams (v1 and v1alpha1) and advertise them at registration.
  bool serve_device_health = true;
  // Sent as each device's health_check_timeout_seconds (at least 1 s; rounded down to whole
  // seconds): the kubelet reads a device as Unknown when no report came for that long. The SDK
  // re-sends the full list every third of it (of 30 s at most: kubelets before 1.35 ignore the
  // field and use 30 s), so devices never go stale while the driver runs.
  absl::Duration health_check_timeout = absl::Seconds(30);
  // Serves http://<metrics_address>/metrics (Prometheus text format, kdp_dra_driver_*) and
  // /healthz and /readyz, which fail while the kubelet has not reported the driver registered,
  // or the last Discover() or ResourceSlice publication failed; /livez leaves out the publication
  // (an API server away is not cured by a restart): "host:port", "[ipv6]:port", port 0 for any
  // free port (see metrics_port()); empty: nothing is served. Bind a loopback address unless
  // the metrics must be scraped from another host.
  std::string metrics_address = {};
  // Whether Start() fails when metrics_address cannot be bound (the port is taken). False: Start()
  // logs a warning and the driver runs without metrics, for a default address that another
  // process may hold. A malformed address is always an error (Create()).
  bool metrics_required = true;
};

class DraRunner {
 public:
  // Validates the options and the driver name (INVALID_ARGUMENT naming the rule broken) and builds
  // the API client (its configuration error). Does not start anything.
  static absl::StatusOr<std::unique_ptr<DraRunner>> Create(DraRunnerOptions options,
                                                           std::unique_ptr<DraDriver> driver);
  ~DraRunner();  // Stops.

  DraRunner(const DraRunner&) = delete;
  DraRunner& operator=(const DraRunner&) = delete;

  // Serves the metrics address (if any; UNAVAILABLE naming it when it cannot be bound and
  // metrics_required), reads the checkpoint (DATA_LOSS when corrupt), calls Discover() (its error;
  // INVALID_ARGUMENT for an invalid device), serves the DRA and health services on the DRA
  // socket, then the registration socket (INTERNAL or FAILED_PRECONDITION naming the path), and
  // starts publishing. FAILED_PRECONDITION when called twice.
  [[nodiscard]] absl::Status Start();

  // Stops serving registration, ends the health streams (UNAVAILABLE), stops the DRA service,
  // removes both sockets and stops publishing (slices stay; the kubelet deletes them when the
  // driver deregisters). Idempotent.
  void Stop();

  // True after the kubelet reported plugin_registered=true, until it reports a failure.
  bool registered() const;
  // Blocks until registered() or `timeout` passes; returns registered().
  bool WaitForRegistration(absl::Duration timeout) const;

  // The TCP port serving the metrics (the kernel's choice when metrics_address has port 0);
  // 0 before Start(), after Stop(), and when no metrics are served.
  int metrics_port() const;

  // The driver, valid while the runner lives.
  DraDriver& driver() const;

 private:
  friend class internal::DraRunnerImpl;
  explicit DraRunner(std::unique_ptr<internal::DraRunnerImpl> impl);
  std::unique_ptr<internal::DraRunnerImpl> impl_;
};

// For a driver's main() that parses its own flags: blocks SIGTERM and SIGINT, creates and starts a
// runner, waits for one of them, stops and returns the exit status (0 after a clean stop, 1 when
// it failed to start, with the reason logged).
[[nodiscard]] int RunDraDriverUntilSignal(DraRunnerOptions options,
                                          std::unique_ptr<DraDriver> driver);

// What RunDraDriver() needs of the vendor.
struct DraMain {
  // The program's name: --version prints "<name> <version>"; logs name it.
  std::string name = {};
  // The first paragraph of --help: what the driver publishes and prepares.
  std::string description = {};
  // --metrics-address's default; empty: no metrics unless the flag is given.
  std::string metrics_address = {};
  // Adds the vendor's own flags; may be null.
  std::function<void(Flags&)> add_flags = nullptr;
  // Builds the driver once the flags are parsed (node_name and cdi_root resolved) and SIGTERM/
  // SIGINT are blocked (threads it starts inherit the mask). Its error ends the program with
  // status 1, logged.
  std::function<absl::StatusOr<std::unique_ptr<DraDriver>>(const DraRunnerOptions&)> driver =
      nullptr;
};

// A DRA driver's main(): `return kdp::RunDraDriver(argc, argv, {...});`. Parses the flags the SDK
// owns (--kubelet-root, --node-name, --kubeconfig, --cdi-root, --instance-suffix, --health-file
// (kdp::HealthFileWatcher), --metrics-address, --log-level, --log-format, -v, --help, --version)
// and the vendor's, blocks SIGTERM and SIGINT, runs the factory, watches the health file, then
// serves as RunDraDriverUntilSignal(). Returns the process exit status: 0 after --help, --version
// or a clean stop; 1 when the factory, the health file or the runner fails (logged); 2 for bad
// usage (printed, naming the flag), including no node name (neither
// --node-name nor $NODE_NAME).
[[nodiscard]] int RunDraDriver(int argc, char** argv, DraMain main);

}  // namespace kdp

#endif  // KDP_DRA_RUNNER_H_
