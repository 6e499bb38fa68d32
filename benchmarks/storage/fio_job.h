// fio job files for the storage patterns. cmax never drives the I/O itself:
// it writes these files, runs fio on them and keeps them as Artifacts, so
// anyone can rerun a measurement by hand with `fio <file>`.
//
// Honest-data rules every job file follows (see REFERENCES.md, "Storage"):
//   refill_buffers=1, buffer_compress_percentage=0, randrepeat=0: every block
//     is fresh random data that neither compresses nor deduplicates;
//   fallocate=none and a layout pass (a full sequential write) before any read:
//     fio never reads unwritten (fallocated) extents, which read as zeros
//     without touching the device;
//   direct=1 unless the file system refuses O_DIRECT or --buffered is given.
#ifndef CMAX_BENCHMARKS_STORAGE_FIO_JOB_H_
#define CMAX_BENCHMARKS_STORAGE_FIO_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cmax::storage {

// Patterns, in the order `--pattern all` runs them.
const std::vector<std::string>& AllPatterns();
bool IsPattern(const std::string& name);
// seq-*, rand-*: work on the data files ("<work>/files/data.<job>.0").
bool IsDataPattern(const std::string& pattern);
bool IsReadPattern(const std::string& pattern);  // seq-read, rand-read, restore

// 1 MiB for sequential patterns, 4 KiB for random ones, 4 MiB for
// checkpoint and restore, 4 KiB (file size) for metadata.
int64_t DefaultBlockSize(const std::string& pattern);

struct JobSpec {
  std::string pattern;
  std::string dir;            // absolute directory of the files (no ':')
  int64_t size_bytes = 0;     // per job: the file each job works on
  int64_t block_size = 0;     // 0: DefaultBlockSize(pattern)
  int queue_depth = 16;
  int jobs = 1;
  double duration_s = 0;      // > 0 and not verify: time-based data patterns
  bool direct = true;
  std::string engine = "io_uring";  // io_uring or psync
  bool verify = false;        // verify=crc32c, verify_fatal=1
  bool bw_log = false;        // per-second bandwidth logs with Unix timestamps
  std::string bw_log_prefix = "bw";
  int metadata_files = 1000;  // files per job (metadata)
  std::vector<std::string> metadata_dirs;  // one per job (metadata)
};

int64_t EffectiveBlockSize(const JobSpec& spec);
// Data patterns run for duration_s (time_based) unless --verify is given,
// which needs one pass over every block.
bool IsTimeBased(const JobSpec& spec);

// The job that lays out the data files of a data pattern (or the shards of
// a restore without another node): one sequential write of every file,
// fsynced. With verify the blocks carry crc32c headers for the pattern's
// block size.
std::string LayoutJobFile(const JobSpec& spec);

// The measured job of `spec.pattern`. Job names: "data" (seq-*, rand-*),
// "shard" (checkpoint, restore), "create"/"stat"/"delete" (metadata).
std::string MeasuredJobFile(const JobSpec& spec);

// A second pass that reads back and checks every block of the checkpoint
// (so the checkpoint's own timing is not mixed with the check).
std::string VerifyJobFile(const JobSpec& spec);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_FIO_JOB_H_
