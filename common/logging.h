// Structured logging for every kdp process: one line per event, klog-like header, then a quoted
// message and stable key="value" pairs (resourceName, podUID, containerName, endpoint, ...).
// Debian 12's Abseil has no absl/log and kdp adds no glog, so this is the one logging header.
//
// Thread-safe: lines from concurrent threads never interleave.
#ifndef KDP_COMMON_LOGGING_H_
#define KDP_COMMON_LOGGING_H_

#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace kdp::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped. Default kInfo; KDP_LOG_LEVEL=debug|info|warning|error in the
// environment sets the initial value.
void SetMinLevel(Level level);
Level MinLevel();
// Parses "debug", "info", "warning" or "error"; false when `text` is none of them.
bool ParseLevel(std::string_view text, Level* level);

// Writes one line to stderr. Use the KDP_LOG_* wrappers, which add the source location.
void Write(Level level, const char* file, int line, std::string_view message,
           std::string_view fields);

namespace internal {
inline void AppendFields(std::ostringstream&) {}
template <typename V, typename... Rest>
void AppendFields(std::ostringstream& out, std::string_view key, const V& value,
                  const Rest&... rest) {
  std::ostringstream v;
  v << value;
  std::string s = v.str();
  out << ' ' << key << "=\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out << '\\';
    if (c == '\n') {
      out << "\\n";
      continue;
    }
    out << c;
  }
  out << '"';
  AppendFields(out, rest...);
}
}  // namespace internal

template <typename... KV>
void Log(Level level, const char* file, int line, std::string_view message, const KV&... kv) {
  static_assert(sizeof...(KV) % 2 == 0, "log fields come as key, value pairs");
  if (level < MinLevel()) return;
  std::ostringstream fields;
  internal::AppendFields(fields, kv...);
  Write(level, file, line, message, fields.str());
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
