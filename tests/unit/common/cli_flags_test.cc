// The shared --version and duration flags: one spelling for every binary.
#include "common/cli_flags.h"

#include <algorithm>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::cli {
namespace {

using ::testing::HasSubstr;

TEST(ParseDurationTest, TakesGoDurationsAndBareSeconds) {
  EXPECT_EQ(*ParseDuration("30s", DurationRule::kPositive), absl::Seconds(30));
  EXPECT_EQ(*ParseDuration("5m", DurationRule::kPositive), absl::Minutes(5));
  EXPECT_EQ(*ParseDuration("1h30m", DurationRule::kPositive), absl::Minutes(90));
  EXPECT_EQ(*ParseDuration("500ms", DurationRule::kPositive), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDuration("2.5", DurationRule::kPositive), absl::Milliseconds(2500));
  EXPECT_EQ(*ParseDuration("0", DurationRule::kNonNegative), absl::ZeroDuration());
}

TEST(ParseDurationTest, NamesTheTextAndTheRuleBroken) {
  absl::StatusOr<absl::Duration> unit = ParseDuration("30 seconds", DurationRule::kPositive);
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unit.status().message(), HasSubstr("\"30 seconds\": must be a duration such as 30s"));
  EXPECT_THAT(ParseDuration("0s", DurationRule::kPositive).status().message(),
              HasSubstr("must be positive"));
  EXPECT_THAT(ParseDuration("-1s", DurationRule::kNonNegative).status().message(),
              HasSubstr("must not be negative"));
  EXPECT_FALSE(ParseDuration("inf", DurationRule::kNonNegative).ok());
  EXPECT_FALSE(ParseDuration("nan", DurationRule::kNonNegative).ok());
  EXPECT_FALSE(ParseDuration("", DurationRule::kNonNegative).ok());
}

// Parses `args` (without the program name) into a fresh app; the error's text, or "" on success.
std::string Parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector.
  try {
    app.parse(args);
  } catch (const CLI::ParseError& error) {
    return error.what();
  }
  return "";
}

TEST(AddDurationOptionTest, StoresTheParsedValueAndShowsTheDefaultInGoForm) {
  CLI::App app{"test"};
  absl::Duration timeout = absl::Seconds(30);
  AddDurationOption(app, "--call-timeout", &timeout, "Deadline");
  EXPECT_THAT(app.help(), HasSubstr("30s"));
  EXPECT_EQ(Parse(app, {"--call-timeout", "1m"}), "");
  EXPECT_EQ(timeout, absl::Minutes(1));
}

TEST(AddDurationOptionTest, RefusesABadValueWithTheFlagsRule) {
  CLI::App app{"test"};
  absl::Duration timeout = absl::Seconds(30);
  AddDurationOption(app, "--call-timeout", &timeout, "Deadline");
  std::string error = Parse(app, {"--call-timeout", "0"});
  EXPECT_THAT(error, HasSubstr("must be positive"));
  EXPECT_EQ(timeout, absl::Seconds(30));  // Unchanged.
  error = Parse(app, {"--call-timeout", "soon"});
  EXPECT_THAT(error, HasSubstr("must be a duration such as 30s"));
  // Not the 300-digit range CLI::PositiveNumber printed.
  EXPECT_LT(error.size(), 200u);
}

TEST(AddVersionFlagTest, PrintsTheProgramAndTheBuildsVersion) {
  CLI::App app{"test"};
  AddVersionFlag(app, "kdp-test");
  try {
    app.parse(std::vector<std::string>{"--version"});
    ADD_FAILURE() << "--version did not end parsing";
  } catch (const CLI::CallForVersion& version) {
    EXPECT_EQ(std::string(version.what()), "kdp-test " + std::string(Version()));
  }
  EXPECT_FALSE(Version().empty());
}

}  // namespace
}  // namespace kdp::cli
