// The reports of a conformance run: a summary people read on a terminal, JSON (-o json) and
// JUnit XML (--junit FILE) for CI systems.
//
// Thread-safety: pure functions.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_REPORT_H_
#define KDP_MANAGER_SRC_CONFORMANCE_REPORT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "manager/src/conformance/scenario.h"

namespace kdp::manager::conformance {

struct Totals {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
};
Totals Count(const std::vector<ScenarioResult>& results);

// One scenario's lines: "PASS  dp.register  registers on …  (0.4s)" and, indented, its message.
std::string TextLine(const ScenarioResult& result);
// "10 scenarios: 9 passed, 1 failed, 0 skipped".
std::string TextSummary(const std::vector<ScenarioResult>& results);

// {"kind": …, "command": […], "scenarios": [{"id", "description", "kubeletBehaviour",
// "reference", "verdict", "message", "seconds"}], "summary": {"passed", "failed", "skipped"}}.
std::string JsonReport(absl::string_view kind, const std::vector<std::string>& command,
                       const std::vector<ScenarioResult>& results);

// One <testsuite name="kdp-conformance <kind>"> with a <testcase> per scenario (classname the
// kind, name the ID), <failure> or <skipped> with the message, and the program's output as
// <system-out>.
std::string JunitReport(absl::string_view kind, const std::vector<ScenarioResult>& results);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_REPORT_H_
