#include "manager/src/conformance/device_plugin_scenarios.h"

#include <grpcpp/grpcpp.h>
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
#include "manager/src/conformance/session.h"

namespace kdp::manager::conformance {
namespace {

using v1beta1::ListAndWatchResponse;

// The deadline of one call the scenarios make to the plugin themselves.
constexpr absl::Duration kCallTimeout = absl::Seconds(10);
// How long a plugin told SIGTERM may take to exit: the kubelet's default termination grace
// period (terminationGracePeriodSeconds) for the DaemonSet pod it runs in.
constexpr absl::Duration kTerminationGrace = absl::Seconds(30);

// Every scenario but dp.register needs the plugin registered; dp.register judges a plugin that
// never does, the others are skipped.
absl::StatusOr<Registration> Registered(Session& session) {
  return session.WaitForRegistration(session.program_started());
}
Outcome NotRegistered(const absl::Status& status) {
  return Outcome::Skip(
      absl::StrCat("the plugin never registered (dp.register judges that): ", status.message()));
}

std::vector<std::string> Ids(const ListAndWatchResponse& list) {
  std::vector<std::string> ids;
  for (const v1beta1::Device& device : list.devices()) ids.push_back(device.id());
  return ids;
}
std::set<std::string> IdSet(const ListAndWatchResponse& list) {
  std::vector<std::string> ids = Ids(list);
  return {ids.begin(), ids.end()};
}
std::vector<std::string> HealthyIds(const ListAndWatchResponse& list) {
  std::set<std::string> seen;
  std::vector<std::string> ids;
  for (const v1beta1::Device& device : list.devices()) {
    if (device.health() == "Healthy" && seen.insert(device.id()).second) {
      ids.push_back(device.id());
    }
  }
  return ids;
}
std::string Joined(const std::set<std::string>& ids, size_t limit = 8) {
  std::vector<std::string> shown;
  for (const std::string& id : ids) {
    if (shown.size() == limit) {
      shown.push_back(absl::StrCat("… (", ids.size(), " in all)"));
      break;
    }
    shown.push_back(id);
  }
  return absl::StrJoin(shown, ", ");
}

// A client of the plugin's own socket, as the kubelet dials it.
std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& socket) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel(UnixTarget(socket), grpc::InsecureChannelCredentials()));
}
void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
}

// The latest ListAndWatch message on `socket`.
std::optional<ListAndWatchResponse> LatestList(const PluginRecord& record,
                                               const std::string& socket) {
  for (auto it = record.lists.rbegin(); it != record.lists.rend(); ++it) {
    if (it->socket == socket) return it->response;
  }
  return std::nullopt;
}

// ---- dp.register -----------------------------------------------------------------------------

Outcome CheckRegister(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) {
    return Outcome::Fail(
        "a Register call on kubelet.sock with version \"v1beta1\", an extended resource name and "
        "the file name of a socket the plugin already serves, accepted, then a first ListAndWatch "
        "list",
        registration.status().message());
  }
  const PluginRecord record = session.recorder().Copy();
  int refused = 0;
  for (const RecordedRegistration& r : record.registrations) refused += r.answer.ok() ? 0 : 1;
  return Outcome::Pass(absl::StrCat(
      "Register(version \"", registration->request.version(), "\", \"",
      registration->request.resource_name(), "\", endpoint \"", registration->request.endpoint(),
      "\") accepted", refused > 0 ? absl::StrCat(" after ", refused, " refused") : "",
      "; first list of ", registration->first_list.devices_size(), " devices"));
}

// ---- dp.options ------------------------------------------------------------------------------

