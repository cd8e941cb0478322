// Prometheus metrics for kdp processes: a Registry of counter, gauge and histogram families with
// labelled children, rendered in the Prometheus text exposition format 0.0.4 for `/metrics`
// (served by common/metrics_server.h). There is no process-global registry: each owner (the
// manager, an SDK runner) creates one and hands it to its components, so tests running several
// owners in one process stay isolated.
//
// Usage:
//   metrics::Registry registry;
//   metrics::CounterFamily* registrations = registry.AddCounter(
//       "kubelet_device_plugin_registration_total", "Cumulative number of device plugin
//       registrations.",
//       {"resource_name"});
//   registrations->WithLabels({"example.com/gpu"})->Inc();
//
// Names are validated when a family is added: metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*,
// label names [a-zA-Z_][a-zA-Z0-9_]* without the reserved "__" prefix ("le" is reserved for
// histograms). Metric and label names are constants in the calling code, so a bad name, a name
// added twice with a different shape, or WithLabels with the wrong number of values is a
// programming error: the process logs it and aborts (as client_golang's MustRegister panics).
// Validate names that come from input with ValidateMetricName/ValidateLabelName first.
//
// Thread-safe: every method of every class here may be called concurrently. Child pointers are
// stable until the family (or its Registry) is destroyed or the child is Remove()d, so hot paths
// look a child up once and keep the pointer; Inc/Add/Set/Observe take no registry lock.
#ifndef KDP_COMMON_METRICS_H_
#define KDP_COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace kdp::metrics {

// Label values of one child, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// OK when `name` is a valid Prometheus metric name; INVALID_ARGUMENT naming it and the rule.
[[nodiscard]] absl::Status ValidateMetricName(std::string_view name);
// OK when `name` is a valid Prometheus label name (and not reserved "__..."); else
// INVALID_ARGUMENT.
[[nodiscard]] absl::Status ValidateLabelName(std::string_view name);

// The Prometheus client (and kubelet) default buckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
std::vector<double> DefaultBuckets();
// `count` bounds start, start*factor, start*factor^2, ... REQUIRES: start > 0, factor > 1, count
// >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// `count` bounds start, start+width, ... REQUIRES: width > 0, count >= 1.
std::vector<double> LinearBuckets(double start, double width, int count);

// Formats `value` as the Prometheus text format does: "NaN", "+Inf", "-Inf"; integral values
// below 2^53 without exponent or fraction ("3", "-1", "1000000"); others in the shortest form
// that reads back exactly ("0.005", "2.5", "1e-07").
std::string FormatValue(double value);

// A monotonically increasing value.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Inc() { Add(1); }
  // REQUIRES: delta >= 0 (a negative delta is ignored: counters never go down).
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into cumulative buckets, with their sum and count.
class Histogram {
 public:
  // A consistent copy of the state: bucket_counts[i] counts observations <= bounds[i]
  // (non-cumulative per bucket; Render makes them cumulative); `count` includes the +Inf bucket.
  struct Snapshot {
    std::vector<double> bounds = {};
    std::vector<uint64_t> bucket_counts = {};
    uint64_t count = 0;
    double sum = 0;
  };

  // REQUIRES: `bounds` strictly increasing and finite (checked by the family).
  explicit Histogram(std::vector<double> bounds);
  Histogram() : Histogram(DefaultBuckets()) {}
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value) ABSL_LOCKS_EXCLUDED(mu_);
  Snapshot snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };

// The common part of a family: name, help, label names; renders itself. Not for direct use.
class FamilyBase {
 public:
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;
  virtual ~FamilyBase() = default;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  MetricType type() const { return type_; }
  // Appends "# HELP", "# TYPE" and one line per sample; nothing when the family has no child.
  virtual void Render(std::string* out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names,
             MetricType type);
  // Aborts with a message when `values` does not match the label names in number.
  void CheckLabelCount(const LabelValues& values) const;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const MetricType type_;
};

