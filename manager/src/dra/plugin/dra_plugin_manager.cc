#include "manager/src/dra/plugin/dra_plugin_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "common/resource_name.h"

namespace kdp::manager::dra {
namespace {

// servicesSupportedByKubelet (1.34): v1alpha4 ("v1alpha3.NodeService") was removed.
const std::vector<std::string>& ServicesSupportedByKubelet() {
  static const auto* const services =
      new std::vector<std::string>{kDraV1Service, kDraV1beta1Service};
  return *services;
}

// Go's %q of a []string: ["a" "b"].
std::string GoQuoteList(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  quoted.reserve(values.size());
  for (const std::string& value : values) quoted.push_back(GoQuote(value));
  return absl::StrCat("[", absl::StrJoin(quoted, " "), "]");
}

absl::Status InvalidVersions(const std::string& driver, const std::string& endpoint,
                             const absl::Status& error) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid supported gRPC versions of DRA driver plugin ", driver, " at endpoint ",
                   endpoint, ": ", error.message()));
}

// kdp's rules beyond the kubelet's version check: the driver name is what the API server takes
// as ResourceSlice.spec.driver (a DNS subdomain: no '/', no ".."), and the endpoint an absolute
// socket path without ".." components, so no peer can have names that climb out of a directory.
absl::Status ValidateNames(const std::string& driver, const std::string& endpoint) {
  if (absl::Status valid = ValidateDraDriverName(driver); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DRA driver plugin at endpoint ", GoQuote(endpoint), ": ", valid.message()));
  }
  if (absl::Status valid = ValidateSocketPath("endpoint", endpoint); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DRA driver plugin ", driver, ": ", valid.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ChooseDraService(const std::vector<std::string>& supported_services) {
  if (supported_services.empty()) {
    return absl::InvalidArgumentError(
        "empty list of supported gRPC services (aka supported versions)");
  }
  const std::vector<std::string>& kubelet = ServicesSupportedByKubelet();
  // The plugin's order decides: it lists its preferred version first.
  for (const std::string& service : supported_services) {
    if (std::find(kubelet.begin(), kubelet.end(), service) != kubelet.end()) return service;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("none of services supported by the plugin (", GoQuoteList(supported_services),
                   ") are supported by the kubelet (", GoQuoteList(kubelet), ")"));
}

DraPluginManager::DraPluginManager(DraPluginManagerOptions options)
    : options_(std::move(options)), timer_([this] { TimerLoop(); }) {}

DraPluginManager::~DraPluginManager() { Stop(); }

void DraPluginManager::SetHealthStreamHandler(HealthStreamHandler* handler) {
  absl::MutexLock lock(&mu_);
  health_handler_ = handler;
}

void DraPluginManager::Stop() {
  std::vector<std::unique_ptr<HealthStream>> streams;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    pending_wipes_.clear();
    for (auto& entry : store_) {
      for (Registered& instance : entry.second) {
        if (instance.health != nullptr) streams.push_back(std::move(instance.health));
      }
    }
    wipes_changed_.SignalAll();
  }
  // Outside the lock: a stream may be inside its handler. Shutting down is no reason to forget
  // what the drivers reported (the kubelet is killed rather than stopped).
  for (auto& stream : streams) stream->Stop(/*report_end=*/false);
  if (timer_.joinable()) timer_.join();
}

absl::StatusOr<std::shared_ptr<DraPlugin>> DraPluginManager::Get(const std::string& driver) {
  if (driver.empty()) return absl::InvalidArgumentError("DRA driver name is empty");
  std::vector<std::shared_ptr<DraPluginClient>> instances;
  {
    absl::MutexLock lock(&mu_);
    auto it = store_.find(driver);
    if (it != store_.end()) {
      for (const Registered& instance : it->second) instances.push_back(instance.client);
    }
  }
  if (instances.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("DRA driver ", driver, " is not registered"));
  }
  // The most recent registration is most likely the newest instance (not always: after a
  // kdp-manager restart the sockets are registered in directory order). Connected ones first.
  for (auto it = instances.rbegin(); it != instances.rend(); ++it) {
    if ((*it)->Connected()) return std::shared_ptr<DraPlugin>(*it);
  }
  KDP_LOG_DEBUG("No DRA plugin connected, using latest one", "driverName", driver, "endpoint",
                instances.back()->endpoint());
  return std::shared_ptr<DraPlugin>(instances.back());
}

absl::Status DraPluginManager::ValidatePlugin(const std::string& driver,
                                              const std::string& endpoint,
                                              const std::vector<std::string>& versions) {
  absl::Status valid = Validate(driver, endpoint, versions).status();
  if (!valid.ok() && options_.observer != nullptr) {
    options_.observer->Registered(driver, endpoint, versions, valid);
  }
  return valid;
}

