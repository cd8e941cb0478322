#include "manager/src/dra/plugin/dra_plugin_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
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

void DraPluginManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    pending_wipes_.clear();
    wipes_changed_.SignalAll();
  }
  if (timer_.joinable()) timer_.join();
}

absl::StatusOr<std::shared_ptr<DraPlugin>> DraPluginManager::Get(const std::string& driver) {
  if (driver.empty()) return absl::InvalidArgumentError("DRA driver name is empty");
  std::vector<std::shared_ptr<DraPluginClient>> instances;
  {
    absl::MutexLock lock(&mu_);
    auto it = store_.find(driver);
    if (it != store_.end()) instances = it->second;
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
  absl::StatusOr<std::string> chosen = ChooseDraService(versions);
  if (!chosen.ok()) return InvalidVersions(driver, endpoint, chosen.status());
  return absl::OkStatus();
}

absl::Status DraPluginManager::RegisterPlugin(const std::string& driver,
                                              const std::string& endpoint,
                                              const std::vector<std::string>& versions) {
  absl::StatusOr<std::string> chosen = ChooseDraService(versions);
  if (!chosen.ok()) return InvalidVersions(driver, endpoint, chosen.status());
  auto client = std::make_shared<DraPluginClient>(driver, endpoint, *chosen, options_.call_timeout);
  size_t count = 0;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::shared_ptr<DraPluginClient>>& instances = store_[driver];
    for (const auto& existing : instances) {
      if (existing->endpoint() == endpoint) {
        // One plugin instance cannot hijack the endpoint of another instance.
        return absl::AlreadyExistsError(absl::StrCat(
            "endpoint ", endpoint, " already registered for DRA driver plugin ", driver));
      }
    }
    instances.push_back(std::move(client));
    count = instances.size();
    if (pending_wipes_.erase(driver) > 0) {
      KDP_LOG_INFO("DRA driver registered again; its ResourceSlices are kept", "driverName",
                   driver);
      wipes_changed_.SignalAll();
    }
  }
  KDP_LOG_INFO("Registered DRA plugin", "driverName", driver, "endpoint", endpoint, "chosenService",
               *chosen, "numPlugins", count);
  return absl::OkStatus();
}

void DraPluginManager::DeRegisterPlugin(const std::string& driver, const std::string& endpoint) {
  std::shared_ptr<DraPluginClient> removed;  // its channel is released outside the lock
  size_t left = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = store_.find(driver);
    if (it == store_.end()) return;
    auto& instances = it->second;
    auto pos = std::find_if(instances.begin(), instances.end(),
                            [&](const auto& p) { return p->endpoint() == endpoint; });
    if (pos == instances.end()) return;
    removed = std::move(*pos);
    instances.erase(pos);
    left = instances.size();
    if (instances.empty()) {
      store_.erase(it);
      if (!stopped_ && options_.wipe_resource_slices && !pending_wipes_.contains(driver)) {
        pending_wipes_[driver] = absl::Now() + options_.wiping_delay;
        wipes_changed_.SignalAll();
      }
    }
  }
  KDP_LOG_INFO("Unregistered DRA plugin", "driverName", driver, "endpoint", endpoint, "numPlugins",
               left);
}

std::vector<DraPluginInstance> DraPluginManager::Instances() const {
  std::vector<std::shared_ptr<DraPluginClient>> clients;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& entry : store_) {
      clients.insert(clients.end(), entry.second.begin(), entry.second.end());
    }
  }
  std::vector<DraPluginInstance> out;
  out.reserve(clients.size());
  for (const auto& client : clients) {
    out.push_back({.driver = client->driver_name(),
                   .endpoint = client->endpoint(),
                   .service = client->service(),
                   .registered_at = client->registered_at(),
                   .connected = client->Connected()});
  }
  return out;
}

void DraPluginManager::TimerLoop() {
  while (true) {
    std::vector<std::string> due;
    {
      absl::MutexLock lock(&mu_);
      while (due.empty()) {
        if (stopped_) return;
        absl::Time next = absl::InfiniteFuture();
        for (const auto& entry : pending_wipes_) next = std::min(next, entry.second);
        const absl::Time now = absl::Now();
        if (now < next) {
          wipes_changed_.WaitWithDeadline(&mu_, next);
          continue;
        }
        for (auto it = pending_wipes_.begin(); it != pending_wipes_.end();) {
          if (it->second <= now) {
            due.push_back(it->first);
            it = pending_wipes_.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    // Outside the lock: the callback talks to the API server (and may take long).
    for (const std::string& driver : due) {
      KDP_LOG_INFO("DRA driver stayed unregistered; wiping its ResourceSlices", "driverName",
                   driver, "delay", absl::FormatDuration(options_.wiping_delay));
      options_.wipe_resource_slices(driver);
    }
  }
}

}  // namespace kdp::manager::dra
