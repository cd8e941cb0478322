// kdp-conformance run as a user runs it, for its own tests: `kdp-conformance <kind> -o json
// [--health-trigger T] [--register-timeout 10s] [extra] -- program...`, its exit status, its
// JSON report and each scenario's verdict.
#ifndef KDP_TESTS_CONFORMANCE_CONFORMANCE_RUN_H_
#define KDP_TESTS_CONFORMANCE_CONFORMANCE_RUN_H_

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"

namespace kdp::testing {

struct ConformanceRun {
  int exit_code = -1;
  nlohmann::json report;
  std::string err;
  std::map<std::string, std::string> verdicts;  // scenario → "pass" / "fail" / "skip"
  // "id: verdict: message" per line, for failure output.
  std::string Messages() const {
    std::string all;
    if (!report.is_object()) return err;
    for (const nlohmann::json& scenario : report["scenarios"]) {
      absl::StrAppend(&all, scenario.value("id", ""), ": ", scenario.value("verdict", ""), ": ",
                      scenario.value("message", ""), "\n");
    }
    return all;
  }
  // The message of scenario `id` ("" when it did not run).
  std::string Message(const std::string& id) const {
    if (!report.is_object()) return "";
    for (const nlohmann::json& scenario : report["scenarios"]) {
      if (scenario.value("id", "") == id) return scenario.value("message", "");
    }
    return "";
  }
};

// A program that does not register is judged within 10 s (the default is 30 s) unless `extra`
// sets --register-timeout. The health trigger writes the device's ID into
// {kubelet_root}/unhealthy, the file the programs under test are told to watch.
inline ConformanceRun RunConformance(const std::string& kind,
                                     const std::vector<std::string>& program,
                                     const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {KDP_CONFORMANCE_BIN,
                                   kind,
                                   "-o",
                                   "json",
                                   "--health-trigger",
                                   "echo {device_id} >> {kubelet_root}/unhealthy"};
  if (std::find(extra.begin(), extra.end(), "--register-timeout") == extra.end()) {
    argv.insert(argv.end(), {"--register-timeout", "10s"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  ConformanceRun run;
  absl::StatusOr<CommandResult> result = RunCommand(argv, absl::Seconds(600));
  if (!result.ok()) {
    run.err = std::string(result.status().message());
    return run;
  }
  run.exit_code = result->exit_code;
  run.err = result->err;
  run.report = nlohmann::json::parse(result->out, nullptr, /*allow_exceptions=*/false);
  if (run.report.is_object() && run.report["scenarios"].is_array()) {
    for (const nlohmann::json& scenario : run.report["scenarios"]) {
      run.verdicts[scenario.value("id", "")] = scenario.value("verdict", "");
    }
  }
  return run;
}

// The whole of a file, "" when it cannot be read.
inline std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_CONFORMANCE_CONFORMANCE_RUN_H_
