// The consistency suite's output digest: FNV-1a 64 (common/fnv1a.h), for
// comparing outputs bit for bit.
#ifndef CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_
#define CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_

#include "common/fnv1a.h"

namespace cmax::consistency {

using ::cmax::Fnv1a64;

}  // namespace cmax::consistency

#endif  // CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_
