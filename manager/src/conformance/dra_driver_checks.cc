#include "manager/src/conformance/dra_driver_checks.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "manager/src/conformance/dra_answers.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"

namespace kdp::manager::conformance {
namespace {

using json = nlohmann::json;

// How long an incomplete pool may take to complete once its first slices are seen.
constexpr absl::Duration kSliceSettle = absl::Seconds(3);

// "2 refused (…); 1 accepted" and the like: the DRA registrations since `since`.
std::string DescribeDraRegistrations(const DraRecord& record, absl::Time since) {
  std::vector<std::string> seen;
  for (const RecordedDraRegistration& registration : record.registrations) {
    if (registration.at < since) continue;
    seen.push_back(registration.answer.ok()
                       ? absl::StrCat("driver ", registration.driver, " at ", registration.endpoint,
                                      " accepted")
                       : absl::StrCat("driver \"", registration.driver, "\" at \"",
                                      registration.endpoint, "\" with versions [",
                                      absl::StrJoin(registration.versions, ", "),
                                      "] refused: ", registration.answer.message()));
  }
  if (seen.empty()) return "no DRAPlugin registration through plugins_registry";
  return absl::StrJoin(seen, "; ");
}

std::optional<DraRegistration> FindDraRegistration(const DraRecord& record, absl::Time since,
                                                   absl::string_view driver) {
  for (const RecordedDraRegistration& registration : record.registrations) {
    if (registration.at < since || !registration.answer.ok()) continue;
    if (!driver.empty() && registration.driver != driver) continue;
    return DraRegistration{.at = registration.at,
                           .driver = registration.driver,
                           .endpoint = registration.endpoint,
                           .versions = registration.versions,
                           .registration_socket = ""};
  }
  return std::nullopt;
}

// The DeviceClass, ResourceClaim and Pod of AdmitPodWithClaim.
std::string ClaimManifest(const std::string& driver, absl::string_view name) {
  return absl::StrReplaceAll(R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: kdp-conformance
spec:
  selectors:
  - cel:
      expression: 'device.driver == "DRIVER"'
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: NAME
  namespace: default
spec:
  devices:
    requests:
    - name: device
      exactly:
        deviceClassName: kdp-conformance
        allocationMode: ExactCount
        count: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  namespace: default
spec:
  resourceClaims:
  - name: device
    resourceClaimName: NAME
  containers:
  - name: probe
    image: registry.k8s.io/pause:3.10
    resources:
      claims:
      - name: device
)",
                             {{"DRIVER", driver}, {"NAME", name}});
}

}  // namespace

