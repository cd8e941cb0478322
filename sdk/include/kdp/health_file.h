// kdp::HealthFileWatcher turns a text file into device health changes, so that a demo, a test or
// an operator can mark devices Unhealthy while a plugin or driver runs: the file lists unhealthy
// device IDs, one per line (blank lines and lines starting with '#' ignored); a missing file means
// all healthy. Watch() applies it to a DevicePlugin or a DraDriver; a callback of the vendor's
// own may map the set to anything else. kdp::RunPlugins() and kdp::RunDraDriver() offer it to
// every program as --health-file.
//
// Thread-safety: thread-safe; Stop() is idempotent and may be called concurrently.
#ifndef KDP_HEALTH_FILE_H_
#define KDP_HEALTH_FILE_H_

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "kdp/device_plugin.h"
#include "kdp/dra_driver.h"

namespace kdp {

// The IDs a health file's `text` lists: one per line, surrounding whitespace trimmed; blank lines
// and lines starting with '#' ignored. A time-sliced replica's ID ("gpu3::1", NVIDIA's form)
// names its device ("gpu3"): a device is healthy or not as a whole.
[[nodiscard]] std::set<std::string> ParseHealthFile(std::string_view text);

class HealthFileWatcher {
 public:
  using Callback = std::function<void(const std::set<std::string>& unhealthy)>;

  // `on_change` is called from Poll(), one report at a time and in the order the changes were
  // read; it must not call back into the watcher. Borrows nothing.
  HealthFileWatcher(std::string path, Callback on_change);
  ~HealthFileWatcher();  // Stops.

  HealthFileWatcher(const HealthFileWatcher&) = delete;
  HealthFileWatcher& operator=(const HealthFileWatcher&) = delete;

  // Polls once (the file's first state reaches `on_change` before this returns), then Start()s:
  // the watcher a plugin keeps for its lifetime. Poll()'s error.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HealthFileWatcher>> Watch(
      std::string path, Callback on_change, absl::Duration interval = absl::Milliseconds(100));

  // Watch() for a device plugin: the file's IDs are the plugin's unhealthy devices, with the
  // message "listed in <path>" (DevicePlugin::SetUnhealthyDevices(), under kdp/health.h's rule:
  // IDs not discovered yet apply once they are, a GPU's ID applies to its replicas). Holds the
  // plugin's device state, not the plugin: the watcher may outlive it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HealthFileWatcher>> Watch(
      std::string path, DevicePlugin& plugin, absl::Duration interval = absl::Milliseconds(100));

  // Watch() for a DRA driver: the same, through DraDriver::SetUnhealthyDevices(). Holds the
  // driver's health table, not the driver: the watcher may outlive it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HealthFileWatcher>> Watch(
      std::string path, DraDriver& driver, absl::Duration interval = absl::Milliseconds(100));

  // Reads the file now and calls `on_change` when its set differs from the last one reported
  // (initially the empty set, i.e. all healthy). UNAVAILABLE, naming the path, when the file
  // exists but cannot be read; the last reported set then stays in effect.
  [[nodiscard]] absl::Status Poll() ABSL_LOCKS_EXCLUDED(mu_);

  // Polls every `interval` on a background thread until Stop(). The thread blocks every signal
  // (the runner's sigwait() gets SIGTERM); a failed read is logged once and retried.
  // FAILED_PRECONDITION when already started, or stopped (a watcher starts once).
  [[nodiscard]] absl::Status Start(absl::Duration interval = absl::Milliseconds(100))
      ABSL_LOCKS_EXCLUDED(thread_mu_);

  // Stops and joins the thread; after it returns `on_change` is not called by the thread again.
  void Stop() ABSL_LOCKS_EXCLUDED(thread_mu_);

 private:
  const std::string path_;
  const Callback on_change_;

  absl::Mutex mu_;  // Serialises Poll() so reports are never reordered.
  std::set<std::string> last_ ABSL_GUARDED_BY(mu_);

  absl::Mutex thread_mu_;
  absl::Notification stop_;
  std::thread thread_ ABSL_GUARDED_BY(thread_mu_);
};

}  // namespace kdp

#endif  // KDP_HEALTH_FILE_H_
