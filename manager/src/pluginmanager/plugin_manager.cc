#include "manager/src/pluginmanager/plugin_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace kdp::manager::pluginmanager {

PluginManager::PluginManager(PluginManagerOptions options)
    : options_(std::move(options)),
      watcher_(
          options_.dir,
          {.socket_created = [this](const std::string& path,
                                    const SocketId& id) { OnSocketCreated(path, id); },
           .path_removed = [this](const std::string& path) { OnPathRemoved(path); },
           .resynced =
               [this](const std::map<std::string, SocketId>& sockets) { OnResynced(sockets); }}) {}

PluginManager::~PluginManager() { Stop(); }

void PluginManager::AddHandler(const std::string& type, PluginHandler* handler) {
  absl::MutexLock lock(&mu_);
  if (started_) {
    KDP_LOG_ERROR("Plugin handler added after the plugin manager started; ignored", "type", type);
    return;
  }
  handlers_[type] = handler;
}

absl::Status PluginManager::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("plugin manager already started");
    started_ = true;
  }
  std::vector<std::string> types;
  for (const auto& entry : handlers_) types.push_back(entry.first);
  KDP_LOG_INFO("Starting plugin manager", "path", options_.dir, "handlers",
               absl::StrJoin(types, ","));
  // The reconciler first, so that the sockets the walk finds are registered at once.
  reconciler_ = std::thread([this] { ReconcileLoop(); });
  if (absl::Status started = watcher_.Start(); !started.ok()) {
    Stop();
    return started;
  }
  return absl::OkStatus();
}

void PluginManager::Stop() {
  watcher_.Stop();
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stop_) return;
    stop_ = true;
    stopping_.store(true);
    changed_.SignalAll();
  }
  if (reconciler_.joinable()) reconciler_.join();
  std::vector<std::thread> running;
  {
    absl::MutexLock lock(&mu_);
    for (auto& entry : operations_) {
      if (entry.second.thread.joinable()) running.push_back(std::move(entry.second.thread));
    }
  }
  for (std::thread& thread : running) thread.join();
  KDP_LOG_INFO("Plugin manager stopped", "path", options_.dir);
}

std::vector<RegisteredPlugin> PluginManager::Registered() const {
  absl::MutexLock lock(&mu_);
  std::vector<RegisteredPlugin> out;
  for (const auto& entry : actual_) out.push_back(entry.second.plugin);
  return out;
}

void PluginManager::AddDesiredLocked(const std::string& path, const SocketId& id) {
  auto it = desired_.find(path);
  // The same socket file reported twice (walk and event): nothing changed.
  if (it != desired_.end() && it->second.id == id) return;
  desired_[path] = {.id = id, .generation = next_generation_++};
  // A new socket file is a new plugin instance: it gets a fresh backoff.
  if (auto op = operations_.find(path); op != operations_.end()) {
    op->second.failures = 0;
    op->second.retry_at = absl::InfinitePast();
  }
  dirty_ = true;
}

void PluginManager::OnSocketCreated(const std::string& path, const SocketId& id) {
  absl::MutexLock lock(&mu_);
  AddDesiredLocked(path, id);
  if (dirty_) changed_.Signal();
}

void PluginManager::OnPathRemoved(const std::string& path) {
  absl::MutexLock lock(&mu_);
  const std::string prefix = path + "/";
  for (auto it = desired_.begin(); it != desired_.end();) {
    if (it->first == path || absl::StartsWith(it->first, prefix)) {
      it = desired_.erase(it);
      dirty_ = true;
    } else {
      ++it;
    }
  }
  if (dirty_) changed_.Signal();
}

void PluginManager::OnResynced(const std::map<std::string, SocketId>& sockets) {
  absl::MutexLock lock(&mu_);
  for (auto it = desired_.begin(); it != desired_.end();) {
    if (!sockets.contains(it->first)) {
      it = desired_.erase(it);
      dirty_ = true;
    } else {
      ++it;
    }
  }
  for (const auto& entry : sockets) AddDesiredLocked(entry.first, entry.second);
  if (dirty_) changed_.Signal();
}

void PluginManager::ReconcileLoop() {
  while (true) {
    std::vector<std::thread> finished;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      dirty_ = false;
      const absl::Time next = ReconcileLocked(&finished);
      if (finished.empty()) {
        while (!stop_ && !dirty_ && absl::Now() < next) changed_.WaitWithDeadline(&mu_, next);
      }
    }
    for (std::thread& thread : finished) thread.join();
  }
}

