#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "manager/src/conformance/dra_answers.h"
#include "manager/src/conformance/dra_driver_checks.h"
#include "manager/src/conformance/session.h"
#include "manager/src/dra/plugin/health_stream.h"

namespace kdp::manager::conformance {
namespace {

absl::Duration Since(absl::Time from) {
  return absl::Trunc(std::max(absl::Now() - from, absl::ZeroDuration()), absl::Milliseconds(1));
}

// The CDI spec files in `now` that were not in `before`.
std::set<std::string> NewFiles(const std::set<std::string>& before,
                               const std::set<std::string>& now) {
  std::set<std::string> added;
  for (const std::string& file : now) {
    if (before.count(file) == 0) added.insert(file);
  }
  return added;
}

std::string PoolDevices(const std::set<PoolDevice>& devices, size_t limit = 6) {
  std::vector<std::string> shown;
  for (const PoolDevice& device : devices) {
    if (shown.size() == limit) {
      shown.push_back(absl::StrCat("… (", devices.size(), " in all)"));
      break;
    }
    shown.push_back(absl::StrCat(device.first, "/", device.second));
  }
  return absl::StrJoin(shown, ", ");
}

std::set<PoolDevice> Listed(const std::vector<dra::WatchedDeviceHealth>& devices) {
  std::set<PoolDevice> listed;
  for (const dra::WatchedDeviceHealth& device : devices) {
    listed.emplace(device.pool_name, device.device_name);
  }
  return listed;
}

}  // namespace

// ---- dra.driver-restart ----------------------------------------------------------------------

Outcome CheckDriverRestart(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  // First without a restart: a driver that never removes its specs fails dra.unprepare, and is
  // not judged again here.
  std::set<std::string> files = ReadCdiSpecs(session.cdi_root()).files;
  absl::StatusOr<ClaimedPod> first = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!first.ok()) return Outcome::Skip(std::string(first.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*first); skip.has_value()) return *skip;
  absl::StatusOr<drapb::NodeUnprepareResourceResponse> baseline = DeleteAndWaitForUnprepare(
      session, *first,
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  if (!baseline.ok() || !baseline->error().empty() ||
      !NewFiles(files, ReadCdiSpecs(session.cdi_root()).files).empty()) {
    return Outcome::Skip(
        "the driver does not unprepare cleanly even without a restart (dra.unprepare judges "
        "that)");
  }
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-b");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  const std::set<std::string> created = NewFiles(files, ReadCdiSpecs(session.cdi_root()).files);
  // A crash, as a container's: every process of it killed at once, nothing cleaned up.
  (void)session.program()->SignalGroup(SIGKILL);
  (void)session.program()->Wait(
      std::max(std::min(absl::Seconds(5), session.deadline() - absl::Now()), absl::ZeroDuration()));
  if (absl::Status started = session.StartProgram(); !started.ok()) {
    return Outcome::Skip(std::string(started.message()));
  }
  const std::string expectation = absl::StrCat(
      "the driver, killed (SIGKILL) between NodePrepareResources and "
      "NodeUnprepareResources and started again, to register again and unprepare "
      "the claim the old instance prepared, removing its CDI specs");
  absl::StatusOr<DraRegistration> again = WaitForDraRegistration(
      session, session.program_started(), session.program_started(), registration->driver);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  absl::StatusOr<drapb::NodeUnprepareResourceResponse> answer = DeleteAndWaitForUnprepare(
      session, *pod,
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  if (!answer.ok()) return Outcome::Fail(expectation, answer.status().message());
  if (!answer->error().empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the claim failed: ", answer->error()));
  }
  std::set<std::string> left;
  const std::set<std::string> now = ReadCdiSpecs(session.cdi_root()).files;
  for (const std::string& file : created) {
    if (now.count(file) > 0) left.insert(file);
  }
  if (!left.empty()) {
    return Outcome::Fail(
        expectation,
        absl::StrCat("unprepared without an error, but CDI spec ", absl::StrJoin(left, ", "),
                     " is still in ", session.cdi_root(), " (state kept in memory only?)"));
  }
  return Outcome::Pass(
      absl::StrCat("registered again after ",
                   absl::FormatDuration(
                       absl::Trunc(again->at - session.program_started(), absl::Milliseconds(1))),
                   "; the old instance's claim unprepared, its specs removed"));
}

// ---- dra.prepare-after-reboot ----------------------------------------------------------------

Outcome CheckPrepareAfterReboot(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  absl::StatusOr<ClaimedPod> pod = AdmitPodWithClaim(session, *registration, "kdp-conformance-a");
  if (!pod.ok()) return Outcome::Skip(std::string(pod.status().message()));
  if (std::optional<Outcome> skip = NotPrepared(*pod); skip.has_value()) return *skip;
  std::vector<std::string> ids = CdiIds(*pod->answer);
  if (ids.empty()) {
    return Outcome::Skip("nothing to judge: the driver's answer names no CDI device ID");
  }
  const CdiIndex resolved = ReadCdiSpecs(session.cdi_root());
  std::erase_if(ids, [&](const std::string& id) { return resolved.devices.count(id) == 0; });
  if (ids.empty()) {
    return Outcome::Skip(
        "the driver's answer names no CDI device a spec defines (dra.prepare judges that)");
  }
  // Repeated as it is first: a driver that fails this fails dra.prepare-idempotent.
  absl::StatusOr<drapb::NodePrepareResourcesResponse> repeated =
      DialDriver(session, *registration)->NodePrepareResources(pod->prepare->request);
  if (!repeated.ok() || !repeated->claims().contains(pod->claim_uid) ||
      !repeated->claims().at(pod->claim_uid).error().empty()) {
    return Outcome::Skip(
        "a repeated NodePrepareResources fails even without a reboot (dra.prepare-idempotent "
        "judges that)");
  }
  // The reboot: the driver is gone at once, the tmpfs CDI directory comes back empty, and the
  // driver starts again with what it keeps on disk.
  (void)session.program()->SignalGroup(SIGKILL);
  (void)session.program()->Wait(
      std::max(std::min(absl::Seconds(5), session.deadline() - absl::Now()), absl::ZeroDuration()));
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(session.cdi_root(), error)) {
    std::filesystem::remove_all(entry.path(), error);
  }
  if (absl::Status started = session.StartProgram(); !started.ok()) {
    return Outcome::Skip(std::string(started.message()));
  }
  const std::string expectation = absl::StrCat(
      "the driver, started again after a reboot that emptied the CDI directory, to answer "
      "NodePrepareResources of the claim it prepared with CDI IDs that resolve again (",
      absl::StrJoin(ids, ", "), ")");
  absl::StatusOr<DraRegistration> again = WaitForDraRegistration(
      session, session.program_started(), session.program_started(), registration->driver);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  absl::StatusOr<drapb::NodePrepareResourcesResponse> answer =
      DialDriver(session, *again)->NodePrepareResources(pod->prepare->request);
  if (!answer.ok()) return Outcome::Fail(expectation, answer.status().message());
  auto it = answer->claims().find(pod->claim_uid);
  if (it == answer->claims().end()) {
    return Outcome::Fail(expectation, "the answer leaves the claim out");
  }
  if (!it->second.error().empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the claim failed: ", it->second.error()));
  }
  const CdiIndex cdi = ReadCdiSpecs(session.cdi_root());
  std::vector<std::string> unresolved;
  for (const std::string& id : CdiIds(it->second)) {
    const bool judged = std::find(ids.begin(), ids.end(), id) != ids.end();
    if (judged && cdi.devices.count(id) == 0) unresolved.push_back(id);
  }
  if (!unresolved.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("CDI device ", absl::StrJoin(unresolved, ", "),
                                                   " defined by no spec (the container would fail "
                                                   "with CreateContainerError)"));
  }
  return Outcome::Pass(absl::StrCat("specs written again: ", absl::StrJoin(cdi.files, ", ")));
}