absl::StatusOr<std::string> DraPluginManager::Validate(const std::string& driver,
                                                       const std::string& endpoint,
                                                       const std::vector<std::string>& versions) {
  absl::StatusOr<std::string> chosen = ChooseDraService(versions);
  if (!chosen.ok()) return InvalidVersions(driver, endpoint, chosen.status());
  if (absl::Status valid = ValidateNames(driver, endpoint); !valid.ok()) return valid;
  return chosen;
}

absl::Status DraPluginManager::RegisterPlugin(const std::string& driver,
                                              const std::string& endpoint,
                                              const std::vector<std::string>& versions) {
  absl::Status answer = Register(driver, endpoint, versions);
  if (options_.observer != nullptr)
    options_.observer->Registered(driver, endpoint, versions, answer);
  return answer;
}

absl::Status DraPluginManager::Register(const std::string& driver, const std::string& endpoint,
                                        const std::vector<std::string>& versions) {
  absl::StatusOr<std::string> chosen = Validate(driver, endpoint, versions);
  if (!chosen.ok()) return chosen.status();
  const std::string health_service = ChooseHealthService(versions);
  auto client = std::make_shared<DraPluginClient>(driver, endpoint, *chosen, options_.call_timeout,
                                                  options_.grpc_durations, options_.observer);
  size_t count = 0;
  bool streaming = false;
  {
    absl::MutexLock lock(&mu_);
    std::vector<Registered>& instances = store_[driver];
    for (const Registered& existing : instances) {
      if (existing.client->endpoint() == endpoint) {
        // One plugin instance cannot hijack the endpoint of another instance.
        return absl::AlreadyExistsError(absl::StrCat(
            "endpoint ", endpoint, " already registered for DRA driver plugin ", driver));
      }
    }
    Registered instance{.client = client, .health = nullptr, .connected = false};
    if (!health_service.empty() && health_handler_ != nullptr && !stopped_) {
      // Only a thread is started here; it talks to the driver and the handler on its own.
      instance.health = HealthStream::Start({.driver_name = driver,
                                             .endpoint = endpoint,
                                             .service = health_service,
                                             .channel = client->channel(),
                                             .handler = health_handler_,
                                             .retry_period = options_.health_retry_period,
                                             .observer = options_.observer});
      streaming = true;
    }
    instances.push_back(std::move(instance));
    count = instances.size();
    // Not connected yet: a pending wipe stays until the new instance connects (1.34's add()).
    SyncLocked(driver);
    // The timer may be asleep with nothing to watch: it must start checking this instance.
    wipes_changed_.SignalAll();
  }
  KDP_LOG_INFO("Registered DRA plugin", "driverName", driver, "endpoint", endpoint, "chosenService",
               *chosen, "healthService", streaming ? health_service : "", "numPlugins", count);
  return absl::OkStatus();
}

void DraPluginManager::DeRegisterPlugin(const std::string& driver, const std::string& endpoint) {
  Registered removed;  // its stream is stopped and its channel released outside the lock
  size_t left = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = store_.find(driver);
    if (it == store_.end()) return;
    auto& instances = it->second;
    auto pos = std::find_if(instances.begin(), instances.end(),
                            [&](const Registered& r) { return r.client->endpoint() == endpoint; });
    if (pos == instances.end()) return;
    removed = std::move(*pos);
    instances.erase(pos);
    left = instances.size();
    if (instances.empty()) store_.erase(it);
    SyncLocked(driver);
  }
  // The kubelet cancels the stream's context; its handler then clears the driver's health.
  if (removed.health != nullptr) removed.health->Stop(/*report_end=*/true);
  KDP_LOG_INFO("Unregistered DRA plugin", "driverName", driver, "endpoint", endpoint, "numPlugins",
               left);
}

std::vector<DraPluginInstance> DraPluginManager::Instances() const {
  struct Copy {
    std::shared_ptr<DraPluginClient> client;
    std::string health_service;
    bool last_check_connected = false;
  };
  std::vector<Copy> copies;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& entry : store_) {
      for (const Registered& instance : entry.second) {
        copies.push_back({instance.client,
                          instance.health != nullptr ? instance.health->service() : "",
                          instance.connected});
      }
    }
  }
  std::vector<DraPluginInstance> out;
  out.reserve(copies.size());
  for (const Copy& copy : copies) {
    const DraPluginClient& client = *copy.client;
    out.push_back({.driver = client.driver_name(),
                   .endpoint = client.endpoint(),
                   .service = client.service(),
                   .health_service = copy.health_service,
                   .registered_at = client.registered_at(),
                   .connected = client.Connected(),
                   .last_check_connected = copy.last_check_connected});
  }
  return out;
}

