// Sv: a std::string_view as an absl::string_view. Debian 12's Abseil (20220623) is built with its
// own absl::string_view, a type distinct from std::string_view, so absl::StrCat, StrSplit and
// friends do not take a std::string_view as it is. One helper, for every file that needs it.
#ifndef KDP_COMMON_ABSL_VIEW_H_
#define KDP_COMMON_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace kdp {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace kdp

#endif  // KDP_COMMON_ABSL_VIEW_H_