// ---- dra.kubelet-restart ---------------------------------------------------------------------

Outcome CheckDraKubeletRestart(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  const SliceWait published = WaitForSlices(
      session, registration->driver,
      std::min(registration->at + session.options().register_timeout, session.deadline()));
  if (published.slices.empty()) {
    return Outcome::Skip("the driver published no ResourceSlice (dra.resource-slices judges that)");
  }
  const std::set<PoolDevice> before = PublishedDevices(published.slices);
  const absl::Time stopping = absl::Now();
  if (absl::Status status = session.RestartManager(); !status.ok()) {
    return Outcome::Skip(
        absl::StrCat("the embedded kdp-manager did not restart: ", status.message()));
  }
  const absl::Time serving = absl::Now();
  const std::string expectation = absl::StrCat(
      "the driver, registered again from its socket in plugins_registry, to publish its ",
      before.size(), " devices again within ",
      absl::FormatDuration(session.options().register_timeout),
      " (a starting kubelet deletes the node's ResourceSlices)");
  absl::StatusOr<DraRegistration> again =
      WaitForDraRegistration(session, stopping, serving, registration->driver);
  if (!again.ok()) return Outcome::Fail(expectation, again.status().message());
  // Every device back: a driver may publish its pools one at a time.
  const absl::Time until =
      std::min(serving + session.options().register_timeout, session.deadline());
  std::set<PoolDevice> after;
  while (true) {
    after = PublishedDevices(WaitForSlices(session, registration->driver, until).slices);
    if (std::includes(after.begin(), after.end(), before.begin(), before.end()) ||
        absl::Now() >= until) {
      break;
    }
    absl::SleepFor(std::min(absl::Milliseconds(200), until - absl::Now()));
  }
  if (after.empty()) {
    return Outcome::Fail(expectation,
                         "no ResourceSlice of the driver came back: it never noticed the kubelet "
                         "deleted them (publish again when a slice disappears)");
  }
  if (after != before) {
    return Outcome::Fail(expectation, absl::StrCat("devices ", PoolDevices(after),
                                                   " (before: ", PoolDevices(before), ")"));
  }
  return Outcome::Pass(absl::StrCat("its ", after.size(), " devices published again ",
                                    absl::FormatDuration(Since(serving)),
                                    " after the kubelet restarted"));
}

