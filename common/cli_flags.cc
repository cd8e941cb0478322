// The shared --version and duration flags (cli_flags.h).
#include "common/cli_flags.h"

#include <cmath>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#ifndef KDP_VERSION
#error "KDP_VERSION must be defined by the build (common/CMakeLists.txt)"
#endif

namespace kdp::cli {

std::string_view Version() { return KDP_VERSION; }

void AddVersionFlag(CLI::App& app, std::string_view program) {
  app.set_version_flag("--version", std::string(program) + " " + std::string(Version()),
                       "Print the version and exit");
}

absl::StatusOr<absl::Duration> ParseDuration(std::string_view text, DurationRule rule) {
  absl::Duration duration;
  double seconds = 0;
  const std::string owned(text);
  if (absl::SimpleAtod(owned, &seconds) && std::isfinite(seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(owned, &duration) || duration == absl::InfiniteDuration() ||
             duration == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", owned, "\": must be a duration such as 30s, 500ms or 5m"));
  }
  if (rule == DurationRule::kPositive && duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", owned, "\": must be positive"));
  }
  if (duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", owned, "\": must not be negative"));
  }
  return duration;
}

CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, absl::Duration* out,
                               const std::string& description, DurationRule rule) {
  CLI::Option* option = app.add_option_function<std::string>(
      name,
      [out, rule](const std::string& text) {
        // Checked below before this runs; value() cannot fail here.
        *out = ParseDuration(text, rule).value();
      },
      description);
  option->type_name("DURATION");
  option->default_str(absl::FormatDuration(*out));
  option->check(
      [rule](const std::string& text) -> std::string {
        absl::StatusOr<absl::Duration> parsed = ParseDuration(text, rule);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      },
      /*validator_description=*/"");
  return option;
}

}  // namespace kdp::cli
