// The rule every run id from outside (a gRPC request, a URL of the web
// view) passes before it names a file or a query.
#ifndef CMAX_COMMON_RUN_ID_H_
#define CMAX_COMMON_RUN_ID_H_

#include <string>

namespace cmax {

// Letters, digits, '-', '_', '.', no "..", 1-128 characters.
bool IsSafeRunId(const std::string& id);

}  // namespace cmax

#endif  // CMAX_COMMON_RUN_ID_H_
