// How the SDK logs: one line per event on stderr, either klog-like text or one JSON object per
// line, with stable keys (resourceName, driver, endpoint, ...). kdp::RunPlugins() and
// kdp::RunDraDriver() apply the flags every kdp binary shares (--log-level, --log-format, -v); a
// main() that parses its own flags calls SetLogOptions() once, before starting a runner.
//
// Thread-safety: SetLogOptions() is thread-safe, but lines logged while it runs may still use the
// old settings.
#ifndef KDP_LOGGING_H_
#define KDP_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace kdp {

struct LogOptions {
  // Lowest level logged: "debug", "info", "warning" or "error"; empty: $KDP_LOG_LEVEL, else info.
  std::string level = {};
  // "text" (klog-like) or "json" (one object per line); empty: $KDP_LOG_FORMAT, else text.
  std::string format = {};
  // klog-style verbosity: 0 logs at `level`; 1 or more logs debug lines too.
  int verbosity = 0;
};

// Applies `options` to every later log line of the process. INVALID_ARGUMENT naming the field and
// value for an unknown level or format or a negative verbosity; nothing changes then.
[[nodiscard]] absl::Status SetLogOptions(const LogOptions& options);

}  // namespace kdp

#endif  // KDP_LOGGING_H_
