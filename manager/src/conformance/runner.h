// Runs conformance scenarios one after the other, each in a fresh Session (its own kubelet root,
// embedded kdp-manager and instance of the program under test), so that one scenario's failure
// never decides another's verdict.
//
// Thread-safety: call from the main thread (the program under test dies with the thread that
// started it, see common/subprocess.h).
#ifndef KDP_MANAGER_SRC_CONFORMANCE_RUNNER_H_
#define KDP_MANAGER_SRC_CONFORMANCE_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/conformance/scenario.h"
#include "manager/src/conformance/session.h"

namespace kdp::manager::conformance {

// The scenarios whose ID `pattern` matches (RE2, anywhere in the ID; "" matches all), in order.
// INVALID_ARGUMENT naming --run for a pattern that does not compile or matches none.
[[nodiscard]] absl::StatusOr<std::vector<const Scenario*>> SelectScenarios(
    const std::vector<Scenario>& scenarios, const std::string& pattern);

// Runs each scenario: a Session, the program started, the check. `on_result` (may be empty) hears
// each result as it comes. A Session that cannot be made (no temporary root, the embedded
// manager does not start) is this machine's problem, not the plugin's: the run stops with that
// error, naming the scenario.
[[nodiscard]] absl::StatusOr<std::vector<ScenarioResult>> RunScenarios(
    const std::vector<const Scenario*>& scenarios, const SessionOptions& options,
    const std::function<void(const ScenarioResult&)>& on_result);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_RUNNER_H_
