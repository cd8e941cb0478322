// kdp-conformance: runs a device plugin or a DRA driver, whatever language it is written in,
// against an embedded kdp-manager (the kubelet's device manager and DRA manager, faithfully) and
// judges it scenario by scenario.
// docs/conformance.md has each scenario, the kubelet behaviour it relies on, and a CI snippet.
//
// Exit status: 0 when no scenario failed; 1 when one did; 2 on bad usage (a flag, --run, no
// command, an unwritable --junit file), also when a scenario's kubelet root or embedded manager
// cannot be made; 128 + the signal when stopped by SIGINT, SIGTERM or SIGHUP.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/cli_flags.h"
#include "common/log_flags.h"
#include "common/logging.h"
#include "manager/src/conformance/device_plugin_scenarios.h"
#include "manager/src/conformance/dra_driver_scenarios.h"
#include "manager/src/conformance/report.h"
#include "manager/src/conformance/runner.h"

namespace {

using kdp::manager::conformance::Scenario;
using kdp::manager::conformance::ScenarioResult;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void PrintList(const std::vector<Scenario>& scenarios) {
  for (const Scenario& scenario : scenarios) {
    std::cout << scenario.id << "  " << scenario.description
              << "\n    kubelet: " << scenario.kubelet_behaviour
              << "\n    upstream: " << scenario.reference << "\n";
  }
}

int Main(int argc, char** argv) {
  CLI::App app(
      "kdp-conformance: checks a Kubernetes device plugin or DRA driver against the kubelet's\n"
      "behaviour. Each scenario starts the program with the command given after --, in a kubelet "
      "root of\n"
      "its own served by an embedded kdp-manager, and judges it: pass, fail (what was expected,\n"
      "what happened) or skip (why). Placeholders in the command: {kubelet_root},\n"
      "{device_plugins_dir}, {plugins_registry}, {plugins_dir}, {kubeconfig}, {node_name},\n"
      "{cdi_root}. Exit status: 0 nothing failed; 1 a scenario failed; 2 bad usage.",
      "kdp-conformance");
  app.footer(
      "Example:\n"
      "  kdp-conformance device-plugin --junit report.xml -- \\\n"
      "      my-plugin --kubelet-root {kubelet_root}\n"
      "  kdp-conformance dra-driver -- my-driver --kubelet-root {kubelet_root} \\\n"
      "      --cdi-root {cdi_root} --kubeconfig {kubeconfig} --node-name {node_name}\n"
      "docs/conformance.md describes every scenario.");
  app.require_subcommand(1);
  kdp::cli::AddVersionFlag(app, "kdp-conformance");
  kdp::log::LogFlags log_flags;
  kdp::log::AddLogFlags(app, &log_flags);

  kdp::manager::conformance::SessionOptions options;
  std::string run_pattern;
  std::string junit_path;
  std::string output = "text";
  bool list = false;
  // The two kinds of program take the same flags.
  auto add_flags = [&](CLI::App* kind, const std::string& program, const std::string& health) {
    kind->add_option("command", options.command,
                     absl::StrCat("The ", program, "'s command line, after --, with placeholders"))
        ->type_name("CMD...");
    kind->add_flag("--list", list, "List the scenarios and exit");
    kind->add_option("--run", run_pattern,
                     "Run only the scenarios whose ID matches this regular expression (RE2)")
        ->type_name("REGEX");
    kdp::cli::AddDurationOption(*kind, "--timeout", &options.timeout,
                                "Longest time one scenario may take, every wait included");
    kdp::cli::AddDurationOption(
        *kind, "--register-timeout", &options.register_timeout,
        absl::StrCat("Longest time the ", program,
                     " may take to register (and list or publish its devices) after it starts, "
                     "or after the kubelet restarts"));
    kind->add_option("--kubelet-root", options.kubelet_root,
                     absl::StrCat("Use this kubelet root (created if missing, reused by every "
                                  "scenario) instead of a fresh temporary one per scenario: for a ",
                                  program,
                                  " that hard-codes /var/lib/kubelet, run kdp-conformance in a "
                                  "mount namespace with a directory bound there"))
        ->type_name("DIR");
    kind->add_option("--node-name", options.node_name, "The node's name ({node_name})")
        ->capture_default_str();
    kind->add_option("--health-trigger", options.health_trigger,
                     absl::StrCat("A shell command that makes device {device_id} of the ", program,
                                  " unhealthy (placeholders as in the command), for ", health))
        ->type_name("CMD");
    kind->add_option("--junit", junit_path, "Also write a JUnit XML report to FILE")
        ->type_name("FILE");
    kind->add_option("-o,--output", output, "Report format on stdout: text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  };
  CLI::App* device_plugin =
      app.add_subcommand("device-plugin", "Check a device plugin (the command after -- starts it)");
  add_flags(device_plugin, "plugin", "dp.health-full-list; without it that scenario is skipped");
  CLI::App* dra_driver =
      app.add_subcommand("dra-driver", "Check a DRA driver (the command after -- starts it)");
  add_flags(dra_driver, "driver",
            "dra.health ({device_id} is a device name of its ResourceSlices); without it only the "
            "first health message is judged");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == static_cast<int>(CLI::ExitCodes::Success) ? kExitOk : kExitUsage;
  }
  if (absl::Status applied = kdp::log::ApplyLogFlags(log_flags); !applied.ok()) {
    std::cerr << "kdp-conformance: " << applied.message() << "\n";
    return kExitUsage;
  }
  // The embedded manager's own log lines would drown the report: errors only, unless asked for
  // more.
  if (log_flags.level.empty() && log_flags.verbosity == 0) {
    kdp::log::SetMinLevel(kdp::log::Level::kError);
  }

  const bool dra = dra_driver->parsed();
  const std::string kind = dra ? "dra-driver" : "device-plugin";
  const std::vector<Scenario>& scenarios = dra ? kdp::manager::conformance::DraDriverScenarios()
                                               : kdp::manager::conformance::DevicePluginScenarios();
  if (list) {
    PrintList(scenarios);
    return kExitOk;
  }
  if (options.command.empty()) {
    std::cerr << "kdp-conformance " << kind << ": no command: give the "
              << (dra ? "driver" : "plugin") << "'s command line after --, e.g. -- my-"
              << (dra ? "driver" : "plugin") << " --kubelet-root {kubelet_root}\n";
    return kExitUsage;
  }
  absl::StatusOr<std::vector<const Scenario*>> selected =
      kdp::manager::conformance::SelectScenarios(scenarios, run_pattern);
  if (!selected.ok()) {
    std::cerr << "kdp-conformance: " << selected.status().message() << "\n";
    return kExitUsage;
  }
  // The report's file is checked before a scenario runs, not after minutes of them.
  std::ofstream junit;
  if (!junit_path.empty()) {
    junit.open(junit_path, std::ios::trunc);
    if (!junit) {
      std::cerr << "kdp-conformance: --junit " << junit_path << ": cannot write the file\n";
      return kExitUsage;
    }
  }
  // A plugin that closes its socket mid-call must not end this process.
  signal(SIGPIPE, SIG_IGN);
  // Ctrl-C, SIGTERM, SIGHUP: the program under test runs in a process group of its own, which the
  // terminal's signal does not reach, and the kubelet root is temporary. Blocked here, before any
  // thread starts (every thread inherits the mask; the program under test gets a clean one), and
  // taken by one thread that kills the program's group and removes the root before exiting.
  // SIGINT and SIGTERM are taken even when inherited as ignored (a shell's background job):
  // an ignored signal is discarded, never waited for. An ignored SIGHUP (nohup) stays ignored.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread([stop_signals] {
    int sig = 0;
    if (sigwait(&stop_signals, &sig) != 0) return;
    std::cerr << "\nkdp-conformance: stopped by " << strsignal(sig)
              << "; the program under test is killed and its temporary kubelet root removed\n";
    kdp::manager::conformance::AbandonSessions();
    _exit(128 + sig);
  }).detach();
  const bool text = output == "text";
  absl::StatusOr<std::vector<ScenarioResult>> run = kdp::manager::conformance::RunScenarios(
      *selected, options, [&](const ScenarioResult& result) {
        if (text) std::cout << kdp::manager::conformance::TextLine(result) << std::flush;
      });
  if (!run.ok()) {
    std::cerr << "kdp-conformance: cannot run a scenario: " << run.status().message() << "\n";
    return kExitUsage;
  }
  const std::vector<ScenarioResult>& results = *run;
  if (text) {
    std::cout << kdp::manager::conformance::TextSummary(results);
  } else {
    std::cout << kdp::manager::conformance::JsonReport(kind, options.command, results);
  }
  if (!junit_path.empty()) {
    junit << kdp::manager::conformance::JunitReport(kind, results);
    if (!junit.flush()) {
      std::cerr << "kdp-conformance: cannot write --junit " << junit_path << "\n";
      return kExitUsage;
    }
  }
  return kdp::manager::conformance::Count(results).failed > 0 ? kExitFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
