// Which nodes Slurm has idle, for schedules with --only-idle (schedules.h):
// `sinfo -h -N -o "%N %T"` (one line a node and partition: name, extended
// state), run as an argv through RunCommand (common/subprocess.h), never a
// shell, on a thread of its own, so the core thread never waits for
// slurmctld.
//
// Only the state "idle" with no flag is idle: "allocated", "mixed",
// "completing", "drained", "draining", "down", "reserved", and "idle" with a
// flag ("idle*" not responding, "idle~" powered off, "idle#" powering up,
// "idle$" in a maintenance reservation, ...) are not. A node listed in
// several partitions is idle only when every line says so. A node Slurm
// does not list is not idle (it is not a Slurm node). When sinfo cannot
// answer (not installed, failed, timed out) the answer says "not measured"
// and why: never "all idle".
//
// Thread: Ask() is thread-safe and returns at once; `done` runs on the
// probe's thread. Stop() (and the destructor) waits for the sinfo under
// way and drops the asks not started.
#ifndef CMAX_COORDINATOR_SLURM_IDLE_H_
#define CMAX_COORDINATOR_SLURM_IDLE_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace cmax::coordinator {

struct SlurmNodeStates {
  bool measured = false;
  std::string reason;                         // not measured: why ("not measured: sinfo not found")
  std::map<std::string, std::string> states;  // node -> Slurm's state, as printed ("idle", "mixed")
};

// Whether Slurm's state (as %T prints it) means no job and nothing in the way.
bool IsSlurmIdle(const std::string& state);
// Parses sinfo's output (measured = true). Lines that are not "NAME STATE"
// with a valid node name are ignored.
SlurmNodeStates ParseSinfo(const std::string& out);
// Runs `sinfo` (a path, or a name looked up on PATH) and parses its answer.
// Blocks for up to 20 s: call it off the core thread.
SlurmNodeStates QuerySinfo(const std::string& sinfo);

class SlurmIdleProbe {
 public:
  explicit SlurmIdleProbe(std::string sinfo) : sinfo_(std::move(sinfo)) {}
  ~SlurmIdleProbe();  // Stop()
  void Ask(std::function<void(SlurmNodeStates)> done);
  void Stop();

 private:
  void Loop();
  const std::string sinfo_;
  absl::Mutex mu_;
  std::deque<std::function<void(SlurmNodeStates)>> asks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SLURM_IDLE_H_
