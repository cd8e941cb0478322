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

using json = nlohmann::json;

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
  if (wait.slices.empty() && wait.elsewhere > 0) {
    return Outcome::Skip(absl::StrCat(
        "the driver publishes no slice for this node, only ", wait.elsewhere,
        " selecting nodes otherwise (nodeSelector, allNodes, another node): not judged"));
  }
  if (wait.slices.empty()) {
    return Outcome::Fail(
        expectation,
        absl::StrCat("none within ", absl::FormatDuration(session.options().register_timeout),
                     " of the registration (the API refuses an invalid slice with 422: see the "
                     "driver's output)",
                     wait.error.ok() ? "" : absl::StrCat("; ", wait.error.message())));
  }
  absl::StatusOr<json> node = session.ApiGet(absl::StrCat("/api/v1/nodes/", session.node_name()));
  if (!node.ok()) {
    return Outcome::Skip(
        absl::StrCat("kdp-conformance cannot read the Node: ", node.status().message()));
  }
  const std::string problems = SliceProblems(wait.slices, session.node_name(),
                                             node->value("/metadata/uid"_json_pointer, ""));
  if (!problems.empty()) return Outcome::Fail(expectation, problems);
  return Outcome::Pass(absl::StrCat(
      wait.slices.size(), " slice", wait.slices.size() == 1 ? "" : "s", ", ",
      PublishedDevices(wait.slices).size(), " devices",
      wait.elsewhere > 0 ? absl::StrCat(" (", wait.elsewhere, " more not node-local: not judged)")
                         : ""));
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

// ---- dra.unprepare ---------------------------------------------------------------------------

Outcome CheckUnprepare(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  const std::string expectation =
      "NodeUnprepareResources to succeed and remove what NodePrepareResources created (its CDI "
      "specs; a spec the driver had before, such as one shared by every claim, may stay)";
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
    if (pod->cdi_before.files.count(file) == 0) left.push_back(file);
  }
  if (!left.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("CDI spec ", absl::StrJoin(left, ", "),
                                                   " left in ", session.cdi_root()));
  }
  for (const std::string& id : CdiIds(*pod->answer)) {
    if (after.devices.count(id) > 0 && pod->cdi_before.devices.count(id) == 0) {
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
