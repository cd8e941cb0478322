// Tests of common/metrics.h: families, children, and the Prometheus text rendering (parsed back).
#include "common/metrics.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Sample lines of a rendering: "name{labels}" → value text.
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[std::string(line.substr(0, space))] = std::string(line.substr(space + 1));
  }
  return samples;
}

TEST(FormatValue, FormatsAsPrometheusDoes) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-1), "-1");
  EXPECT_EQ(FormatValue(1000000), "1000000");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1e-7), "1e-07");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
  EXPECT_EQ(std::stod(FormatValue(0.1 + 0.2)), 0.1 + 0.2);  // round-trips exactly
}

TEST(Buckets, DefaultAndExponential) {
  EXPECT_THAT(DefaultBuckets(),
              ElementsAre(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10));
  EXPECT_THAT(ExponentialBuckets(1, 2, 4), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(LinearBuckets(1, 0.5, 3), ElementsAre(1, 1.5, 2));
}

TEST(Names, ValidatedByPrometheusRules) {
  EXPECT_TRUE(ValidateMetricName("kubelet_device_plugin_registration_total").ok());
  EXPECT_TRUE(ValidateMetricName("a:b_c1").ok());
  EXPECT_EQ(ValidateMetricName("1abc").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateMetricName("a-b").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateMetricName("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ValidateMetricName("a-b").message()), HasSubstr("\"a-b\""));
  EXPECT_TRUE(ValidateLabelName("resource_name").ok());
  EXPECT_EQ(ValidateLabelName("a:b").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateLabelName("__name").code(), absl::StatusCode::kInvalidArgument);
}

TEST(RegistryDeathTest, BadNamesAndShapesAbort) {
  Registry registry;
  EXPECT_DEATH(registry.AddCounter("bad-name", "h"), "must match");
  EXPECT_DEATH(registry.AddHistogram("h", "h", {"le"}), "reserved");
  registry.AddCounter("c", "h", {"a"});
  EXPECT_DEATH(registry.AddGauge("c", "h", {"a"}), "added twice");
  EXPECT_DEATH(registry.AddCounter("c", "h", {"a"})->WithLabels({"x", "y"}), "WithLabels got 2");
}

TEST(Registry, RendersCountersAndGaugesSortedWithEscaping) {
  Registry registry;
  CounterFamily* counter = registry.AddCounter("b_total", "Help with \\ and\nnewline.", {"r"});
  GaugeFamily* gauge = registry.AddGauge("a_gauge", "A gauge.");
  counter->WithLabels({"z"})->Inc();
  counter->WithLabels({"quote\" back\\ nl\n"})->Add(2.5);
  counter->WithLabels({"z"})->Add(-5);  // ignored: counters never go down
  gauge->WithLabels({})->Set(7);
  gauge->WithLabels({})->Dec();
  const std::string text = registry.Render();
  EXPECT_EQ(text,
            "# HELP a_gauge A gauge.\n"
            "# TYPE a_gauge gauge\n"
            "a_gauge 6\n"
            "# HELP b_total Help with \\\\ and\\nnewline.\n"
            "# TYPE b_total counter\n"
            "b_total{r=\"quote\\\" back\\\\ nl\\n\"} 2.5\n"
            "b_total{r=\"z\"} 1\n");
}

TEST(Registry, SameShapeReturnsTheSameFamilyAndChildPointersAreStable) {
  Registry registry;
  CounterFamily* a = registry.AddCounter("c_total", "h", {"x"});
  EXPECT_EQ(registry.AddCounter("c_total", "h", {"x"}), a);
  Counter* child = a->WithLabels({"1"});
  for (int i = 0; i < 100; ++i) a->WithLabels({std::to_string(i + 2)});
  EXPECT_EQ(a->WithLabels({"1"}), child);
}

TEST(Registry, LabelSetsBeyondTheCapShareTheOverflowChild) {
  // As a flood of Register calls with made-up resource names would do.
  Registry registry;
  CounterFamily* registrations = registry.AddCounter("registrations_total", "Help.", {"name"});
  for (size_t i = 0; i < CounterFamily::kMaxChildren; ++i) {
    registrations->WithLabels({"r" + std::to_string(i)})->Inc();
  }
  Counter* first_extra = registrations->WithLabels({"one-more"});
  first_extra->Inc();
  registrations->WithLabels({"and-another"})->Add(2);
  EXPECT_EQ(registrations->WithLabels({"yet-another"}), first_extra);
  // Known label sets keep their own child.
  registrations->WithLabels({"r0"})->Inc();

  const std::map<std::string, std::string> samples = Samples(registry.Render());
  EXPECT_EQ(samples.size(), CounterFamily::kMaxChildren + 1);
  EXPECT_EQ(samples.at("registrations_total{name=\"<overflow>\"}"), "3");
  EXPECT_EQ(samples.at("registrations_total{name=\"r0\"}"), "2");
  EXPECT_EQ(samples.count("registrations_total{name=\"one-more\"}"), 0u);
}

TEST(Registry, LabelsAreWrittenSortedByNameAsClientGolangDoes) {
  Registry registry;
  registry.AddHistogram("op_seconds", "h", {"operation_name", "is_error"}, {1})
      ->WithLabels({"PrepareResources", "false"})
      ->Observe(0.5);
  EXPECT_THAT(registry.Render(),
              HasSubstr("op_seconds_bucket{is_error=\"false\",operation_name=\"PrepareResources\","
                        "le=\"1\"} 1\n"));
}

TEST(Registry, EmptyLabelledFamiliesRenderNothingUnlabelledRenderZero) {
  Registry registry;
  registry.AddCounter("vec_total", "h", {"x"});
  registry.AddCounter("plain_total", "h");
  EXPECT_EQ(registry.Render(), "# HELP plain_total h\n# TYPE plain_total counter\nplain_total 0\n");
}

TEST(Registry, HistogramBucketsAreCumulative) {
  Registry registry;
  HistogramFamily* h = registry.AddHistogram("lat_seconds", "Latency.", {"op"}, {0.1, 1, 10});
  Histogram* child = h->WithLabels({"x"});
  for (double v : {0.05, 0.1, 0.5, 2.0, 20.0}) child->Observe(v);
  const std::map<std::string, std::string> s = Samples(registry.Render());
  EXPECT_EQ(s.at("lat_seconds_bucket{op=\"x\",le=\"0.1\"}"), "2");  // le is inclusive
  EXPECT_EQ(s.at("lat_seconds_bucket{op=\"x\",le=\"1\"}"), "3");
  EXPECT_EQ(s.at("lat_seconds_bucket{op=\"x\",le=\"10\"}"), "4");
  EXPECT_EQ(s.at("lat_seconds_bucket{op=\"x\",le=\"+Inf\"}"), "5");
  EXPECT_EQ(s.at("lat_seconds_count{op=\"x\"}"), "5");
  EXPECT_DOUBLE_EQ(std::stod(s.at("lat_seconds_sum{op=\"x\"}")), 22.65);
  EXPECT_THAT(registry.Render(), HasSubstr("# TYPE lat_seconds histogram\n"));
}

TEST(Registry, DefaultBucketsRenderAsPrometheusWritesThem) {
  Registry registry;
  registry.AddHistogram("d_seconds", "h", {})->WithLabels({})->Observe(0.003);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"2.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"10\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"+Inf\"} 1\n"));
}

