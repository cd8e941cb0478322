// Metrics registry implementation: name validation, children, and the Prometheus text renderer.
#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_view.h"
#include "common/logging.h"

namespace kdp::metrics {
namespace {

[[noreturn]] void Fail(const std::string& message) {
  KDP_LOG_ERROR("Metrics programming error", "err", message);
  std::fprintf(stderr, "kdp::metrics: %s\n", message.c_str());
  std::abort();
}

void AtomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

void AppendEscaped(std::string_view s, bool quotes, std::string* out) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quotes && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// Appends `name{l1="v1",...,extra_name="extra_value"} value\n`.
void AppendSample(std::string_view name, const std::vector<std::string>& label_names,
                  const LabelValues& values, std::string_view extra_name,
                  std::string_view extra_value, double value, std::string* out) {
  out->append(name);
  if (!label_names.empty() || !extra_name.empty()) {
    out->push_back('{');
    bool first = true;
    // Labels sorted by name, as client_golang writes them (le stays last).
    std::vector<size_t> order(std::min(label_names.size(), values.size()));
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return label_names[a] < label_names[b]; });
    for (size_t i : order) {
      if (!first) out->push_back(',');
      first = false;
      out->append(label_names[i]).append("=\"");
      AppendEscaped(values[i], true, out);
      out->push_back('"');
    }
    if (!extra_name.empty()) {
      if (!first) out->push_back(',');
      out->append(extra_name).append("=\"");
      AppendEscaped(extra_value, true, out);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(FormatValue(value));
  out->push_back('\n');
}

void AppendHeader(const FamilyBase& family, std::string_view type, std::string* out) {
  out->append("# HELP ").append(family.name()).push_back(' ');
  AppendEscaped(family.help(), false, out);
  out->push_back('\n');
  out->append("# TYPE ").append(family.name()).push_back(' ');
  out->append(type).push_back('\n');
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void CheckNames(std::string_view name, const std::vector<std::string>& label_names,
                MetricType type) {
  if (absl::Status s = ValidateMetricName(name); !s.ok()) Fail(std::string(s.message()));
  for (size_t i = 0; i < label_names.size(); ++i) {
    if (absl::Status s = ValidateLabelName(label_names[i]); !s.ok()) {
      Fail(absl::StrCat("metric ", Sv(name), ": ", s.message()));
    }
    if (type == MetricType::kHistogram && label_names[i] == "le") {
      Fail(absl::StrCat("metric ", Sv(name),
                        ": label name \"le\" is reserved for histogram buckets"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (label_names[j] == label_names[i]) {
        Fail(absl::StrCat("metric ", Sv(name), ": label name \"", label_names[i], "\" repeated"));
      }
    }
  }
}

// A family whose samples come from a callback at render time.
class CallbackFamily : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, std::vector<std::string> label_names,
                 MetricType type, ValuesCallback callback)
      : FamilyBase(std::move(name), std::move(help), std::move(label_names), type),
        callback_(std::move(callback)) {}

  void Render(std::string* out) const override {
    std::vector<LabeledValue> values = callback_ ? callback_() : std::vector<LabeledValue>{};
    if (values.empty()) return;
    std::sort(values.begin(), values.end(), [](const LabeledValue& a, const LabeledValue& b) {
      return a.label_values < b.label_values;
    });
    AppendHeader(*this, TypeName(type()), out);
    for (const LabeledValue& v : values) {
      if (v.label_values.size() != label_names().size()) continue;  // a callback bug: skip it
      AppendSample(name(), label_names(), v.label_values, "", "", v.value, out);
    }
  }

 private:
  const ValuesCallback callback_;
};

}  // namespace

absl::Status ValidateMetricName(std::string_view name) {
  bool ok = !name.empty();
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    ok = alpha || (i > 0 && c >= '0' && c <= '9');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric name \"", Sv(name), "\" must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelName(std::string_view name) {
  bool ok = !name.empty();
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    ok = alpha || (i > 0 && c >= '0' && c <= '9');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("label name \"", Sv(name), "\" must match [a-zA-Z_][a-zA-Z0-9_]*"));
  }
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
    return absl::InvalidArgumentError(
        absl::StrCat("label name \"", Sv(name), "\": names starting with \"__\" are reserved"));
  }
  return absl::OkStatus();
}

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (start <= 0 || factor <= 1 || count < 1) {
    Fail(absl::StrCat("ExponentialBuckets(", start, ", ", factor, ", ", count,
                      "): needs start > 0, factor > 1, count >= 1"));
  }
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i, start *= factor) bounds.push_back(start);
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (width <= 0 || count < 1) {
    Fail(absl::StrCat("LinearBuckets(", start, ", ", width, ", ", count,
                      "): needs width > 0, count >= 1"));
  }
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
    // -0 prints as "-0": Prometheus prints "0" for it as well as for +0.
    return std::string(buffer) == "-0" ? "0" : buffer;
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return absl::StrCat(value);
  return std::string(buffer, end);
}