Outcome CheckOptions(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const v1beta1::DevicePluginOptions& options = registration->options;
  const std::vector<std::string> ids = Ids(registration->first_list);
  auto stub = Dial(registration->socket);
  std::vector<std::string> served, unserved;
  if (options.get_preferred_allocation_available()) {
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_available_deviceids(id);
    container->set_allocation_size(ids.empty() ? 0 : 1);
    grpc::ClientContext context;
    SetDeadline(&context);
    v1beta1::PreferredAllocationResponse response;
    grpc::Status status = stub->GetPreferredAllocation(&context, request, &response);
    (status.error_code() == grpc::StatusCode::UNIMPLEMENTED ? unserved : served)
        .push_back("GetPreferredAllocation");
  }
  if (options.pre_start_required()) {
    v1beta1::PreStartContainerRequest request;
    if (!ids.empty()) request.add_devices_ids(ids.front());
    grpc::ClientContext context;
    SetDeadline(&context);
    v1beta1::PreStartContainerResponse response;
    grpc::Status status = stub->PreStartContainer(&context, request, &response);
    (status.error_code() == grpc::StatusCode::UNIMPLEMENTED ? unserved : served)
        .push_back("PreStartContainer");
  }
  if (!unserved.empty()) {
    return Outcome::Fail(
        "every RPC GetDevicePluginOptions advertises to be served",
        absl::StrCat(absl::StrJoin(unserved, " and "), " advertised but answered UNIMPLEMENTED"));
  }
  if (served.empty()) {
    return Outcome::Pass("advertises neither GetPreferredAllocation nor PreStartContainer");
  }
  return Outcome::Pass(absl::StrCat("advertises and serves ", absl::StrJoin(served, " and ")));
}

// ---- dp.devices ------------------------------------------------------------------------------

// What breaks the kubelet's rules in one list, or "".
std::string DeviceListProblems(const ListAndWatchResponse& list) {
  std::vector<std::string> problems;
  std::map<std::string, int> count;
  for (const v1beta1::Device& device : list.devices()) {
    if (device.id().empty()) problems.push_back("a device with an empty ID");
    if (++count[device.id()] == 2 && !device.id().empty()) {
      problems.push_back(absl::StrCat("device ", device.id(), " listed twice"));
    }
    if (device.health() != "Healthy" && device.health() != "Unhealthy") {
      problems.push_back(
          absl::StrCat("device ", device.id(), " with health \"", device.health(), "\""));
    }
    if (device.has_topology()) {
      for (const v1beta1::NUMANode& node : device.topology().nodes()) {
        if (node.id() < 0) {
          problems.push_back(absl::StrCat("device ", device.id(), " on NUMA node ", node.id()));
        }
      }
    }
  }
  if (problems.size() > 4) {
    problems.resize(4);
    problems.push_back("…");
  }
  return absl::StrJoin(problems, "; ");
}

Outcome CheckDevices(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const PluginRecord record = session.recorder().Copy();
  int lists = 0;
  for (const RecordedList& list : record.lists) {
    if (list.socket != registration->socket) continue;
    ++lists;
    if (std::string problems = DeviceListProblems(list.response); !problems.empty()) {
      return Outcome::Fail(
          "device IDs non-empty and unique, health \"Healthy\" or \"Unhealthy\", NUMA nodes >= 0",
          absl::StrCat("ListAndWatch message ", lists, ": ", problems));
    }
  }
  return Outcome::Pass(absl::StrCat(registration->first_list.devices_size(), " devices, ",
                                    HealthyIds(registration->first_list).size(),
                                    " healthy; IDs unique, health and NUMA nodes valid"));
}

// ---- dp.health-full-list ---------------------------------------------------------------------

