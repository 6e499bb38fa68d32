// Runs a suite as N ranks, each a child process of the test, and collects
// every rank's exit and records. Gloo ranks rendezvous through a
// FakeRendezvousServer; MPI ranks are started by mpirun.
#ifndef CMAX_TESTS_BENCHMARKS_COLLECTIVE_RANK_RUNNER_H_
#define CMAX_TESTS_BENCHMARKS_COLLECTIVE_RANK_RUNNER_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"
#include "common/subprocess.h"

namespace cmax::testing {

struct RankOutput {
  ExitInfo exit;
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr tail
  std::vector<v1::Record> records;  // parsed from stdout (--jsonl)
};

// `n` ranks of `binary args...` with CMAX_RENDEZVOUS (a fake server in
// `dir`), CMAX_RANK, CMAX_WORLD_SIZE and CMAX_NODE_NAME=node-<rank>.
// `during` (optional) runs on a thread of its own once every rank is
// spawned, with the ranks' pids (-1 where a spawn failed), e.g. to signal one
// mid-run; RunRanks waits for it before it returns.
std::vector<RankOutput> RunRanks(const std::string& binary, const std::vector<std::string>& args,
                                 int n, const std::string& dir, std::chrono::seconds timeout,
                                 std::function<void(const std::vector<pid_t>&)> during = {});

// Parses JSON lines; lines that are not records are skipped.
std::vector<v1::Record> ParseRecords(const std::string& text);

// Measurements with this metric.
std::vector<v1::Measurement> MeasurementsOf(const std::vector<v1::Record>& records,
                                            const std::string& metric);

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_COLLECTIVE_RANK_RUNNER_H_
