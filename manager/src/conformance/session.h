// Session: one scenario's world. A kubelet root (fresh and temporary, or the one given), an
// embedded kdp-manager serving it (a Node, manager/src/node/, with a PluginRecorder watching its
// device manager and a DraRecorder its DRA manager), and the program under test started from the
// user's command with the placeholders filled in:
//
//   {kubelet_root}        the root                      {device_plugins_dir}  <root>/device-plugins
//   {plugins_registry}    <root>/plugins_registry       {plugins_dir}         <root>/plugins
//   {kubeconfig}          <root>/kdp/kubeconfig         {node_name}           the node's name
//   {cdi_root}            <root>/cdi (created)          {device_id}           (health trigger only)
//
// Everything a scenario waits for is bounded by the session's deadline (start + the scenario
// timeout). Destroying the session kills the program (its process group), stops the manager and
// removes a temporary root.
//
// Thread-safety: used from one thread (the scenario's); the recorder is thread-safe.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_SESSION_H_
#define KDP_MANAGER_SRC_CONFORMANCE_SESSION_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/subprocess.h"
#include "kdp/admin/v1/admin.grpc.pb.h"
#include "manager/src/conformance/dra_recorder.h"
#include "manager/src/conformance/plugin_recorder.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {
class Node;
}  // namespace kdp::manager

namespace kdp::manager::conformance {

// The deadline of one call the scenarios make to the program themselves.
constexpr absl::Duration kCallTimeout = absl::Seconds(10);
// How long a program told SIGTERM may take to exit: the kubelet's default termination grace
// period (terminationGracePeriodSeconds) for the DaemonSet pod it runs in.
constexpr absl::Duration kTerminationGrace = absl::Seconds(30);

struct SessionOptions {
  // The program under test and its arguments, placeholders unexpanded. Required.
  std::vector<std::string> command;
  // The kubelet root; "" for a fresh temporary one per scenario (removed after it).
  std::string kubelet_root;
  std::string node_name = "conformance-node";
  // The whole scenario, every wait included.
  absl::Duration timeout = absl::Seconds(60);
  // How long a started (or restarted) program, or one whose kubelet restarted, may take to
  // register and send its first device list.
  absl::Duration register_timeout = absl::Seconds(30);
  // A shell command (sh -c) that makes one device of the program under test unhealthy, with the
  // placeholders, {device_id} among them; "" when the user gave none.
  std::string health_trigger;
};

// A registration the manager accepted, with its first device list.
struct Registration {
  absl::Time at;  // when the manager accepted it
  v1beta1::RegisterRequest request;
  std::string socket;  // absolute: the endpoint, joined to the device-plugins directory
  v1beta1::DevicePluginOptions options;
  v1beta1::ListAndWatchResponse first_list;
};

// For a process about to end on a signal (Ctrl-C): every live Session's program killed with its
// process group (a wrapper's children too, which would outlive the process otherwise) and every
// temporary root removed. Thread-safe; the Sessions are not usable afterwards.
void AbandonSessions();

class Session {
 public:
  // Makes the root, starts the manager; the program is not started yet. Errors name the part
  // (the root, the manager) that failed.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Session>> Create(SessionOptions options);
  ~Session();

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& root() const { return root_; }
  std::string device_plugins_dir() const { return root_ + "/device-plugins"; }
  absl::Time deadline() const { return deadline_; }
  // kCallTimeout from now, or the deadline if sooner.
  absl::Time CallDeadline() const { return std::min(absl::Now() + kCallTimeout, deadline_); }
  const SessionOptions& options() const { return options_; }
  PluginRecorder& recorder() { return recorder_; }
  DraRecorder& dra_recorder() { return dra_recorder_; }
  const std::string& node_name() const { return options_.node_name; }
  std::string cdi_root() const { return root_ + "/cdi"; }

  // `text` with every placeholder replaced; {device_id} by `device_id` as it is.
  std::string Expand(absl::string_view text, absl::string_view device_id = "") const;

