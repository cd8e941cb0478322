// The checks behind the device-plugin scenarios (device_plugin_scenarios.cc holds the table that
// names them), and what they share: the plugin's registration, its device IDs, a client of its
// socket. Private to manager/src/conformance/.
//
// Thread-safety: every check runs on the scenario's thread, in its Session.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_CHECKS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_CHECKS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "manager/src/conformance/scenario.h"
#include "manager/src/conformance/session.h"

namespace kdp::manager::conformance {

// The plugin's first registration since it started. Every scenario but dp.register needs one;
// dp.register judges a plugin that never registers, the others are skipped (NotRegistered).
absl::StatusOr<Registration> Registered(Session& session);
Outcome NotRegistered(const absl::Status& status);

std::vector<std::string> Ids(const v1beta1::ListAndWatchResponse& list);
std::set<std::string> IdSet(const v1beta1::ListAndWatchResponse& list);
// The healthy devices' IDs, each once, in list order.
std::vector<std::string> HealthyIds(const v1beta1::ListAndWatchResponse& list);
// At most `limit` IDs joined by ", ", then how many there are in all.
std::string Joined(const std::set<std::string>& ids, size_t limit = 8);

// A client of the plugin's own socket, as the kubelet dials it.
std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& socket);
// kCallTimeout from now, or the scenario's deadline if sooner.
void SetDeadline(const Session& session, grpc::ClientContext* context);
// The latest ListAndWatch message on `socket`.
std::optional<v1beta1::ListAndWatchResponse> LatestList(const PluginRecord& record,
                                                        const std::string& socket);

// What the plugin answers (device_plugin_checks.cc).
Outcome CheckRegister(Session& session);
Outcome CheckOptions(Session& session);
Outcome CheckDevices(Session& session);
Outcome CheckHealthFullList(Session& session);
Outcome CheckAllocate(Session& session);
Outcome CheckPreferredAllocation(Session& session);

// How it lives through restarts, signals and calls it does not expect
// (device_plugin_lifecycle_checks.cc).
Outcome CheckKubeletRestart(Session& session);
Outcome CheckPluginRestart(Session& session);
Outcome CheckSigterm(Session& session);
Outcome CheckUnexpectedCalls(Session& session);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DEVICE_PLUGIN_CHECKS_H_
