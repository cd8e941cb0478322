#include "manager/src/conformance/report.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::conformance {
namespace {

double Seconds(const ScenarioResult& result) { return absl::ToDoubleSeconds(result.took); }

// Text fit for an XML attribute or element: the five predefined entities escaped, and control
// characters (which XML 1.0 forbids) and invalid UTF-8 bytes replaced, since a program's output
// may hold anything.
std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&apos;";
        continue;
      default:
        break;
    }
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      out += '?';
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // A whole, valid UTF-8 sequence is kept; anything else becomes '?'.
      const int length = (c & 0xE0) == 0xC0   ? 2
                         : (c & 0xF0) == 0xE0 ? 3
                         : (c & 0xF8) == 0xF0 ? 4
                                              : 0;
      bool valid = length > 0 && i + length <= text.size();
      for (int k = 1; valid && k < length; ++k) {
        valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      }
      if (!valid) {
        out += '?';
        continue;
      }
      out.append(text.data() + i, length);
      i += length - 1;
    }
  }
  return out;
}

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
