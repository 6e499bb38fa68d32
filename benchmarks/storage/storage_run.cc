// The run loop of the storage suite (StorageRun::Run): find fio, probe
// --path (file system, pseudo file systems refused, free space), create or
// reuse the work directory, probe direct I/O and io_uring, join the task
// group, run every pattern, clean up and print the table; and the exits that
// leave nothing behind: could not run (a not-measured finding, exit 2) and
// interrupted (the work directory removed, the signal re-raised).
//
// The other members of StorageRun live in the files of their idea:
// pattern_run.cc (one pattern: job spec, layout, measured run),
// fio_outcome.cc (fio's result -> findings), storage_records.cc (records and
// the human table), group_start.cc (rendezvous and common start) and
// restore_shard.cc (which shard restore reads).
#include "benchmarks/storage/storage_run.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/storage/fs_probe.h"
#include "benchmarks/storage/run_helpers.h"
#include "benchmarks/storage/work_dir.h"
#include "benchmarks/suite.h"
#include "common/subprocess.h"
#include "common/sysroot.h"
#include "common/time_util.h"

namespace cmax::storage {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

int StorageRun::CouldNotRun(const std::string& check_id, const std::string& title,
                            const std::string& detail) {
  std::fprintf(stderr, "storage: %s\n  %s\n", title.c_str(), detail.c_str());
  out_->Log("error", absl::StrCat("not measured: ", title, ": ", detail));
  v1::Finding f = MakeFinding(check_id, v1::SEVERITY_WARN, absl::StrCat("path:", cfg_.path),
                              title, absl::StrCat("storage not measured: ", detail));
  f.set_not_measured(true);  // could not run: never a pass nor a grade (record.proto)
  out_->Find(f);
  if (!work_.empty() && own_work_) {
    (void)RemoveTree(work_);
    work_.clear();
  }
  return bench::kExitCouldNotRun;
}

void StorageRun::DieInterrupted() {
  int sig = InterruptSignal();
  std::string what = "nothing to remove";
  if (!work_.empty() && !(cfg_.keep && !own_work_)) {
    absl::Status s = RemoveTree(work_);
    what = s.ok() ? absl::StrCat("removed ", work_)
                  : absl::StrCat("could not remove ", work_, ": ", s.message());
  }
  std::fprintf(stderr, "storage: interrupted by signal %d; fio stopped; %s\n", sig,
               what.c_str());
  out_->Log("warn", absl::StrCat("interrupted by signal ", sig, "; fio stopped; ", what));
  ReraiseInterrupt(sig);
}

absl::Status StorageRun::Probe() {
  auto base = ResolveBase(cfg_.path);
  if (!base.ok()) return base.status();
  base_ = *base;
  auto mount = MountOf(Sysroot("/"), base_);
  if (mount.ok()) {
    fs_type_ = mount->fs_type;
    mount_source_ = mount->source;
    mount_point_ = mount->mount_point;
  }
  auto magic = StatfsMagic(base_);
  if (magic.ok()) fs_magic_ = FsTypeFromMagic(*magic);
  if (fs_type_.empty()) fs_type_ = fs_magic_.empty() ? "unknown" : fs_magic_;
  if (IsPseudoFs(fs_type_) || fs_magic_ == "proc" || fs_magic_ == "sysfs") {
    return absl::FailedPreconditionError(absl::StrCat(
        "--path ", cfg_.path, " is on ", fs_type_,
        ", a pseudo file system that cannot hold the suite's files"));
  }
  storage_class_ = StorageClass(fs_type_, mount_source_);
  return absl::OkStatus();
}

int64_t StorageRun::BytesNeeded() const {
  auto has = [&](const std::string& p) {
    return std::find(cfg_.patterns.begin(), cfg_.patterns.end(), p) != cfg_.patterns.end();
  };
  int64_t need = 0;
  bool data = has("seq-write") || has("seq-read") || has("rand-read") || has("rand-write");
  if (data && cfg_.reuse.empty()) need += cfg_.size * cfg_.jobs;
  // A rank of a group of two or more restores another node's shard (PairShard).
  const char* world = std::getenv("CMAX_WORLD_SIZE");
  const bool paired = std::getenv("CMAX_RENDEZVOUS") && world && std::atoi(world) > 1;
  if (has("checkpoint") || (has("restore") && cfg_.shard_from.empty() && !paired)) {
    need += cfg_.size * cfg_.jobs;
  }
  if (has("metadata")) need += cfg_.metadata_files * cfg_.jobs * 4096;
  return need;
}


void StorageRun::Cleanup() {
  if (work_.empty()) return;
  if (cfg_.keep) {
    out_->Log("info", absl::StrCat("kept ", work_, " (--keep)"));
    notes_.push_back(absl::StrCat("kept ", work_));
    std::fprintf(stderr, "storage: kept %s\n", work_.c_str());
    return;
  }
  absl::Status s = RemoveTree(work_);
  if (!s.ok()) {
    out_->Log("error", absl::StrCat("could not remove ", work_, ": ", s.message()));
    std::fprintf(stderr, "storage: could not remove %s: %s\n", work_.c_str(),
                 std::string(s.message()).c_str());
  }
}


int StorageRun::Run() {
  InstallInterruptHandlers();
  fio_ = FindExecutable("fio");
  if (fio_.empty()) {
    return CouldNotRun("storage.fio_missing", "fio not found: install the fio package",
                       absl::StrCat("no fio on PATH (", std::getenv("PATH") ? std::getenv("PATH") : "",
                                    "); nothing was measured"));
  }
  if (auto v = RunCommand({fio_, "--version"}, std::chrono::seconds(10)); v.ok()) {
    fio_version_ = std::string(absl::StripAsciiWhitespace(v->out));
  }
  if (auto s = Probe(); !s.ok()) {
    return CouldNotRun("storage.path_unusable", "cannot use --path", std::string(s.message()));
  }
  if (cfg_.reuse.empty()) {
    int64_t need = BytesNeeded();
    int64_t margin = 64 * kMiB + need / 20;
    auto free_bytes = FreeBytes(base_);
    if (!free_bytes.ok()) {
      return CouldNotRun("storage.path_unusable", "cannot use --path",
                         std::string(free_bytes.status().message()));
    }
    if (static_cast<uint64_t>(need + margin) > *free_bytes) {
      return CouldNotRun(
          "storage.not_enough_space", "not enough free space",
          absl::StrFormat("the run needs %s (%lld bytes: --size %s x --jobs %lld per file set, "
                          "plus a margin of %s) but %s has %s (%llu bytes) free on %s",
                          HumanBytes(need + margin), static_cast<long long>(need + margin),
                          HumanBytes(cfg_.size), static_cast<long long>(cfg_.jobs),
                          HumanBytes(margin), base_, HumanBytes(*free_bytes),
                          static_cast<unsigned long long>(*free_bytes), fs_type_));
    }
  }
  if (InterruptSignal()) DieInterrupted();
  if (cfg_.reuse.empty()) {
    auto dir = CreateWorkDir(base_, cfg_.node);
    if (!dir.ok()) {
      return CouldNotRun("storage.path_unusable", "cannot write under --path",
                         std::string(dir.status().message()));
    }
    work_ = *dir;
    own_work_ = true;
  } else {
    auto dir = CheckOwnDir(base_, cfg_.reuse);
    if (!dir.ok()) {
      return CouldNotRun("storage.symlink_refused", "cannot reuse that directory",
                         std::string(dir.status().message()));
    }
    if (auto s = CheckNoSymlinks(*dir); !s.ok()) {
      return CouldNotRun("storage.symlink_refused", "symbolic link in the work directory",
                         std::string(s.message()));
    }
    for (int j = 0; j < cfg_.jobs; ++j) {
      int64_t sz = 0;
      std::string f = absl::StrCat(*dir, "/files/data.", j, ".0");
      if (!FileSize(f, &sz) || sz < cfg_.size) {
        return CouldNotRun("storage.reuse_mismatch", "cannot reuse that directory",
                           absl::StrCat(f, " is missing or smaller than --size ", cfg_.size,
                                        " (use the --size and --jobs of the run that kept it)"));
      }
    }
    work_ = *dir;
    data_laid_out_ = true;
  }
  if (InterruptSignal()) DieInterrupted();

  direct_ = cfg_.want_direct;
  if (direct_) {
    std::string why;
    if (!ProbeDirectIo(work_, &why)) {
      direct_ = false;
      v1::Finding f = MakeFinding(
          "storage.direct_io_unsupported", v1::SEVERITY_INFO, absl::StrCat("path:", base_),
          absl::StrCat("direct I/O not supported on ", fs_type_, ", buffered used"),
          absl::StrCat(why, "; reads may be served from the page cache"));
      out_->Find(f);
      notes_.push_back(absl::StrCat("direct I/O not supported on ", fs_type_, ", buffered used"));
    }
  }
  std::string why;
  engine_ = ProbeIoEngine(&why);
  if (engine_ != "io_uring") {
    out_->Find(MakeFinding("storage.io_uring_unavailable", v1::SEVERITY_INFO,
                           absl::StrCat("path:", base_), "io_uring unavailable, psync used",
                           absl::StrCat(why, "; queue depth is 1 with psync")));
    notes_.push_back(absl::StrCat("io_uring unavailable (", why, "), psync used"));
  }
  out_->Log("info", absl::StrFormat(
                        "path %s: %s (%s, statfs %s) from %s on %s; engine %s, direct %s; work "
                        "directory %s; fio %s",
                        base_, fs_type_, storage_class_, fs_magic_, mount_source_, mount_point_,
                        engine_, direct_ ? "yes" : "no", work_, fio_version_));

  if (auto s = JoinGroup(); !s.ok() && !absl::IsFailedPrecondition(s)) {
    return CouldNotRun("storage.rendezvous_failed", "cannot reach the task group's rendezvous",
                       absl::StrCat(s.message(), " (a barrier run without a common start "
                                                 "would not measure the nodes together)"));
  }
  bool could_not_run = false;
  for (const std::string& p : cfg_.patterns) {
    if (InterruptSignal()) DieInterrupted();
    if (auto s = CheckNoSymlinks(work_); !s.ok()) {
      CouldNotRun("storage.symlink_refused", "symbolic link in the work directory",
                  std::string(s.message()));
      return bench::kExitCouldNotRun;
    }
    times_ = PatternTimes{};
    times_.prepare = NowUnixNs();
    Outcome o = RunPattern(p);
    if (InterruptSignal()) DieInterrupted();
    if (rv_ && !times_.synced) {
      // This rank could not prepare or measure: still pass the barrier so
      // the other ranks are not held until its timeout.
      (void)SyncStart(p);
    }
    if (o == Outcome::kCouldNotRun) could_not_run = true;
  }
  Cleanup();
  PrintTable();
  if (failures_ > 0) return bench::kExitFoundFailures;
  if (could_not_run) return bench::kExitCouldNotRun;
  return bench::kExitPassed;
}

}  // namespace cmax::storage
