// Reading what fio wrote: its JSON report (--output-format=json, fio 3.x),
// its verify errors on stderr, and its per-second bandwidth logs.
#ifndef CMAX_BENCHMARKS_STORAGE_FIO_RESULT_H_
#define CMAX_BENCHMARKS_STORAGE_FIO_RESULT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::storage {

// One direction ("read" or "write") of one job.
struct DirStats {
  int64_t io_bytes = 0;
  int64_t total_ios = 0;
  double bw_bytes = 0;     // bytes per second
  double iops = 0;
  int64_t runtime_ms = 0;
  bool have_percentiles = false;
  double p50_us = 0, p99_us = 0, p99_9_us = 0;  // total latency (lat_ns), else clat_ns
  std::string latency_kind;                     // "lat" or "clat"
};

struct FioJob {
  std::string name;
  int error = 0;            // errno fio reports for the job (0: none)
  int64_t job_runtime_ms = 0;
  DirStats read, write;
};

struct FioReport {
  std::string version;        // "fio-3.33"
  int64_t timestamp_ms = 0;   // when fio wrote the report (after the last job)
  std::vector<FioJob> jobs;   // in fio's order
};

// Parses fio's JSON report. fio may print error lines ("fio: pid=...") on
// stdout before the JSON; everything before the first line that starts with
// '{' is skipped. INVALID_ARGUMENT when there is no JSON report or no jobs.
absl::StatusOr<FioReport> ParseFioJson(std::string_view text);

// A block that failed verification ("crc32c: verify failed at file F
// offset N, length L", "verify: bad magic header ... at file F offset N").
struct VerifyError {
  std::string file;
  int64_t offset = 0;
  std::string line;  // fio's line, as evidence
};
std::vector<VerifyError> ParseVerifyErrors(std::string_view fio_stderr);

// Per-second bandwidth of one node, summed over its jobs.
struct BwSeries {
  int64_t start_unix_ms = 0;  // start of the first second
  int64_t step_ms = 1000;
  std::vector<double> mbps;   // MB/s (1e6 B/s) per step
};

// Sums fio bandwidth logs written with log_avg_msec=1000 and
// log_unix_epoch=1 (lines "time_ms, KiB/s, ddir, bs[, offset[, prio]]").
// A sample at time t averages (t - 1000, t]; it is put in the second that
// holds the middle of that interval. INVALID_ARGUMENT when no log has a
// sample.
absl::StatusOr<BwSeries> SumBwLogs(const std::vector<std::string>& logs);

// "12,34.5,0" <-> BwSeries values (labels carry them, 1 decimal).
std::string FormatSeries(const std::vector<double>& values);
absl::StatusOr<std::vector<double>> ParseSeries(std::string_view text);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_FIO_RESULT_H_
