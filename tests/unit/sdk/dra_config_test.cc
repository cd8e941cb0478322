// kdp::ConfigString (kdp/dra_config.h): one string field of a driver's opaque configs, with the
// API server's wording for what is wrong.
#include "kdp/dra_config.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp {
namespace {

using ::testing::HasSubstr;

const ConfigField kMode{.api_version = "x.example.com/v1",
                        .kind = "XConfig",
                        .path = "a.mode",
                        .default_value = "slow",
                        .allowed = {"slow", "fast"}};

std::string Error(const std::string& json) {
  return std::string(ConfigString(json, kMode).status().message());
}

TEST(ConfigString, ReadsTheFieldOrTheDefault) {
  EXPECT_EQ(*ConfigString(R"({"apiVersion":"x.example.com/v1","kind":"XConfig"})", kMode), "slow");
  EXPECT_EQ(*ConfigString(
                R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":{"mode":"fast"}})", kMode),
            "fast");
}

TEST(ConfigString, NamesWhatIsWrong) {
  EXPECT_EQ(Error("[1]"), "XConfig: must be a JSON object");
  EXPECT_EQ(Error(R"({"apiVersion":"v1","kind":"XConfig"})"),
            "unsupported config: apiVersion and kind must be x.example.com/v1 and XConfig");
  EXPECT_EQ(Error(R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":{}})"),
            "XConfig: a.mode: must be a string");
  EXPECT_EQ(Error(R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":3})"),
            "XConfig: a.mode: must be a string");
  EXPECT_EQ(Error(R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":{"mode":3}})"),
            "XConfig: a.mode: must be a string");
  EXPECT_EQ(Error(R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":{"mode":"warp"}})"),
            "XConfig: a.mode: Unsupported value: \"warp\": supported values: \"slow\", \"fast\"");
}

TEST(ConfigString, TheLastConfigWinsAndErrorsNameTheirSource) {
  const std::string fast =
      R"({"apiVersion":"x.example.com/v1","kind":"XConfig","a":{"mode":"fast"}})";
  const std::string none = R"({"apiVersion":"x.example.com/v1","kind":"XConfig"})";
  EXPECT_EQ(*ConfigString(std::vector<OpaqueConfig>{}, kMode), "slow");
  EXPECT_EQ(*ConfigString({{.source = "FromClass", .parameters_json = none},
                           {.source = "FromClaim", .parameters_json = fast}},
                          kMode),
            "fast");
  absl::StatusOr<std::string> bad =
      ConfigString({{.source = "FromClaim", .parameters_json = "[]"}}, kMode);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("config from FromClaim: XConfig: must be"));
}

}  // namespace
}  // namespace kdp