TEST(Registry, CallbackFamiliesAreReadAtRenderTimeAndCanBeRemoved) {
  Registry registry;
  int calls = 0;
  double value = 1;
  registry.AddCallback("claims", "h", MetricType::kGauge, {"driver_name"}, [&] {
    ++calls;
    return std::vector<LabeledValue>{{.label_values = {"b"}, .value = value},
                                     {.label_values = {"<any>"}, .value = 2 * value}};
  });
  registry.AddCallbackGauge("plain", "h", [&] { return value * 10; });
  value = 3;
  const std::map<std::string, std::string> s = Samples(registry.Render());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s.at("claims{driver_name=\"b\"}"), "3");
  EXPECT_EQ(s.at("claims{driver_name=\"<any>\"}"), "6");
  EXPECT_EQ(s.at("plain"), "30");
  registry.RemoveFamily("claims");
  registry.RemoveFamily("absent");
  EXPECT_EQ(Samples(registry.Render()).count("claims{driver_name=\"b\"}"), 0u);
}

TEST(Registry, ConcurrentUpdatesAreCounted) {
  Registry registry;
  CounterFamily* counter = registry.AddCounter("n_total", "h", {"t"});
  HistogramFamily* hist = registry.AddHistogram("h_seconds", "h", {"t"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        counter->WithLabels({"x"})->Inc();
        hist->WithLabels({"x"})->Observe(0.001);
        if (i % 100 == 0) (void)registry.Render();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::map<std::string, std::string> s = Samples(registry.Render());
  EXPECT_EQ(s.at("n_total{t=\"x\"}"), "4000");
  EXPECT_EQ(s.at("h_seconds_count{t=\"x\"}"), "4000");
  EXPECT_EQ(s.at("h_seconds_bucket{t=\"x\",le=\"0.005\"}"), "4000");
}

TEST(ScopedTimer, ObservesElapsedSeconds) {
  Histogram h({1});
  { ScopedTimer timer(&h); }
  { ScopedTimer timer(nullptr); }  // no-op
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.count, 1u);
  EXPECT_GE(s.sum, 0);
  EXPECT_LT(s.sum, 1);
}

}  // namespace
}  // namespace kdp::metrics