absl::Time PluginManager::ReconcileLocked(std::vector<std::thread>* finished) {
  for (auto& entry : operations_) {
    Operation& op = entry.second;
    if (!op.running && op.thread.joinable()) finished->push_back(std::move(op.thread));
  }
  // Deregistrations first (the kubelet's order): a plugin whose socket went away, or whose
  // socket was re-created (another generation), leaves the actual state before its handler is
  // told, so a registration of the new socket can follow.
  for (auto it = actual_.begin(); it != actual_.end();) {
    auto desired = desired_.find(it->first);
    Operation& op = operations_[it->first];
    if ((desired != desired_.end() && desired->second.generation == it->second.generation) ||
        op.running) {
      ++it;
      continue;
    }
    op.running = true;
    op.thread = std::thread(&PluginManager::RunUnregister, this, it->first, std::move(it->second));
    it = actual_.erase(it);
  }
  const absl::Time now = absl::Now();
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [path, desired] : desired_) {
    if (actual_.contains(path)) continue;
    Operation& op = operations_[path];
    if (op.running) continue;
    if (op.retry_at > now) {
      next = std::min(next, op.retry_at);
      continue;
    }
    op.running = true;
    op.thread = std::thread(&PluginManager::RunRegister, this, path, desired.generation);
  }
  // Forget idle operations of sockets that are gone (and their backoff).
  for (auto it = operations_.begin(); it != operations_.end();) {
    const Operation& op = it->second;
    if (!op.running && !op.thread.joinable() && !desired_.contains(it->first) &&
        !actual_.contains(it->first)) {
      it = operations_.erase(it);
    } else {
      ++it;
    }
  }
  return next;
}

void PluginManager::RunRegister(std::string path, uint64_t generation) {
  KDP_LOG_DEBUG("Registering plugin", "path", path);
  absl::StatusOr<RegistrationOutcome> outcome =
      RegisterPluginAt(path, handlers_, options_.timeouts, stopping_);
  absl::MutexLock lock(&mu_);
  Operation& op = operations_[path];
  if (outcome.ok()) {
    op.failures = 0;
    op.retry_at = absl::InfinitePast();
    const RegisteredPlugin& plugin = outcome->plugin;
    KDP_LOG_INFO("Registered plugin", "type", plugin.type, "name", plugin.name, "endpoint",
                 plugin.endpoint, "path", path, "versions", absl::StrJoin(plugin.versions, ","));
    if (!outcome->notify_error.ok()) {
      KDP_LOG_ERROR("Plugin registered, but it could not be told", "path", path, "err",
                    outcome->notify_error.message());
    }
    // Recorded even when the socket went away meanwhile: the next pass deregisters it.
    actual_[path] = {.generation = generation,
                     .handler = outcome->handler,
                     .plugin = std::move(outcome->plugin)};
  } else if (!stop_) {
    auto desired = desired_.find(path);
    const bool current = desired != desired_.end() && desired->second.generation == generation;
    // A failure of a socket since removed or re-created says nothing about its successor.
    if (current) {
      absl::Duration backoff = options_.initial_backoff;
      for (int i = 0; i < op.failures && backoff < options_.max_backoff; ++i) backoff *= 2;
      backoff = std::min(backoff, options_.max_backoff);
      ++op.failures;
      op.retry_at = absl::Now() + backoff;
      KDP_LOG_ERROR("Plugin registration failed; will retry", "path", path, "retryIn",
                    absl::FormatDuration(backoff), "err", outcome.status().message());
    }
  }
  FinishOperationLocked(path);
}

void PluginManager::RunUnregister(std::string path, Actual actual) {
  KDP_LOG_INFO("Deregistering plugin", "type", actual.plugin.type, "name", actual.plugin.name,
               "endpoint", actual.plugin.endpoint, "path", path);
  actual.handler->DeRegisterPlugin(actual.plugin.name, actual.plugin.endpoint);
  absl::MutexLock lock(&mu_);
  FinishOperationLocked(path);
}

void PluginManager::FinishOperationLocked(const std::string& path) {
  operations_[path].running = false;
  dirty_ = true;
  changed_.Signal();
}

}  // namespace kdp::manager::pluginmanager
