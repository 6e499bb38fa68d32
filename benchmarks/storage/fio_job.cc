#include "benchmarks/storage/fio_job.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cmax::storage {
namespace {

std::string FioRw(const std::string& pattern) {
  if (pattern == "seq-write" || pattern == "checkpoint") return "write";
  if (pattern == "seq-read" || pattern == "restore") return "read";
  if (pattern == "rand-read") return "randread";
  if (pattern == "rand-write") return "randwrite";
  return "";
}

std::string JobName(const std::string& pattern) {
  if (pattern == "checkpoint" || pattern == "restore") return "shard";
  return "data";
}

// Options shared by every data-moving job.
void AppendCommon(const JobSpec& spec, int64_t bs, std::string* out) {
  absl::StrAppend(out,
                  "[global]\n"
                  "directory=", spec.dir, "\n",
                  "filename_format=$jobname.$jobnum.$filenum\n"
                  "ioengine=", spec.engine, "\n",
                  "direct=", spec.direct ? 1 : 0, "\n",
                  "iodepth=", spec.engine == "psync" ? 1 : spec.queue_depth, "\n",
                  "numjobs=", spec.jobs, "\n",
                  "size=", spec.size_bytes, "\n",
                  "bs=", bs, "\n",
                  "; incompressible, non-repeating data, refilled for every write\n"
                  "refill_buffers=1\n"
                  "buffer_compress_percentage=0\n"
                  "randrepeat=0\n"
                  "; never preallocate: unwritten extents read as zeros\n"
                  "fallocate=none\n"
                  "lat_percentiles=1\n"
                  "percentile_list=50:99:99.9\n");
  if (spec.verify) {
    absl::StrAppend(out, "verify=crc32c\nverify_fatal=1\n");
  }
}

}  // namespace

const std::vector<std::string>& AllPatterns() {
  static const std::vector<std::string> kAll = {"seq-write", "seq-read", "rand-read",
                                                "rand-write", "metadata", "checkpoint",
                                                "restore"};
  return kAll;
}

bool IsPattern(const std::string& name) {
  const auto& all = AllPatterns();
  return std::find(all.begin(), all.end(), name) != all.end();
}

bool IsDataPattern(const std::string& p) {
  return p == "seq-write" || p == "seq-read" || p == "rand-read" || p == "rand-write";
}

bool IsReadPattern(const std::string& p) {
  return p == "seq-read" || p == "rand-read" || p == "restore";
}

int64_t DefaultBlockSize(const std::string& p) {
  if (p == "seq-write" || p == "seq-read") return 1 << 20;
  if (p == "checkpoint" || p == "restore") return 4 << 20;
  return 4096;
}

int64_t EffectiveBlockSize(const JobSpec& spec) {
  int64_t bs = spec.block_size > 0 ? spec.block_size : DefaultBlockSize(spec.pattern);
  return std::max<int64_t>(512, std::min(bs, spec.size_bytes > 0 ? spec.size_bytes : bs));
}

bool IsTimeBased(const JobSpec& spec) {
  return IsDataPattern(spec.pattern) && spec.duration_s > 0 && !spec.verify;
}

std::string LayoutJobFile(const JobSpec& spec) {
  // Without verify, 1 MiB writes lay out fastest; with verify the headers
  // must match the block size the pattern reads with.
  int64_t bs = spec.verify ? EffectiveBlockSize(spec)
                           : std::min<int64_t>(1 << 20, std::max<int64_t>(spec.size_bytes, 4096));
  std::string out = absl::StrCat(
      "; cmax storage: layout for pattern ", spec.pattern,
      " (run before the measured job: every block is written before it is read)\n");
  JobSpec layout = spec;
  AppendCommon(layout, bs, &out);
  absl::StrAppend(&out, "\n[", JobName(spec.pattern), "]\nrw=write\nend_fsync=1\n");
  if (spec.verify) absl::StrAppend(&out, "do_verify=0\n");
  return out;
}

std::string MeasuredJobFile(const JobSpec& spec) {
  std::string out = absl::StrCat("; cmax storage: pattern ", spec.pattern,
                                 " (rerun by hand: fio --output-format=json <this file>)\n");
  if (spec.pattern == "metadata") {
    absl::StrAppend(&out,
                    "[global]\n"
                    "; one directory per job; file create, stat and delete rates\n"
                    "directory=", absl::StrJoin(spec.metadata_dirs, ":"), "\n",
                    "filename_format=meta.$jobnum.$filenum\n"
                    "numjobs=", spec.jobs, "\n",
                    "nrfiles=", spec.metadata_files, "\n",
                    "filesize=4k\n"
                    "openfiles=1\n"
                    "fallocate=none\n"
                    "lat_percentiles=1\n"
                    "percentile_list=50:99:99.9\n"
                    "\n[create]\nioengine=filecreate\n"
                    "\n[stat]\nstonewall\nioengine=filestat\n"
                    "\n[delete]\nstonewall\nioengine=filedelete\n");
    return out;
  }
  int64_t bs = EffectiveBlockSize(spec);
  AppendCommon(spec, bs, &out);
  if (spec.bw_log) {
    absl::StrAppend(&out,
                    "; per-second bandwidth logs, Unix timestamps (cluster aggregate)\n"
                    "write_bw_log=", spec.bw_log_prefix, "\n",
                    "log_avg_msec=1000\n"
                    "log_unix_epoch=1\n");
  }
  absl::StrAppend(&out, "\n[", JobName(spec.pattern), "]\nrw=", FioRw(spec.pattern), "\n");
  if (IsTimeBased(spec)) {
    int64_t runtime = std::max<int64_t>(1, std::llround(spec.duration_s));
    absl::StrAppend(&out, "time_based=1\nruntime=", runtime, "\n");
    if (runtime >= 10) absl::StrAppend(&out, "ramp_time=2\n");
  }
  if (spec.pattern == "checkpoint") {
    absl::StrAppend(&out, "; durable checkpoint: the job's runtime includes the final fsync\n"
                          "end_fsync=1\n");
  }
  if (spec.pattern == "seq-write" || spec.pattern == "rand-write") {
    absl::StrAppend(&out, "end_fsync=1\n");
  }
  if (spec.verify) {
    // Writes are read back and checked after the write phase and reads check
    // every block they read; the checkpoint is checked by VerifyJobFile so
    // its timing holds only the write and the fsync.
    absl::StrAppend(&out, "do_verify=", spec.pattern == "checkpoint" ? 0 : 1, "\n");
  }
  return out;
}

std::string VerifyJobFile(const JobSpec& spec) {
  JobSpec v = spec;
  v.pattern = "restore";  // a sequential read of the shards
  v.verify = true;
  v.bw_log = false;
  v.duration_s = 0;
  std::string out = MeasuredJobFile(v);
  return absl::StrCat("; cmax storage: read-back check of the checkpoint (not timed)\n", out);
}

}  // namespace cmax::storage
