// One invocation of the storage suite: checks, work directory, the patterns
// through fio, records, the human table and the clean-up.
//
// Phases: probe (fio, --path, file system, free space) -> work directory ->
// per pattern: prepare (layout: write every file that will be read) and
// measure (the timed fio run) -> clean-up.
//
// As a rank of a group task (scope barrier: $CMAX_RENDEZVOUS set), every
// pattern's measured run starts at the instant the rendezvous barrier
// "storage/<pattern>" returns, so all nodes measure together; a rank whose
// preparation failed still passes the barrier so the others are not held.
// Per pattern the suite records storage_prepare_ns, storage_ready_ns,
// storage_start_ns and storage_end_ns (unix ns, this host's clock); the
// totals' start_unix_ns / end_unix_ns labels are the same start and end.
// restore in a group of two or more reads the shard kept by the node of rank
// (rank + 1) mod world (names exchanged as storage/node/<rank>). Nothing is written before the
// checks pass; the work directory is removed on every exit path (unless
// --keep), including SIGTERM/SIGINT, after which the suite re-raises the
// signal.
//
// The members are defined in the file of their idea: storage_run.cc (Run,
// its checks and exits, Cleanup), pattern_run.cc (SpecFor, RunPattern,
// Layout, Measure), fio_outcome.cc (CheckFioRun), storage_records.cc
// (Labels, Emit, EmitMetadata, EmitTimes, PrintTable), group_start.cc
// (JoinGroup, SyncStart) and restore_shard.cc (PairShard, FindShard).
#ifndef CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_
#define CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/storage/fio_job.h"
#include "benchmarks/storage/fio_result.h"
#include "benchmarks/storage/fio_runner.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"

namespace cmax::storage {

struct Config {
  std::string path;
  std::vector<std::string> patterns;
  int64_t size = int64_t{1} << 30;
  int64_t block_size = 0;
  int64_t queue_depth = 16;
  int64_t jobs = 4;
  double duration_s = 30;
  bool want_direct = true;
  bool verify = false;
  int64_t metadata_files = 1000;
  bool keep = false;
  std::string reuse;
  std::string shard_from;
  bool jsonl = false;
  std::string node;
};

class StorageRun {
 public:
  StorageRun(Config cfg, RecordWriter* out) : cfg_(std::move(cfg)), out_(out) {}
  // Returns the suite's exit code (0, 1, 2); dies by the signal when
  // interrupted.
  int Run();

 private:
  struct Row {  // one line of the human table
    std::string pattern, op;
    double mbps = -1, iops = 0, p50 = 0, p99 = 0, p999 = 0;
    std::string extra;
  };
  enum class Outcome { kOk, kFailed, kCouldNotRun };
  // One pattern's instants (unix ns, this host's clock).
  struct PatternTimes {
    int64_t prepare = 0, ready = 0, target = 0, start = 0, end = 0;
    bool synced = false;  // passed this pattern's barrier
  };

  int CouldNotRun(const std::string& check_id, const std::string& title,
                  const std::string& detail);
  absl::Status Probe();
  int64_t BytesNeeded() const;
  Outcome RunPattern(const std::string& pattern);
  // Group tasks: joins the rendezvous (FAILED_PRECONDITION when standalone,
  // other errors when $CMAX_RENDEZVOUS is set but unusable) and publishes
  // this rank's node name.
  absl::Status JoinGroup();
  // Marks the end of preparation; in a group, waits at the pattern's barrier
  // and sleeps until its start instant. Sets times_.start.
  absl::Status SyncStart(const std::string& pattern);
  // restore in a group: cfg_.shard_from = the node of rank (rank+1) % world.
  absl::Status PairShard();
  void EmitTimes(const std::string& pattern);
  Outcome Layout(const JobSpec& spec, const std::string& what);
  Outcome Measure(const JobSpec& spec, const std::string& what);
  Outcome CheckFioRun(const FioRun& run, const std::string& what, FioReport* report);
  absl::Status FindShard(std::string* dir, int* jobs, int64_t* size);
  void Emit(const JobSpec& spec, const FioRun& run, const FioReport& report);
  void EmitMetadata(const JobSpec& spec, const FioReport& report);
  std::map<std::string, std::string> Labels(const JobSpec& spec) const;
  JobSpec SpecFor(const std::string& pattern) const;
  void PrintTable() const;
  void Cleanup();
  [[noreturn]] void DieInterrupted();

  Config cfg_;
  RecordWriter* out_;
  std::string fio_;
  std::string fio_version_;
  std::string base_;
  std::string work_;
  bool own_work_ = false;  // created by this run (else --reuse)
  std::string fs_type_, fs_magic_, mount_source_, mount_point_, storage_class_;
  std::string engine_ = "io_uring";
  bool direct_ = true;
  bool data_laid_out_ = false;
  int64_t layout_block_size_ = 0;
  bool checkpoint_written_ = false;
  std::string restore_from_;  // node whose shard restore read
  std::unique_ptr<RendezvousClient> rv_;  // set when a rank of a group task
  int64_t barrier_timeout_s_ = 0;
  std::string restore_from_rank_;  // rank whose shard restore read (group)
  PatternTimes times_;
  std::vector<Row> rows_;
  std::vector<std::string> notes_;
  int failures_ = 0;
};

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_
