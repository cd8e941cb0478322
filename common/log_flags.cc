// The shared logging flags: CLI11 registration and application to common/logging.
#include "common/log_flags.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace kdp::log {

void AddLogFlags(CLI::App& app, LogFlags* flags) {
  app.add_option("--log-level", flags->level,
                 "Lowest level logged: debug, info, warning or error (default: $KDP_LOG_LEVEL, "
                 "else info)")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  app.add_option("--log-format", flags->format,
                 "Log line format: text (klog-like) or json (one JSON object per line; default: "
                 "$KDP_LOG_FORMAT, else text)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("-v,--verbosity", flags->verbosity,
                 "Log verbosity: 0 logs at --log-level, 1 or more logs debug lines too")
      ->check(CLI::NonNegativeNumber);
}

absl::Status ApplyLogFlags(const LogFlags& flags) {
  Level level = MinLevel();
  if (!flags.level.empty() && !ParseLevel(flags.level, &level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level \"", flags.level, "\": must be debug, info, warning or error"));
  }
  Format format = CurrentFormat();
  if (!flags.format.empty() && !ParseFormat(flags.format, &format)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format \"", flags.format, "\": must be text or json"));
  }
  if (flags.verbosity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--verbosity ", flags.verbosity, ": must be 0 or more"));
  }
  if (flags.verbosity >= 1) level = Level::kDebug;
  SetMinLevel(level);
  SetFormat(format);
  return absl::OkStatus();
}

}  // namespace kdp::log