Outcome CheckHealthFullList(Session& session) {
  if (session.options().health_trigger.empty()) {
    return Outcome::Skip(
        "no --health-trigger given: kdp-conformance cannot make a device of this plugin "
        "unhealthy by itself");
  }
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::vector<std::string> healthy = HealthyIds(registration->first_list);
  if (healthy.empty()) return Outcome::Skip("no healthy device to make unhealthy");
  const std::string target = healthy.front();
  const std::string& socket = registration->socket;
  PluginRecord before = session.recorder().Copy();
  const std::optional<ListAndWatchResponse> previous = LatestList(before, socket);
  const size_t seen = before.lists.size();
  if (absl::Status triggered = session.RunHealthTrigger(target); !triggered.ok()) {
    return Outcome::Skip(std::string(triggered.message()));
  }
  const std::set<std::string> expected_ids = IdSet(*previous);
  auto changed = [&](const ListAndWatchResponse& list) {
    if (IdSet(list) != expected_ids) return true;
    for (const v1beta1::Device& device : list.devices()) {
      if (device.id() == target && device.health() != "Healthy") return true;
    }
    return false;
  };
  std::optional<ListAndWatchResponse> after;
  session.recorder().WaitUntil(
      [&](const PluginRecord& record) {
        for (size_t i = seen; i < record.lists.size(); ++i) {
          if (record.lists[i].socket == socket && changed(record.lists[i].response)) {
            after = record.lists[i].response;
            return true;
          }
        }
        return false;
      },
      session.deadline());
  const std::string expectation =
      absl::StrCat("a new ListAndWatch message with all ", expected_ids.size(),
                   " devices (the kubelet replaces its whole list with each message) and ", target,
                   " unhealthy");
  if (!after.has_value()) {
    return Outcome::Fail(expectation, "no new message before the scenario's deadline");
  }
  std::set<std::string> missing, extra;
  const std::set<std::string> ids = IdSet(*after);
  std::set_difference(expected_ids.begin(), expected_ids.end(), ids.begin(), ids.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(ids.begin(), ids.end(), expected_ids.begin(), expected_ids.end(),
                      std::inserter(extra, extra.end()));
  if (!missing.empty() || !extra.empty()) {
    return Outcome::Fail(
        expectation,
        absl::StrCat("a message of ", after->devices_size(), " devices",
                     missing.empty() ? "" : absl::StrCat(", without ", Joined(missing)),
                     extra.empty() ? "" : absl::StrCat(", with new ", Joined(extra)),
                     " (the kubelet drops the devices a message leaves out)"));
  }
  return Outcome::Pass(
      absl::StrCat("a full list of ", ids.size(), " devices with ", target, " unhealthy"));
}

// ---- dp.allocate -----------------------------------------------------------------------------

bool ValidPermissions(const std::string& permissions) {
  if (permissions.empty()) return false;
  for (char c : permissions) {
    if (c != 'r' && c != 'w' && c != 'm') return false;
  }
  return true;
}

// What breaks the container runtime's rules in one Allocate answer, or "".
std::string AllocateProblems(const v1beta1::AllocateRequest& request,
                             const v1beta1::AllocateResponse& response) {
  if (response.container_responses_size() != request.container_requests_size()) {
    return absl::StrCat(response.container_responses_size(), " container responses for ",
                        request.container_requests_size(), " container requests");
  }
  std::vector<std::string> problems;
  for (const v1beta1::ContainerAllocateResponse& container : response.container_responses()) {
    for (const v1beta1::DeviceSpec& device : container.devices()) {
      if (!absl::StartsWith(device.container_path(), "/") ||
          !absl::StartsWith(device.host_path(), "/")) {
        problems.push_back(absl::StrCat("device \"", device.host_path(), "\" → \"",
                                        device.container_path(), "\": paths must be absolute"));
      }
      if (!ValidPermissions(device.permissions())) {
        problems.push_back(absl::StrCat("device \"", device.container_path(), "\" permissions \"",
                                        device.permissions(), "\": one or more of r, w, m"));
      }
    }
    for (const v1beta1::Mount& mount : container.mounts()) {
      if (!absl::StartsWith(mount.container_path(), "/") ||
          !absl::StartsWith(mount.host_path(), "/")) {
        problems.push_back(absl::StrCat("mount \"", mount.host_path(), "\" → \"",
                                        mount.container_path(), "\": paths must be absolute"));
      }
    }
    for (const auto& [name, value] : container.envs()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        problems.push_back(absl::StrCat("environment variable name \"", name, "\""));
      }
    }
    for (const v1beta1::CDIDevice& cdi : container.cdi_devices()) {
      const size_t slash = cdi.name().find('/');
      const size_t equals = cdi.name().find('=');
      if (slash == std::string::npos || equals == std::string::npos || equals < slash ||
          equals + 1 == cdi.name().size()) {
        problems.push_back(absl::StrCat("CDI device \"", cdi.name(),
                                        "\": not a fully qualified vendor/class=name"));
      }
    }
  }
  return absl::StrJoin(problems, "; ");
}

