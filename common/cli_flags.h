// Flags every kdp binary spells the same way: --version, and options that take a duration.
//
//   CLI::App app{"..."};
//   kdp::cli::AddVersionFlag(app, "kdp-manager");
//   absl::Duration call_timeout = absl::Seconds(30);
//   kdp::cli::AddDurationOption(app, "--call-timeout", &call_timeout, "Deadline of Allocate
//   calls");
//
// A duration is written as Go's time.ParseDuration and the kubelet's flags take it ("30s", "5m",
// "1h30m", "500ms"); a bare number is seconds ("2.5"), as older kdp flags took it. One parser for
// every binary, so the same text means the same thing to kdp-manager, kdpctl and the plugins.
//
// Not thread-safe by itself: call from main before starting threads.
#ifndef KDP_COMMON_CLI_FLAGS_H_
#define KDP_COMMON_CLI_FLAGS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kdp::cli {

// The version of this source tree (CMake's PROJECT_VERSION), the one the .deb packages and the
// CMake package carry.
std::string_view Version();

// Adds --version to `app`: prints "<program> <version>" on stdout and exits 0 (CLI11 ends
// parsing with a CallForVersion, which app.exit() prints).
void AddVersionFlag(CLI::App& app, std::string_view program);

enum class DurationRule {
  kPositive,     // > 0 (a deadline, a period)
  kNonNegative,  // >= 0 (a delay or a grace period that may be none)
};

// Parses one duration as AddDurationOption does: INVALID_ARGUMENT naming the text and the rule
// broken ("must be a duration such as 30s, 500ms or 5m", "must be positive", infinite).
[[nodiscard]] absl::StatusOr<absl::Duration> ParseDuration(std::string_view text,
                                                           DurationRule rule);

// Adds option `name` (e.g. "--call-timeout") storing its parsed value into `*out` (borrowed; must
// outlive parsing). The default shown in --help is `*out`'s value at the time of the call, in Go's
// form ("30s"). A value that does not parse fails parsing with ParseDuration's message.
CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, absl::Duration* out,
                               const std::string& description,
                               DurationRule rule = DurationRule::kPositive);

}  // namespace kdp::cli

#endif  // KDP_COMMON_CLI_FLAGS_H_
