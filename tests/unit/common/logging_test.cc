// Tests of common/logging.h (text and JSON formats) and common/log_flags.h.
#include "common/logging.h"

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/log_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kdp::log {
namespace {

using ::testing::HasSubstr;

// 2024-01-02 15:04:05.123456 UTC.
constexpr long long kTime = 1704207845123456789LL;

std::vector<Field> Fields() {
  std::vector<Field> fields;
  internal::AppendFields(fields, "resourceName", "example.com/gpu", "count", 3, "ratio", 0.5, "ok",
                         true, "quote", "a\"b\\c\nd\te", "bad", std::string("x\xff\xc3y"), "nan",
                         0.0 / 0.0, "ctl", std::string("\x01"));
  return fields;
}

TEST(Logging, TextFormatIsKlogLike) {
  std::vector<Field> fields;
  internal::AppendFields(fields, "resourceName", "example.com/gpu", "count", 3, "q", "a\"b\nc");
  EXPECT_EQ(FormatLine(Format::kText, Level::kWarning, "/src/manager.cc", 42, "Registered plugin",
                       fields, kTime, 77),
            "W0102 15:04:05.123456      77 manager.cc:42] \"Registered plugin\" "
            "resourceName=\"example.com/gpu\" count=\"3\" q=\"a\\\"b\\nc\"");
}

TEST(Logging, JsonLinesParseWithEveryField) {
  const std::string line = FormatLine(Format::kJson, Level::kInfo, "dir/file.cc", 7,
                                      "msg with \"quotes\"\n", Fields(), kTime, 1);
  nlohmann::json j = nlohmann::json::parse(line);  // throws on invalid JSON or UTF-8
  EXPECT_DOUBLE_EQ(j["ts"].get<double>(), 1704207845.123456);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["caller"], "file.cc:7");
  EXPECT_EQ(j["msg"], "msg with \"quotes\"\n");
  EXPECT_EQ(j["resourceName"], "example.com/gpu");
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["ratio"], 0.5);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["quote"], "a\"b\\c\nd\te");
  EXPECT_EQ(j["bad"], "x\xef\xbf\xbd\xef\xbf\xbdy");  // each invalid byte → U+FFFD
  EXPECT_TRUE(j["nan"].is_string());                  // NaN is not a JSON number
  EXPECT_EQ(j["ctl"], "\x01");
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line
  // Keys come in order: ts, level, caller, msg, then the fields.
  EXPECT_LT(line.find("\"ts\""), line.find("\"level\""));
  EXPECT_LT(line.find("\"caller\""), line.find("\"msg\""));
  EXPECT_LT(line.find("\"msg\""), line.find("\"resourceName\""));
}

TEST(Logging, ValidUtf8IsKept) {
  std::vector<Field> fields;
  internal::AppendFields(fields, "name", "gpu-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  nlohmann::json j =
      nlohmann::json::parse(FormatLine(Format::kJson, Level::kError, "f.cc", 1, "m", fields, 0, 1));
  EXPECT_EQ(j["name"], "gpu-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(j["level"], "error");
}

TEST(Logging, ParseFormat) {
  Format f = Format::kText;
  EXPECT_TRUE(ParseFormat("json", &f));
  EXPECT_EQ(f, Format::kJson);
  EXPECT_TRUE(ParseFormat("text", &f));
  EXPECT_EQ(f, Format::kText);
  EXPECT_FALSE(ParseFormat("yaml", &f));
}

TEST(LogFlags, ParsedAndApplied) {
  const Level level_before = MinLevel();
  const Format format_before = CurrentFormat();
  CLI::App app;
  LogFlags flags;
  AddLogFlags(app, &flags);
  const char* argv[] = {"x", "--log-level", "warning", "--log-format", "json"};
  app.parse(5, const_cast<char**>(argv));
  ASSERT_TRUE(ApplyLogFlags(flags).ok());
  EXPECT_EQ(MinLevel(), Level::kWarning);
  EXPECT_EQ(CurrentFormat(), Format::kJson);
  ASSERT_TRUE(ApplyLogFlags({.level = "error", .format = "", .verbosity = 1}).ok());
  EXPECT_EQ(MinLevel(), Level::kDebug);  // -v 1 lowers to debug
  absl::Status bad = ApplyLogFlags({.level = "loud", .format = "", .verbosity = 0});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("--log-level \"loud\""));
  EXPECT_EQ(ApplyLogFlags({.level = "", .format = "xml", .verbosity = 0}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MinLevel(), Level::kDebug);  // unchanged by a rejected set
  CLI::App app2;
  LogFlags flags2;
  AddLogFlags(app2, &flags2);
  const char* argv2[] = {"x", "--log-format", "yaml"};
  EXPECT_THROW(app2.parse(3, const_cast<char**>(argv2)), CLI::ValidationError);
  SetMinLevel(level_before);
  SetFormat(format_before);
}

TEST(Logging, WriteGoesToStderrInTheCurrentFormat) {
  const Format before = CurrentFormat();
  SetFormat(Format::kJson);
  ::testing::internal::CaptureStderr();
  const int line = __LINE__ + 1;
  KDP_LOG_WARNING("hello", "key", "v\"1");
  const std::string out = ::testing::internal::GetCapturedStderr();
  SetFormat(before);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["msg"], "hello");
  EXPECT_EQ(j["key"], "v\"1");
  EXPECT_EQ(j["caller"], std::string("logging_test.cc:") + std::to_string(line));
}

}  // namespace
}  // namespace kdp::log