Outcome CheckAllocate(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::string& resource = registration->request.resource_name();
  const std::vector<std::string> healthy = HealthyIds(registration->first_list);
  if (healthy.empty()) return Outcome::Skip("no healthy device to allocate");
  const int count = healthy.size() >= 2 ? 2 : 1;
  const std::string manifest = absl::StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: conformance-allocate\n  namespace: default\n"
      "spec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10\n"
      "    resources:\n      limits:\n        ",
      resource, ": ", count, "\n");
  absl::StatusOr<admin::v1::ApplyPodResponse> applied = session.ApplyPod(manifest);
  const std::string expectation = absl::StrCat(
      "a pod asking for ", count, " ", resource,
      " admitted: one ContainerAllocateResponse per container request, absolute device and "
      "mount paths, permissions of r, w and m, fully qualified CDI names",
      registration->options.pre_start_required() ? ", PreStartContainer answered" : "");
  if (!applied.ok()) return Outcome::Fail(expectation, applied.status().message());
  const PluginRecord record = session.recorder().Copy();
  const RecordedAllocate* allocation = nullptr;
  for (const RecordedAllocate& recorded : record.allocations) {
    if (recorded.resource == resource) allocation = &recorded;
  }
  if (allocation == nullptr) {
    return Outcome::Fail(expectation, absl::StrCat("no Allocate call (the pod was ",
                                                   applied->admitted() ? "" : "not ",
                                                   "admitted: ", applied->message(), ")"));
  }
  if (!allocation->response.ok()) {
    return Outcome::Fail(
        expectation, absl::StrCat("Allocate failed: ", allocation->response.status().ToString()));
  }
  if (std::string problems = AllocateProblems(allocation->request, *allocation->response);
      !problems.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("Allocate answered: ", problems));
  }
  for (const RecordedPreStart& pre_start : record.pre_starts) {
    if (pre_start.resource == resource && !pre_start.status.ok()) {
      return Outcome::Fail(expectation,
                           absl::StrCat("PreStartContainer failed: ", pre_start.status.message()));
    }
  }
  if (!applied->admitted()) {
    return Outcome::Fail(
        expectation, absl::StrCat("not admitted: ", applied->reason(), ": ", applied->message()));
  }
  return Outcome::Pass(absl::StrCat(
      "admitted with ", count, " devices; ",
      allocation->response->container_responses(0).devices_size(), " device nodes, ",
      allocation->response->container_responses(0).mounts_size(), " mounts, ",
      allocation->response->container_responses(0).envs_size(), " environment variables, ",
      allocation->response->container_responses(0).cdi_devices_size(), " CDI devices"));
}

// ---- dp.preferred-allocation -----------------------------------------------------------------

// One GetPreferredAllocation of 2 among `available` that must include `must`: "" when the answer
// is right, else what was wrong with it.
std::string PreferredProblem(v1beta1::DevicePlugin::Stub& stub,
                             const std::vector<std::string>& available, const std::string& must,
                             grpc::StatusCode* code) {
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  container->add_must_include_deviceids(must);
  container->set_allocation_size(2);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1beta1::PreferredAllocationResponse response;
  grpc::Status status = stub.GetPreferredAllocation(&context, request, &response);
  *code = status.error_code();
  if (!status.ok()) return absl::StrCat("an error: ", FromGrpcStatus(status).ToString());
  if (response.container_responses_size() != 1) {
    return absl::StrCat(response.container_responses_size(), " container responses for 1 request");
  }
  const auto& answer = response.container_responses(0).deviceids();
  const std::set<std::string> offered(available.begin(), available.end());
  const std::set<std::string> chosen(answer.begin(), answer.end());
  const std::string got =
      absl::StrCat("[", absl::StrJoin(answer, ", "), "] with must_include [", must, "]");
  if (answer.size() != 2 || chosen.size() != 2) return got;
  for (const std::string& id : chosen) {
    if (!offered.contains(id)) return absl::StrCat(got, ": ", id, " was not available");
  }
  if (!chosen.contains(must)) return absl::StrCat(got, ": without ", must);
  return "";
}

