#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "manager/src/conformance/device_plugin_checks.h"
#include "manager/src/conformance/plugin_answers.h"
#include "manager/src/conformance/session.h"

namespace kdp::manager::conformance {
namespace {

using v1beta1::ListAndWatchResponse;

}  // namespace

// ---- dp.kubelet-restart ----------------------------------------------------------------------

Outcome CheckKubeletRestart(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::string& resource = registration->request.resource_name();
  const std::set<std::string> before = IdSet(registration->first_list);
  const absl::Time stopping = absl::Now();
  if (absl::Status status = session.RestartManager(); !status.ok()) {
    return Outcome::Skip(
        absl::StrCat("the embedded kdp-manager did not restart: ", status.message()));
  }
  // kubelet.sock is served again: the window starts now (a registration while the manager
  // started counts too).
  const absl::Time serving = absl::Now();
  const std::string expectation = absl::StrCat(
      "the plugin to register ", resource, " again within ",
      absl::FormatDuration(session.options().register_timeout),
      " of kubelet.sock being served anew (a restarting kubelet removes every plugin socket and "
      "never dials a plugin by itself) with its ",
      before.size(), " devices, allocatable again");
  absl::StatusOr<Registration> again = session.WaitForRegistration(stopping, serving, resource);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  const std::set<std::string> after = IdSet(again->first_list);
  if (after != before) {
    return Outcome::Fail(
        expectation, absl::StrCat("devices ", Joined(after), " (before: ", Joined(before), ")"));
  }
  // The node's allocatable counts the healthy devices again (the kubelet's capacity sync).
  const int64_t healthy = static_cast<int64_t>(HealthyIds(again->first_list).size());
  int64_t allocatable = -1;
  while (absl::Now() < session.deadline()) {
    absl::StatusOr<admin::v1::NodeStatus> status = session.NodeStatus();
    if (!status.ok()) break;
    for (const admin::v1::ResourceStatus& entry : status->resources()) {
      if (entry.name() == resource && entry.connected()) allocatable = entry.allocatable();
    }
    if (allocatable == healthy) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (allocatable != healthy) {
    return Outcome::Fail(expectation, absl::StrCat("allocatable ", allocatable, " for ", healthy,
                                                   " healthy devices"));
  }
  return Outcome::Pass(absl::StrCat(
      "registered again ",
      absl::FormatDuration(
          absl::Trunc(std::max(again->at - serving, absl::ZeroDuration()), absl::Milliseconds(1))),
      " after kubelet.sock was served anew, with its ", after.size(), " devices (", healthy,
      " allocatable)"));
}

// ---- dp.plugin-restart -----------------------------------------------------------------------

Outcome CheckPluginRestart(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::string& resource = registration->request.resource_name();
  const std::set<std::string> before = IdSet(registration->first_list);
  // A crash, as a container's: every process of it killed at once, nothing cleaned up; its socket
  // file stays.
  const absl::Time killed = absl::Now();
  (void)session.program()->SignalGroup(SIGKILL);
  (void)session.program()->Wait(
      std::max(std::min(absl::Seconds(5), session.deadline() - absl::Now()), absl::ZeroDuration()));
  // Until the manager has seen the stream end, it would refuse the socket's new registration
  // ("already connected", kubernetes#135437); a plugin that retries copes, one that does not
  // would be judged on this tool's timing.
  session.recorder().WaitUntil(
      [&](const PluginRecord& record) {
        for (const RecordedStreamEnd& end : record.stream_ends) {
          if (end.socket == registration->socket && end.at >= killed) return true;
        }
        return false;
      },
      std::min(absl::Now() + absl::Seconds(5), session.deadline()));
  if (absl::Status started = session.StartProgram(); !started.ok()) {
    return Outcome::Skip(std::string(started.message()));
  }
  const std::string expectation = absl::StrCat(
      "the plugin, killed (SIGKILL) and started again, to serve and register ", resource,
      " again with its ", before.size(), " devices (its old socket file is still there)");
  absl::StatusOr<Registration> again =
      session.WaitForRegistration(session.program_started(), session.program_started(), resource);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  const std::set<std::string> after = IdSet(again->first_list);
  if (after != before) {
    return Outcome::Fail(
        expectation, absl::StrCat("devices ", Joined(after), " (before: ", Joined(before), ")"));
  }
  return Outcome::Pass(absl::StrCat("registered again with its ", after.size(), " devices"));
}

// ---- dp.sigterm ------------------------------------------------------------------------------

Outcome CheckSigterm(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const absl::Duration grace = std::min(kTerminationGrace, session.deadline() - absl::Now());
  if (grace < absl::Seconds(1)) {
    return Outcome::Skip("no time left in the scenario's --timeout to wait for an exit");
  }
  const absl::Time told = absl::Now();
  if (absl::Status signalled = session.program()->Signal(SIGTERM); !signalled.ok()) {
    return Outcome::Fail("the plugin running until told to stop",
                         absl::StrCat("it had exited already: ", signalled.message()));
  }
  const std::string expectation =
      absl::StrCat("the plugin to exit within ", absl::FormatDuration(grace),
                   " of SIGTERM (a pod gets 30s by default before SIGKILL) and remove its socket ",
                   registration->socket);
  absl::StatusOr<int> code = session.program()->Wait(grace);
  if (!code.ok()) return Outcome::Fail(expectation, "still running");
  const absl::Duration took = absl::Trunc(absl::Now() - told, absl::Milliseconds(1));
  const std::string exited = *code == 128 + SIGTERM
                                 ? "ended by SIGTERM itself (status 143: no handler for it)"
                                 : absl::StrCat("exited with status ", *code);
  std::error_code error;
  if (std::filesystem::exists(registration->socket, error)) {
    return Outcome::Fail(expectation, absl::StrCat(exited, " after ", absl::FormatDuration(took),
                                                   ", leaving its socket behind"));
  }
  return Outcome::Pass(
      absl::StrCat(exited, " after ", absl::FormatDuration(took), ", socket removed"));
}

// ---- dp.unexpected-calls ---------------------------------------------------------------------

Outcome CheckUnexpectedCalls(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::vector<std::string> ids = Ids(registration->first_list);
  std::vector<std::string> healthy = HealthyIds(registration->first_list);
  if (healthy.empty() && !ids.empty()) healthy.push_back(ids.front());
  auto stub = Dial(registration->socket);
  const std::string expectation =
      "the plugin to keep running and serving the kubelet after calls the API allows but it may "
      "not expect (an answer, even an error, is fine)";
  struct Call {
    std::string name;
    std::function<grpc::Status()> make;
  };
  std::vector<Call> calls;
  calls.push_back({"GetDevicePluginOptions three times", [&] {
                     grpc::Status last;
                     for (int i = 0; i < 3; ++i) {
                       grpc::ClientContext context;
                       SetDeadline(session, &context);
                       v1beta1::DevicePluginOptions options;
                       last = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
                     }
                     return last;
                   }});
  calls.push_back({"a second ListAndWatch stream, cancelled after its first message", [&] {
                     grpc::ClientContext context;
                     SetDeadline(session, &context);
                     auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
                     ListAndWatchResponse first;
                     const bool read = reader->Read(&first);
                     context.TryCancel();
                     grpc::Status status = reader->Finish();
                     return read ? grpc::Status::OK : status;
                   }});
  calls.push_back({"Allocate with two container requests", [&] {
                     v1beta1::AllocateRequest request;
                     // Distinct devices when there are two; the same one otherwise.
                     for (size_t i = 0; i < 2 && !healthy.empty(); ++i) {
                       request.add_container_requests()->add_devices_ids(
                           healthy[std::min(i, healthy.size() - 1)]);
                     }
                     grpc::ClientContext context;
                     SetDeadline(session, &context);
                     v1beta1::AllocateResponse response;
                     return stub->Allocate(&context, request, &response);
                   }});
  calls.push_back({"GetPreferredAllocation, advertised or not", [&] {
                     v1beta1::PreferredAllocationRequest request;
                     auto* container = request.add_container_requests();
                     for (const std::string& id : healthy) container->add_available_deviceids(id);
                     container->set_allocation_size(healthy.empty() ? 0 : 1);
                     grpc::ClientContext context;
                     SetDeadline(session, &context);
                     v1beta1::PreferredAllocationResponse response;
                     return stub->GetPreferredAllocation(&context, request, &response);
                   }});
  calls.push_back({"PreStartContainer, advertised or not", [&] {
                     v1beta1::PreStartContainerRequest request;
                     if (!healthy.empty()) request.add_devices_ids(healthy.front());
                     grpc::ClientContext context;
                     SetDeadline(session, &context);
                     v1beta1::PreStartContainerResponse response;
                     return stub->PreStartContainer(&context, request, &response);
                   }});
  for (const Call& call : calls) {
    const grpc::Status status = call.make();
    // A call the plugin died of fails as UNAVAILABLE (or CANCELLED); its exit may take a moment
    // to be seen, longer on a loaded machine.
    const bool suspicious = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                            status.error_code() == grpc::StatusCode::CANCELLED;
    (void)session.program()->Wait(suspicious ? absl::Seconds(2) : absl::Milliseconds(50));
    if (!session.program()->Running()) {
      absl::StatusOr<int> code = session.program()->Wait(absl::ZeroDuration());
      return Outcome::Fail(expectation,
                           absl::StrCat("the plugin exited (status ", code.ok() ? *code : -1,
                                        ") after ", call.name));
    }
  }
  // Still serving: it answers, and the kubelet's stream stays open.
  grpc::ClientContext context;
  SetDeadline(session, &context);
  v1beta1::DevicePluginOptions options;
  if (grpc::Status alive = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
      !alive.ok()) {
    return Outcome::Fail(expectation, absl::StrCat("GetDevicePluginOptions fails afterwards: ",
                                                   FromGrpcStatus(alive).ToString()));
  }
  const std::string& socket = registration->socket;
  std::optional<absl::Status> ended;
  session.recorder().WaitUntil(
      [&](const PluginRecord& record) {
        return std::any_of(record.stream_ends.begin(), record.stream_ends.end(),
                           [&](const RecordedStreamEnd& end) { return end.socket == socket; });
      },
      std::min(absl::Now() + absl::Milliseconds(500), session.deadline()));
  for (const RecordedStreamEnd& end : session.recorder().Copy().stream_ends) {
    if (end.socket == socket) ended = end.status;
  }
  if (ended.has_value()) {
    return Outcome::Fail(
        expectation, absl::StrCat("the kubelet's ListAndWatch stream ended: ", ended->ToString()));
  }
  return Outcome::Pass(absl::StrCat("still serving after ", calls.size(), " kinds of call"));
}

}  // namespace kdp::manager::conformance
