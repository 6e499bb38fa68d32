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

#include <cstdint>
#include <string>

#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::report_scale {

// `samples`: burn-in Samples per GPU and metric.
reports::RunData Generate(int nodes, int gpus, int samples);

// --- What cmax-report-scale and cmax-scale-scorecard both print. ---

// A line of /proc/self/status in kB ("VmHWM", "VmRSS"), -1 when unreadable.
int64_t StatusKb(const std::string& key);
// Sets VmHWM to the current VmRSS (/proc/self/clear_refs "5"), so that a
// later StatusKb("VmHWM") is the peak from here on.
void ResetPeakRss();
// True when the two cards are the same message apart from `generated` (the
// time they were built); otherwise prints "the two scorecards differ:" and
// the first 4,000 characters of the differences to stderr.
bool SameScorecard(v1::Scorecard a, v1::Scorecard b);

}  // namespace cmax::report_scale

#endif  // CMAX_BENCHMARKS_REPORT_SCALE_REPORT_SCALE_DATA_H_
