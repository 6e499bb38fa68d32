// Keeps the passive watch (cmax-watch, benchmarks/watch/watch.h) running as a
// child of the agent between runs and delivers its records.
//
//   spawn cmax-watch --jsonl ... > <work-dir>/watch/<epoch>.jsonl
//        │ exits (any reason): its end is appended to its spool as a Log
//        │ record, and it is started again after a back-off (2 s doubling
//        ▼ to 60 s; reset once a child has lived 10 minutes)
//   tail each epoch's spool ──WatchBatch──▶ coordinator ──WatchAck──▶ acked
//   an ended epoch whose records are all acknowledged is deleted
//
// An epoch is one run of the child: "<boot id>-<n>". Spools of earlier agent
// processes are found at Start and sent again from seq 0 (the coordinator
// stores each (node, epoch, seq) once). A cmax-watch missing beside the agent
// is said in a spool of its own as a not-measured finding (watch.agent), so
// the coordinator shows the node as "not watched", never as quiet.
//
// Threads: Start() starts one long-lived thread that spawns the child (it
// lives as long as the agent, so PR_SET_PDEATHSIG holds) and tails the
// spools; the public methods are thread-safe and never block on it.
#ifndef CMAX_AGENT_WATCH_RUNNER_H_
#define CMAX_AGENT_WATCH_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/outbox.h"
#include "agent/spool.h"
#include "common/subprocess.h"

namespace cmax::agent {

struct WatchOptions {
  std::string bench_dir;  // where cmax-watch lives
  std::string work_dir;   // spools under <work-dir>/watch
  std::string boot_id;
  std::string root;       // --root for the watch; empty: the real system
  std::vector<std::string> services;
  std::vector<std::string> filesystems = {"/"};
  double fs_full_percent = 95;
  double interval_s = 5;
  double gpu_interval_s = 30;
  absl::Duration tick = absl::Milliseconds(250);
  size_t max_batch_records = 200;
};

struct WatchStats {
  bool running = false;
  int64_t starts = 0;
  int64_t unacked_records = 0;
};

class WatchRunner {
 public:
  WatchRunner(WatchOptions options, Outbox* outbox);
  ~WatchRunner();  // Stop()
  WatchRunner(const WatchRunner&) = delete;
  WatchRunner& operator=(const WatchRunner&) = delete;

  // The cmax-watch argv for these options (validated by cmax-watch itself;
  // the values come from the agent's own flags, never from the coordinator).
  static std::vector<std::string> Argv(const WatchOptions& options, const std::string& binary);

  void Start();
  // Stops the child (SIGTERM to its group) and the thread. Idempotent.
  void Stop();
  void OnConnected(uint64_t generation);
  void HandleAck(const std::string& epoch, int64_t next_seq);
  WatchStats Stats() const;

 private:
  struct Epoch {
    std::unique_ptr<SpoolTailer> tailer;
    int64_t acked = 0;     // every seq below is durable at the coordinator
    bool ended = false;    // no writer any more
  };
  void Loop();
  void Superintend(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartChild(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendSome() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropDelivered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string SpoolPath(const std::string& epoch) const;

  const WatchOptions options_;
  Outbox* const outbox_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Epoch> epochs_ ABSL_GUARDED_BY(mu_);
  std::string current_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Subprocess> child_ ABSL_GUARDED_BY(mu_);
  absl::Time child_started_ ABSL_GUARDED_BY(mu_);
  absl::Time restart_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = absl::Seconds(2);
  int64_t starts_ ABSL_GUARDED_BY(mu_) = 0;
  bool missing_said_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_WATCH_RUNNER_H_
