// A fake plugin's registration side (pluginregistration.Registration) for plugin manager tests:
// serves GetInfo with a configurable PluginInfo (optionally hanging for the first calls, to make
// GetInfo time out) and records every NotifyRegistrationStatus, on a real unix socket.
//
// Thread-safe.
#ifndef KDP_TESTS_UNIT_MANAGER_PLUGINMANAGER_FAKE_REGISTRATION_PLUGIN_H_
#define KDP_TESTS_UNIT_MANAGER_PLUGINMANAGER_FAKE_REGISTRATION_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace kdp::testing {

class FakeRegistrationPlugin final : public ::pluginregistration::Registration::Service {
 public:
  struct Status {
    bool registered = false;
    std::string error;
  };

  FakeRegistrationPlugin(std::string type, std::string name, std::string endpoint,
                         std::vector<std::string> versions) {
    info_.set_type(std::move(type));
    info_.set_name(std::move(name));
    info_.set_endpoint(std::move(endpoint));
    for (auto& v : versions) info_.add_supported_versions(std::move(v));
  }
  ~FakeRegistrationPlugin() override { Stop(); }

  // Serves on `socket_path` (replacing a socket already there).
  bool Serve(const std::string& socket_path) {
    auto server = ServeOnUnixSocket(socket_path, this);
    if (!server.ok()) return false;
    absl::MutexLock lock(&mu_);
    socket_path_ = socket_path;
    server_ = std::move(server).value();
    return true;
  }
  // Stops serving; `remove_socket` also deletes the socket file (what a plugin does on exit).
  void Stop(bool remove_socket = false) {
    std::unique_ptr<grpc::Server> server;
    std::string path;
    {
      absl::MutexLock lock(&mu_);
      server = std::move(server_);
      path = socket_path_;
    }
    if (server == nullptr) return;
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(100)));
    server.reset();
    if (remove_socket) (void)RemoveSocketIfPresent(path);
  }

  // The first `calls` GetInfo calls sleep for `delay` before answering.
  void HangGetInfo(int calls, absl::Duration delay) {
    absl::MutexLock lock(&mu_);
    hang_calls_ = calls;
    hang_delay_ = delay;
  }

  int get_info_calls() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(get_info_times_.size());
  }
  std::vector<absl::Time> get_info_times() const {
    absl::MutexLock lock(&mu_);
    return get_info_times_;
  }
  std::vector<Status> statuses() const {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }

  grpc::Status GetInfo(grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* reply) override {
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      get_info_times_.push_back(absl::Now());
      if (hang_calls_ > 0) {
        --hang_calls_;
        delay = hang_delay_;
      }
      *reply = info_;
    }
    absl::SleepFor(delay);
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* status,
      ::pluginregistration::RegistrationStatusResponse*) override {
    absl::MutexLock lock(&mu_);
    statuses_.push_back({status->plugin_registered(), status->error()});
    return grpc::Status::OK;
  }

 private:
  mutable absl::Mutex mu_;
  ::pluginregistration::PluginInfo info_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  std::string socket_path_ ABSL_GUARDED_BY(mu_);
  int hang_calls_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration hang_delay_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> get_info_times_ ABSL_GUARDED_BY(mu_);
  std::vector<Status> statuses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_PLUGINMANAGER_FAKE_REGISTRATION_PLUGIN_H_
