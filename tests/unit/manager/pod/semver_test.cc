#include "manager/src/pod/semver.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;

SemanticVersion MustParseVersion(const std::string& text) {
  absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.value_or(SemanticVersion());
}

TEST(SemanticVersion, ParsesAllParts) {
  SemanticVersion v = MustParseVersion("1.22.333-rc.1+build.5");
  EXPECT_EQ(v.major(), 1u);
  EXPECT_EQ(v.minor(), 22u);
  EXPECT_EQ(v.patch(), 333u);
  EXPECT_EQ(v.pre_release(), (std::vector<std::string>{"rc", "1"}));
  EXPECT_EQ(v.build(), "build.5");
  EXPECT_EQ(v.ToString(), "1.22.333-rc.1+build.5");
  EXPECT_EQ(MustParseVersion("0.0.0").ToString(), "0.0.0");
  EXPECT_EQ(MustParseVersion("1.0.0-x-y-z.--").pre_release(),
            (std::vector<std::string>{"x-y-z", "--"}));
}

TEST(SemanticVersion, RejectsWhatBlangRejects) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "Version string empty"},
      {"1.0", "No Major.Minor.Patch elements found"},
      {"v1.0.0", "Invalid character(s) found in major number"},
      {"01.0.0", "Major number must not contain leading zeroes"},
      {"1.02.0", "Minor number must not contain leading zeroes"},
      {"1.0.02", "Patch number must not contain leading zeroes"},
      {"1.0.x", "Invalid character(s) found in patch number"},
      {"1.0.0-", "Empty prerelease version"},
      {"1.0.0-a..b", "Empty prerelease version"},
      {"1.0.0-01", "Numeric PreRelease version must not contain leading zeroes"},
      {"1.0.0-a_b", "Invalid character(s) found in prerelease"},
      {"1.0.0+", "Empty build metadata"},
      {"1.0.0+a!b", "Invalid character(s) found in build meta data"},
      {"99999999999999999999.0.0", "out of range"},
  };
  for (const auto& [text, why] : cases) {
    absl::StatusOr<SemanticVersion> v = SemanticVersion::Parse(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(why)) << text;
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("\"" + text + "\"")) << text;
  }
}

TEST(SemanticVersion, ComparesByPrecedence) {
  // The chain from semver.org §11.
  const std::vector<std::string> ordered = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                            "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                            "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                                            "1.2.0",       "1.10.0",        "2.0.0"};
  for (size_t i = 0; i < ordered.size(); ++i) {
    for (size_t j = 0; j < ordered.size(); ++j) {
      const int want = i < j ? -1 : (i > j ? 1 : 0);
      EXPECT_EQ(MustParseVersion(ordered[i]).Compare(MustParseVersion(ordered[j])), want)
          << ordered[i] << " vs " << ordered[j];
    }
  }
}

TEST(SemanticVersion, IgnoresBuildMetadataWhenComparing) {
  EXPECT_EQ(MustParseVersion("1.0.0+a").Compare(MustParseVersion("1.0.0+b")), 0);
  EXPECT_EQ(MustParseVersion("1.0.0+a").Compare(MustParseVersion("1.0.0")), 0);
}

}  // namespace
}  // namespace kdp::manager
