// A conformance scenario: one kubelet behaviour a device plugin (or DRA driver) must cope with,
// with a stable ID, a one-line description, the behaviour it relies on and where upstream has it,
// and the check that judges the program under test. Its Outcome is pass, fail (what was expected,
// what happened) or skip (why it could not be judged).
//
// Thread-safety: value types.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_SCENARIO_H_
#define KDP_MANAGER_SRC_CONFORMANCE_SCENARIO_H_

#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kdp::manager::conformance {

class Session;

enum class Verdict { kPass, kFail, kSkip };

// "pass", "fail" or "skip".
constexpr const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kSkip:
      return "skip";
  }
  return "fail";
}

struct Outcome {
  Verdict verdict = Verdict::kFail;
  // One line. Pass: what was seen; fail: "expected …; got …"; skip: why it could not be judged.
  std::string message;

  static Outcome Pass(std::string seen) { return {Verdict::kPass, std::move(seen)}; }
  static Outcome Fail(absl::string_view expected, absl::string_view got) {
    return {Verdict::kFail, absl::StrCat("expected ", expected, "; got ", got)};
  }
  static Outcome Skip(std::string why) { return {Verdict::kSkip, std::move(why)}; }
};

struct Scenario {
  // Stable, e.g. "dp.kubelet-restart": CI configurations and --run name it.
  std::string id;
  std::string description;
  // The kubelet behaviour the check relies on, and the upstream code or issue that has it.
  std::string kubelet_behaviour;
  std::string reference;
  // Runs in a fresh Session whose program under test has been started; returns the verdict. The
  // Session's deadline bounds every wait.
  std::function<Outcome(Session&)> check;
};

struct ScenarioResult {
  const Scenario* scenario = nullptr;
  Outcome outcome;
  absl::Duration took;
  // The end of what the program under test printed during the scenario.
  std::string program_output;
};

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_SCENARIO_H_
