// One invocation of the storage suite: checks, work directory, the patterns
// through fio, records, the human table and the clean-up.
//
// Phases: probe (fio, --path, file system, free space) -> work directory ->
// per pattern: prepare (layout: write every file that will be read) and
// measure (the timed fio run) -> clean-up. Nothing is written before the
// checks pass; the work directory is removed on every exit path (unless
// --keep), including SIGTERM/SIGINT, after which the suite re-raises the
// signal.
#ifndef CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_
#define CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/storage/fio_job.h"
#include "benchmarks/storage/fio_result.h"
#include "benchmarks/storage/fio_runner.h"
#include "common/record_io.h"

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

  int CouldNotRun(const std::string& check_id, const std::string& title,
                  const std::string& detail);
  absl::Status Probe();
  int64_t BytesNeeded() const;
  Outcome RunPattern(const std::string& pattern);
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
  std::vector<Row> rows_;
  std::vector<std::string> notes_;
  int failures_ = 0;
};

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_STORAGE_RUN_H_
