// The run cmax-report-scale generates: N H100 nodes of G GPUs, SIMULATED
// (every Measurement and Finding has simulated = true): hostcheck
// inventory; bf16 GEMM and memory copies (h2d, d2h, hbm) per GPU with a few
// slow GPUs; a one-node all_reduce sweep per node; a burn-in with clock,
// temperature and power Samples per GPU; storage seq_read and seq_write per
// node; connectivity to the two ring neighbours; a few warnings and
// failures. Deterministic. Also the mixed data of the scorecard's
// record-set test (tests/reports/record_set_test.cc).
#ifndef CMAX_BENCHMARKS_REPORT_SCALE_REPORT_SCALE_DATA_H_
#define CMAX_BENCHMARKS_REPORT_SCALE_REPORT_SCALE_DATA_H_

#include "reports/run_data.h"

namespace cmax::report_scale {

// `samples`: burn-in Samples per GPU and metric.
reports::RunData Generate(int nodes, int gpus, int samples);

}  // namespace cmax::report_scale

#endif  // CMAX_BENCHMARKS_REPORT_SCALE_REPORT_SCALE_DATA_H_
