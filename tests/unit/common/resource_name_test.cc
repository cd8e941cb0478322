#include "common/resource_name.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

struct NameCase {
  std::string name;
  bool valid;
};

TEST(IsDns1123Label, FollowsUpstreamRegexAndLength) {
  const std::vector<NameCase> cases = {
      {"a", true},
      {"0", true},
      {"my-name", true},
      {"123-abc", true},
      {"a--b", true},
      {std::string(63, 'a'), true},
      {std::string(64, 'a'), false},
      {"", false},
      {"-a", false},
      {"a-", false},
      {"A", false},
      {"my_name", false},
      {"my.name", false},
      {"a b", false},
      {"a\n", false},  // Go's regexp `$` does not match before a trailing newline.
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(IsDns1123Label(c.name), c.valid) << '"' << c.name << '"';
  }
}

TEST(Dns1123LabelErrors, UsesApiServerTexts) {
  EXPECT_THAT(Dns1123LabelErrors("ok-name"), IsEmpty());
  EXPECT_THAT(Dns1123LabelErrors("my.name"), ElementsAre("must not contain dots"));
  EXPECT_THAT(
      Dns1123LabelErrors("My_Name"),
      ElementsAre("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                  "or '-', and must start and end with an alphanumeric character (e.g. "
                  "'my-name',  or '123-abc', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
  EXPECT_THAT(Dns1123LabelErrors(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
}

TEST(IsDns1123Subdomain, FollowsUpstreamRegexAndLength) {
  std::string long_label(100, 'a');
  const std::vector<NameCase> cases = {
      {"example.com", true},
      {"a", true},
      {"a.b.c", true},
      {"0.0", true},
      {"a-b.c-d", true},
      // Labels inside a subdomain have no 63-character limit upstream; only the total does.
      {long_label + "." + long_label, true},
      {std::string(253, 'a'), true},
      {std::string(254, 'a'), false},
      {"", false},
      {".a", false},
      {"a.", false},
      {"a..b", false},
      {"a.-b", false},
      {"a-.b", false},
      {"Example.com", false},
      {"a_b.com", false},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(IsDns1123Subdomain(c.name), c.valid) << '"' << c.name << '"';
  }
}

TEST(Dns1123SubdomainErrors, UsesApiServerTexts) {
  EXPECT_THAT(
      Dns1123SubdomainErrors("Bad_Name"),
      ElementsAre("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
  EXPECT_THAT(Dns1123SubdomainErrors(std::string(254, 'a')),
              ElementsAre("must be no more than 253 characters"));
}

TEST(IsQualifiedName, FollowsUpstreamRules) {
  const std::vector<NameCase> cases = {
      {"MyName", true},
      {"my.name", true},
      {"123-abc", true},
      {"a_b", true},
      {"A", true},
      {"example.com/MyName", true},
      {"example.com/a", true},
      {std::string(63, 'a'), true},
      {std::string(64, 'a'), false},
      {std::string(253, 'a') + "/x", true},
      {std::string(254, 'a') + "/x", false},
      {"", false},
      {"/a", false},
      {"example.com/", false},
      {"a/b/c", false},
      {"Example.com/a", false},  // the prefix is a lower-case subdomain
      {"_a", false},
      {"a_", false},
      {"a b", false},
      {"a.", false},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(IsQualifiedName(c.name), c.valid) << '"' << c.name << '"';
  }
}

TEST(QualifiedNameErrors, UsesApiServerTexts) {
  const std::string name_regex =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  EXPECT_THAT(QualifiedNameErrors("/x"), ElementsAre("prefix part must be non-empty"));
  EXPECT_THAT(QualifiedNameErrors("x/"),
              ElementsAre("name part must be non-empty", "name part " + name_regex));
  EXPECT_THAT(QualifiedNameErrors("x/-a"), ElementsAre("name part " + name_regex));
  EXPECT_THAT(QualifiedNameErrors("x/" + std::string(64, 'a')),
              ElementsAre("name part must be no more than 63 characters"));
  EXPECT_THAT(QualifiedNameErrors("a/b/c"),
              ElementsAre("a qualified name " + name_regex +
                          " with an optional DNS subdomain prefix and '/' (e.g. "
                          "'example.com/MyName')"));
  std::vector<std::string> prefix = QualifiedNameErrors("A/b");
  ASSERT_EQ(prefix.size(), 1u);
  EXPECT_THAT(prefix[0], ::testing::StartsWith("prefix part a lowercase RFC 1123 subdomain"));
}

TEST(IsNativeResourceName, NoSlashOrKubernetesIoNamespace) {
  EXPECT_TRUE(IsNativeResourceName("cpu"));
  EXPECT_TRUE(IsNativeResourceName("kubernetes.io/foo"));
  EXPECT_TRUE(IsNativeResourceName("foo.kubernetes.io/bar"));
  EXPECT_FALSE(IsNativeResourceName("example.com/gpu"));
  EXPECT_FALSE(IsNativeResourceName("kubernetes.io.example.com/gpu"));
}

TEST(IsExtendedResourceName, FollowsKubeletRules) {
  const std::string prefix_244(244, 'a');  // "requests." (9) + 244 == 253
  const std::vector<NameCase> cases = {
      {"example.com/gpu", true},
      {"nvidia.com/gpu", true},
      {"vendor.example/Device_X.1", true},
      {"a/b", true},
      {"example.com/" + std::string(63, 'g'), true},
      {prefix_244 + "/gpu", true},
      {"kubernetes.io.example.com/gpu", true},  // "kubernetes.io/" does not occur in it
      {"gpu", false},
      {"cpu", false},
      {"", false},
      {"kubernetes.io/gpu", false},
      {"foo.kubernetes.io/bar", false},
      {"requests.example.com/gpu", false},
      {"Example.com/gpu", false},
      {"example.com/gpu/x", false},
      {"example.com/", false},
      {"/gpu", false},
      {"example.com/-gpu", false},
      {"example.com/gpu_", false},
      {"example.com/" + std::string(64, 'g'), false},
      {prefix_244 + "a/gpu", false},  // 254 once "requests." is prepended
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(IsExtendedResourceName(c.name), c.valid) << '"' << c.name << '"';
    EXPECT_EQ(ValidateExtendedResourceName(c.name).ok(), c.valid) << '"' << c.name << '"';
  }
}

TEST(ValidateExtendedResourceName, UsesKubeletText) {
  EXPECT_TRUE(ValidateExtendedResourceName("example.com/gpu").ok());
  absl::Status status = ValidateExtendedResourceName("gpu");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "the ResourceName \"gpu\" is invalid");
  EXPECT_EQ(ValidateExtendedResourceName("a\"b").message(),
            "the ResourceName \"a\\\"b\" is invalid");
}

TEST(GoQuote, MatchesGoPercentQ) {
  EXPECT_EQ(GoQuote(""), "\"\"");
  EXPECT_EQ(GoQuote("example.com/gpu"), "\"example.com/gpu\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote("\a\b\f\n\r\t\v"), "\"\\a\\b\\f\\n\\r\\t\\v\"");
  EXPECT_EQ(GoQuote(std::string("\0\x1f\x7f", 3)), "\"\\x00\\x1f\\x7f\"");
  EXPECT_EQ(GoQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");          // printable UTF-8 kept
  EXPECT_EQ(GoQuote("\xc2\x85\xc2\xa0"), "\"\\u0085\\u00a0\"");  // C1 control, NBSP
  EXPECT_EQ(GoQuote("\xff"), "\"\\xff\"");                       // invalid UTF-8
  EXPECT_EQ(GoQuote("\xc0\xaf"), "\"\\xc0\\xaf\"");              // overlong encoding
  EXPECT_EQ(GoQuote("\xe2\x82"), "\"\\xe2\\x82\"");              // truncated sequence
}

}  // namespace
}  // namespace kdp
