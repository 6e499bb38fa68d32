// One pattern of the storage suite: its fio job spec (SpecFor), what it
// needs before the measured run (RunPattern: the files a read pattern reads
// are written first, a checkpoint starts from no files, restore finds its
// shard), the layout run (Layout) and the measured run (Measure: the common
// start in a group, fio under a time limit, the records).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "benchmarks/storage/run_helpers.h"
#include "benchmarks/storage/storage_run.h"

namespace cmax::storage {

JobSpec StorageRun::SpecFor(const std::string& pattern) const {
  JobSpec s;
  s.pattern = pattern;
  // Not "<work>/data": fio runs in <work>, and a job named "data" whose name
  // is an existing entry of the current directory would use that entry as
  // its file (fio 3.33 does so) instead of data.<job>.<file>.
  s.dir = absl::StrCat(work_, "/files");
  s.size_bytes = cfg_.size;
  s.block_size = cfg_.block_size;
  s.queue_depth = static_cast<int>(cfg_.queue_depth);
  s.jobs = static_cast<int>(cfg_.jobs);
  s.duration_s = cfg_.duration_s;
  s.direct = direct_;
  s.engine = engine_;
  s.verify = cfg_.verify;
  s.bw_log = pattern != "metadata";
  s.bw_log_prefix = pattern;
  s.metadata_files = static_cast<int>(cfg_.metadata_files);
  if (pattern == "checkpoint" || pattern == "restore") s.dir = absl::StrCat(work_, "/checkpoint");
  if (pattern == "metadata") {
    for (int j = 0; j < s.jobs; ++j) s.metadata_dirs.push_back(absl::StrCat(work_, "/meta/", j));
  }
  return s;
}


StorageRun::Outcome StorageRun::RunPattern(const std::string& pattern) {
  JobSpec spec = SpecFor(pattern);
  if (IsDataPattern(pattern)) {
    mkdir(spec.dir.c_str(), 0700);
    int64_t bs = EffectiveBlockSize(spec);
    // With --reuse the files are read as they were kept: never rewritten.
    bool relayout = cfg_.verify && cfg_.reuse.empty() && layout_block_size_ != bs;
    if (!data_laid_out_ || relayout) {
      Outcome o = Layout(spec, "every block written before it is read");
      if (o != Outcome::kOk) return o;
      data_laid_out_ = true;
      layout_block_size_ = bs;
    }
    Outcome o = Measure(spec, pattern);
    if (o == Outcome::kOk && !IsReadPattern(pattern)) layout_block_size_ = bs;
    return o;
  }
  if (pattern == "metadata") {
    mkdir(absl::StrCat(work_, "/meta").c_str(), 0700);
    for (const auto& d : spec.metadata_dirs) mkdir(d.c_str(), 0700);
    return Measure(spec, "file create, stat and delete");
  }
  if (pattern == "checkpoint") {
    mkdir(spec.dir.c_str(), 0700);
    // A checkpoint is new files: start from none.
    for (int j = 0; j < spec.jobs; ++j) unlink(absl::StrCat(spec.dir, "/shard.", j, ".0").c_str());
    Outcome o = Measure(spec, "checkpoint write to durability");
    if (o != Outcome::kOk) return o;
    checkpoint_written_ = true;
    if (cfg_.verify) {
      auto run = RunFio(fio_, work_, "checkpoint-verify", VerifyJobFile(spec),
                        std::chrono::seconds(120 + spec.size_bytes * spec.jobs / 10000000));
      if (!run.ok()) return Outcome::kCouldNotRun;
      FioReport report;
      o = CheckFioRun(*run, "checkpoint read-back check", &report);
      if (o != Outcome::kOk) return o;
      std::ofstream(absl::StrCat(spec.dir, "/.cmax-verify")) << "crc32c\n";
    }
    return Outcome::kOk;
  }
  // restore
  if (rv_ && rv_->world_size() > 1 && cfg_.shard_from.empty()) {
    if (auto s = PairShard(); !s.ok()) {
      std::fprintf(stderr, "storage: restore not measured: %s\n", std::string(s.message()).c_str());
      v1::Finding f = MakeFinding("storage.restore_no_shard", v1::SEVERITY_WARN,
                                  absl::StrCat("path:", base_), "restore not measured",
                                  absl::StrCat("pairing through the rendezvous: ", s.message()));
      f.set_not_measured(true);
      out_->Find(f);
      return Outcome::kCouldNotRun;
    }
  }
  if (!cfg_.shard_from.empty()) {
    std::string dir;
    int jobs = 0;
    int64_t size = 0;
    if (auto s = FindShard(&dir, &jobs, &size); !s.ok()) {
      std::fprintf(stderr, "storage: restore not measured: %s\n", std::string(s.message()).c_str());
      v1::Finding f = MakeFinding("storage.restore_no_shard", v1::SEVERITY_WARN,
                                  absl::StrCat("path:", base_), "restore not measured",
                                  std::string(s.message()));
      f.set_not_measured(true);
      out_->Find(f);
      return Outcome::kCouldNotRun;
    }
    spec.dir = dir;
    spec.jobs = jobs;
    spec.size_bytes = size;
    out_->Log("info", absl::StrCat("restore reads the shard of node ", restore_from_, " in ", dir,
                                   " (", jobs, " x ", HumanBytes(size), ")"));
    return Measure(spec, absl::StrCat("restore of node ", restore_from_, "'s shard"));
  }
  if (!checkpoint_written_) {
    mkdir(spec.dir.c_str(), 0700);
    Outcome o = Layout(spec, "a shard to restore, written by this node");
    if (o != Outcome::kOk) return o;
    checkpoint_written_ = true;
  }
  v1::Finding f = MakeFinding(
      "storage.restore_local_shard", v1::SEVERITY_INFO, absl::StrCat("path:", base_),
      "client cache may serve this read",
      "restore read the shard this node wrote itself (no --shard-from); under the coordinator "
      "each node reads another node's shard (--shard-from NODE or next)");
  out_->Find(f);
  notes_.push_back("restore read this node's own shard: client cache may serve this read");
  return Measure(spec, "restore of this node's own shard");
}


StorageRun::Outcome StorageRun::Layout(const JobSpec& spec, const std::string& what) {
  std::string text = LayoutJobFile(spec);
  out_->Artifact(absl::StrCat(spec.pattern, "-layout.fio"), "text/plain", text);
  out_->Progress(spec.pattern, 0, absl::StrCat("laying out ", spec.jobs, " x ",
                                               HumanBytes(spec.size_bytes), " (", what, ")"));
  int64_t bytes = spec.size_bytes * spec.jobs;
  auto run = RunFio(fio_, work_, absl::StrCat(spec.pattern, "-layout"), text,
                    std::chrono::seconds(120 + bytes / 10000000));
  if (!run.ok()) {
    CouldNotRun("storage.fio_failed", "fio could not be started", std::string(run.status().message()));
    return Outcome::kCouldNotRun;
  }
  FioReport report;
  return CheckFioRun(*run, absl::StrCat(spec.pattern, " layout"), &report);
}

StorageRun::Outcome StorageRun::Measure(const JobSpec& spec, const std::string& what) {
  std::string text = MeasuredJobFile(spec);
  out_->Artifact(absl::StrCat(spec.pattern, ".fio"), "text/plain", text);
  out_->Progress(spec.pattern, 0, absl::StrCat("measuring ", what));
  int64_t limit = IsTimeBased(spec)
                      ? static_cast<int64_t>(spec.duration_s) + 120
                      : 120 + spec.size_bytes * spec.jobs / 10000000 *
                                  (spec.verify ? 2 : 1);
  if (spec.pattern == "metadata") limit = 120 + spec.metadata_files * spec.jobs / 100;
  if (auto s = SyncStart(spec.pattern); !s.ok()) {
    std::fprintf(stderr, "storage: %s not measured: %s\n", spec.pattern.c_str(),
                 std::string(s.message()).c_str());
    v1::Finding f = MakeFinding("storage.barrier_failed", v1::SEVERITY_WARN,
                                absl::StrCat("path:", base_),
                                absl::StrCat(spec.pattern, " not measured: no common start"),
                                absl::StrCat("rendezvous barrier storage/", spec.pattern, ": ",
                                             s.message()));
    f.set_not_measured(true);
    out_->Find(f);
    return Outcome::kCouldNotRun;
  }
  if (InterruptSignal()) DieInterrupted();
  auto run = RunFio(fio_, work_, spec.pattern, text, std::chrono::seconds(limit));
  if (!run.ok()) {
    CouldNotRun("storage.fio_failed", "fio could not be started", std::string(run.status().message()));
    return Outcome::kCouldNotRun;
  }
  // The measured phase runs from the (common) start instant to fio's exit;
  // the totals' start_unix_ns / end_unix_ns labels say the same.
  run->start_unix_ns = times_.start;
  times_.end = run->end_unix_ns;
  EmitTimes(spec.pattern);
  FioReport report;
  Outcome o = CheckFioRun(*run, spec.pattern, &report);
  if (o != Outcome::kOk) return o;
  if (spec.pattern == "metadata") {
    EmitMetadata(spec, report);
  } else {
    Emit(spec, *run, report);
  }
  out_->Progress(spec.pattern, 1, "done");
  return Outcome::kOk;
}


}  // namespace cmax::storage
