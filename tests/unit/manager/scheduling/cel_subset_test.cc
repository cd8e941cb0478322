#include "manager/src/controlplane/scheduling/cel_subset.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::scheduling {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kDriver[] = "gpu.example.com";

resourceapi::DeviceAttribute Int(int64_t v) {
  resourceapi::DeviceAttribute a;
  a.int_value = v;
  return a;
}
resourceapi::DeviceAttribute Str(std::string v) {
  resourceapi::DeviceAttribute a;
  a.string_value = std::move(v);
  return a;
}
resourceapi::DeviceAttribute Bool(bool v) {
  resourceapi::DeviceAttribute a;
  a.bool_value = v;
  return a;
}
resourceapi::DeviceAttribute Ver(std::string v) {
  resourceapi::DeviceAttribute a;
  a.version_value = std::move(v);
  return a;
}

// The dra-example-driver's device, plus attributes of every type and a foreign domain.
resourceapi::Device ExampleDevice() {
  resourceapi::Device d;
  d.name = "gpu-0";
  d.attributes = {
      {"index", Int(3)},
      {"model", Str("LATEST-GPU-MODEL")},
      {"driverVersion", Ver("1.2.3")},
      {"healthy", Bool(true)},
      {"gpu.example.com/uuid", Str("gpu-1234")},
      {"numa.kdp.dev/node", Int(1)},
  };
  d.capacity = {{"memory", {"80Gi"}}};
  return d;
}

