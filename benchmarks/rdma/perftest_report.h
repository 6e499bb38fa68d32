// perftest's human report (ib_write_bw, ib_read_bw, ib_write_lat, ...),
// parsed from the text it prints to stdout. Pure functions.
//
// Format (linux-rdma/perftest, perftest_parameters.h REPORT_FMT / the
// headers print_report_bw and print_report_lat write; published runs in
// tests/fixtures/rdma/NOTE.md):
//
//   bandwidth tests, after a line of dashes:
//    #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
//    65536      5000             392.10             391.87              0.747420
//   ("[MB/sec]" instead of "[Gb/sec]" without --report_gbits);
//
//   latency tests:
//    #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]
//        t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
//    2       1000          1.76           6.12         1.79   1.80   0.06   1.88   6.12
//   (older releases print only the first five or six columns).
//
// perftest interleaves warnings ("Conflicting CPU frequency values
// detected: ...") between the header and the rows; lines that do not start
// with a number are skipped. The table ends at the next line of dashes.
#ifndef CMAX_BENCHMARKS_RDMA_PERFTEST_REPORT_H_
#define CMAX_BENCHMARKS_RDMA_PERFTEST_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cmax::bench::rdma {

struct BwRow {
  int64_t bytes = 0;
  int64_t iterations = 0;
  double peak_gbps = 0;
  double average_gbps = 0;
  double msg_rate_mpps = 0;
};

struct LatRow {
  int64_t bytes = 0;
  int64_t iterations = 0;
  double t_min_us = 0;
  double t_max_us = 0;
  double t_typical_us = 0;         // perftest's median ("typical")
  std::optional<double> t_avg_us;  // absent in old releases
  std::optional<double> t_stdev_us;
  std::optional<double> p99_us;
  std::optional<double> p999_us;
};

// The rows of a bandwidth report, in order. INVALID_ARGUMENT when there is
// no "#bytes ... BW average" header or no row under it; FAILED_PRECONDITION
// when the report is in MB/sec: perftest ran without --report_gbits (its
// --help: "Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)"),
// which the suite always passes, so the output is not from the command it
// built and is not converted.
absl::StatusOr<std::vector<BwRow>> ParseBwReport(absl::string_view text);

// The rows of a latency report. INVALID_ARGUMENT when there is no
// "#bytes ... t_typical" header or no row under it, or a row has fewer than
// five numbers.
absl::StatusOr<std::vector<LatRow>> ParseLatReport(absl::string_view text);

}  // namespace cmax::bench::rdma

#endif  // CMAX_BENCHMARKS_RDMA_PERFTEST_REPORT_H_
