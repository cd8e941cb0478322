#include "manager/src/conformance/runner.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "re2/re2.h"

namespace kdp::manager::conformance {

absl::StatusOr<std::vector<const Scenario*>> SelectScenarios(const std::vector<Scenario>& scenarios,
                                                             const std::string& pattern) {
  const RE2 regex(pattern, RE2::Quiet);
  if (!regex.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--run \"", pattern, "\": not a regular expression: ", regex.error()));
  }
  std::vector<const Scenario*> selected;
  for (const Scenario& scenario : scenarios) {
    if (RE2::PartialMatch(scenario.id, regex)) selected.push_back(&scenario);
  }
  if (selected.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--run \"", pattern, "\" matches no scenario (see --list)"));
  }
  return selected;
}

absl::StatusOr<std::vector<ScenarioResult>> RunScenarios(
    const std::vector<const Scenario*>& scenarios, const SessionOptions& options,
    const std::function<void(const ScenarioResult&)>& on_result) {
  std::vector<ScenarioResult> results;
  for (const Scenario* scenario : scenarios) {
    const absl::Time start = absl::Now();
    ScenarioResult result{.scenario = scenario, .outcome = {}, .took = {}, .program_output = {}};
    {
      absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(options);
      if (!session.ok()) {
        return absl::Status(session.status().code(),
                            absl::StrCat(scenario->id, ": ", session.status().message()));
      }
      if (absl::Status started = (*session)->StartProgram(); !started.ok()) {
        result.outcome = Outcome::Fail("the program under test to start", started.message());
      } else {
        result.outcome = scenario->check(**session);
      }
      result.program_output = (*session)->ProgramOutput();
    }  // the session is stopped and removed within the scenario's time
    result.took = absl::Now() - start;
    if (on_result) on_result(result);
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace kdp::manager::conformance