DeviceView ExampleView() {
  absl::StatusOr<DeviceView> v = DeviceView::Build(kDriver, ExampleDevice());
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

absl::StatusOr<bool> Eval(const std::string& expression) {
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(expression);
  if (!s.ok()) return s.status();
  return s->Matches(ExampleView());
}

const std::string kAttr = "device.attributes[\"gpu.example.com\"]";
const std::string kCap = "device.capacity[\"gpu.example.com\"]";

TEST(CompiledSelector, EvaluatesEveryOperatorAndType) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"device.driver == \"gpu.example.com\"", true},
      {"device.driver != 'gpu.example.com'", false},
      {kAttr + ".model == \"LATEST-GPU-MODEL\"", true},
      {kAttr + "[\"index\"] == 3", true},
      {kAttr + ".index < 4", true},
      {kAttr + ".index < 3", false},
      {kAttr + ".index <= 3", true},
      {kAttr + ".index > 2", true},
      {kAttr + ".index >= 4", false},
      {kAttr + ".index == 0x3", true},
      {kAttr + ".index > -1", true},
      {"-" + kAttr + ".index == -3", true},
      {kAttr + ".model < \"M\"", true},
      {kAttr + ".model > \"LATEST\"", true},
      {kAttr + ".model >= \"z\"", false},
      {kAttr + ".healthy == true", true},
      {kAttr + ".healthy > false", true},
      {"!" + kAttr + ".healthy", false},
      {kAttr + ".uuid == 'gpu-1234'", true},
      {"device.attributes[\"numa.kdp.dev\"].node == 1", true},
      {"device.allowMultipleAllocations == false", true},
      // Heterogeneous equality is false, not an error.
      {kAttr + ".model == 1", false},
      {kAttr + ".model != 1", true},
      // Quantities.
      {kCap + ".memory.compareTo(quantity(\"40Gi\")) >= 0", true},
      {kCap + ".memory.compareTo(quantity(\"80Gi\")) == 0", true},
      {kCap + ".memory.compareTo(quantity(\"81920Mi\")) == 0", true},
      {kCap + ".memory.compareTo(quantity(\"100Gi\")) < 0", true},
      {kCap + ".memory.compareTo(quantity(\"1Ti\")) == -1", true},
      {kCap + ".memory.isGreaterThan(quantity(\"79Gi\"))", true},
      {kCap + ".memory.isLessThan(quantity(\"80Gi\"))", false},
      {kCap + ".memory == quantity(\"85899345920\")", true},
      {kCap + "[\"memory\"].compareTo(quantity(\"80Gi\")) == 0", true},
      // Semantic versions: numeric, not lexical, order.
      {kAttr + ".driverVersion.isGreaterThan(semver(\"1.2.0\"))", true},
      {kAttr + ".driverVersion.isLessThan(semver(\"1.10.0\"))", true},
      {kAttr + ".driverVersion.compareTo(semver(\"1.2.3\")) == 0", true},
      {kAttr + ".driverVersion.compareTo(semver(\"1.2.4-rc.1\")) < 0", true},
      {kAttr + ".driverVersion == semver(\"1.2.3+build.7\")", true},
      {kAttr + ".driverVersion.major() == 1 && " + kAttr + ".driverVersion.minor() == 2 && " +
           kAttr + ".driverVersion.patch() == 3",
       true},
      {"semver(\"1.0.0-alpha\").isLessThan(semver(\"1.0.0\"))", true},
      // Presence.
      {"\"model\" in " + kAttr, true},
      {"\"nope\" in " + kAttr, false},
      {"\"gpu.example.com\" in device.attributes", true},
      {"\"other.example.com\" in device.attributes", false},
      {"\"memory\" in " + kCap, true},
      {"has(" + kAttr + ".model)", true},
      {"has(" + kAttr + ".nope)", false},
      {"has(device.attributes[\"unknown.example.com\"].x)", false},
      {"has(" + kCap + ".memory)", true},
      // Strings.
      {kAttr + ".model.startsWith(\"LATEST\")", true},
      {kAttr + ".model.startsWith(\"GPU\")", false},
      {kAttr + ".model.endsWith(\"MODEL\")", true},
      {kAttr + ".model.contains(\"GPU\")", true},
      {kAttr + ".model.matches(\"^LATEST-[A-Z]+-MODEL$\")", true},
      {kAttr + ".model.matches(\"gpu\")", false},
      {kAttr + ".model.matches(\"GPU\")", true},          // unanchored, like RE2 in CEL
      {kAttr + ".model.matches(\"(?i)^latest\")", true},  // RE2 flags, as in CEL
      {"device.driver.endsWith(\".com\")", true},
      // Escapes and raw strings.
      {kAttr + ".model == \"LATEST\\x2DGPU\\u002DMODEL\"", true},
      {kAttr + ".model == 'LATEST\\055GPU-MODEL'", true},
      {"r'\\d' == \"\\\\d\"", true},
      {"'\\'' == \"'\"", true},
      // Logic and precedence.
      {"true || false && false", true},
      {"(true || false) && false", false},
      {"!(1 == 2)", true},
      {"1 < 2 == true", true},
      {"// a comment\n device.driver == 'gpu.example.com'", true},
  };
  for (const auto& [expression, want] : cases) {
    absl::StatusOr<bool> got = Eval(expression);
    ASSERT_TRUE(got.ok()) << expression << ": " << got.status();
    EXPECT_EQ(*got, want) << expression;
  }
}

TEST(CompiledSelector, RuntimeErrorsFollowCel) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kAttr + ".nope == 1", "no such key: nope"},
      {kAttr + "[\"nope\"] == 1", "no such key: nope"},
      {kCap + ".nope.compareTo(quantity(\"1\")) > 0", "no such key: nope"},
      {"device.attributes[\"unknown.example.com\"].x == 1", "no such key: x"},
      {kAttr + ".model < 1", "no such overload: _<_ applied to (string, int)"},
      {kAttr + ".model.isGreaterThan(semver(\"1.0.0\"))", "no such overload: isGreaterThan"},
      {kAttr + ".index.startsWith(\"1\")", "no such overload: startsWith"},
      {kAttr + ".model && true", "no such overload: _&&_"},
      {kAttr + ".index", "CEL result of type int could not be converted to bool"},
      {"quantity(" + kAttr + ".model).isZero()", "unsupported function"},  // compile error
      {"quantity(" + kAttr + ".model).compareTo(quantity(\"1\")) == 0", "quantity"},
      {"semver(" + kAttr + ".model).major() == 1", "semantic version \"LATEST-GPU-MODEL\""},
      // Errors propagate through everything that is not decided without them.
      {"true && " + kAttr + ".nope == 1", "no such key: nope"},
      {kAttr + ".nope == 1 || false", "no such key: nope"},
      {"!(" + kAttr + ".nope == 1)", "no such key: nope"},
      {kAttr + ".nope == 1 && " + kAttr + ".other == 1", "no such key: nope"},
  };
  for (const auto& [expression, want] : cases) {
    absl::StatusOr<bool> got = Eval(expression);
    ASSERT_FALSE(got.ok()) << expression;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << expression;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(want)) << expression;
  }
}