absl::StatusOr<DraRegistration> WaitForDraRegistration(Session& session, absl::Time since,
                                                       absl::Time window_start,
                                                       absl::string_view driver) {
  const absl::Time until =
      std::min(window_start + session.options().register_timeout, session.deadline());
  auto registered = [&](const DraRecord& record) {
    return FindDraRegistration(record, since, driver).has_value();
  };
  std::optional<int> failed;
  while (true) {
    if (session.dra_recorder().WaitUntil(registered,
                                         std::min(until, absl::Now() + absl::Milliseconds(100)))) {
      DraRegistration found = *FindDraRegistration(session.dra_recorder().Copy(), since, driver);
      // The plugin manager lists the registration once the handler returned: moments later.
      const absl::Time listed_by = std::min(absl::Now() + absl::Seconds(2), session.deadline());
      while (found.registration_socket.empty()) {
        if (absl::StatusOr<admin::v1::NodeStatus> status = session.NodeStatus(); status.ok()) {
          for (const admin::v1::RegisteredPlugin& plugin : status->registered_plugins()) {
            if (plugin.type() == "DRAPlugin" && plugin.name() == found.driver &&
                plugin.endpoint() == found.endpoint) {
              found.registration_socket = plugin.socket();
            }
          }
        }
        if (!found.registration_socket.empty() || absl::Now() >= listed_by) break;
        absl::SleepFor(absl::Milliseconds(20));
      }
      return found;
    }
    if (absl::Now() >= until) break;
    Subprocess* program = session.program();
    if (program != nullptr && !program->Running()) {
      absl::StatusOr<int> code = program->Wait(absl::ZeroDuration());
      if (code.ok() && *code != 0) {
        failed = *code;
        break;
      }
    }
  }
  const std::string what = DescribeDraRegistrations(session.dra_recorder().Copy(), since);
  if (failed.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the program exited with status ", *failed, " before a registration was accepted: ", what));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "no accepted registration within ", absl::FormatDuration(until - window_start), ": ", what));
}

absl::StatusOr<DraRegistration> DraRegistered(Session& session) {
  return WaitForDraRegistration(session, session.program_started(), session.program_started());
}

Outcome DraNotRegistered(const absl::Status& status) {
  return Outcome::Skip(
      absl::StrCat("the driver never registered (dra.register judges that): ", status.message()));
}

absl::StatusOr<std::vector<json>> NodeSlices(Session& session, const std::string& driver) {
  absl::StatusOr<json> list = session.ApiGet(
      absl::StrCat("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D",
                   session.node_name()));
  if (!list.ok()) return list.status();
  std::vector<json> slices;
  if (auto items = list->find("items"); items != list->end() && items->is_array()) {
    for (const json& slice : *items) {
      const json& spec = slice.contains("spec") ? slice["spec"] : json();
      if (spec.is_object() && spec.value("driver", "") == driver &&
          spec.value("nodeName", "") == session.node_name()) {
        slices.push_back(slice);
      }
    }
  }
  return slices;
}

SliceWait WaitForSlices(Session& session, const std::string& driver, absl::Time until) {
  SliceWait wait;
  while (true) {
    absl::StatusOr<std::vector<json>> slices = NodeSlices(session, driver);
    if (slices.ok()) {
      wait.slices = *std::move(slices);
      wait.error = absl::OkStatus();
      if (!PublishedDevices(wait.slices).empty() && PoolsComplete(wait.slices)) {
        wait.complete = true;
        return wait;
      }
      // A driver publishes a pool's slices in one go: once some are there, the rest follow
      // within moments or not at all.
      if (!wait.slices.empty()) until = std::min(until, absl::Now() + kSliceSettle);
    } else {
      wait.error = slices.status();
    }
    if (absl::Now() >= until) return wait;
    absl::SleepFor(std::min(absl::Milliseconds(200), until - absl::Now()));
  }
}

std::shared_ptr<dra::DraPlugin> DialDriver(const Session& session,
                                           const DraRegistration& registration) {
  absl::StatusOr<std::string> service = dra::ChooseDraService(registration.versions);
  return std::make_shared<dra::DraPluginClient>(
      registration.driver, registration.endpoint, service.ok() ? *service : dra::kDraV1Service,
      std::max(session.CallDeadline() - absl::Now(), absl::Milliseconds(1)));
}

absl::StatusOr<ClaimedPod> AdmitPodWithClaim(Session& session, const DraRegistration& registration,
                                             absl::string_view name) {
  ClaimedPod pod;
  pod.name = std::string(name);
  // The scheduler allocates from complete pools only: give the driver its register timeout to
  // publish them (dra.resource-slices judges what it published).
  (void)WaitForSlices(
      session, registration.driver,
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  const absl::Time before = absl::Now();
  absl::StatusOr<admin::v1::ApplyResponse> applied =
      session.Apply(ClaimManifest(registration.driver, name));
  if (!applied.ok()) {
    return absl::InternalError(absl::StrCat("the manager refused kdp-conformance's own claim: ",
                                            applied.status().message()));
  }
  for (const admin::v1::AppliedObject& object : applied->objects()) {
    if (object.kind() != "Pod") continue;
    pod.admitted = object.pod().admitted();
    pod.admission_message = absl::StrCat(object.pod().reason(), ": ", object.pod().message());
  }
  absl::StatusOr<json> claim = session.ApiGet(
      absl::StrCat("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/", name));
  if (!claim.ok()) return claim.status();
  pod.claim_uid = claim->value("/metadata/uid"_json_pointer, "");
  pod.allocation_results =
      claim->value("/status/allocation/devices/results"_json_pointer, json::array());
  for (const RecordedPrepare& prepare : session.dra_recorder().Copy().prepares) {
    if (prepare.at < before) continue;
    const bool asked = std::any_of(prepare.request.claims().begin(), prepare.request.claims().end(),
                                   [&](const auto& c) { return c.uid() == pod.claim_uid; });
    if (!asked) continue;
    pod.prepare = prepare;
    if (!prepare.response.ok()) {
      pod.answer = prepare.response.status();
    } else if (auto it = prepare.response->claims().find(pod.claim_uid);
               it == prepare.response->claims().end()) {
      pod.answer =
          absl::NotFoundError(absl::StrCat("the answer leaves claim ", pod.claim_uid, " out"));
    } else {
      pod.answer = it->second;
    }
  }
  return pod;
}

std::optional<Outcome> NotPrepared(const ClaimedPod& pod) {
  if (!pod.prepare.has_value()) {
    return Outcome::Skip(absl::StrCat(
        "no device of the driver could be allocated to a claim, so nothing was prepared (",
        pod.admission_message, "); dra.resource-slices judges the slices"));
  }
  if (!pod.answer.ok() || !pod.answer->error().empty()) {
    return Outcome::Skip("NodePrepareResources failed for the claim (dra.prepare judges that)");
  }
  return std::nullopt;
}

absl::StatusOr<drapb::NodeUnprepareResourceResponse> DeleteAndWaitForUnprepare(
    Session& session, const ClaimedPod& pod, absl::Time until) {
  const absl::Time since = absl::Now();
  if (absl::Status deleted = session.DeletePod("default", pod.name); !deleted.ok()) {
    return absl::InternalError(
        absl::StrCat("the manager could not delete pod ", pod.name, ": ", deleted.message()));
  }
  auto call_for_claim = [&](const RecordedUnprepare& call) {
    return call.at >= since &&
           std::any_of(call.request.claims().begin(), call.request.claims().end(),
                       [&](const auto& c) { return c.uid() == pod.claim_uid; });
  };
  // The reconcile loop retries a failed unprepare; the first answer is what is judged.
  auto called = [&](const DraRecord& record) {
    return std::any_of(record.unprepares.begin(), record.unprepares.end(), call_for_claim);
  };
  if (!session.dra_recorder().WaitUntil(called, until)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no NodeUnprepareResources call for claim ", pod.claim_uid, " within ",
                     absl::FormatDuration(absl::Trunc(until - since, absl::Seconds(1))),
                     " of the pod's deletion"));
  }
  for (const RecordedUnprepare& call : session.dra_recorder().Copy().unprepares) {
    if (!call_for_claim(call)) continue;
    if (!call.response.ok()) return call.response.status();
    auto it = call.response->claims().find(pod.claim_uid);
    if (it == call.response->claims().end()) {
      return absl::NotFoundError(absl::StrCat("the answer leaves claim ", pod.claim_uid, " out"));
    }
    return it->second;
  }
  return absl::InternalError("the recorded call went missing");
}