// A family of children of type T (Counter, Gauge), one per distinct label-value tuple. A family
// without labels has its one child from the start, so it renders 0 before first use.
template <typename T>
class Family : public FamilyBase {
 public:
  // The child for `values` (created on first use). Never null; stable until Remove(values) or
  // the family's destruction. Aborts when values.size() != label_names().size().
  // At most kMaxChildren distinct label-value tuples: label values often come from peers (the
  // resource name of every Register call, counted before it is validated, as the kubelet does),
  // and a flood of distinct values must not grow memory without bound. Beyond the cap, new
  // tuples share one child whose every label value is kOverflowLabelValue (logged once).
  static constexpr size_t kMaxChildren = 10000;
  static constexpr char kOverflowLabelValue[] = "<overflow>";
  T* WithLabels(const LabelValues& values) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the child for `values` (a pointer to it becomes dangling); not an error when absent.
  void Remove(const LabelValues& values) ABSL_LOCKS_EXCLUDED(mu_);
  void Render(std::string* out) const override ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  friend class Registry;
  using FamilyBase::FamilyBase;
  virtual std::unique_ptr<T> NewChild() const { return std::make_unique<T>(); }

  mutable absl::Mutex mu_;
  std::map<LabelValues, std::unique_ptr<T>> children_ ABSL_GUARDED_BY(mu_);
  bool overflow_logged_ ABSL_GUARDED_BY(mu_) = false;
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;

class HistogramFamily : public Family<Histogram> {
 public:
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  friend class Registry;
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);
  std::unique_ptr<Histogram> NewChild() const override;
  const std::vector<double> bounds_;
};

// One sample of a callback family.
struct LabeledValue {
  LabelValues label_values = {};
  double value = 0;
};
// Called at every Render (scrape) from the scraping thread, with the registry's lock held: it must
// not call back into the Registry, and it must not block for long. Label tuples should be distinct.
using ValuesCallback = std::function<std::vector<LabeledValue>()>;

// Owns metric families and renders them. Families live as long as the Registry (or until
// RemoveFamily). Thread-safe.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  ~Registry();

  // Each Add* returns the family (owned by the registry, never null). Adding a name that exists
  // with the same type, label names (and bounds) returns the existing family; any other reuse of a
  // name, or an invalid name, aborts (see the file comment).
  CounterFamily* AddCounter(std::string_view name, std::string_view help,
                            std::vector<std::string> label_names = {}) ABSL_LOCKS_EXCLUDED(mu_);
  GaugeFamily* AddGauge(std::string_view name, std::string_view help,
                        std::vector<std::string> label_names = {}) ABSL_LOCKS_EXCLUDED(mu_);
  // REQUIRES: `bounds` non-empty, finite, strictly increasing (+Inf is implicit).
  HistogramFamily* AddHistogram(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names,
                                std::vector<double> bounds = DefaultBuckets())
      ABSL_LOCKS_EXCLUDED(mu_);

  // Gauges/counters whose samples come from `callback` at scrape time, for counts the owner already
  // keeps (devices by health, claims in use). `type` is kGauge or kCounter. Replaces an existing
  // callback family of the same name. `callback` must stay callable until RemoveFamily(name) or
  // the Registry's destruction.
  void AddCallback(std::string_view name, std::string_view help, MetricType type,
                   std::vector<std::string> label_names, ValuesCallback callback)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Shorthand: an unlabelled gauge read from `callback`.
  void AddCallbackGauge(std::string_view name, std::string_view help,
                        std::function<double()> callback) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes a family; pointers into it become dangling. Not an error when absent.
  void RemoveFamily(std::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // Prometheus text format 0.0.4: families sorted by name, children by label values (in the
  // family's label order), labels within a sample sorted by name as client_golang writes them; HELP
  // escapes '\\' and newline, label values escape '\\', '"' and newline; histograms as cumulative
  // name_bucket{...,le="..."} lines ending with le="+Inf", then name_sum and name_count.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  FamilyBase* AddLocked(std::unique_ptr<FamilyBase> family) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

// Times a scope (steady clock) and observes the elapsed seconds into `histogram` (may be null:
// no-op).
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram* histogram);
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;
  ~ScopedTimer();
  // Seconds since construction.
  double ElapsedSeconds() const;

 private:
  Histogram* const histogram_;
  const int64_t start_ns_;
};

}  // namespace kdp::metrics

#endif  // KDP_COMMON_METRICS_H_
