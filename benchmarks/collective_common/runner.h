// The collective benchmark loop shared by every backend, timed the way
// nccl-tests times it (NVIDIA/nccl-tests src/common.cu, BenchTime and
// TimeTest), so the figures compare:
//  - per op: `warmup` calls at the largest and at the smallest size;
//  - per size and placement (out-of-place, then in-place): the input is
//    filled, one untimed call, a barrier, then the loop of `iters` calls is
//    timed as a whole and divided by `iters`; the per-rank times are
//    averaged across ranks (nccl-tests' default `-a 1`; the maximum across
//    ranks is recorded too);
//  - then `check_iters` times: fresh input (new seed), output poisoned, one
//    call, every element of every rank's output checked (data_pattern.h);
//    the wrong counts are summed across ranks and a wrong element stops the
//    checks of that size.
// Output: rank 0 prints the nccl-tests table (without --jsonl) or writes
// Measurements busbw_gbps, algbw_gbps and time_us per op, size and placement
// (labels op, size_bytes, count, dtype, placement in|out, ranks, nodes
// (comma list of node names), group_size (number of nodes), backend, redop,
// root, wrong) and avg_busbw_gbps per op; every rank that saw a wrong
// element writes a FAIL finding collective.wrong_elements naming its rank,
// node, op, size and first wrong index with the expected and received value.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_RUNNER_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_RUNNER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/collective_common/backend.h"
#include "benchmarks/collective_common/collective_types.h"
#include "benchmarks/collective_common/soak.h"
#include "common/suite_flags.h"
#include "common/record_io.h"

namespace cmax::collective {

// Flag values as parsed (nccl-tests short flags and the long forms the
// catalog passes as --name=value).
struct Flags {
  int64_t min_bytes = 1024;            // -b, --min-bytes
  int64_t max_bytes = 64 << 20;        // -e, --max-bytes
  int64_t factor = 2;                  // -f, --factor
  int64_t iters = 20;                  // -n, --iters
  int64_t warmup = 5;                  // -w, --warmup
  int64_t check_iters = 1;             // -c, --check-iters
  std::string dtype = "float";         // -d, --dtype
  std::string op = "all_reduce";       // --op NAME|list|all
  std::string backend;                 // --backend
  double timeout_s = 300;              // --timeout: one collective's limit
  double soak_s = 0;                   // --soak: seconds of soak; 0 = the size sweep
  double interval_s = 10;              // --interval: seconds per soak interval
  double stall_s = 60;                 // --stall: seconds without progress = a stall
  bool jsonl = false;
  bool fault_inject = false;           // TEST-ONLY, see AddFlags
};

// Registers the flags above (and --jsonl) on `parser`.
void AddFlags(SuiteFlags* parser, Flags* flags);

struct Options {
  size_t min_bytes = 0, max_bytes = 0;
  int64_t factor = 2;
  int iters = 20, warmup = 5, check_iters = 1;
  DType dtype = DType::kFloat;
  std::vector<Op> ops;
  bool fault_inject = false;
  SoakConfig soak;      // soak.soak_s > 0: soak mode (see RunCollectives)
  std::string command;  // the command line, for evidence
};

// INVALID_ARGUMENT for a bad dtype, op, size range or count; with --soak,
// also for a soak shorter than two intervals (ValidateSoak), more than one
// op, or min-bytes != max-bytes (a soak runs one size).
absl::StatusOr<Options> ResolveOptions(const Flags& flags);

// This rank's node name: $CMAX_NODE_NAME, else $CMAX_NODE, else the host name.
std::string LocalNodeName();

// One (op, size, placement) result as every rank knows it after the run.
struct Result {
  Op op;
  size_t size_bytes = 0;
  size_t count = 0;
  bool in_place = false;
  double time_us = 0;      // mean over ranks of the per-rank average
  double time_us_max = 0;  // slowest rank
  Bandwidth bw;
  int64_t wrong = 0;       // summed over ranks
};

// Runs the sweep, or with options.soak.soak_s > 0 the soak:
//  - the op (one) at max-bytes (= min-bytes), out-of-place: input filled
//    (seed 99), output poisoned, `warmup` calls, a barrier; then
//    PlannedIntervals() intervals. In an interval every rank runs batches of
//    `iters` calls, each batch followed by Synchronize (its time is the
//    timed part) and a small AllGather of (elapsed, timed) that lets every
//    rank agree when the interval ends (the first rank past interval_s
//    ends it for all). Time per call = timed seconds / iterations per rank,
//    averaged over ranks; algbw and busbw as in the sweep (nccl-tests
//    factors). With check-iters > 0 the output of the interval's last call
//    is downloaded and every element checked (wrong elements: the finding
//    collective.wrong_elements, the soak stops, exit 1) after the first and
//    the last interval and one interval a minute (label verified).
//  - rank 0 writes per interval busbw_gbps, algbw_gbps and time_us with the
//    sweep's labels plus soak=true, interval (0-based), t_start_s (seconds
//    since the soak began), duration_s, iterations, intervals_planned,
//    soak_s, interval_s, stall_s, verified (true|false), wrong; every rank
//    writes a Progress record per interval. Each interval ends at the first
//    batch past interval_s, and verification runs between intervals, so the
//    soak takes somewhat longer than soak_s.
//  - a watchdog thread per rank (SoakWatchdog): when no iteration completed
//    for stall_s, the rank writes the WARN finding collective.soak_stall
//    (it is alive and waiting; labels rank, node, interval, last_iteration,
//    last_progress_s, last_progress_unix_ms, waited_s, rank_nodes) and the
//    process exits 1 at once. So does a rank SIGTERMed, or whose collective
//    fails, after waiting at least stall_s / 2 (label ended_by SIGTERM or
//    error): a peer went away. A rank that is stopped writes nothing: the
//    collective judge blames the ranks of the group that wrote no such
//    finding, else those with the least progress.
// Returns the exit code: 0 passed, 1 a wrong element or a
// collective that failed mid-run, 2 could not run (dtype the backend lacks,
// allocation failure). `table` (rank 0 without --jsonl) gets the human
// table; `out` the records. `results` (optional) receives every result.
int RunCollectives(const Options& options, Backend& backend, RecordWriter& out, FILE* table,
                   std::vector<Result>* results = nullptr);

// Writes a "not measured" finding (collective.not_measured, not_measured
// set) and log for a run that could not start.
void ReportNotMeasured(RecordWriter& out, const std::string& backend, const std::string& why);

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_RUNNER_H_