// ---- dra.register ----------------------------------------------------------------------------

Outcome CheckDraRegister(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) {
    return Outcome::Fail(
        absl::StrCat("a DRAPlugin registration through ", session.root(),
                     "/plugins_registry the kubelet accepts (a v1.DRAPlugin or v1beta1.DRAPlugin "
                     "service, an absolute endpoint)"),
        registration.status().message());
  }
  const std::string expectation = absl::StrCat(
      "driver ", registration->driver, " serving its DRA service on ", registration->endpoint);
  std::error_code error;
  if (!std::filesystem::is_socket(registration->endpoint, error)) {
    return Outcome::Fail(expectation, "no socket there");
  }
  // The kubelet dials the endpoint and keeps the connection; a driver whose endpoint never
  // connects has its slices wiped after 30 s.
  const absl::Time until =
      std::min(registration->at + session.options().register_timeout, session.deadline());
  bool connected = false;
  while (!connected) {
    if (absl::StatusOr<admin::v1::NodeStatus> status = session.NodeStatus(); status.ok()) {
      for (const admin::v1::DraDriverStatus& driver : status->dra_drivers()) {
        for (const admin::v1::DraPluginEndpoint& endpoint : driver.endpoints()) {
          connected =
              connected || (driver.name() == registration->driver &&
                            endpoint.endpoint() == registration->endpoint && endpoint.connected());
        }
      }
    }
    if (connected || absl::Now() >= until) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  if (!connected) return Outcome::Fail(expectation, "the manager's connection never became ready");
  absl::StatusOr<std::string> service = dra::ChooseDraService(registration->versions);
  return Outcome::Pass(
      absl::StrCat("driver ", registration->driver, " registered after ",
                   absl::FormatDuration(absl::Trunc(registration->at - session.program_started(),
                                                    absl::Milliseconds(1))),
                   " with [", absl::StrJoin(registration->versions, ", "), "], speaking ",
                   service.ok() ? *service : "?"));
}

