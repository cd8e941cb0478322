#include "manager/src/conformance/device_plugin_checks.h"

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

using v1beta1::ListAndWatchResponse;

// Every scenario but dp.register needs the plugin registered; dp.register judges a plugin that
// never does, the others are skipped.
absl::StatusOr<Registration> Registered(Session& session) { return session.WaitForRegistration(); }
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
std::string Joined(const std::set<std::string>& ids, size_t limit) {
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
void SetDeadline(const Session& session, grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(session.CallDeadline()));
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
  int refused = 0;  // before the accepted one
  for (const RecordedRegistration& r : record.registrations) {
    if (r.at < registration->at && !r.answer.ok()) ++refused;
  }
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
    SetDeadline(session, &context);
    v1beta1::PreferredAllocationResponse response;
    grpc::Status status = stub->GetPreferredAllocation(&context, request, &response);
    (status.error_code() == grpc::StatusCode::UNIMPLEMENTED ? unserved : served)
        .push_back("GetPreferredAllocation");
  }
  if (options.pre_start_required()) {
    v1beta1::PreStartContainerRequest request;
    if (!ids.empty()) request.add_devices_ids(ids.front());
    grpc::ClientContext context;
    SetDeadline(session, &context);
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
  // The first message since the trigger that tells the device's health or changes the list.
  auto first_change = [&](const PluginRecord& record) -> const ListAndWatchResponse* {
    for (size_t i = seen; i < record.lists.size(); ++i) {
      if (record.lists[i].socket == socket && changed(record.lists[i].response)) {
        return &record.lists[i].response;
      }
    }
    return nullptr;
  };
  session.recorder().WaitUntil(
      [&](const PluginRecord& record) { return first_change(record) != nullptr; },
      session.deadline());
  const PluginRecord record = session.recorder().Copy();
  std::optional<ListAndWatchResponse> after;
  if (const ListAndWatchResponse* found = first_change(record); found != nullptr) after = *found;
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
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    for (const std::string& id : healthy) container->add_available_deviceids(id);
    container->add_must_include_deviceids(must);
    container->set_allocation_size(2);
    grpc::ClientContext context;
    SetDeadline(session, &context);
    v1beta1::PreferredAllocationResponse response;
    grpc::Status status = stub->GetPreferredAllocation(&context, request, &response);
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return Outcome::Skip("advertised but answered UNIMPLEMENTED (dp.options judges that)");
    }
    if (!status.ok()) {
      return Outcome::Fail(expectation,
                           absl::StrCat("an error: ", FromGrpcStatus(status).ToString()));
    }
    if (std::string problem = PreferredProblems(*container, response); !problem.empty()) {
      return Outcome::Fail(expectation, problem);
    }
  }
  return Outcome::Pass(absl::StrCat("chose 2 of ", healthy.size(), " including ", healthy.front(),
                                    ", then including ", healthy.back()));
}

}  // namespace kdp::manager::conformance