  // Starts the program under test (again, after it exited or was killed: the old instance's
  // process group is killed first). Its output goes to <root>/kdp-conformance/program.log,
  // appended across starts.
  [[nodiscard]] absl::Status StartProgram();
  // When the program was last started.
  absl::Time program_started() const { return program_started_; }
  // The running (or exited) program; nullptr before StartProgram.
  Subprocess* program() { return program_.get(); }
  // The program's exit status when it exited with one other than 0; nullopt while it runs (and
  // after an exit 0: it may have left a child to serve). Registration waits end early on it.
  [[nodiscard]] std::optional<int> ProgramFailed();
  // The end (at most 16 KiB) of what the program printed in this session.
  std::string ProgramOutput() const;

  // Waits for a registration the manager accepted after `since` (of `resource`, unless empty)
  // and the first ListAndWatch message on its socket, until min(`window_start` + the register
  // timeout, deadline); gives up early when the program exited with a non-zero status (one that
  // exits 0 may have left a child to serve). DEADLINE_EXCEEDED (FAILED_PRECONDITION when the
  // program failed) describes what was seen instead: refused registrations with the manager's
  // answer, a registration without a list, nothing.
  [[nodiscard]] absl::StatusOr<Registration> WaitForRegistration(absl::Time since,
                                                                 absl::Time window_start,
                                                                 absl::string_view resource = "");
  // The first registration since the program last started.
  [[nodiscard]] absl::StatusOr<Registration> WaitForRegistration() {
    return WaitForRegistration(program_started_, program_started_);
  }

  // The kubelet's restart: stops the manager (kubelet.sock goes) and starts a new one on the same
  // root and state, which removes the plugins' sockets and serves kubelet.sock again.
  [[nodiscard]] absl::Status RestartManager();

  // The manager's admin API (what kdpctl calls), within the deadline.
  [[nodiscard]] absl::StatusOr<admin::v1::NodeStatus> NodeStatus();
  [[nodiscard]] absl::StatusOr<admin::v1::ApplyPodResponse> ApplyPod(const std::string& manifest);
  // kdpctl apply: DeviceClasses, ResourceClaims and Pods, in the manifest's order.
  [[nodiscard]] absl::StatusOr<admin::v1::ApplyResponse> Apply(const std::string& manifest);
  // kdpctl delete pod: its claims are unprepared before it answers (a failed unprepare leaves the
  // pod terminating, retried by the reconcile loop, 1 s here, and is an error naming it).
  [[nodiscard]] absl::Status DeletePod(const std::string& namespace_, const std::string& name);

  // GET `path` ("/apis/resource.k8s.io/v1/resourceslices") from the manager's local Kubernetes
  // API with the kubeconfig's token, as a driver's client reads it; the decoded JSON body. An
  // answer other than 200 is an error carrying the API's status message.
  [[nodiscard]] absl::StatusOr<nlohmann::json> ApiGet(const std::string& path);

  // Runs the health trigger for `device_id` (shell-quoted into {device_id}; also in the
  // environment as KDP_DEVICE_ID), waiting for it within the deadline. Its failure (an exit status
  // other than 0) is an error naming the command and its output.
  [[nodiscard]] absl::Status RunHealthTrigger(absl::string_view device_id);

 private:
  friend void AbandonSessions();
  // Kills the program's process group and removes a temporary root, leaving the rest to the
  // process's end.
  void Abandon();

  Session(SessionOptions options, std::string root, bool temporary);
  [[nodiscard]] absl::Status StartManager();

  const SessionOptions options_;
  const std::string root_;
  const bool temporary_root_;
  const absl::Time deadline_;
  PluginRecorder recorder_;
  DraRecorder dra_recorder_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<admin::v1::Admin::Stub> admin_;
  std::unique_ptr<Subprocess> program_;
  absl::Time program_started_ = absl::InfinitePast();
  // The program's log already held this much before the session (a reused --kubelet-root).
  size_t output_offset_ = 0;
};

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_SESSION_H_
