// Status propagation macros (Debian's Abseil 20220623 ships none).
#ifndef CMAX_COMMON_STATUS_MACROS_H_
#define CMAX_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CMAX_STATUS_CONCAT_INNER_(a, b) a##b
#define CMAX_STATUS_CONCAT_(a, b) CMAX_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function when `expr` (an absl::Status) is not OK.
#define CMAX_RETURN_IF_ERROR(expr)                        \
  do {                                                    \
    ::absl::Status cmax_status_ = (expr);                 \
    if (!cmax_status_.ok()) return cmax_status_;          \
  } while (0)

// `lhs = value of expr` (an absl::StatusOr<T>), or return its status.
#define CMAX_ASSIGN_OR_RETURN(lhs, expr) \
  CMAX_ASSIGN_OR_RETURN_IMPL_(CMAX_STATUS_CONCAT_(cmax_statusor_, __LINE__), lhs, expr)

#define CMAX_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return statusor.status();          \
  lhs = std::move(statusor).value()

#endif  // CMAX_COMMON_STATUS_MACROS_H_
