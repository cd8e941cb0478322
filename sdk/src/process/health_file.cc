#include "kdp/health_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/absl_view.h"
#include "common/logging.h"
#include "kdp/device_plugin.h"
#include "kdp/dra_driver.h"
#include "sdk/src/deviceplugin/device_state.h"
#include "sdk/src/dra/device_health.h"
#include "sdk/src/dra/driver_link.h"

namespace kdp {
namespace {

absl::Status Unreadable(const std::string& path, int error) {
  return absl::UnavailableError(
      absl::StrCat("cannot read health file ", path, ": ", std::strerror(error)));
}

// The content of `path`, empty when it does not exist. UNAVAILABLE, naming the path and the
// reason, when it exists but cannot be read (a directory, no permission).
absl::StatusOr<std::string> ReadIfExists(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? absl::StatusOr<std::string>("") : Unreadable(path, errno);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  const int error = errno;
  close(fd);
  if (n < 0) return Unreadable(path, error);
  return text;
}

}  // namespace

std::set<std::string> ParseHealthFile(std::string_view text) {
  std::set<std::string> ids;
  for (absl::string_view line : absl::StrSplit(Sv(text), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    ids.insert(PhysicalId(std::string_view(line.data(), line.size())));
  }
  return ids;
}

HealthFileWatcher::HealthFileWatcher(std::string path, Callback on_change)
    : path_(std::move(path)), on_change_(std::move(on_change)) {}

HealthFileWatcher::~HealthFileWatcher() { Stop(); }

absl::StatusOr<std::unique_ptr<HealthFileWatcher>> HealthFileWatcher::Watch(
    std::string path, Callback on_change, absl::Duration interval) {
  auto watcher = std::make_unique<HealthFileWatcher>(std::move(path), std::move(on_change));
  if (absl::Status status = watcher->Poll(); !status.ok()) return status;
  if (absl::Status status = watcher->Start(interval); !status.ok()) return status;
  return watcher;
}

absl::StatusOr<std::unique_ptr<HealthFileWatcher>> HealthFileWatcher::Watch(
    std::string path, DevicePlugin& plugin, absl::Duration interval) {
  // The plugin's device state, not the plugin: a watcher may outlive the plugin it watched for.
  std::shared_ptr<internal::DeviceState> state = plugin.state_;
  Callback apply = [state, resource = plugin.resource_name(),
                    message =
                        absl::StrCat("listed in ", path)](const std::set<std::string>& unhealthy) {
    if (absl::Status set = state->SetUnhealthy(unhealthy, message); !set.ok()) {
      KDP_LOG_WARNING("Cannot report device health", "resource", resource, "err", set.ToString());
    }
  };
  return Watch(std::move(path), std::move(apply), interval);
}

absl::StatusOr<std::unique_ptr<HealthFileWatcher>> HealthFileWatcher::Watch(
    std::string path, DraDriver& driver, absl::Duration interval) {
  // The driver's health table, not the driver: a watcher may outlive the driver it watched for.
  std::shared_ptr<internal::DeviceHealthTable> table = driver.link_->health();
  Callback apply = [table, driver_name = driver.driver_name(),
                    message =
                        absl::StrCat("listed in ", path)](const std::set<std::string>& unhealthy) {
    if (absl::Status set = table->SetUnhealthy(unhealthy, message); !set.ok()) {
      KDP_LOG_WARNING("Cannot report device health", "driver", driver_name, "err", set.ToString());
    }
  };
  return Watch(std::move(path), std::move(apply), interval);
}

absl::Status HealthFileWatcher::Poll() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> text = ReadIfExists(path_);
  if (!text.ok()) return text.status();
  std::set<std::string> unhealthy = ParseHealthFile(*text);
  // Comparing content rather than mtime catches two edits within one mtime tick and ignores
  // edits that change nothing (a comment).
  if (unhealthy == last_) return absl::OkStatus();
  last_ = std::move(unhealthy);
  on_change_(last_);
  return absl::OkStatus();
}

absl::Status HealthFileWatcher::Start(absl::Duration interval) {
  absl::MutexLock lock(&thread_mu_);
  if (thread_.joinable() || stop_.HasBeenNotified()) {
    return absl::FailedPreconditionError("health file watcher already started");
  }
  // The runners block SIGTERM/SIGINT before the vendor's factory runs, so a thread started there
  // inherits that; a watcher started elsewhere (a test, a program of its own) must not take
  // SIGTERM's default action either, which would end the process without cleanup.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  thread_ = std::thread([this, interval] {
    bool failing = false;
    while (!stop_.WaitForNotificationWithTimeout(interval)) {
      // A failed read keeps the last state; say so once, not every 100 ms.
      absl::Status status = Poll();
      if (!status.ok() && !failing) {
        KDP_LOG_WARNING("Cannot read health file", "path", path_, "err", status.ToString());
      }
      failing = !status.ok();
    }
  });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return absl::OkStatus();
}

void HealthFileWatcher::Stop() {
  absl::MutexLock lock(&thread_mu_);
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kdp
