// --slurm-drain: when a run ends, the nodes whose verdict is "fail" are
// drained in Slurm through `scontrol update NodeName=N State=DRAIN
// Reason=...` (an argv, never a shell), with the run id and the node's first
// reason. Off by default. Nodes already drained keep their state and reason
// (an operator's drain, or an earlier run's); a node Slurm does not know is
// logged and skipped.
//
// Thread: Drain() returns at once; the commands run on a thread of their
// own, one node after another, each under a timeout, so the core thread
// never waits for slurmctld. Stop() waits for the commands under way.
#ifndef CMAX_COORDINATOR_SLURM_DRAIN_H_
#define CMAX_COORDINATOR_SLURM_DRAIN_H_

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace cmax::coordinator {

// "cmax <run>: <reason>" reduced to what a Slurm reason may safely hold:
// letters, digits, space and :._/+- (no quotes, no '=' that scontrol would
// parse), at most 100 characters.
std::string SlurmReason(const std::string& run_id, const std::string& reason);

class SlurmDrainer {
 public:
  // `scontrol`: the program (path, or a name looked up on PATH).
  explicit SlurmDrainer(std::string scontrol) : scontrol_(std::move(scontrol)) {}
  ~SlurmDrainer();  // Stop()
  // (node, first reason) of each failed node of `run_id`.
  void Drain(const std::string& run_id,
             std::vector<std::pair<std::string, std::string>> failed_nodes);
  void Stop();

 private:
  void DrainOne(const std::string& run_id, const std::string& node, const std::string& reason);
  const std::string scontrol_;
  absl::Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SLURM_DRAIN_H_
