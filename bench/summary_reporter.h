// The console output of a Google Benchmark run as usual, and for the program's own summary the
// median over repetitions of each figure (real or manual time, in µs, and every counter), or the
// only run's figure when the benchmark ran once (--benchmark_repetitions=1). Shared by the
// benchmark programs that print a summary table and a verdict line.
#ifndef KDP_BENCH_SUMMARY_REPORTER_H_
#define KDP_BENCH_SUMMARY_REPORTER_H_

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kdp::bench {

class SummaryReporter final : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;

  struct Figure {
    double mean_us = 0;
    std::map<std::string, double> counters;
    std::string error;
    bool median = false;  // from the median aggregate, which wins over any single run

    double Counter(const std::string& key) const {
      auto it = counters.find(key);
      return it == counters.end() ? 0.0 : it->second;
    }
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      Figure& figure = figures_[run.run_name.function_name];
      if (run.error_occurred) {
        figure.error = run.error_message;
        continue;
      }
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (!median && (run.run_type == Run::RT_Aggregate || figure.median)) continue;
      figure.median = median;
      figure.mean_us = run.GetAdjustedRealTime();  // Every benchmark reports in µs.
      figure.counters.clear();
      for (const auto& [key, counter] : run.counters) figure.counters[key] = counter.value;
    }
  }

  // The figure, or nullptr when it failed or did not run.
  const Figure* Get(const std::string& name) const {
    auto it = figures_.find(name);
    const bool ok = it != figures_.end() && it->second.error.empty() && it->second.mean_us > 0;
    return ok ? &it->second : nullptr;
  }

  // The figure's time in µs, or an error naming the benchmark and why it has none.
  absl::StatusOr<double> MeanUs(const std::string& name) const {
    if (const Figure* f = Get(name)) return f->mean_us;
    auto it = figures_.find(name);
    if (it == figures_.end()) return absl::NotFoundError(absl::StrCat(name, ": not run"));
    return absl::InternalError(
        absl::StrCat(name, ": ", it->second.error.empty() ? "no time" : it->second.error));
  }

  // Prints the figure's row (mean, p50, p99), and the row of its deletion (counters del_us,
  // del_p50_us, del_p99_us) when `delete_label` is given; returns it, or nullptr when missing.
  const Figure* Print(const std::string& label, const std::string& name,
                      const std::string& delete_label = "") const {
    const Figure* f = Get(name);
    if (f == nullptr) {
      auto it = figures_.find(name);
      absl::PrintF("%-58s %s\n", label, it == figures_.end() ? "not run" : it->second.error);
      return nullptr;
    }
    absl::PrintF("%-58s %9.1f %9.1f %9.1f\n", label, f->mean_us, f->Counter("p50_us"),
                 f->Counter("p99_us"));
    if (!delete_label.empty()) {
      absl::PrintF("%-58s %9.1f %9.1f %9.1f\n", delete_label, f->Counter("del_us"),
                   f->Counter("del_p50_us"), f->Counter("del_p99_us"));
    }
    return f;
  }

 private:
  std::map<std::string, Figure> figures_;
};

}  // namespace kdp::bench

#endif  // KDP_BENCH_SUMMARY_REPORTER_H_