TEST(CompiledSelector, AndOrAbsorbErrorsCommutatively) {
  const std::string error = kAttr + ".nope == 1";
  for (const auto& [expression, want] : std::vector<std::pair<std::string, bool>>{
           {"false && " + error, false},
           {error + " && false", false},
           {"true || " + error, true},
           {error + " || true", true},
           {"device.driver == 'other' && " + error, false},
       }) {
    absl::StatusOr<bool> got = Eval(expression);
    ASSERT_TRUE(got.ok()) << expression << ": " << got.status();
    EXPECT_EQ(*got, want) << expression;
  }
}

TEST(CompiledSelector, RejectsUnsupportedConstructsWithColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"device.foo()",
       "selector \"device.foo()\": unsupported function \"foo\" at column 8; kdp supports the "
       "functions quantity()"},
      {"device.driver.format([1]) == 'a'", "unsupported function \"format\" at column 15"},
      {"device.attributes['d'].all(k, v, v == 1)",
       "unsupported two-variable comprehension all(k, v, ...) at column 24"},
      {"optional.of(1) == optional.none()", "unsupported function \"optional.of\" at column 1"},
      {"device.driver * 2",
       "found no matching overload for '_*_' applied to '(string, int)' at "
       "column 15"},
      {"true ? 1 : 'a'", "found no matching overload for '_?_:_' applied to '(bool, int, string)'"},
      {"[1, 'a'] == []", "expected type 'int' but found 'string' at column 5"},
      {"device.nodeName == 'a'",
       "undefined field \"nodeName\" at column 8; device has the fields driver, attributes"},
      {"x == 1", "undeclared reference to \"x\" at column 1; kdp supports the variable device"},
      {"1.5 > 1.0", "unsupported double literal at column 1"},
      {"1e3 > 1", "unsupported double literal at column 1"},
      {"1u == 1u", "unsupported unsigned int literal at column 1"},
      {"b'x' == b'x'", "unsupported bytes literal at column 1"},
      {"'''x''' == 'x'", "unsupported triple-quoted string literal at column 1"},
      {"null == null", "unsupported literal null at column 1"},
      {"9223372036854775808 > 0", "invalid int literal at column 1"},
      {"device.driver == 1",
       "found no matching overload for '_==_' applied to '(string, int)' at column 15"},
      {"quantity('1Gi') < quantity('2Gi')",
       "found no matching overload for '_<_' applied to '(kubernetes.Quantity, "
       "kubernetes.Quantity)' at column 17; compare quantities and versions with compareTo()"},
      {"'a' in device.driver", "found no matching overload for '@in'"},
      {"-true", "found no matching overload for '-_'"},
      {"!1", "found no matching overload for '!_'"},
      {"1 && true", "found no matching overload for '_&&_'"},
      {"device.capacity['d'].m.compareTo(semver('1.0.0')) > 0",
       "found no matching overload for 'compareTo' applied to "
       "'kubernetes.Quantity.(kubernetes.Semver)'"},
      {"device.driver.startsWith(1)", "found no matching overload for 'startsWith'"},
      {"device.driver.x == 1", "type 'string' does not support field selection"},
      {"device.driver", "must evaluate to bool or the unknown type, not string"},
      {"device.capacity['d'].m",
       "must evaluate to bool or the unknown type, not "
       "kubernetes.Quantity"},
      {"quantity('abc').compareTo(quantity('1')) > 0",
       "quantity \"abc\" is invalid: quantities must match the regular expression"},
      {"semver('1.0') == semver('1.0.0')", "No Major.Minor.Patch elements found at column 8"},
      {"has(device.driver)", "invalid argument to has() macro at column 1"},
      {"has(device.attributes['d']['x'])", "invalid argument to has() macro"},
      {"device.attributes['d'].x.matches('(?<name>a)')", "invalid regular expression"},
      {"device.attributes['d'].x.matches('a[')", "invalid regular expression"},
      {"device.driver == 'a", "unterminated string literal at column 18"},
      {"device.driver = 'a'", "unexpected \"=\" (did you mean \"==\"?) at column 15"},
      {"device.driver == 'a' & true", "did you mean \"&&\""},
      {"device.driver == 'a' #", "unexpected character '#' at column 22"},
      {"", "syntax error: unexpected end of expression at column 1"},
      {"(device.driver == 'a'", "expected \")\""},
      {"device.driver == 'a' true", "syntax error: unexpected \"true\" at column 22"},
      {"'\\q' == 'q'", "invalid escape sequence at column 2"},
      // Columns count characters, not bytes.
      {"'\xc3\xa9' == device.nope", "undefined field \"nope\" at column 15"},
  };
  for (const auto& [expression, want] : cases) {
    absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(expression);
    ASSERT_FALSE(s.ok()) << expression;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << expression;
    EXPECT_THAT(std::string(s.status().message()), StartsWith("selector \"")) << expression;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(want)) << expression;
  }
}