// ---- dra.resource-slices ---------------------------------------------------------------------

Outcome CheckResourceSlices(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  const std::string expectation =
      absl::StrCat("ResourceSlices of driver ", registration->driver, " on node ",
                   session.node_name(), " with devices, in complete pools, owned by the Node");
  const SliceWait wait = WaitForSlices(
      session, registration->driver,
      std::min(registration->at + session.options().register_timeout, session.deadline()));
  if (wait.slices.empty()) {
    return Outcome::Fail(
        expectation,
        absl::StrCat("none within ", absl::FormatDuration(session.options().register_timeout),
                     " of the registration (the API refuses an invalid slice with 422: see the "
                     "driver's output)",
                     wait.error.ok() ? "" : absl::StrCat("; ", wait.error.message())));
  }
  absl::StatusOr<json> node = session.ApiGet(absl::StrCat("/api/v1/nodes/", session.node_name()));
  if (!node.ok())
    return Outcome::Skip(absl::StrCat("cannot read the Node: ", node.status().message()));
  const std::string problems = SliceProblems(wait.slices, session.node_name(),
                                             node->value("/metadata/uid"_json_pointer, ""));
  if (!problems.empty()) return Outcome::Fail(expectation, problems);
  return Outcome::Pass(absl::StrCat(wait.slices.size(), " slice",
                                    wait.slices.size() == 1 ? "" : "s", ", ",
                                    PublishedDevices(wait.slices).size(), " devices"));
}

// ---- dra.prepare -----------------------------------------------------------------------------

Outcome CheckPrepare(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (!pod->prepare.has_value()) return *NotPrepared(*pod);
  const std::string expectation = absl::StrCat(
      "NodePrepareResources to prepare exactly the claim's allocated devices, with CDI device IDs "
      "defined by valid specs in ",
      session.cdi_root());
  if (!pod->answer.ok()) return Outcome::Fail(expectation, pod->answer.status().message());
  const CdiIndex cdi = ReadCdiSpecs(session.cdi_root());
  std::string problems =
      PrepareProblems(pod->allocation_results, registration->driver, *pod->answer, cdi);
  if (problems.empty() && !cdi.invalid.empty()) {
    problems = absl::StrCat("invalid CDI spec ", cdi.invalid.front());
  }
  if (problems.empty()) problems = CdiConflicts(cdi);
  if (!problems.empty()) return Outcome::Fail(expectation, problems);
  if (!pod->admitted) {
    return Outcome::Fail("the pod admitted once its claim was prepared", pod->admission_message);
  }
  const std::vector<std::string> devices = AnswerDevices(*pod->answer);
  return Outcome::Pass(absl::StrCat("prepared ", absl::StrJoin(devices, ", ")));
}

// ---- dra.prepare-idempotent ------------------------------------------------------------------