void Counter::Add(double delta) {
  if (!(delta >= 0)) return;
  AtomicAdd(value_, delta);
}

void Gauge::Add(double delta) { AtomicAdd(value_, delta); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // Buckets are few (about 11-20): a linear scan is as fast as a binary search here.
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  absl::MutexLock lock(&mu_);
  ++counts_[i];
  ++count_;
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  absl::MutexLock lock(&mu_);
  s.bucket_counts.assign(counts_.begin(), counts_.end() - 1);
  s.count = count_;
  s.sum = sum_;
  return s;
}

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> label_names,
                       MetricType type)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      type_(type) {}

void FamilyBase::CheckLabelCount(const LabelValues& values) const {
  if (values.size() != label_names_.size()) {
    Fail(absl::StrCat("metric ", name_, ": WithLabels got ", values.size(), " values for labels {",
                      absl::StrJoin(label_names_, ","), "}"));
  }
}

template <typename T>
T* Family<T>::WithLabels(const LabelValues& values) {
  CheckLabelCount(values);
  absl::MutexLock lock(&mu_);
  auto found = children_.find(values);
  if (found != children_.end()) return found->second.get();
  if (children_.size() >= kMaxChildren) {
    if (!overflow_logged_) {
      overflow_logged_ = true;
      KDP_LOG_WARNING("Metric has too many label sets; counting new ones under the overflow labels",
                      "metric", name(), "limit", kMaxChildren, "value", kOverflowLabelValue);
    }
    std::unique_ptr<T>& overflow =
        children_[LabelValues(label_names().size(), std::string(kOverflowLabelValue))];
    if (overflow == nullptr) overflow = NewChild();
    return overflow.get();
  }
  std::unique_ptr<T>& child = children_[values];
  child = NewChild();
  return child.get();
}

template <typename T>
void Family<T>::Remove(const LabelValues& values) {
  absl::MutexLock lock(&mu_);
  children_.erase(values);
}

namespace {

void RenderChild(const FamilyBase& family, const LabelValues& values, const Counter& child,
                 std::string* out) {
  AppendSample(family.name(), family.label_names(), values, "", "", child.value(), out);
}

void RenderChild(const FamilyBase& family, const LabelValues& values, const Gauge& child,
                 std::string* out) {
  AppendSample(family.name(), family.label_names(), values, "", "", child.value(), out);
}

void RenderChild(const FamilyBase& family, const LabelValues& values, const Histogram& child,
                 std::string* out) {
  const std::string bucket = family.name() + "_bucket";
  const Histogram::Snapshot s = child.snapshot();
  uint64_t cumulative = 0;
  for (size_t i = 0; i < s.bounds.size(); ++i) {
    cumulative += s.bucket_counts[i];
    AppendSample(bucket, family.label_names(), values, "le", FormatValue(s.bounds[i]),
                 static_cast<double>(cumulative), out);
  }
  AppendSample(bucket, family.label_names(), values, "le", "+Inf", static_cast<double>(s.count),
               out);
  AppendSample(family.name() + "_sum", family.label_names(), values, "", "", s.sum, out);
  AppendSample(family.name() + "_count", family.label_names(), values, "", "",
               static_cast<double>(s.count), out);
}

}  // namespace

