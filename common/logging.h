// Structured logging for every kdp process: one line per event with stable key/value pairs
// (resourceName, podUID, containerName, endpoint, ...). Two formats:
//   text (default): klog-like header, then a quoted message and key="value" pairs:
//     I0102 15:04:05.000000   12345 manager.cc:42] "Registered plugin" resourceName="x/gpu"
//   json: one JSON object per line, like klog's JSON format:
//     {"ts":1704207845.000001,"level":"info","caller":"manager.cc:42","msg":"Registered plugin",
//      "resourceName":"x/gpu"}
//     Arithmetic field values are JSON numbers, bools JSON booleans, everything else a string;
//     bytes that are not valid UTF-8 become U+FFFD.
// Debian 12's Abseil has no absl/log and kdp adds no glog, so this is the one logging header.
// Binaries apply --log-level/--log-format/-v through common/log_flags.h.
//
// Thread-safe: lines from concurrent threads never interleave.
#ifndef KDP_COMMON_LOGGING_H_
#define KDP_COMMON_LOGGING_H_

#include <cmath>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdp::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class Format { kText = 0, kJson = 1 };

// Lines below `level` are dropped. Default kInfo; KDP_LOG_LEVEL=debug|info|warning|error in the
// environment sets the initial value.
void SetMinLevel(Level level);
Level MinLevel();
// Parses "debug", "info", "warning" or "error"; false when `text` is none of them.
bool ParseLevel(std::string_view text, Level* level);

// The output format. Default kText; KDP_LOG_FORMAT=text|json in the environment sets the initial
// value (read at first use).
void SetFormat(Format format);
Format CurrentFormat();
// Parses "text" or "json"; false when `text` is neither.
bool ParseFormat(std::string_view text, Format* format);

// One key/value pair of a log line. `json_literal`: `value` is already a JSON number or boolean
// (written unquoted in JSON; always quoted in text).
struct Field {
  std::string key = {};
  std::string value = {};
  bool json_literal = false;
};

// Writes one line to stderr in the current format. Use the KDP_LOG_* wrappers, which add the
// source location.
void Write(Level level, const char* file, int line, std::string_view message,
           const std::vector<Field>& fields);

// Renders one line (without the trailing newline) as Write would, for a fixed time and thread id;
// exposed for tests.
std::string FormatLine(Format format, Level level, const char* file, int line,
                       std::string_view message, const std::vector<Field>& fields,
                       long long time_ns, long thread_id);

namespace internal {
inline void AppendFields(std::vector<Field>&) {}
template <typename V, typename... Rest>
void AppendFields(std::vector<Field>& out, std::string_view key, const V& value,
                  const Rest&... rest) {
  Field field;
  field.key = std::string(key);
  std::ostringstream v;
  if constexpr (std::is_same_v<V, bool>) {
    v << (value ? "true" : "false");
    field.json_literal = true;
  } else if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, char> &&
                       !std::is_same_v<V, signed char> && !std::is_same_v<V, unsigned char>) {
    v << value;
    // NaN and infinities are not JSON numbers: they stay strings.
    if constexpr (std::is_floating_point_v<V>) {
      field.json_literal = std::isfinite(value);
    } else {
      field.json_literal = true;
    }
  } else {
    v << value;
  }
  field.value = v.str();
  out.push_back(std::move(field));
  AppendFields(out, rest...);
}
}  // namespace internal

template <typename... KV>
void Log(Level level, const char* file, int line, std::string_view message, const KV&... kv) {
  static_assert(sizeof...(KV) % 2 == 0, "log fields come as key, value pairs");
  if (level < MinLevel()) return;
  std::vector<Field> fields;
  fields.reserve(sizeof...(KV) / 2);
  internal::AppendFields(fields, kv...);
  Write(level, file, line, message, fields);
}

}  // namespace kdp::log

#define KDP_LOG_DEBUG(...) \
  ::kdp::log::Log(::kdp::log::Level::kDebug, __FILE__, __LINE__, __VA_ARGS__)
#define KDP_LOG_INFO(...) ::kdp::log::Log(::kdp::log::Level::kInfo, __FILE__, __LINE__, __VA_ARGS__)
#define KDP_LOG_WARNING(...) \
  ::kdp::log::Log(::kdp::log::Level::kWarning, __FILE__, __LINE__, __VA_ARGS__)
#define KDP_LOG_ERROR(...) \
  ::kdp::log::Log(::kdp::log::Level::kError, __FILE__, __LINE__, __VA_ARGS__)

#endif  // KDP_COMMON_LOGGING_H_