Outcome CheckPrepareIdempotent(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  const CdiIndex before = ReadCdiSpecs(session.cdi_root());
  // The kubelet calls again for a claim whose first answer it could not record (a crash before
  // its checkpoint was written, a timeout): the same request, the same answer expected.
  absl::StatusOr<drapb::NodePrepareResourcesResponse> again =
      DialDriver(session, *registration)->NodePrepareResources(pod->prepare->request);
  const std::string expectation =
      "a repeated NodePrepareResources for a prepared claim to answer the same devices and CDI "
      "IDs, without a second spec";
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  auto it = again->claims().find(pod->claim_uid);
  if (it == again->claims().end()) {
    return Outcome::Fail(expectation,
                         absl::StrCat("the answer leaves claim ", pod->claim_uid, " out"));
  }
  if (!it->second.error().empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the claim failed: ", it->second.error()));
  }
  const std::vector<std::string> first = AnswerDevices(*pod->answer);
  const std::vector<std::string> second = AnswerDevices(it->second);
  if (first != second) {
    return Outcome::Fail(expectation, absl::StrCat("first ", absl::StrJoin(first, ", "), "; then ",
                                                   absl::StrJoin(second, ", ")));
  }
  const CdiIndex after = ReadCdiSpecs(session.cdi_root());
  if (std::string conflicts = CdiConflicts(after); !conflicts.empty()) {
    return Outcome::Fail(expectation, conflicts);
  }
  for (const auto& [device, files] : before.devices) {
    if (after.devices.count(device) == 0) {
      return Outcome::Fail(expectation, absl::StrCat("CDI device ", device, " gone"));
    }
  }
  return Outcome::Pass(absl::StrCat("the same answer twice: ", absl::StrJoin(second, ", ")));
}

// ---- dra.prepare-after-reboot ----------------------------------------------------------------

Outcome CheckPrepareAfterReboot(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  const std::set<std::string> files_before = ReadCdiSpecs(session.cdi_root()).files;
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  std::vector<std::string> ids;
  for (const auto& device : pod->answer->devices()) {
    ids.insert(ids.end(), device.cdi_device_ids().begin(), device.cdi_device_ids().end());
  }
  {
    const CdiIndex resolved = ReadCdiSpecs(session.cdi_root());
    std::erase_if(ids, [&](const std::string& id) { return resolved.devices.count(id) == 0; });
  }
  if (ids.empty()) {
    return Outcome::Skip(
        "the driver's answer names no CDI device a spec defines (dra.prepare judges that)");
  }
  std::shared_ptr<dra::DraPlugin> driver = DialDriver(session, *registration);
  // Repeated as it is first: a driver that fails this fails dra.prepare-idempotent.
  absl::StatusOr<drapb::NodePrepareResourcesResponse> repeated =
      driver->NodePrepareResources(pod->prepare->request);
  if (!repeated.ok() || !repeated->claims().contains(pod->claim_uid) ||
      !repeated->claims().at(pod->claim_uid).error().empty()) {
    return Outcome::Skip(
        "a repeated NodePrepareResources fails even with its specs in place "
        "(dra.prepare-idempotent judges that)");
  }
  // The reboot: the tmpfs CDI directory comes back empty of what the driver wrote.
  const std::set<std::string> files = ReadCdiSpecs(session.cdi_root()).files;
  std::vector<std::string> wiped;
  for (const std::string& file : files) {
    if (files_before.count(file) > 0) continue;
    std::error_code error;
    if (std::filesystem::remove(std::filesystem::path(session.cdi_root()) / file, error)) {
      wiped.push_back(file);
    }
  }
  const std::string expectation =
      absl::StrCat("NodePrepareResources of the prepared claim, after its CDI specs (",
                   absl::StrJoin(wiped, ", "),
                   ") were lost with the tmpfs, to answer CDI IDs that resolve "
                   "again");
  absl::StatusOr<drapb::NodePrepareResourcesResponse> again =
      driver->NodePrepareResources(pod->prepare->request);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  auto it = again->claims().find(pod->claim_uid);
  if (it == again->claims().end()) {
    return Outcome::Fail(expectation, "the answer leaves the claim out");
  }
  if (!it->second.error().empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the claim failed: ", it->second.error()));
  }
  const CdiIndex cdi = ReadCdiSpecs(session.cdi_root());
  std::vector<std::string> unresolved;
  for (const auto& device : it->second.devices()) {
    for (const std::string& id : device.cdi_device_ids()) {
      const bool judged = std::find(ids.begin(), ids.end(), id) != ids.end();
      if (judged && cdi.devices.count(id) == 0) unresolved.push_back(id);
    }
  }
  if (!unresolved.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("CDI device ", absl::StrJoin(unresolved, ", "),
                                                   " defined by no spec (the container would fail "
                                                   "with CreateContainerError)"));
  }
  return Outcome::Pass(absl::StrCat("specs written again: ", absl::StrJoin(cdi.files, ", ")));
}

