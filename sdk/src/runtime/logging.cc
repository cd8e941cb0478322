// kdp::SetLogOptions (kdp/logging.h): the public face of common/log_flags.h.
#include "kdp/logging.h"

#include "common/log_flags.h"

namespace kdp {

absl::Status SetLogOptions(const LogOptions& options) {
  return log::ApplyLogFlags(
      {.level = options.level, .format = options.format, .verbosity = options.verbosity});
}

}  // namespace kdp
