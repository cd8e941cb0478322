// Status propagation macros. Debian 12's Abseil (20220623) has no RETURN_IF_ERROR or
// ASSIGN_OR_RETURN, so kdp keeps one small pair here, used by every folder.
#ifndef KDP_COMMON_STATUS_MACROS_H_
#define KDP_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KDP_STATUS_CONCAT_INNER_(a, b) a##b
#define KDP_STATUS_CONCAT_(a, b) KDP_STATUS_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define KDP_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::absl::Status kdp_status_ = (expr);       \
    if (!kdp_status_.ok()) return kdp_status_; \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else moves the value
// into `lhs` (which may be a declaration such as `auto x`).
#define KDP_ASSIGN_OR_RETURN(lhs, rexpr) \
  KDP_ASSIGN_OR_RETURN_IMPL_(KDP_STATUS_CONCAT_(kdp_statusor_, __LINE__), lhs, rexpr)

#define KDP_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  if (!statusor.ok()) return statusor.status();          \
  lhs = std::move(statusor).value()

#endif  // KDP_COMMON_STATUS_MACROS_H_
