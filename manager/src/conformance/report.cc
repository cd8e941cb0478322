#include "manager/src/conformance/report.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "manager/src/admin/topology_render.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::conformance {
namespace {

double Seconds(const ScenarioResult& result) { return absl::ToDoubleSeconds(result.took); }

}  // namespace

Totals Count(const std::vector<ScenarioResult>& results) {
  Totals totals;
  for (const ScenarioResult& result : results) {
    switch (result.outcome.verdict) {
      case Verdict::kPass:
        ++totals.passed;
        break;
      case Verdict::kFail:
        ++totals.failed;
        break;
      case Verdict::kSkip:
        ++totals.skipped;
        break;
    }
  }
  return totals;
}

std::string TextLine(const ScenarioResult& result) {
  return absl::StrFormat("%-4s  %-24s %s  (%.1fs)\n      %s\n",
                         absl::AsciiStrToUpper(VerdictName(result.outcome.verdict)),
                         result.scenario->id, result.scenario->description, Seconds(result),
                         result.outcome.message);
}

std::string TextSummary(const std::vector<ScenarioResult>& results) {
  const Totals totals = Count(results);
  return absl::StrCat(results.size(), " scenarios: ", totals.passed, " passed, ", totals.failed,
                      " failed, ", totals.skipped, " skipped\n");
}

std::string JsonReport(absl::string_view kind, const std::vector<std::string>& command,
                       const std::vector<ScenarioResult>& results) {
  nlohmann::json report = {{"kind", kind}, {"command", command}};
  nlohmann::json& scenarios = report["scenarios"] = nlohmann::json::array();
  for (const ScenarioResult& result : results) {
    scenarios.push_back({{"id", result.scenario->id},
                         {"description", result.scenario->description},
                         {"kubeletBehaviour", result.scenario->kubelet_behaviour},
                         {"reference", result.scenario->reference},
                         {"verdict", VerdictName(result.outcome.verdict)},
                         {"message", result.outcome.message},
                         {"seconds", Seconds(result)}});
  }
  const Totals totals = Count(results);
  report["summary"] = {
      {"passed", totals.passed}, {"failed", totals.failed}, {"skipped", totals.skipped}};
  return report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string JunitReport(absl::string_view kind, const std::vector<ScenarioResult>& results) {
  const Totals totals = Count(results);
  double seconds = 0;
  for (const ScenarioResult& result : results) seconds += Seconds(result);
  std::string xml = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n"
      "  <testsuite name=\"kdp-conformance %s\" tests=\"%d\" failures=\"%d\" errors=\"0\" "
      "skipped=\"%d\" time=\"%.3f\">\n",
      results.size(), totals.failed, totals.skipped, seconds, XmlEscape(kind), results.size(),
      totals.failed, totals.skipped, seconds);
  for (const ScenarioResult& result : results) {
    absl::StrAppendFormat(&xml, "    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">\n",
                          XmlEscape(kind), XmlEscape(result.scenario->id), Seconds(result));
    const std::string message = XmlEscape(result.outcome.message);
    if (result.outcome.verdict == Verdict::kFail) {
      absl::StrAppend(&xml, "      <failure message=\"", message, "\">",
                      XmlEscape(result.scenario->kubelet_behaviour), " (",
                      XmlEscape(result.scenario->reference), ")</failure>\n");
    } else if (result.outcome.verdict == Verdict::kSkip) {
      absl::StrAppend(&xml, "      <skipped message=\"", message, "\"/>\n");
    }
    if (!result.program_output.empty()) {
      absl::StrAppend(&xml, "      <system-out>", XmlEscape(result.program_output),
                      "</system-out>\n");
    }
    absl::StrAppend(&xml, "    </testcase>\n");
  }
  absl::StrAppend(&xml, "  </testsuite>\n</testsuites>\n");
  return xml;
}

}  // namespace kdp::manager::conformance