// ---- dra.health ------------------------------------------------------------------------------

Outcome CheckDraHealth(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  if (dra::ChooseHealthService(registration->versions).empty()) {
    return Outcome::Skip(
        "the driver advertises no DRAResourceHealth service (v1 or v1alpha1) in its "
        "supported versions");
  }
  const std::string& driver = registration->driver;
  const SliceWait published = WaitForSlices(
      session, driver,
      std::min(registration->at + session.options().register_timeout, session.deadline()));
  const std::set<PoolDevice> devices = PublishedDevices(published.slices);
  if (devices.empty()) {
    return Outcome::Skip("the driver published no device (dra.resource-slices judges that)");
  }
  const std::string expectation = absl::StrCat(
      "every NodeWatchResources message to list all ", devices.size(),
      " published devices (the kubelet replaces the driver's health with each message)");
  auto messages_since = [&](const DraRecord& record, absl::Time since) {
    std::vector<const RecordedHealth*> messages;
    for (const RecordedHealth& message : record.health) {
      if (message.driver == driver && message.at >= since) messages.push_back(&message);
    }
    return messages;
  };
  auto incomplete = [&](const RecordedHealth& message) -> std::string {
    const std::set<PoolDevice> listed = Listed(message.devices);
    std::set<PoolDevice> missing;
    for (const PoolDevice& device : devices) {
      if (listed.count(device) == 0) missing.insert(device);
    }
    if (missing.empty() && listed.size() == message.devices.size()) return "";
    if (missing.empty()) return "a message lists a device twice";
    return absl::StrCat("a message of ", message.devices.size(), " device",
                        message.devices.size() == 1 ? "" : "s", " leaves out ",
                        PoolDevices(missing));
  };
  // The first message may come before the registration is recorded (the stream starts inside
  // RegisterPlugin): messages count from the driver's start.
  const absl::Time started = session.program_started();
  const absl::Time window =
      std::min(registration->at + session.options().register_timeout, session.deadline());
  if (!session.dra_recorder().WaitUntil(
          [&](const DraRecord& record) { return !messages_since(record, started).empty(); },
          window)) {
    std::string ended;
    for (const RecordedHealthEnd& end : session.dra_recorder().Copy().health_ends) {
      if (end.driver == driver)
        ended = absl::StrCat(": the stream ended with ", end.status.ToString());
    }
    return Outcome::Fail(
        expectation,
        absl::StrCat("no message within ", absl::FormatDuration(session.options().register_timeout),
                     " of the registration", ended));
  }
  const DraRecord first_record = session.dra_recorder().Copy();
  if (std::string problem = incomplete(*messages_since(first_record, started).front());
      !problem.empty()) {
    return Outcome::Fail(expectation, absl::StrCat("the first message: ", problem));
  }
  if (session.options().health_trigger.empty()) {
    return Outcome::Pass(
        "the first message lists every device (no --health-trigger: a change was not tried)");
  }
  const PoolDevice target = *devices.begin();
  const absl::Time triggered = absl::Now();
  if (absl::Status ran = session.RunHealthTrigger(target.second); !ran.ok()) {
    return Outcome::Skip(std::string(ran.message()));
  }
  auto unhealthy = [&](const RecordedHealth& message) {
    return std::any_of(message.devices.begin(), message.devices.end(), [&](const auto& device) {
      return device.pool_name == target.first && device.device_name == target.second &&
             device.health == dra::WireHealthStatus::kUnhealthy;
    });
  };
  const bool changed = session.dra_recorder().WaitUntil(
      [&](const DraRecord& record) {
        for (const RecordedHealth* message : messages_since(record, triggered)) {
          if (unhealthy(*message)) return true;
        }
        return false;
      },
      std::min(absl::Now() + session.options().register_timeout, session.deadline()));
  const DraRecord record = session.dra_recorder().Copy();
  for (const RecordedHealth* message : messages_since(record, triggered)) {
    if (std::string problem = incomplete(*message); !problem.empty()) {
      return Outcome::Fail(expectation, absl::StrCat("after ", target.first, "/", target.second,
                                                     " turned unhealthy, ", problem));
    }
  }
  if (!changed) {
    return Outcome::Fail(
        absl::StrCat("a message reporting ", target.first, "/", target.second,
                     " Unhealthy after --health-trigger"),
        absl::StrCat("none within ", absl::FormatDuration(session.options().register_timeout)));
  }
  return Outcome::Pass(absl::StrCat("full lists; ", target.first, "/", target.second,
                                    " reported Unhealthy ", absl::FormatDuration(Since(triggered)),
                                    " after the trigger"));
}

