// The checks behind the DRA driver scenarios (dra_driver_scenarios.cc holds the table that names
// them), and what they share: the driver's registration, its ResourceSlices, a pod with a claim
// on one of its devices, a client of its socket. Private to manager/src/conformance/.
//
// Thread-safety: every check runs on the scenario's thread, in its Session.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_CHECKS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_CHECKS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "manager/src/conformance/dra_answers.h"
#include "manager/src/conformance/scenario.h"
#include "manager/src/conformance/session.h"
#include "manager/src/dra/plugin/dra_plugin.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::conformance {

// A registration through plugins_registry the DRA manager accepted.
struct DraRegistration {
  absl::Time at;
  std::string driver;
  std::string endpoint;  // the DRA service's socket
  std::vector<std::string> versions;
  // The registration socket in plugins_registry ("" when the manager no longer lists it).
  std::string registration_socket;
};

// Waits for a DRA registration accepted after `since` (of `driver`, unless empty), until
// min(`window_start` + the register timeout, deadline); gives up early when the program exited
// with a non-zero status. DEADLINE_EXCEEDED (FAILED_PRECONDITION when the program failed)
// describes what was seen instead: refused registrations with the manager's answer, nothing.
absl::StatusOr<DraRegistration> WaitForDraRegistration(Session& session, absl::Time since,
                                                       absl::Time window_start,
                                                       absl::string_view driver = "");
// The driver's first registration since it started. Every scenario but dra.register needs one;
// dra.register judges a driver that never registers, the others are skipped.
absl::StatusOr<DraRegistration> DraRegistered(Session& session);
Outcome DraNotRegistered(const absl::Status& status);

// The ResourceSlices of `driver` on the session's node (spec.nodeName), as the API lists them;
// `elsewhere` (may be null) counts the driver's other slices (nodeSelector, allNodes, another
// node), which the node-local rules do not judge.
absl::StatusOr<std::vector<nlohmann::json>> NodeSlices(Session& session, const std::string& driver,
                                                       int* elsewhere = nullptr);
// Waits until the driver's slices on the node hold a device and form complete pools, until
// `until` (at most 2 s after the first slices were seen); returns the last list seen (empty when
// there was none) and whether it got there.
struct SliceWait {
  std::vector<nlohmann::json> slices;
  int elsewhere = 0;  // the driver's slices that are not the node's
  bool complete = false;
  absl::Status error;  // the last failed read of the API, if any
};
SliceWait WaitForSlices(Session& session, const std::string& driver, absl::Time until);

// A client of the driver's DRA socket, speaking the service version the kubelet chose.
std::shared_ptr<dra::DraPlugin> DialDriver(const Session& session,
                                           const DraRegistration& registration);

// A pod with a ResourceClaim for one device of the driver (a DeviceClass selecting
// `device.driver == "<driver>"`), both named `name` plus "-" and five random letters, applied
// through the manager as `kdpctl apply` does: the scheduler's allocation, then the kubelet's
// NodePrepareResources at admission.
struct ClaimedPod {
  std::string name;  // the pod's and its claim's, in namespace "default"
  std::string claim_uid;
  nlohmann::json allocation_results;  // status.allocation.devices.results
  // The CDI directory just before the pod was applied (the driver's slices published): what the
  // driver had written before this claim.
  CdiIndex cdi_before;
  bool admitted = false;
  std::string admission_message;  // reason and message when not admitted
  // The NodePrepareResources call the admission made for the claim, if it made one.
  std::optional<RecordedPrepare> prepare;
  // The driver's answer for the claim in that call (error when the call failed or left the
  // claim out).
  absl::StatusOr<drapb::NodePrepareResourceResponse> answer =
      absl::UnknownError("no NodePrepareResources call");
};
// INTERNAL when the manager refused the manifest itself (this tool's fault, not the driver's).
absl::StatusOr<ClaimedPod> AdmitPodWithClaim(Session& session, const DraRegistration& registration,
                                             absl::string_view name);
// The skip of a scenario that needs a prepared claim when the claim could not be prepared:
// nothing allocated (dra.resource-slices judges the slices) or Prepare failed (dra.prepare
// judges that). nullopt when `pod` was prepared.
std::optional<Outcome> NotPrepared(const ClaimedPod& pod);
// Deletes the pod and waits (until `until`) for the manager's NodeUnprepareResources call for
// its claim, after `since`: the call's answer for the claim, or why there was none.
absl::StatusOr<drapb::NodeUnprepareResourceResponse> DeleteAndWaitForUnprepare(
    Session& session, const ClaimedPod& pod, absl::Time until);

// What the driver answers and publishes (dra_driver_checks.cc).
Outcome CheckDraRegister(Session& session);
Outcome CheckResourceSlices(Session& session);
Outcome CheckPrepare(Session& session);
Outcome CheckPrepareIdempotent(Session& session);
Outcome CheckUnprepare(Session& session);
Outcome CheckUnprepareUnknown(Session& session);

// How it lives through restarts, reboots, health changes and signals
// (dra_driver_lifecycle_checks.cc).
Outcome CheckPrepareAfterReboot(Session& session);
Outcome CheckDriverRestart(Session& session);
Outcome CheckDraKubeletRestart(Session& session);
Outcome CheckDraHealth(Session& session);
Outcome CheckDraSigterm(Session& session);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_CHECKS_H_