TEST(CompiledSelector, QuotesTheExpressionInErrors) {
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile("device.attributes[\"d\"].x.y()");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              StartsWith("selector \"device.attributes[\\\"d\\\"].x.y()\": unsupported function "
                         "\"y\" at column 26"));
}

TEST(CompiledSelector, CompilesOnceAndEvaluatesManyDevices) {
  absl::StatusOr<CompiledSelector> s =
      CompiledSelector::Compile("device.attributes[\"gpu.example.com\"].index >= 2");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->expression(), "device.attributes[\"gpu.example.com\"].index >= 2");
  const CompiledSelector copy = *s;  // copies share the compiled tree
  std::vector<bool> got;
  for (int64_t i = 0; i < 4; ++i) {
    resourceapi::Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes = {{"index", Int(i)}};
    absl::StatusOr<DeviceView> view = DeviceView::Build(kDriver, d);
    ASSERT_TRUE(view.ok());
    absl::StatusOr<bool> m = copy.Matches(*view);
    ASSERT_TRUE(m.ok()) << m.status();
    got.push_back(*m);
  }
  EXPECT_EQ(got, (std::vector<bool>{false, false, true, true}));
}

TEST(CompiledSelector, EvaluatesConcurrently) {
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(
      kCap + ".memory.compareTo(quantity(\"40Gi\")) >= 0 && " + kAttr + ".model.matches(\"GPU\")");
  ASSERT_TRUE(s.ok()) << s.status();
  const DeviceView view = ExampleView();
  std::vector<std::thread> threads;
  std::vector<int> matches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<bool> m = s->Matches(view);
        if (m.ok() && *m) ++matches[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(matches, (std::vector<int>{200, 200, 200, 200}));
}

TEST(DeviceView, GroupsByDomainWithDriverAsDefault) {
  const DeviceView view = ExampleView();
  EXPECT_EQ(view.driver(), kDriver);
  ASSERT_EQ(view.attributes().count("gpu.example.com"), 1u);
  EXPECT_EQ(view.attributes().at("gpu.example.com").size(), 5u);  // 4 bare + uuid
  EXPECT_EQ(view.attributes().at("numa.kdp.dev").size(), 1u);
  EXPECT_EQ(view.capacity().at("gpu.example.com").at("memory"), *Quantity::Parse("80Gi"));
}

TEST(DeviceView, RejectsBadAttributeValues) {
  resourceapi::Device d;
  d.name = "gpu-0";
  d.attributes = {{"driverVersion", Ver("1.0")}};
  absl::StatusOr<DeviceView> v = DeviceView::Build(kDriver, d);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("attribute driverVersion: parse semantic version"));
  d.attributes = {{"empty", resourceapi::DeviceAttribute{}}};
  v = DeviceView::Build(kDriver, d);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("attribute empty: unsupported attribute value"));
  d.attributes = {};
  d.capacity = {{"memory", {"lots"}}};
  v = DeviceView::Build(kDriver, d);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("capacity memory: quantity \"lots\""));
}

}  // namespace
}  // namespace kdp::manager::scheduling