template <typename T>
void Family<T>::Render(std::string* out) const {
  absl::MutexLock lock(&mu_);
  if (children_.empty()) return;
  AppendHeader(*this, TypeName(type()), out);
  for (const auto& [values, child] : children_) RenderChild(*this, values, *child, out);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : Family<Histogram>(std::move(name), std::move(help), std::move(label_names),
                        MetricType::kHistogram),
      bounds_(std::move(bounds)) {}

std::unique_ptr<Histogram> HistogramFamily::NewChild() const {
  return std::make_unique<Histogram>(bounds_);
}

Registry::~Registry() = default;

FamilyBase* Registry::AddLocked(std::unique_ptr<FamilyBase> family) {
  auto it = families_.find(family->name());
  if (it != families_.end()) {
    const FamilyBase& old = *it->second;
    const auto* old_h = dynamic_cast<const HistogramFamily*>(&old);
    const auto* new_h = dynamic_cast<const HistogramFamily*>(family.get());
    const bool callback = dynamic_cast<const CallbackFamily*>(&old) != nullptr;
    if (callback || old.type() != family->type() || old.label_names() != family->label_names() ||
        (old_h != nullptr && new_h != nullptr && old_h->bounds() != new_h->bounds())) {
      Fail(absl::StrCat("metric ", family->name(),
                        " added twice with a different type, labels or buckets"));
    }
    return it->second.get();
  }
  FamilyBase* raw = family.get();
  families_.emplace(raw->name(), std::move(family));
  return raw;
}

CounterFamily* Registry::AddCounter(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names) {
  CheckNames(name, label_names, MetricType::kCounter);
  const bool unlabelled = label_names.empty();
  std::unique_ptr<CounterFamily> family(new CounterFamily(
      std::string(name), std::string(help), std::move(label_names), MetricType::kCounter));
  absl::MutexLock lock(&mu_);
  auto* result = static_cast<CounterFamily*>(AddLocked(std::move(family)));
  if (unlabelled) result->WithLabels({});
  return result;
}

GaugeFamily* Registry::AddGauge(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names) {
  CheckNames(name, label_names, MetricType::kGauge);
  const bool unlabelled = label_names.empty();
  std::unique_ptr<GaugeFamily> family(new GaugeFamily(std::string(name), std::string(help),
                                                      std::move(label_names), MetricType::kGauge));
  absl::MutexLock lock(&mu_);
  auto* result = static_cast<GaugeFamily*>(AddLocked(std::move(family)));
  if (unlabelled) result->WithLabels({});
  return result;
}

HistogramFamily* Registry::AddHistogram(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds) {
  CheckNames(name, label_names, MetricType::kHistogram);
  if (bounds.empty()) Fail(absl::StrCat("histogram ", Sv(name), ": no bucket bounds"));
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      Fail(absl::StrCat("histogram ", Sv(name), ": bucket bounds must be finite and increasing"));
    }
  }
  const bool unlabelled = label_names.empty();
  std::unique_ptr<HistogramFamily> family(new HistogramFamily(
      std::string(name), std::string(help), std::move(label_names), std::move(bounds)));
  absl::MutexLock lock(&mu_);
  auto* result = static_cast<HistogramFamily*>(AddLocked(std::move(family)));
  if (unlabelled) result->WithLabels({});
  return result;
}

void Registry::AddCallback(std::string_view name, std::string_view help, MetricType type,
                           std::vector<std::string> label_names, ValuesCallback callback) {
  if (type == MetricType::kHistogram) {
    Fail(absl::StrCat("metric ", Sv(name), ": callback families are gauges or counters"));
  }
  CheckNames(name, label_names, type);
  auto family = std::make_unique<CallbackFamily>(std::string(name), std::string(help),
                                                 std::move(label_names), type, std::move(callback));
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (dynamic_cast<const CallbackFamily*>(it->second.get()) == nullptr) {
      Fail(absl::StrCat("metric ", Sv(name), " added twice: once as a callback, once not"));
    }
    it->second = std::move(family);
    return;
  }
  families_.emplace(std::string(name), std::move(family));
}

void Registry::AddCallbackGauge(std::string_view name, std::string_view help,
                                std::function<double()> callback) {
  AddCallback(name, help, MetricType::kGauge, {},
              [callback = std::move(callback)]() -> std::vector<LabeledValue> {
                return {LabeledValue{.label_values = {}, .value = callback()}};
              });
}

void Registry::RemoveFamily(std::string_view name) {
  std::unique_ptr<FamilyBase> removed;
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  removed = std::move(it->second);
  families_.erase(it);
}

std::string Registry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->Render(&out);
  return out;
}

namespace {
int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ScopedTimer::ScopedTimer(Histogram* histogram) : histogram_(histogram), start_ns_(SteadyNanos()) {}

ScopedTimer::~ScopedTimer() {
  if (histogram_ != nullptr) histogram_->Observe(ElapsedSeconds());
}

double ScopedTimer::ElapsedSeconds() const {
  return static_cast<double>(SteadyNanos() - start_ns_) / 1e9;
}

}  // namespace kdp::metrics