Outcome CheckPreferredAllocation(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  if (!registration->options.get_preferred_allocation_available()) {
    return Outcome::Skip("the plugin does not advertise GetPreferredAllocation");
  }
  const std::vector<std::string> healthy = HealthyIds(registration->first_list);
  if (healthy.size() < 2) return Outcome::Skip("fewer than 2 healthy devices to choose from");
  const std::string expectation = absl::StrCat("2 distinct devices of the ", healthy.size(),
                                               " available, the must_include device among them");
  auto stub = Dial(registration->socket);
  // The first and the last device in turn: an answer that ignores must_include misses one.
  for (const std::string& must : {healthy.front(), healthy.back()}) {
    grpc::StatusCode code = grpc::StatusCode::OK;
    const std::string problem = PreferredProblem(*stub, healthy, must, &code);
    if (code == grpc::StatusCode::UNIMPLEMENTED) {
      return Outcome::Skip("advertised but answered UNIMPLEMENTED (dp.options judges that)");
    }
    if (!problem.empty()) return Outcome::Fail(expectation, problem);
  }
  return Outcome::Pass(absl::StrCat("chose 2 of ", healthy.size(), " including ", healthy.front(),
                                    ", then including ", healthy.back()));
}

// ---- dp.kubelet-restart ----------------------------------------------------------------------

Outcome CheckKubeletRestart(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::set<std::string> before = IdSet(registration->first_list);
  const absl::Time restarted = absl::Now();
  if (absl::Status status = session.RestartManager(); !status.ok()) {
    return Outcome::Skip(
        absl::StrCat("the embedded kdp-manager did not restart: ", status.message()));
  }
  const std::string expectation = absl::StrCat(
      "the plugin to register again within ",
      absl::FormatDuration(session.options().register_timeout),
      " of kubelet.sock being re-created (a restarting kubelet removes every plugin socket and "
      "never dials a plugin by itself) with its ",
      before.size(), " devices");
  absl::StatusOr<Registration> again = session.WaitForRegistration(restarted);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  const std::set<std::string> after = IdSet(again->first_list);
  if (after != before) {
    return Outcome::Fail(
        expectation, absl::StrCat("devices ", Joined(after), " (before: ", Joined(before), ")"));
  }
  return Outcome::Pass(absl::StrCat(
      "registered again after ",
      absl::FormatDuration(absl::Trunc(
          session.recorder().Copy().registrations.back().at - restarted, absl::Milliseconds(1))),
      " with its ", after.size(), " devices"));
}

// ---- dp.plugin-restart -----------------------------------------------------------------------

