// The logging flags every kdp binary shares: --log-level, --log-format and -v/--verbosity, added to
// a CLI11 app and applied after parsing, so all binaries spell and document them the same way.
//
//   kdp::log::LogFlags log_flags;
//   kdp::log::AddLogFlags(app, &log_flags);
//   CLI11_PARSE(app, argc, argv);
//   if (absl::Status s = kdp::log::ApplyLogFlags(log_flags); !s.ok()) { ...exit 2... }
//
// Not thread-safe by itself: call from main before starting threads.
#ifndef KDP_COMMON_LOG_FLAGS_H_
#define KDP_COMMON_LOG_FLAGS_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kdp::log {

struct LogFlags {
  // "debug", "info", "warning", "error"; "" keeps KDP_LOG_LEVEL or the default (info).
  std::string level = {};
  // "text" or "json"; "" keeps KDP_LOG_FORMAT or the default (text).
  std::string format = {};
  // klog-style verbosity: 0 keeps the level above; 1 or more lowers it to debug.
  int verbosity = 0;
};

// Adds --log-level, --log-format and -v,--verbosity to `app`, storing into `*flags` (borrowed; must
// outlive parsing). --log-level and --log-format are checked by CLI11 against their choices.
void AddLogFlags(CLI::App& app, LogFlags* flags);

// Applies parsed flags (SetMinLevel, SetFormat). INVALID_ARGUMENT naming the flag and value when a
// level or format is unknown or verbosity is negative; nothing is changed then.
[[nodiscard]] absl::Status ApplyLogFlags(const LogFlags& flags);

}  // namespace kdp::log

#endif  // KDP_COMMON_LOG_FLAGS_H_