std::map<std::string, absl::Time> DraPluginManager::PendingWipes() const {
  absl::MutexLock lock(&mu_);
  return pending_wipes_;
}

void DraPluginManager::SyncLocked(const std::string& driver) {
  if (!options_.wipe_resource_slices || stopped_) return;  // cannot wipe
  bool usable = false;
  if (auto it = store_.find(driver); it != store_.end()) {
    usable = std::any_of(it->second.begin(), it->second.end(),
                         [](const Registered& r) { return r.connected; });
  }
  if (usable) {
    wiped_.erase(driver);
    // A new registration schedules a wipe until its first connection check: only a driver that
    // was connected before is "connected again".
    const bool again = !connected_before_.insert(driver).second;
    if (pending_wipes_.erase(driver) > 0) {
      if (again) {
        KDP_LOG_INFO("DRA driver connected again; its ResourceSlices are kept", "driverName",
                     driver);
      } else {
        KDP_LOG_DEBUG("DRA driver connected", "driverName", driver);
      }
      wipes_changed_.SignalAll();
    }
    return;
  }
  // Already queued: the original deadline continues to apply. Already wiped: once per outage.
  if (pending_wipes_.contains(driver) || wiped_.contains(driver)) return;
  pending_wipes_[driver] = absl::Now() + options_.wiping_delay;
  KDP_LOG_DEBUG("No instance of DRA driver connected; its ResourceSlices will be wiped",
                "driverName", driver, "delay", absl::FormatDuration(options_.wiping_delay));
  wipes_changed_.SignalAll();
}

void DraPluginManager::ApplyConnectionsLocked(
    const std::vector<std::shared_ptr<DraPluginClient>>& checked,
    const std::vector<bool>& connected) {
  for (auto& entry : store_) {
    for (Registered& instance : entry.second) {
      for (size_t i = 0; i < checked.size(); ++i) {
        if (checked[i] != instance.client) continue;
        if (instance.connected != connected[i]) {
          KDP_LOG_DEBUG("Connection changed", "driverName", entry.first, "endpoint",
                        instance.client->endpoint(), "connected", connected[i] ? "true" : "false");
        }
        instance.connected = connected[i];
      }
    }
  }
  // Instances registered while the check ran count as not connected (as a new one does).
  std::vector<std::string> drivers;
  for (const auto& entry : store_) drivers.push_back(entry.first);
  for (const std::string& driver : drivers) SyncLocked(driver);
}

void DraPluginManager::TimerLoop() {
  absl::Time next_check = absl::InfinitePast();
  while (true) {
    std::vector<std::string> due;
    std::vector<std::shared_ptr<DraPluginClient>> to_check;
    {
      absl::MutexLock lock(&mu_);
      while (due.empty() && to_check.empty()) {
        if (stopped_) return;
        const absl::Time now = absl::Now();
        const bool watch = options_.wipe_resource_slices && !store_.empty();
        if (watch && now >= next_check) {
          for (const auto& entry : store_) {
            for (const Registered& instance : entry.second) to_check.push_back(instance.client);
          }
          next_check = now + options_.connection_check_interval;
          break;
        }
        absl::Time next = watch ? next_check : absl::InfiniteFuture();
        for (const auto& entry : pending_wipes_) next = std::min(next, entry.second);
        if (now < next) {
          wipes_changed_.WaitWithDeadline(&mu_, next);
          continue;
        }
        for (auto it = pending_wipes_.begin(); it != pending_wipes_.end();) {
          if (it->second <= now) {
            due.push_back(it->first);
            wiped_.insert(it->first);
            it = pending_wipes_.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    if (!to_check.empty()) {
      // Outside the lock: GetState is cheap but takes gRPC's own locks.
      std::vector<bool> connected;
      connected.reserve(to_check.size());
      for (const auto& client : to_check) connected.push_back(client->Connected());
      absl::MutexLock lock(&mu_);
      ApplyConnectionsLocked(to_check, connected);
      continue;
    }
    // Outside the lock: the callback talks to the API server (and may take long).
    for (const std::string& driver : due) {
      KDP_LOG_INFO("No instance of DRA driver connected; wiping its ResourceSlices", "driverName",
                   driver, "delay", absl::FormatDuration(options_.wiping_delay));
      options_.wipe_resource_slices(driver);
    }
  }
}

}  // namespace kdp::manager::dra