Outcome CheckPluginRestart(Session& session) {
  absl::StatusOr<Registration> registration = Registered(session);
  if (!registration.ok()) return NotRegistered(registration.status());
  const std::set<std::string> before = IdSet(registration->first_list);
  // A crash: nothing is cleaned up, its socket file stays.
  (void)session.program()->Signal(SIGKILL);
  (void)session.program()->Wait(absl::Seconds(5));
  if (absl::Status started = session.StartProgram(); !started.ok()) {
    return Outcome::Skip(std::string(started.message()));
  }
  const std::string expectation = absl::StrCat(
      "the plugin, killed (SIGKILL) and started again, to serve and register again with its ",
      before.size(), " devices (its old socket file is still there)");
  absl::StatusOr<Registration> again = Registered(session);
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
  const absl::Time told = absl::Now();
  if (absl::Status signalled = session.program()->Signal(SIGTERM); !signalled.ok()) {
    return Outcome::Fail("the plugin running until told to stop",
                         absl::StrCat("it had exited already: ", signalled.message()));
  }
  const std::string expectation =
      absl::StrCat("the plugin to exit within ", absl::FormatDuration(kTerminationGrace),
                   " of SIGTERM (the pod's termination grace period) and remove its socket ",
                   registration->socket);
  absl::StatusOr<int> code =
      session.program()->Wait(std::min(kTerminationGrace, session.deadline() - absl::Now()));
  if (!code.ok()) return Outcome::Fail(expectation, "still running");
  const absl::Duration took = absl::Trunc(absl::Now() - told, absl::Milliseconds(1));
  const std::string exited =
      *code >= 128 ? absl::StrCat("killed by signal ", *code - 128, " (no SIGTERM handler)")
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
      "the plugin to keep running and serving the kubelet after legal calls it may not expect "
      "(an answer, even an error, is fine)";
  struct Call {
    std::string name;
    std::function<void()> make;
  };
  std::vector<Call> calls;
  calls.push_back({"GetDevicePluginOptions three times", [&] {
                     for (int i = 0; i < 3; ++i) {
                       grpc::ClientContext context;
                       SetDeadline(&context);
                       v1beta1::DevicePluginOptions options;
                       (void)stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
                     }
                   }});
  calls.push_back({"a second ListAndWatch stream, cancelled after its first message", [&] {
                     grpc::ClientContext context;
                     SetDeadline(&context);
                     auto reader = stub->ListAndWatch(&context, v1beta1::Empty());
                     ListAndWatchResponse first;
                     (void)reader->Read(&first);
                     context.TryCancel();
                     (void)reader->Finish();
                   }});
  calls.push_back({"Allocate with two container requests (a pod of two containers)", [&] {
                     v1beta1::AllocateRequest request;
                     for (size_t i = 0; i < 2 && !healthy.empty(); ++i) {
                       request.add_container_requests()->add_devices_ids(
                           healthy[std::min(i, healthy.size() - 1)]);
                     }
                     grpc::ClientContext context;
                     SetDeadline(&context);
                     v1beta1::AllocateResponse response;
                     (void)stub->Allocate(&context, request, &response);
                   }});
  calls.push_back({"GetPreferredAllocation, advertised or not", [&] {
                     v1beta1::PreferredAllocationRequest request;
                     auto* container = request.add_container_requests();
                     for (const std::string& id : healthy) container->add_available_deviceids(id);
                     container->set_allocation_size(healthy.empty() ? 0 : 1);
                     grpc::ClientContext context;
                     SetDeadline(&context);
                     v1beta1::PreferredAllocationResponse response;
                     (void)stub->GetPreferredAllocation(&context, request, &response);
                   }});
  calls.push_back({"PreStartContainer, advertised or not", [&] {
                     v1beta1::PreStartContainerRequest request;
                     if (!healthy.empty()) request.add_devices_ids(healthy.front());
                     grpc::ClientContext context;
                     SetDeadline(&context);
                     v1beta1::PreStartContainerResponse response;
                     (void)stub->PreStartContainer(&context, request, &response);
                   }});
  for (const Call& call : calls) {
    call.make();
    // A crash takes a moment to end the process.
    (void)session.program()->Wait(absl::Milliseconds(200));
    if (!session.program()->Running()) {
      absl::StatusOr<int> code = session.program()->Wait(absl::ZeroDuration());
      return Outcome::Fail(expectation,
                           absl::StrCat("the plugin exited (status ", code.ok() ? *code : -1,
                                        ") after ", call.name));
    }
  }
  const PluginRecord record = session.recorder().Copy();
  for (const RecordedStreamEnd& end : record.stream_ends) {
    if (end.socket == registration->socket) {
      return Outcome::Fail(expectation, absl::StrCat("the kubelet's ListAndWatch stream ended: ",
                                                     end.status.ToString()));
    }
  }
  return Outcome::Pass(absl::StrCat("still serving after ", calls.size(), " kinds of call"));
}

}  // namespace

