#include "manager/src/pod/quantity.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;

Quantity MustParseQuantity(const std::string& text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status();
  return q.value_or(Quantity());
}

absl::int128 Nanos(int64_t units, int64_t nanos = 0) {
  return absl::int128(units) * 1'000'000'000 + nanos;
}

const absl::int128 kMaxNanos = Nanos(std::numeric_limits<int64_t>::max());

struct ValueCase {
  std::string text;
  absl::int128 nanos;
  std::string canonical;
};

TEST(Quantity, ParsesGrammarExactly) {
  const std::vector<ValueCase> cases = {
      {"0", 0, "0"},
      {"1", Nanos(1), "1"},
      {"+1", Nanos(1), "1"},
      {"-1", Nanos(-1), "-1"},
      {"007", Nanos(7), "7"},
      {"1.5", Nanos(1, 500'000'000), "1500m"},
      {"1.", Nanos(1), "1"},
      {".5", Nanos(0, 500'000'000), "500m"},
      {"-.5", Nanos(0, -500'000'000), "-500m"},
      {"500m", Nanos(0, 500'000'000), "500m"},
      {"1000m", Nanos(1), "1"},
      {"100u", Nanos(0, 100'000), "100u"},
      {"7n", 7, "7n"},
      {"1k", Nanos(1000), "1k"},
      {"1000", Nanos(1000), "1k"},
      {"1500", Nanos(1500), "1500"},
      {"12M", Nanos(12'000'000), "12M"},
      {"1G", Nanos(1'000'000'000), "1G"},
      {"2T", Nanos(2'000'000'000'000), "2T"},
      {"3P", Nanos(3'000'000'000'000'000), "3P"},
      {"4E", Nanos(4'000'000'000'000'000'000), "4E"},
      {"1Ki", Nanos(1024), "1Ki"},
      {"100Ki", Nanos(102400), "100Ki"},
      {"2Gi", Nanos(int64_t{2} << 30), "2Gi"},
      {"1.5Gi", Nanos(int64_t{3} << 29), "1536Mi"},
      {"2048Ki", Nanos(int64_t{2} << 20), "2Mi"},
      {"1Ei", Nanos(int64_t{1} << 60), "1Ei"},
      {"0.5Ki", Nanos(512), "512"},  // below 1024: shown as DecimalSI
      {"1.5Ki", Nanos(1536), "1536"},
      {"0.9Gi", Nanos(966'367'641, 600'000'000), "966367641600m"},
      {"1e3", Nanos(1000), "1e3"},
      {"1E3", Nanos(1000), "1e3"},
      {"1e+3", Nanos(1000), "1e3"},
      {"1e-3", Nanos(0, 1'000'000), "1e-3"},
      {"1500e0", Nanos(1500), "1500"},
      {"15e2", Nanos(1500), "1500"},
      {"1.5e3", Nanos(1500), "1500"},
      {"2e6", Nanos(2'000'000), "2e6"},
      {"1E", Nanos(1'000'000'000'000'000'000), "1E"},  // exa, not an exponent
      {"0.000000001", 1, "1n"},
  };
  for (const ValueCase& c : cases) {
    absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.status();
    EXPECT_EQ(q->nanos(), c.nanos) << c.text;
    EXPECT_EQ(q->ToString(), c.canonical) << c.text;
  }
}

TEST(Quantity, KeepsUpstreamScannerQuirks) {
  // parseQuantityString returns early on a bare sign and yields "0" for a number with no digits.
  for (const std::string text : {"+", "-", ".", "m", "Ki", "e5", "-0", "0.0", "00"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_TRUE(q.ok()) << text << ": " << q.status();
    EXPECT_TRUE(q->IsZero()) << text;
    EXPECT_EQ(q->ToString(), "0") << text;
  }
}

TEST(Quantity, RoundsFinerThanNanoAwayFromZero) {
  EXPECT_EQ(MustParseQuantity("0.1n").nanos(), 1);
  EXPECT_EQ(MustParseQuantity("0.0000000001").nanos(), 1);
  EXPECT_EQ(MustParseQuantity("-0.0000000001").nanos(), -1);
  EXPECT_EQ(MustParseQuantity("1.0000000001").nanos(), Nanos(1, 1));
  EXPECT_EQ(MustParseQuantity("1.0000000010").nanos(), Nanos(1, 1));  // exact, no rounding
  EXPECT_EQ(MustParseQuantity("0.30000000000000004").ToString(), "300000001n");
  EXPECT_EQ(MustParseQuantity("1e-100").nanos(), 1);
  EXPECT_EQ(MustParseQuantity("0.000000000000000000000000000000000001Ki").nanos(), 1);
}

TEST(Quantity, CapsMagnitudeAt2To63Minus1) {
  EXPECT_EQ(MustParseQuantity("9223372036854775807").nanos(), kMaxNanos);
  EXPECT_EQ(MustParseQuantity("9223372036854775807").AsInt64(),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(MustParseQuantity("8Ei").nanos(), kMaxNanos);
  EXPECT_EQ(MustParseQuantity("8Ei").ToString(), "9223372036854775807");
  EXPECT_EQ(MustParseQuantity("7Ei").ToString(), "7Ei");
  EXPECT_EQ(MustParseQuantity("100E").nanos(), kMaxNanos);
  EXPECT_EQ(MustParseQuantity("1e300").nanos(), kMaxNanos);
  EXPECT_EQ(MustParseQuantity("-1e300").nanos(), -kMaxNanos);
  EXPECT_EQ(MustParseQuantity(std::string(400, '9')).nanos(), kMaxNanos);
  // Long inputs that are small stay exact.
  EXPECT_EQ(MustParseQuantity("0." + std::string(300, '0') + "1").nanos(), 1);
  EXPECT_EQ(MustParseQuantity(std::string(300, '0') + "5").nanos(), Nanos(5));
}

TEST(Quantity, RejectsTextOutsideTheGrammar) {
  const std::string kFormat =
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  const std::string kSuffix = "unable to parse quantity's suffix";
  struct ErrorCase {
    std::string text;
    std::string reason;
  };
  const std::vector<ErrorCase> cases = {
      {"", kFormat},
      {" 1", kFormat},
      {"1 ", kFormat},
      {"abc", kFormat},
      {"1.1.M", kFormat},
      {"1+1", kSuffix},
      {"1e3m", kFormat},
      {"1Gi5", kSuffix},
      {"1K", kSuffix},
      {"1ki", kSuffix},
      {"1i", kSuffix},
      {"1e", kSuffix},
      {"1ee", kSuffix},
      {"1e+", kSuffix},
      {"1.5mi", kSuffix},
      {"0.1am", kFormat},
      {"1e1.5", kFormat},
      {"1mE3", kSuffix},
      {"--1", kSuffix},
      {"1,5", kFormat},
      {"1e99999999999999999999", kSuffix},  // exponent overflows int64 (strconv.ParseInt)
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
    ASSERT_FALSE(q.ok()) << '"' << c.text << '"';
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(q.status().message(), HasSubstr(c.reason)) << '"' << c.text << '"';
  }
  EXPECT_EQ(Quantity::Parse("abc").status().message(), "quantity \"abc\" is invalid: " + kFormat);
}

TEST(Quantity, IntegersAndAsInt64) {
  EXPECT_TRUE(MustParseQuantity("2").IsInteger());
  EXPECT_TRUE(MustParseQuantity("2000m").IsInteger());
  EXPECT_TRUE(MustParseQuantity("1Ki").IsInteger());
  EXPECT_TRUE(MustParseQuantity("1e3").IsInteger());
  EXPECT_TRUE(MustParseQuantity("0").IsInteger());
  EXPECT_FALSE(MustParseQuantity("1500m").IsInteger());
  EXPECT_FALSE(MustParseQuantity("1n").IsInteger());
  EXPECT_FALSE(MustParseQuantity("1e-3").IsInteger());

  EXPECT_EQ(MustParseQuantity("2000m").AsInt64(), 2);
  EXPECT_EQ(MustParseQuantity("-3").AsInt64(), -3);
  EXPECT_EQ(MustParseQuantity("1Ki").AsInt64(), 1024);
  EXPECT_EQ(MustParseQuantity("1500m").AsInt64(), std::nullopt);
  EXPECT_EQ(MustParseQuantity("1.0000000001").AsInt64(),
            std::nullopt);  // rounded up to 1.000000001
}

TEST(Quantity, ComparesValuesNotFormats) {
  EXPECT_EQ(MustParseQuantity("1k"), MustParseQuantity("1000"));
  EXPECT_EQ(MustParseQuantity("1"), MustParseQuantity("1000m"));
  EXPECT_EQ(MustParseQuantity("1Ki"), MustParseQuantity("1024"));
  EXPECT_EQ(MustParseQuantity("1e3"), MustParseQuantity("1k"));
  EXPECT_NE(MustParseQuantity("1Ki"), MustParseQuantity("1k"));
  EXPECT_LT(MustParseQuantity("1k"), MustParseQuantity("1Ki"));
  EXPECT_LT(MustParseQuantity("-1"), MustParseQuantity("0"));
  EXPECT_GT(MustParseQuantity("1n"), MustParseQuantity("0"));
  EXPECT_EQ(MustParseQuantity("0Ki"), Quantity());
}

TEST(Quantity, SignAndZero) {
  EXPECT_EQ(MustParseQuantity("-1m").Sign(), -1);
  EXPECT_EQ(MustParseQuantity("0").Sign(), 0);
  EXPECT_EQ(MustParseQuantity("5").Sign(), 1);
  EXPECT_TRUE(Quantity().IsZero());
  EXPECT_EQ(Quantity().ToString(), "0");
}

TEST(Quantity, KeepsFormat) {
  EXPECT_EQ(MustParseQuantity("1").format(), Quantity::Format::kDecimalSI);
  EXPECT_EQ(MustParseQuantity("1Mi").format(), Quantity::Format::kBinarySI);
  EXPECT_EQ(MustParseQuantity("1e6").format(), Quantity::Format::kDecimalExponent);
  EXPECT_EQ(MustParseQuantity("-2Mi").ToString(), "-2Mi");
  EXPECT_EQ(MustParseQuantity("-1500e-3").ToString(), "-1500e-3");
}

TEST(Quantity, FromInt64) {
  EXPECT_EQ(Quantity::FromInt64(4).ToString(), "4");
  EXPECT_EQ(Quantity::FromInt64(4096, Quantity::Format::kBinarySI).ToString(), "4Ki");
  EXPECT_EQ(Quantity::FromInt64(4000).ToString(), "4k");
  EXPECT_EQ(Quantity::FromInt64(-7).AsInt64(), -7);
  EXPECT_EQ(Quantity::FromInt64(std::numeric_limits<int64_t>::min()).AsInt64(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Quantity::FromInt64(3), MustParseQuantity("3"));
}

}  // namespace
}  // namespace kdp::manager
