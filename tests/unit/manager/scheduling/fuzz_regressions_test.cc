// Regression tests for what cel_selector_fuzzer (tests/fuzz/cel_selector_fuzzer.cc) found in the
// CEL-subset selector compiler (manager/src/scheduling/cel_subset.h); the reproducers are kept in
// tests/fuzz/regressions/cel_selector/.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"

namespace kdp::manager::scheduling {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

DeviceView GpuView() {
  resourceapi::Device device{.name = "gpu-0", .attributes = {}, .capacity = {}};
  device.attributes["model"].string_value = "A100";
  absl::StatusOr<DeviceView> view = DeviceView::Build("gpu.example.com", device);
  EXPECT_TRUE(view.ok()) << view.status();
  return *view;
}

void ExpectTooDeep(const std::string& expression, int column) {
  absl::StatusOr<CompiledSelector> selector = CompiledSelector::Compile(expression);
  ASSERT_FALSE(selector.ok());
  EXPECT_EQ(selector.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(selector.status().message()), StartsWith("selector \""));
  EXPECT_THAT(selector.status().message(),
              HasSubstr(absl::StrCat("expression recursion limit exceeded: more than 250 levels "
                                     "of nesting at column ",
                                     column)));
}

// Found by cel_selector_fuzzer: 10,000 '(' (within the API's 10 KiB selector limit) overflowed
// the stack of the recursive-descent parser and crashed kdp-manager. cel-go stops at 250 levels.
TEST(CelFuzzRegression, DeepParenthesesAreRefused) {
  ExpectTooDeep(Repeat("(", 10000), 251);
  ExpectTooDeep(Repeat("(", 300) + "true" + Repeat(")", 300), 251);
  ExpectTooDeep(Repeat("!", 10000) + "true", 251);
  ExpectTooDeep(Repeat("-", 10000) + "1 == 1", 251);
}

TEST(CelFuzzRegression, NestingUpToTheLimitCompilesAndEvaluates) {
  // ParseUnary levels: 1 for the outer expression, then 2 per parenthesis (the parenthesis'
  // operand and the inner expression's operand): 124 parentheses reach 249 levels.
  const std::string nested =
      Repeat("(", 124) + "device.driver == \"gpu.example.com\"" + Repeat(")", 124);
  absl::StatusOr<CompiledSelector> selector = CompiledSelector::Compile(nested);
  ASSERT_TRUE(selector.ok()) << selector.status();
  absl::StatusOr<bool> matches = selector->Matches(GpuView());
  ASSERT_TRUE(matches.ok()) << matches.status();
  EXPECT_TRUE(*matches);
  const std::string nots = Repeat("!", 248) + "true";  // even: true
  selector = CompiledSelector::Compile(nots);
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->Matches(GpuView()).value_or(false), true);
}

// A relation chain nests in the tree (and in cel-go's grammar): each operand is a level.
TEST(CelFuzzRegression, LongRelationChainIsRefused) {
  ExpectTooDeep(Repeat("true == ", 1500) + "true", 8 * 250 + 1);  // the 250th "=="
  absl::StatusOr<CompiledSelector> selector =
      CompiledSelector::Compile(Repeat("true == ", 200) + "true");
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->Matches(GpuView()).value_or(false), true);
}

// && and || chains are built balanced, as cel-go builds them: long ones compile and evaluate
// with shallow recursion, with CEL's results and the first type error at its operator.
TEST(CelFuzzRegression, LongLogicalChainsAreBalanced) {
  const std::string ors = Repeat("device.driver == \"x\" || ", 1500) +
                          "device.attributes[\"gpu.example.com\"].model == \"A100\"";
  absl::StatusOr<CompiledSelector> selector = CompiledSelector::Compile(ors);
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->Matches(GpuView()).value_or(false), true);

  const std::string ands =
      Repeat("true && ", 1500) + "device.attributes[\"gpu.example.com\"].missing == 1";
  selector = CompiledSelector::Compile(ands);
  ASSERT_TRUE(selector.ok()) << selector.status();
  absl::StatusOr<bool> error = selector->Matches(GpuView());
  ASSERT_FALSE(error.ok());
  EXPECT_THAT(error.status().message(), HasSubstr("no such key: missing"));
  // false && error is false wherever the false is.
  selector = CompiledSelector::Compile(
      "device.attributes[\"gpu.example.com\"].missing == 1 && true && false");
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->Matches(GpuView()).value_or(true), false);
  selector = CompiledSelector::Compile(
      "false && true && device.attributes[\"gpu.example.com\"].missing == 1");
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->Matches(GpuView()).value_or(true), false);

  absl::StatusOr<CompiledSelector> bad = CompiledSelector::Compile("true || false || 1 || true");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("found no matching overload for '_||_' applied to '(bool, int)' at "
                        "column 15"));
  bad = CompiledSelector::Compile("1 && true");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("found no matching overload for '_&&_' applied to '(int, bool)' at "
                        "column 3"));
}

}  // namespace
}  // namespace kdp::manager::scheduling