const std::vector<Scenario>& DevicePluginScenarios() {
  static const auto* const kScenarios = new std::vector<Scenario>{
      {"dp.register", "registers on kubelet.sock once it serves, and sends a first device list",
       "Register validates version v1beta1 and the extended resource name, then dials the "
       "plugin's socket (a file name in the device-plugins directory) synchronously and calls "
       "GetDevicePluginOptions before it answers; it then opens ListAndWatch",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go (RegisterPlugin, validation); "
       "handler.go (connectClient)",
       CheckRegister},
      {"dp.options", "serves every RPC its options advertise",
       "GetDevicePluginOptions decides whether the kubelet calls GetPreferredAllocation (before "
       "choosing devices) and PreStartContainer (before each container starts); an advertised "
       "RPC that fails fails the pod",
       "pkg/kubelet/cm/devicemanager/manager.go (callGetPreferredAllocationIfAvailable, "
       "callPreStartContainerIfNeeded)",
       CheckOptions},
      {"dp.devices", "lists devices with unique, non-empty IDs and valid health and NUMA nodes",
       "the kubelet counts a device per ID (duplicates collapse), treats any health other than "
       "\"Healthy\" as unhealthy and builds topology hints from the NUMA node IDs",
       "pkg/kubelet/cm/devicemanager/manager.go (genericDeviceUpdateCallback); topology_hints.go",
       CheckDevices},
      {"dp.health-full-list", "sends a device's health change as a new full list",
       "every ListAndWatch message replaces the resource's whole device list: a device left out "
       "of a message is gone from the node",
       "pkg/kubelet/cm/devicemanager/manager.go (genericDeviceUpdateCallback)",
       CheckHealthFullList},
      {"dp.allocate", "answers Allocate with a container response the runtime can apply",
       "the kubelet admits a pod only once Allocate answered one ContainerAllocateResponse per "
       "container request, and hands its device nodes, mounts, environment and CDI devices to the "
       "container runtime, which needs absolute paths and cgroup permissions of r, w and m",
       "pkg/kubelet/cm/devicemanager/manager.go (allocateContainerResources); "
       "CRI DeviceSpec/Mount; CDI device names",
       CheckAllocate},
      {"dp.preferred-allocation",
       "honours must_include and the allocation size in GetPreferredAllocation",
       "the kubelet asks for `allocation_size` devices among `available_deviceIDs` that include "
       "`must_include_deviceIDs` (devices the container already holds or topology requires) "
       "and uses the answer only if it satisfies that",
       "pkg/kubelet/cm/devicemanager/manager.go (filterByAffinity, "
       "callGetPreferredAllocationIfAvailable)",
       CheckPreferredAllocation},
      {"dp.kubelet-restart", "registers again after a kubelet restart",
       "a starting kubelet removes every socket in the device-plugins directory and serves "
       "kubelet.sock anew; it never dials a plugin by itself, so the resource stays at 0 "
       "allocatable until the plugin registers again (removed after 5 minutes)",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go (CleanupPluginDirectory); "
       "kubernetes#121994",
       CheckKubeletRestart},
      {"dp.plugin-restart", "serves and registers again after its own crash",
       "a crashed plugin's socket file stays in the device-plugins directory; the restarted "
       "plugin must serve on it again and register, or its resource stays unavailable",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go (Start removes the old socket)",
       CheckPluginRestart},
      {"dp.sigterm", "exits cleanly on SIGTERM and removes its socket",
       "a DaemonSet pod gets SIGTERM and then SIGKILL after its grace period; a socket left "
       "behind is dialled by the next kubelet restart's cleanup and by tools in vain",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go (Stop removes the socket)",
       CheckSigterm},
      {"dp.unexpected-calls", "survives legal calls it may not expect",
       "the kubelet may open a new ListAndWatch stream before an old one ends (re-registration), "
       "allocate for several containers in one Allocate, and ask GetDevicePluginOptions again",
       "pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go; kubernetes#121994",
       CheckUnexpectedCalls},
  };
  return *kScenarios;
}

}  // namespace kdp::manager::conformance