// ---- dra.unprepare ---------------------------------------------------------------------------

Outcome CheckUnprepare(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  const std::set<std::string> files_before = ReadCdiSpecs(session.cdi_root()).files;
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  const std::string expectation =
      "NodeUnprepareResources to succeed and remove what NodePrepareResources created (its CDI "
      "specs)";
  absl::StatusOr<drapb::NodeUnprepareResourceResponse> answer = DeleteAndWaitForUnprepare(
      session, *pod,
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  if (!answer.ok()) return Outcome::Fail(expectation, answer.status().message());
  if (!answer->error().empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the claim failed: ", answer->error()));
  }
  const CdiIndex after = ReadCdiSpecs(session.cdi_root());
  std::vector<std::string> left;
  for (const std::string& file : after.files) {
    if (files_before.count(file) == 0) left.push_back(file);
  }
  if (!left.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("CDI spec ", absl::StrJoin(left, ", "),
                                                   " left in ", session.cdi_root()));
  }
  for (const std::string& id : [&] {
         std::vector<std::string> ids;
         for (const auto& device : pod->answer->devices()) {
           ids.insert(ids.end(), device.cdi_device_ids().begin(), device.cdi_device_ids().end());
         }
         return ids;
       }()) {
    if (after.devices.count(id) > 0) {
      return Outcome::Fail(expectation, absl::StrCat("CDI device ", id, " still defined"));
    }
  }
  return Outcome::Pass("unprepared, its CDI specs removed");
}

// ---- dra.unprepare-unknown -------------------------------------------------------------------

Outcome CheckUnprepareUnknown(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  absl::BitGen random;
  const std::string uid = absl::StrFormat(
      "%08x-%04x-4%03x-8%03x-%012x", absl::Uniform<uint32_t>(random),
      absl::Uniform<uint16_t>(random), absl::Uniform(random, 0u, 0xfffu),
      absl::Uniform(random, 0u, 0xfffu), absl::Uniform<uint64_t>(random) & 0xffffffffffffULL);
  drapb::NodeUnprepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_uid(uid);
  claim->set_name("kdp-conformance-never-prepared");
  const std::string expectation = absl::StrCat(
      "NodeUnprepareResources of claim ", uid,
      ", which the driver never prepared, to succeed: the kubelet unprepares every claim it may "
      "have prepared before a crash");
  absl::StatusOr<drapb::NodeUnprepareResourcesResponse> answer =
      DialDriver(session, *registration)->NodeUnprepareResources(request);
  // A driver that died of the call fails it as UNAVAILABLE; its exit may take a moment to be seen.
  if (absl::StatusOr<int> code =
          session.program()->Wait(answer.ok() ? absl::Milliseconds(200) : absl::Seconds(2));
      code.ok()) {
    return Outcome::Fail(expectation,
                         absl::StrCat("the driver exited (status ", *code, ") on the call"));
  }
  if (!answer.ok()) return Outcome::Fail(expectation, answer.status().message());
  auto it = answer->claims().find(uid);
  if (it == answer->claims().end()) {
    return Outcome::Fail(expectation, "the answer leaves the claim out (the kubelet retries it)");
  }
  if (!it->second.error().empty()) return Outcome::Fail(expectation, it->second.error());
  return Outcome::Pass("answered without an error");
}

}  // namespace kdp::manager::conformance