// ---- dra.sigterm -----------------------------------------------------------------------------

Outcome CheckDraSigterm(Session& session) {
  absl::StatusOr<DraRegistration> registration = DraRegistered(session);
  if (!registration.ok()) return DraNotRegistered(registration.status());
  const absl::Duration grace = std::min(kTerminationGrace, session.deadline() - absl::Now());
  if (grace < absl::Seconds(1)) {
    return Outcome::Skip("no time left in the scenario's --timeout to wait for an exit");
  }
  std::vector<std::string> sockets = {registration->endpoint};
  if (!registration->registration_socket.empty() &&
      registration->registration_socket != registration->endpoint) {
    sockets.push_back(registration->registration_socket);
  }
  const absl::Time told = absl::Now();
  if (absl::Status signalled = session.program()->Signal(SIGTERM); !signalled.ok()) {
    return Outcome::Fail("the driver running until told to stop",
                         absl::StrCat("it had exited already: ", signalled.message()));
  }
  const std::string expectation =
      absl::StrCat("the driver to exit within ", absl::FormatDuration(grace),
                   " of SIGTERM and remove its sockets ", absl::StrJoin(sockets, " and "),
                   " (a socket left in plugins_registry is dialled by the kubelet until it "
                   "is gone)");
  absl::StatusOr<int> code = session.program()->Wait(grace);
  if (!code.ok()) return Outcome::Fail(expectation, "still running");
  const std::string exited = *code == 128 + SIGTERM
                                 ? "ended by SIGTERM itself (status 143: no handler for it)"
                                 : absl::StrCat("exited with status ", *code);
  std::vector<std::string> left;
  for (const std::string& socket : sockets) {
    std::error_code error;
    if (std::filesystem::exists(socket, error)) left.push_back(socket);
  }
  if (!left.empty()) {
    return Outcome::Fail(expectation,
                         absl::StrCat(exited, " after ", absl::FormatDuration(Since(told)),
                                      ", leaving ", absl::StrJoin(left, " and "), " behind"));
  }
  return Outcome::Pass(
      absl::StrCat(exited, " after ", absl::FormatDuration(Since(told)), ", sockets removed",
                   registration->registration_socket.empty()
                       ? " (the manager did not list its registration socket: not judged)"
                       : ""));
}

}  // namespace kdp::manager::conformance
