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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "manager/src/conformance/dra_answers.h"
#include "manager/src/conformance/dra_driver_checks.h"
#include "manager/src/dra/plugin/dra_plugin_manager.h"

namespace kdp::manager::conformance {
namespace {

using json = nlohmann::json;

// How long an incomplete pool may take to complete once its first slices are seen.
constexpr absl::Duration kSliceSettle = absl::Seconds(2);

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
    failed = session.ProgramFailed();
    if (failed.has_value()) break;
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

absl::StatusOr<std::vector<json>> NodeSlices(Session& session, const std::string& driver,
                                             int* elsewhere) {
  absl::StatusOr<json> list = session.ApiGet("/apis/resource.k8s.io/v1/resourceslices");
  if (!list.ok()) return list.status();
  std::vector<json> slices;
  if (elsewhere != nullptr) *elsewhere = 0;
  if (auto items = list->find("items"); items != list->end() && items->is_array()) {
    for (const json& slice : *items) {
      const json& spec = slice.contains("spec") ? slice["spec"] : json();
      if (!spec.is_object() || spec.value("driver", "") != driver) continue;
      if (spec.value("nodeName", "") == session.node_name()) {
        slices.push_back(slice);
      } else if (elsewhere != nullptr) {
        ++*elsewhere;
      }
    }
  }
  return slices;
}

SliceWait WaitForSlices(Session& session, const std::string& driver, absl::Time until) {
  SliceWait wait;
  while (true) {
    absl::StatusOr<std::vector<json>> slices = NodeSlices(session, driver, &wait.elsewhere);
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
  // A name of its own, also with a --kubelet-root that keeps an earlier scenario's pods.
  absl::BitGen random;
  pod.name = absl::StrCat(name, "-");
  for (int i = 0; i < 5; ++i) pod.name.push_back('a' + absl::Uniform(random, 0, 26));
  // The scheduler allocates from complete pools only: give the driver its register timeout to
  // publish them (dra.resource-slices judges what it published).
  (void)WaitForSlices(
      session, registration.driver,
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  pod.cdi_before = ReadCdiSpecs(session.cdi_root());
  const absl::Time before = absl::Now();
  absl::StatusOr<admin::v1::ApplyResponse> applied =
      session.Apply(ClaimManifest(registration.driver, pod.name));
  if (!applied.ok()) {
    return absl::InternalError(absl::StrCat("the manager refused kdp-conformance's own claim: ",
                                            applied.status().message()));
  }
  for (const admin::v1::AppliedObject& object : applied->objects()) {
    if (object.kind() != "Pod") continue;
    pod.admitted = object.pod().admitted();
    pod.admission_message = object.pod().admitted()
                                ? "admitted"
                                : absl::StrCat(object.pod().reason(), ": ", object.pod().message());
  }
  absl::StatusOr<json> claim = session.ApiGet(
      absl::StrCat("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/", pod.name));
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
  // A failed unprepare leaves the pod terminating and comes back as an error: the recorded call
  // is what is judged.
  if (absl::Status deleted = session.DeletePod("default", pod.name);
      !deleted.ok() && !absl::StrContains(deleted.message(), "is terminating")) {
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

}  // namespace kdp::manager::conformance
